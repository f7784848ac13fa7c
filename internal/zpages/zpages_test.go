package zpages

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/apiserver/pkg/server/statusz"
	"k8s.io/component-base/compatibility"
	"sigs.k8s.io/yaml"
)

const (
	flagzJSON   = "application/json;as=Flagz;v=v1beta1;g=config.k8s.io"
	statuszJSON = "application/json;as=Statusz;v=v1beta1;g=config.k8s.io"
)

var testFlags = map[string]string{"hostname-override": "win-1", "v": "2", "metrics-bind-address": "127.0.0.1:10249"}

// get answers one request of method with Accept headers.
func get(t *testing.T, h http.Handler, method string, accept ...string) (*http.Response, string) {
	t.Helper()
	r := httptest.NewRequest(method, "/page", nil)
	for _, a := range accept {
		r.Header.Add("Accept", a)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	return w.Result(), string(body)
}

func TestNegotiation(t *testing.T) {
	for _, tc := range []struct {
		name string
		// page is "flagz" or "statusz".
		page   string
		method string
		accept []string
		// code and contentType are the answer's; warning its Warning header.
		code        int
		contentType string
		warning     string
	}{
		{name: "no Accept is text", page: "flagz", code: 200, contentType: "text/plain; charset=utf-8"},
		{name: "any type is text", page: "flagz", accept: []string{"*/*"}, code: 200, contentType: "text/plain; charset=utf-8"},
		{name: "a browser's Accept is text", page: "statusz", accept: []string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, code: 200, contentType: "text/plain; charset=utf-8"},
		{name: "the structured page", page: "flagz", accept: []string{flagzJSON}, code: 200, contentType: "application/json"},
		{name: "the structured page in YAML", page: "statusz", accept: []string{"application/yaml;as=Statusz;v=v1beta1;g=config.k8s.io"}, code: 200, contentType: "application/yaml"},
		{name: "the deprecated version warns", page: "statusz", accept: []string{"application/json;as=Statusz;v=v1alpha1;g=config.k8s.io"}, code: 200, contentType: "application/json",
			warning: `299 - "This version of the statusz endpoint is deprecated. Please use a newer version."`},
		{name: "the higher quality wins", page: "flagz", accept: []string{"text/plain;q=0.5, " + flagzJSON}, code: 200, contentType: "application/json"},
		{name: "on a tie the first wins", page: "flagz", accept: []string{"text/plain", flagzJSON}, code: 200, contentType: "text/plain; charset=utf-8"},
		{name: "JSON without the object's name", page: "flagz", accept: []string{"application/json"}, code: 406},
		{name: "the other page's object", page: "flagz", accept: []string{statuszJSON}, code: 406},
		{name: "an unknown version", page: "statusz", accept: []string{"application/json;as=Statusz;v=v2;g=config.k8s.io"}, code: 406},
		{name: "an unknown group", page: "statusz", accept: []string{"application/json;as=Statusz;v=v1beta1;g=example.com"}, code: 406},
		{name: "protobuf", page: "statusz", accept: []string{"application/vnd.kubernetes.protobuf;as=Statusz;v=v1beta1;g=config.k8s.io"}, code: 406},
		{name: "a refused type", page: "flagz", accept: []string{"text/plain;q=0"}, code: 406},
		{name: "a write", page: "flagz", method: http.MethodPost, code: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := FlagzHandler("winproxy-agent", testFlags)
			if tc.page == "statusz" {
				h = StatuszHandler("winproxy-agent", "v1.2.3", []string{"/healthz"})
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			resp, body := get(t, h, method, tc.accept...)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.code != 200 {
				return
			}
			if got := resp.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if got := resp.Header.Get("Warning"); got != tc.warning {
				t.Errorf("Warning %q, want %q", got, tc.warning)
			}
		})
	}
}

func TestText(t *testing.T) {
	sep := `(:|: |=| )`
	_, flags := get(t, FlagzHandler("winproxy-agent", testFlags), http.MethodGet)
	want := regexp.MustCompile(`^\nwinproxy-agent flagz\nWarning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.\n` +
		`hostname-override` + sep + `win-1\nmetrics-bind-address` + sep + `127.0.0.1:10249\nv` + sep + `2\n$`)
	if !want.MatchString(flags) {
		t.Errorf("/flagz:\n%q\nwant it to match %s", flags, want)
	}
	_, status := get(t, StatuszHandler("winproxy-agent", "dev", []string{"/healthz", "/healthz/", "/debug/pprof/", "/debug/flags/v", "/metrics"}), http.MethodGet)
	want = regexp.MustCompile(`^\nwinproxy-agent statusz\nWarning: .*\n\n` +
		`Started` + sep + ` \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \w+ \d{4}\nUp` + sep + ` \d+ hr \d\d min \d\d sec\n` +
		`Go version` + sep + ` ` + regexp.QuoteMeta(runtime.Version()) + `\nBinary version` + sep + ` dev\n\n` +
		`Paths` + sep + ` /debug /healthz /metrics\n$`)
	if !want.MatchString(status) {
		t.Errorf("/statusz:\n%q\nwant it to match %s", status, want)
	}
}

func TestStructured(t *testing.T) {
	_, body := get(t, FlagzHandler("winproxy-agent", testFlags), http.MethodGet, flagzJSON)
	var f Flagz
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		t.Fatal(err)
	}
	wantFlagz := Flagz{Header: Header{Kind: "Flagz", APIVersion: "config.k8s.io/v1beta1", Metadata: Metadata{Name: "winproxy-agent"}}, Flags: testFlags}
	if diff := cmp.Diff(wantFlagz, f); diff != "" {
		t.Errorf("/flagz (-want +got):\n%s", diff)
	}

	_, body = get(t, StatuszHandler("winproxy-agent", "dev", []string{"/configz", "/healthz"}), http.MethodGet, "application/yaml;as=Statusz;v=v1alpha1;g=config.k8s.io")
	var s Statusz
	if err := yaml.UnmarshalStrict([]byte(body), &s); err != nil {
		t.Fatalf("%v:\n%s", err, body)
	}
	started, err := time.Parse(time.RFC3339, s.StartTime)
	if err != nil || time.Since(started) < 0 || time.Since(started) > time.Hour {
		t.Errorf("startTime %q: not the process's start (%v)", s.StartTime, err)
	}
	s.StartTime, s.UptimeSeconds = "", 0
	wantStatusz := Statusz{Header: Header{Kind: "Statusz", APIVersion: "config.k8s.io/v1alpha1", Metadata: Metadata{Name: "winproxy-agent"}},
		GoVersion: runtime.Version(), BinaryVersion: "dev", Paths: []string{"/configz", "/healthz"}}
	if diff := cmp.Diff(wantStatusz, s); diff != "" {
		t.Errorf("/statusz (-want +got):\n%s", diff)
	}
}

