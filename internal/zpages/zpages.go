// Package zpages serves /flagz and /statusz the way kube-proxy and the other Kubernetes components
// do, so that whoever asks a node's proxy for them gets the same answers from winproxy's agent:
//
//   - by default, a page of text for people, which says it is not meant to be parsed and, to keep
//     it so, separates names from values with one of ":", ": ", "=" or " " at random (for /flagz
//     once for the process's life, as its text cannot change);
//   - on request, the structured objects Flagz and Statusz of config.k8s.io, version v1beta1 or the
//     deprecated v1alpha1 (which answers with a Warning header), in JSON or YAML:
//     `Accept: application/json;as=Statusz;v=v1beta1;g=config.k8s.io`, negotiated as the library
//     negotiates it, with a Kubernetes Status and 406 for what it does not serve.
//
// The formats are those of the Kubernetes apiserver library (k8s.io/apiserver/pkg/server/flagz
// and statusz), which kube-proxy uses; docs/differences-from-kube-proxy.md says what differs. The
// agent does not use that library: it pulls CEL, gRPC and OpenTelemetry into the binary (12 MB),
// and their start-up alone leaves about 14 MB more of the binary in every node's memory, for two
// debug pages. CBOR, which the library serves only behind an alpha feature gate, is not served.
package zpages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/munnerz/goautoneg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	return &page{kind: "Flagz", component: component, fixedText: true, text: func(w io.Writer, sep string) {
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
	return &page{kind: "Statusz", component: component, text: func(w io.Writer, sep string) {
		up := int64(time.Since(processStart).Seconds())
		fmt.Fprintf(w, "\nStarted%[1]s %[2]s\nUp%[1]s %[3]d hr %02[4]d min %02[5]d sec\nGo version%[1]s %[6]s\nBinary version%[1]s %[7]s\n\n",
			sep, processStart.Format(time.UnixDate), up/3600, up/60%60, up%60, runtime.Version(), binaryVersion)
		paths := ""
		if len(listed) > 0 {
			paths = "Paths" + sep + " " + strings.Join(listed, " ")
		}
		fmt.Fprintln(w, paths)
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
// structured object under a header. fixedText keeps the first text answer and gives it again, as
// the library does for /flagz (whose text cannot change): one separator for the process's life.
type page struct {
	kind      string
	component string
	text      func(w io.Writer, sep string)
	object    func(Header) any
	fixedText bool
	once      sync.Once
	fixed     []byte
}

// separators are the text pages' separators, one chosen at random for each text made.
var separators = []string{":", ": ", "=", " "}

// ServeHTTP answers any method as GET, as the library does.
func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	accept := r.Header.Get("Accept")
	c := choice{form: textPlain}
	if strings.TrimSpace(accept) != "" {
		var ok bool
		if c, ok = p.negotiate(accept); !ok {
			notAcceptable(w)
			return
		}
	}
	if c.form == textPlain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(p.textPage())
		return
	}
	obj := p.object(Header{Kind: p.kind, APIVersion: Group + "/" + c.version, Metadata: Metadata{Name: p.component}})
	// JSON as the library writes it: compact with a newline, or indented (for people) without.
	body, err := json.Marshal(obj)
	switch {
	case err != nil:
	case c.form == "application/yaml":
		body, err = yaml.JSONToYAML(body)
	case c.pretty || prettyFor(r):
		body, err = json.MarshalIndent(obj, "", "  ")
	default:
		body = append(body, '\n')
	}
	if err != nil {
		http.Error(w, "encoding the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if c.version == V1alpha1 {
		w.Header().Set("Warning", fmt.Sprintf(`299 - "This version of the %s endpoint is deprecated. Please use a newer version."`, strings.ToLower(p.kind)))
	}
	w.Header().Set("Content-Type", fmt.Sprintf("%s;g=%s;v=%s;as=%s", c.form, Group, c.version, p.kind))
	_, _ = w.Write(body)
}

// textPage is the page's text: the heading, then the page's lines.
func (p *page) textPage() []byte {
	render := func() []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, "\n%s %s\nWarning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.\n",
			p.component, strings.ToLower(p.kind))
		p.text(&b, separators[rand.IntN(len(separators))])
		return b.Bytes()
	}
	if !p.fixedText {
		return render()
	}
	p.once.Do(func() { p.fixed = render() })
	return p.fixed
}

const textPlain = "text/plain"

// served are the forms a page is served in, in the order the library tries them for each media
// range of an Accept header.
var served = []struct{ typ, subtype string }{{"application", "json"}, {"application", "yaml"}, {"text", "plain"}}

// choice is a page's negotiated form: its media type, the structured object's version, and
// whether the JSON is indented.
type choice struct {
	form, version string
	pretty        bool
}

// negotiate picks the page's form as the apiserver library does: the Accept header's media
// ranges in goautoneg's order (quality first, then the more specific), each tried against JSON,
// YAML and text in that order. A structured form needs as, v and g naming this page's object;
// text needs none of them; a stream or a server version is never served.
func (p *page) negotiate(accept string) (choice, bool) {
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, f := range served {
			matches := clause.Type == f.typ && (clause.SubType == f.subtype || clause.SubType == "*") || clause.Type == "*" && clause.SubType == "*"
			if c, ok := p.accepts(f.typ+"/"+f.subtype, clause.Params); matches && ok {
				return c, true
			}
		}
	}
	return choice{}, false
}

// accepts reports whether form, with a media range's parameters, is a form of this page.
func (p *page) accepts(form string, params map[string]string) (choice, bool) {
	c := choice{form: form, pretty: params["pretty"] == "1"}
	if params["stream"] != "" || params["sv"] != "" {
		return choice{}, false
	}
	_, as := params["as"]
	_, g := params["g"]
	_, v := params["v"]
	if form == textPlain {
		return c, !as && !g && !v
	}
	c.version = params["v"]
	return c, params["as"] == p.kind && params["g"] == Group && (c.version == V1alpha1 || c.version == V1beta1)
}

// prettyFor reports whether the request asks for indented JSON as the library reads it: the
// pretty query parameter, else a client people type into (curl, Wget, a browser).
func prettyFor(r *http.Request) bool {
	if q := r.URL.Query().Get("pretty"); q != "" {
		pretty, _ := strconv.ParseBool(q)
		return pretty
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// notAcceptable answers 406 with a Kubernetes Status, which kubectl and client-go read.
func notAcceptable(w http.ResponseWriter) {
	const msg = "only the following media types are accepted: application/json, application/yaml, text/plain"
	status := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: msg, Reason: metav1.StatusReasonNotAcceptable, Code: http.StatusNotAcceptable}
	body, _ := json.MarshalIndent(status, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotAcceptable)
	_, _ = w.Write(append(body, '\n'))
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
