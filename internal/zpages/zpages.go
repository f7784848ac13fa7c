// Package zpages serves /flagz and /statusz the way kube-proxy and the other Kubernetes components
// do, so that whoever asks a node's proxy for them gets the same pages from winproxy's agent:
//
//   - by default, a page of text for people, which says it is not meant to be parsed and, to keep
//     it so, separates names from values with one of ":", ": ", "=" or " " at random;
//   - on request, the structured objects Flagz and Statusz of config.k8s.io, version v1beta1 or the
//     deprecated v1alpha1 (which answers with a Warning header), in JSON or YAML:
//     `Accept: application/json;as=Statusz;v=v1beta1;g=config.k8s.io`.
//
// The formats are those of the Kubernetes apiserver library (k8s.io/apiserver/pkg/server/flagz
// and statusz), which kube-proxy uses; docs/differences-from-kube-proxy.md says what differs. The
// agent does not use that library: it pulls CEL, gRPC and OpenTelemetry into the binary (12 MB),
// and their start-up alone leaves about 14 MB more of the binary in every node's memory, for two
// debug pages. CBOR, which the library serves only behind an alpha feature gate, is not served.
package zpages

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"mime"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Group is the API group of the structured pages.
const Group = "config.k8s.io"

// Versions of the structured pages, the deprecated one first.
const (
	V1alpha1 = "v1alpha1"
	V1beta1  = "v1beta1"
)

// processStart stands for the process's start: packages are initialised before main runs.
var processStart = time.Now()

// Metadata is the object metadata of a structured page: the component's name.
type Metadata struct {
	Name string `json:"name"`
}

// Header heads both structured pages.
type Header struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion"`
	Metadata   Metadata `json:"metadata"`
}

// Flagz is the structured /flagz page.
type Flagz struct {
	Header
	// Flags are the component's flags and their values.
	Flags map[string]string `json:"flags,omitempty"`
}

// Statusz is the structured /statusz page.
type Statusz struct {
	Header
	// StartTime is when the process started, in RFC 3339 and UTC, to the second.
	StartTime     string `json:"startTime"`
	UptimeSeconds int64  `json:"uptimeSeconds"`
	GoVersion     string `json:"goVersion"`
	// BinaryVersion is the component's version, which need not be a semantic version.
	BinaryVersion string `json:"binaryVersion"`
	// Paths are the component's other debug pages, each as its first path segment.
	Paths []string `json:"paths"`
}

// FlagzHandler serves component's flags.
func FlagzHandler(component string, flags map[string]string) http.Handler {
	return page{kind: "Flagz", component: component, text: func(w io.Writer, sep string) {
		for _, name := range slices.Sorted(maps.Keys(flags)) {
			fmt.Fprintf(w, "%s%s%s\n", name, sep, flags[name])
		}
	}, object: func(h Header) any {
		return Flagz{Header: h, Flags: flags}
	}}
}

// StatuszHandler serves component's start, uptime, versions and its other debug pages, listed by path:
// each is shown once by its first segment ("/debug/pprof/" as "/debug").
func StatuszHandler(component, binaryVersion string, paths []string) http.Handler {
	listed := firstSegments(paths)
	return page{kind: "Statusz", component: component, text: func(w io.Writer, sep string) {
		up := int64(time.Since(processStart).Seconds())
		fmt.Fprintf(w, "\nStarted%[1]s %[2]s\nUp%[1]s %[3]d hr %02[4]d min %02[5]d sec\nGo version%[1]s %[6]s\nBinary version%[1]s %[7]s\n\n",
			sep, processStart.Format(time.UnixDate), up/3600, up/60%60, up%60, runtime.Version(), binaryVersion)
		if len(listed) > 0 {
			fmt.Fprintf(w, "Paths%s %s\n", sep, strings.Join(listed, " "))
		}
	}, object: func(h Header) any {
		return Statusz{
			Header:        h,
			StartTime:     processStart.UTC().Format(time.RFC3339),
			UptimeSeconds: max(0, int64(time.Since(processStart).Seconds())),
			GoVersion:     runtime.Version(),
			BinaryVersion: binaryVersion,
			Paths:         listed,
		}
	}}
}

// page is one of the two pages: its kind, its text after the common heading, and its
// structured object under a header.
type page struct {
	kind      string
	component string
	text      func(w io.Writer, sep string)
	object    func(Header) any
}

// separators are the text pages' separators, one chosen at random for each answer.
var separators = []string{":", ": ", "=", " "}

func (p page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, r.Method+" is not served: GET the page", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	form, version, ok := p.negotiate(r.Header.Values("Accept"))
	if !ok {
		http.Error(w, fmt.Sprintf("none of the media types accepted (%q) is served; served are text/plain and, in JSON or YAML, the structured page: application/json;as=%[2]s;v=%[3]s;g=%[4]s or application/yaml;as=%[2]s;v=%[3]s;g=%[4]s",
			strings.Join(r.Header.Values("Accept"), ", "), p.kind, V1beta1, Group), http.StatusNotAcceptable)
		return
	}
	if form == "text/plain" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "\n%s %s\nWarning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.\n",
			p.component, strings.ToLower(p.kind))
		p.text(w, separators[rand.IntN(len(separators))])
		return
	}
	obj := p.object(Header{Kind: p.kind, APIVersion: Group + "/" + version, Metadata: Metadata{Name: p.component}})
	body, err := json.Marshal(obj)
	if err == nil && form == "application/yaml" {
		body, err = yaml.JSONToYAML(body)
	}
	if err != nil {
		http.Error(w, "encoding the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if version == V1alpha1 {
		w.Header().Set("Warning", fmt.Sprintf(`299 - "This version of the %s endpoint is deprecated. Please use a newer version."`, strings.ToLower(p.kind)))
	}
	w.Header().Set("Content-Type", form)
	_, _ = w.Write(body)
}

// negotiate picks the page's form from the Accept headers: the media range of highest quality
// that the page serves, the first one on a tie. No Accept is text. JSON and YAML are served only
// as this page's structured object (as, v and g name it), as the apiserver library does.
func (p page) negotiate(accept []string) (form, version string, ok bool) {
	type choice struct {
		form, version string
		q             float64
	}
	var best *choice
	for _, header := range accept {
		for _, item := range strings.Split(header, ",") {
			if strings.TrimSpace(item) == "" {
				continue
			}
			mediaType, params, err := mime.ParseMediaType(item)
			if err != nil {
				continue
			}
			q := 1.0
			if s, has := params["q"]; has {
				if q, err = strconv.ParseFloat(s, 64); err != nil || q <= 0 {
					continue
				}
			}
			c := choice{q: q}
			switch mediaType {
			case "text/plain", "text/*", "*/*":
				if params["as"] != "" {
					continue
				}
				c.form = "text/plain"
			case "application/json", "application/yaml":
				if params["as"] != p.kind || params["g"] != Group || (params["v"] != V1alpha1 && params["v"] != V1beta1) {
					continue
				}
				c.form, c.version = mediaType, params["v"]
			default:
				continue
			}
			if best == nil || c.q > best.q {
				best = &c
			}
		}
	}
	if best == nil {
		return "text/plain", "", strings.TrimSpace(strings.Join(accept, "")) == ""
	}
	return best.form, best.version, true
}

// firstSegments returns each path's first segment, once, sorted: "/debug/pprof/" is "/debug".
func firstSegments(paths []string) []string {
	var out []string
	for _, p := range paths {
		segment, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		if segment != "" && !slices.Contains(out, "/"+segment) {
			out = append(out, "/"+segment)
		}
	}
	slices.Sort(out)
	return out
}
