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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		{name: "the structured page", page: "flagz", accept: []string{flagzJSON}, code: 200, contentType: "application/json;g=config.k8s.io;v=v1beta1;as=Flagz"},
		{name: "the structured page in YAML", page: "statusz", accept: []string{"application/yaml;as=Statusz;v=v1beta1;g=config.k8s.io"}, code: 200, contentType: "application/yaml;g=config.k8s.io;v=v1beta1;as=Statusz"},
		{name: "the deprecated version warns", page: "statusz", accept: []string{"application/json;as=Statusz;v=v1alpha1;g=config.k8s.io"}, code: 200, contentType: "application/json;g=config.k8s.io;v=v1alpha1;as=Statusz",
			warning: `299 - "This version of the statusz endpoint is deprecated. Please use a newer version."`},
		{name: "the higher quality wins", page: "flagz", accept: []string{"text/plain;q=0.5, " + flagzJSON}, code: 200, contentType: "application/json;g=config.k8s.io;v=v1beta1;as=Flagz"},
		{name: "a type before a wildcard", page: "statusz", accept: []string{"*/*, " + statuszJSON}, code: 200, contentType: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz"},
		{name: "a wildcard naming the object is JSON", page: "statusz", accept: []string{"*/*;as=Statusz;v=v1beta1;g=config.k8s.io"}, code: 200, contentType: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz"},
		{name: "only the first Accept header counts", page: "flagz", accept: []string{"text/plain", flagzJSON}, code: 200, contentType: "text/plain; charset=utf-8"},
		{name: "JSON without the object's name", page: "flagz", accept: []string{"application/json"}, code: 406},
		{name: "the other page's object", page: "flagz", accept: []string{statuszJSON}, code: 406},
		{name: "an unknown version", page: "statusz", accept: []string{"application/json;as=Statusz;v=v2;g=config.k8s.io"}, code: 406},
		{name: "no version", page: "statusz", accept: []string{"application/json;as=Statusz;g=config.k8s.io"}, code: 406},
		{name: "an unknown group", page: "statusz", accept: []string{"application/json;as=Statusz;v=v1beta1;g=example.com"}, code: 406},
		{name: "text naming an object", page: "statusz", accept: []string{"text/plain;g=config.k8s.io"}, code: 406},
		{name: "a stream", page: "statusz", accept: []string{statuszJSON + ";stream=watch"}, code: 406},
		{name: "protobuf", page: "statusz", accept: []string{"application/vnd.kubernetes.protobuf;as=Statusz;v=v1beta1;g=config.k8s.io"}, code: 406},
		{name: "any method is GET", page: "flagz", method: http.MethodPost, code: 200, contentType: "text/plain; charset=utf-8"},
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
				var st metav1.Status
				if err := json.Unmarshal([]byte(body), &st); err != nil || st.Reason != metav1.StatusReasonNotAcceptable || st.Code != 406 {
					t.Errorf("406 without a Status saying so: %s", body)
				}
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
	flagzPage := FlagzHandler("winproxy-agent", testFlags)
	_, flags := get(t, flagzPage, http.MethodGet)
	// Its separator is picked once: the flags do not change while the process runs.
	for range 10 {
		if _, again := get(t, flagzPage, http.MethodGet); again != flags {
			t.Fatalf("/flagz changed between answers:\n%q\n%q", flags, again)
		}
	}
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
// same questions: status, Content-Type, Warning and body must be the same but for what differs by
// design (no emulation version; the start time, which the library reads from the process's stat,
// to the second; the 406's Status, whose form the library negotiates too) and the text's
// separator, which each text picks at random.
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
	questions := []struct {
		accept, userAgent string
	}{
		{}, {accept: "*/*"}, {accept: "*"}, {accept: "text/plain"}, {accept: "text/*"}, {accept: "text/plain;q=0"},
		{accept: "application/json, */*"}, {accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
		{accept: "application/json"}, {accept: "application/*"}, {accept: "application/vnd.kubernetes.protobuf"},
		{accept: "text/plain;v=v1beta1"},
	}
	for _, kind := range []string{"Flagz", "Statusz", "Other"} {
		for _, v := range []string{"v1beta1", "v1alpha1", "v2"} {
			object := ";as=" + kind + ";v=" + v + ";g=config.k8s.io"
			questions = append(questions,
				struct{ accept, userAgent string }{accept: "application/json" + object},
				struct{ accept, userAgent string }{accept: "application/yaml" + object},
				struct{ accept, userAgent string }{accept: "application/json" + object, userAgent: "curl/8.5.0"},
				struct{ accept, userAgent string }{accept: "application/json" + object + ";pretty=1"},
				struct{ accept, userAgent string }{accept: "*/*, application/json" + object},
				struct{ accept, userAgent string }{accept: "*/*" + object},
				struct{ accept, userAgent string }{accept: "application/*" + object},
				struct{ accept, userAgent string }{accept: "application/json" + object + ";q=0.5, */*"},
				struct{ accept, userAgent string }{accept: "text/plain;q=0.9, application/yaml" + object},
				struct{ accept, userAgent string }{accept: "application/json;as=" + kind + ";g=config.k8s.io"},
				struct{ accept, userAgent string }{accept: "application/json" + object + ";stream=watch"},
			)
		}
	}
	for _, path := range []string{"/flagz", "/statusz"} {
		for _, q := range questions {
			what := path + " Accept: " + q.accept + " User-Agent: " + q.userAgent
			ask := func(h http.Handler) (*http.Response, string) {
				r := httptest.NewRequest(http.MethodGet, path, nil)
				if q.accept != "" {
					r.Header.Set("Accept", q.accept)
				}
				r.Header.Set("User-Agent", q.userAgent)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Result(), w.Body.String()
			}
			theirResp, theirBody := ask(theirs[path])
			ourResp, ourBody := ask(ours[path])
			if theirResp.StatusCode != ourResp.StatusCode {
				t.Errorf("%s: status %d, kube-proxy's %d: %s", what, ourResp.StatusCode, theirResp.StatusCode, ourBody)
				continue
			}
			if ourResp.StatusCode != 200 {
				continue // TestNegotiation reads our 406's Status
			}
			for _, h := range []string{"Content-Type", "Warning"} {
				if a, b := theirResp.Header.Get(h), ourResp.Header.Get(h); a != b {
					t.Errorf("%s: %s %q, kube-proxy's %q", what, h, b, a)
				}
			}
			a, b := theirBody, ourBody
			if strings.HasPrefix(ourResp.Header.Get("Content-Type"), "text/") {
				a, b = readable(a, labels[path]), readable(b, labels[path])
			} else {
				a, b = withoutTimes(a), withoutTimes(b)
			}
			if a != b {
				t.Errorf("%s (-kube-proxy +ours):\n%s", what, cmp.Diff(a, b))
			}
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

var (
	emulation = regexp.MustCompile(`[ \t]*"?emulationVersion"?: ?"?[0-9.]+"?,?\n?`)
	started   = regexp.MustCompile(`("?startTime"?: ?)"?[^",\n]*"?`)
	uptime    = regexp.MustCompile(`("?uptimeSeconds"?: ?)\d+`)
)

// withoutTimes is a structured page, JSON or YAML, as written, without what differs by design:
// the emulation version, the start time and the uptime.
func withoutTimes(body string) string {
	body = emulation.ReplaceAllString(body, "")
	body = started.ReplaceAllString(body, "${1}*")
	return uptime.ReplaceAllString(body, "${1}0")
}

type muxFunc func(string, http.Handler)

func (f muxFunc) Handle(path string, h http.Handler) { f(path, h) }

type flagReader map[string]string

func (f flagReader) GetFlagz() map[string]string { return f }