// TestSameAsKubeProxy asks the apiserver library's pages, which kube-proxy serves, and ours the
// same questions: the answers must be the same but for what differs by design (no emulation
// version; the start time, which the library reads from the process's stat, to the second) and
// the text's separator, which each answer picks at random.
func TestSameAsKubeProxy(t *testing.T) {
	paths := []string{"/configz", "/flagz", "/healthz", "/metrics", "/proxyMode", "/statusz"}
	theirs := map[string]http.Handler{}
	mux := muxFunc(func(path string, h http.Handler) { theirs[path] = h })
	flagz.Install(mux, "winproxy-agent", flagReader(testFlags))
	statusz.Install(mux, "winproxy-agent", statusz.NewRegistry(compatibility.NewEffectiveVersionFromString("1.2.3", "", ""), statusz.WithListedPaths(paths)))
	ours := map[string]http.Handler{
		"/flagz":   FlagzHandler("winproxy-agent", testFlags),
		"/statusz": StatuszHandler("winproxy-agent", "1.2.3", paths),
	}
	labels := map[string][]string{
		"/flagz":   {"hostname-override", "metrics-bind-address", "v"},
		"/statusz": {"Started", "Up", "Go version", "Binary version", "Emulation version", "Paths"},
	}
	for _, tc := range []struct {
		path   string
		accept []string
	}{
		{path: "/flagz"},
		{path: "/flagz", accept: []string{"*/*"}},
		{path: "/flagz", accept: []string{flagzJSON}},
		{path: "/flagz", accept: []string{"application/yaml;as=Flagz;v=v1alpha1;g=config.k8s.io"}},
		{path: "/flagz", accept: []string{"application/json"}},
		{path: "/statusz"},
		{path: "/statusz", accept: []string{"text/plain"}},
		{path: "/statusz", accept: []string{statuszJSON}},
		{path: "/statusz", accept: []string{"application/json;as=Statusz;v=v1alpha1;g=config.k8s.io"}},
		{path: "/statusz", accept: []string{flagzJSON}},
	} {
		theirResp, theirBody := get(t, theirs[tc.path], http.MethodGet, tc.accept...)
		ourResp, ourBody := get(t, ours[tc.path], http.MethodGet, tc.accept...)
		what := tc.path + " " + strings.Join(tc.accept, ",")
		if theirResp.StatusCode != ourResp.StatusCode {
			t.Errorf("%s: status %d, kube-proxy's %d: %s", what, ourResp.StatusCode, theirResp.StatusCode, ourBody)
			continue
		}
		if ourResp.StatusCode != 200 {
			continue
		}
		if a, b := theirResp.Header.Get("Warning"), ourResp.Header.Get("Warning"); a != b {
			t.Errorf("%s: Warning %q, kube-proxy's %q", what, b, a)
		}
		if !strings.HasPrefix(ourResp.Header.Get("Content-Type"), "text/") {
			if a, b := comparable(t, theirBody), comparable(t, ourBody); !cmp.Equal(a, b) {
				t.Errorf("%s (-kube-proxy +ours):\n%s", what, cmp.Diff(a, b))
			}
			continue
		}
		a, b := readable(theirBody, labels[tc.path]), readable(ourBody, labels[tc.path])
		if a != b {
			t.Errorf("%s (-kube-proxy +ours):\n%s", what, cmp.Diff(a, b))
		}
	}
}

// readable is a text page with each labelled line as label|value, whatever the separator, but
// for what differs by design: the times (as *) and the emulation version (as an empty line).
func readable(page string, labels []string) string {
	lines := strings.Split(page, "\n")
	for i, line := range lines {
		for _, label := range labels {
			value, ok := strings.CutPrefix(line, label)
			if !ok || i < 3 {
				continue
			}
			switch value = strings.TrimLeft(value, ":= "); label {
			case "Started", "Up":
				value = "*"
			case "Emulation version":
				lines[i] = ""
				continue
			}
			lines[i] = label + "|" + value
		}
	}
	return strings.Join(lines, "\n")
}

// comparable decodes a structured page (JSON or YAML) without what differs by design.
func comparable(t *testing.T, body string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%v:\n%s", err, body)
	}
	for _, k := range []string{"startTime", "uptimeSeconds", "emulationVersion"} {
		delete(m, k)
	}
	return m
}

type muxFunc func(string, http.Handler)

func (f muxFunc) Handle(path string, h http.Handler) { f(path, h) }

type flagReader map[string]string

func (f flagReader) GetFlagz() map[string]string { return f }
