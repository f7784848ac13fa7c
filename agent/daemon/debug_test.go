package daemon

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// /configz shows the settings in effect: the node's resolved config with its owner, and the
// agent's flags; before the WindowsProxyNode exists, the flags alone.
func TestConfigzShowsTheResolvedConfigAndTheFlags(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{"metrics-bind-address": "127.0.0.1:10265", "profiling": "false"}
	a := &agent{opts: Options{NodeName: "win-1", Debug: DebugOptions{Flags: flags}}, client: fake.NewClientBuilder().WithScheme(scheme).Build()}
	get := func() Configz {
		t.Helper()
		rec := httptest.NewRecorder()
		a.configz(rec, httptest.NewRequest(http.MethodGet, "/configz", nil))
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("/configz: %d %s", rec.Code, rec.Body)
		}
		var out Configz
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := get(); got.WindowsProxyNode != nil || got.Flags["profiling"] != "false" {
		t.Errorf("before the WindowsProxyNode: %+v", got)
	}
	wpn := &v1alpha1.WindowsProxyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "win-1", Generation: 3, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "winproxy.io/v1alpha1", Kind: "WindowsProxyConfig", Name: "older", UID: "1"},
			{APIVersion: "winproxy.io/v1alpha1", Kind: "WindowsProxyConfig", Name: "calico", UID: "2", Controller: ptr.To(true)},
		}},
		Spec: v1alpha1.WindowsProxyNodeSpec{Hash: "abc", Proxy: v1alpha1.ResolvedProxyConfig{Network: v1alpha1.NetworkSpec{Name: "Calico"}}},
	}
	if err := a.client.Create(t.Context(), wpn); err != nil {
		t.Fatal(err)
	}
	got := get()
	if n := got.WindowsProxyNode; n == nil || n.Name != "win-1" || n.Config != "calico" || n.Spec.Hash != "abc" || n.Spec.Proxy.Network.Name != "Calico" {
		t.Errorf("/configz WindowsProxyNode = %+v, want win-1 of calico with hash abc on network Calico", n)
	}
	if got.Flags["metrics-bind-address"] != "127.0.0.1:10265" {
		t.Errorf("/configz flags = %v", got.Flags)
	}
}

func TestProxyModeIsKernelspace(t *testing.T) {
	rec := httptest.NewRecorder()
	proxyMode(rec, httptest.NewRequest(http.MethodGet, "/proxyMode", nil))
	if rec.Body.String() != "kernelspace" {
		t.Errorf("/proxyMode = %q, want kube-proxy's Windows mode kernelspace", rec.Body)
	}
}

func TestVerbosityTakesOnlyPutNumbers(t *testing.T) {
	for _, c := range []struct {
		method, body string
		want         int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodPut, "loud", http.StatusBadRequest},
		{http.MethodPut, "0\n", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		verbosity(rec, httptest.NewRequest(c.method, "/debug/flags/v", strings.NewReader(c.body)))
		if rec.Code != c.want {
			t.Errorf("%s %q: %d %s, want %d", c.method, c.body, rec.Code, rec.Body, c.want)
		}
	}
}
