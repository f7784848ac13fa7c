package healthcheck

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func get(t *testing.T, url string) (int, http.Header, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: body is not JSON: %v", url, err)
	}
	return resp.StatusCode, resp.Header, body
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestProxyHealth(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-1"}}
	h := NewProxyHealth(clk, 60*time.Second, func() *corev1.Node { return node })
	codes := map[string]int{}
	srv := NewServer(h.Handler(func(path string, code int) { codes[path+" "+strconv.Itoa(code)]++ }))
	addr := freeAddr(t)
	if err := srv.Serve(addr); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	healthz, livez := "http://"+addr+"/healthz", "http://"+addr+"/livez"

	type want struct{ healthz, livez int }
	check := func(step string, w want) map[string]any {
		t.Helper()
		hc, _, body := get(t, healthz)
		lc, _, _ := get(t, livez)
		if hc != w.healthz || lc != w.livez {
			t.Errorf("%s: /healthz %d, /livez %d; want %d, %d (body %v)", step, hc, lc, w.healthz, w.livez, body)
		}
		return body
	}

	body := check("a new proxy gets one timeout for its first sync", want{200, 200})
	if body["nodeEligible"] != true || body["currentTime"] == nil || body["lastUpdated"] == nil {
		t.Errorf("/healthz body %v lacks kube-proxy's fields", body)
	}
	clk.SetTime(start.Add(61 * time.Second))
	check("no sync within the timeout", want{503, 503})

	h.Updated([]corev1.IPFamily{corev1.IPv4Protocol})
	body = check("after a sync", want{200, 200})
	if st, ok := body["status"].(map[string]any); !ok || st["IPv4"] == nil {
		t.Errorf("/healthz status = %v, want an IPv4 entry", body["status"])
	}

	h.QueuedUpdate()
	clk.SetTime(clk.Now().Add(30 * time.Second))
	h.QueuedUpdate() // a later change does not reset the oldest one
	clk.SetTime(clk.Now().Add(31 * time.Second))
	check("a change waited longer than the timeout", want{503, 503})
	h.Updated([]corev1.IPFamily{corev1.IPv4Protocol})
	check("the change was synced", want{200, 200})

	node.Spec.Taints = []corev1.Taint{{Key: ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
	body = check("a node the autoscaler is removing is alive but not eligible", want{503, 200})
	if body["nodeEligible"] != false {
		t.Errorf("nodeEligible = %v, want false", body["nodeEligible"])
	}
	node.Spec.Taints = nil
	now := metav1.NewTime(clk.Now())
	node.DeletionTimestamp = &now
	check("a node being deleted", want{503, 200})

	if codes["healthz 503"] == 0 || codes["livez 200"] == 0 {
		t.Errorf("responses not counted: %v", codes)
	}
}

func TestServerMovesToANewAddress(t *testing.T) {
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "{}") }))
	first, second := freeAddr(t), freeAddr(t)
	if err := srv.Serve(first); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(second); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := http.Get("http://" + first); err == nil {
		t.Error("the old address still answers")
	}
	if resp, err := http.Get("http://" + second); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
	}
	if srv.Addr() != second {
		t.Errorf("Addr = %q, want %q", srv.Addr(), second)
	}
}

func TestServiceHealthServers(t *testing.T) {
	healthy := true
	s := NewServices("127.0.0.1", func() bool { return healthy })
	defer s.Close()
	port := func() uint16 {
		_, p, _ := net.SplitHostPort(freeAddr(t))
		n, _ := strconv.Atoi(p)
		return uint16(n)
	}
	web, api := port(), port()
	url := func(p uint16) string { return fmt.Sprintf("http://127.0.0.1:%d/", p) }

	if f := s.Update(map[string]*Want{"shop/web": {Port: web, LocalEndpoints: 2}, "shop/api": {Port: api}}); len(f) != 0 {
		t.Fatalf("Update failed: %v", f)
	}
	code, hdr, body := get(t, url(web))
	if code != 200 || hdr.Get("X-Load-Balancing-Endpoint-Weight") != "2" || body["localEndpoints"] != float64(2) || body["serviceProxyHealthy"] != true {
		t.Errorf("web: %d %v %v, want 200, weight 2, localEndpoints 2", code, hdr, body)
	}
	if svc, _ := body["service"].(map[string]any); svc["namespace"] != "shop" || svc["name"] != "web" {
		t.Errorf("web: service = %v", body["service"])
	}
	if code, hdr, _ := get(t, url(api)); code != 503 || hdr.Get("X-Load-Balancing-Endpoint-Weight") != "0" {
		t.Errorf("api without local endpoints: %d, weight %q; want 503, 0", code, hdr.Get("X-Load-Balancing-Endpoint-Weight"))
	}
	healthy = false
	if code, _, body := get(t, url(web)); code != 503 || body["serviceProxyHealthy"] != false {
		t.Errorf("web with an unhealthy proxy: %d %v, want 503", code, body)
	}
	healthy = true

	// A port held by someone else fails alone; the others keep serving. A deleted Service's
	// server stops.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, bp, _ := net.SplitHostPort(busy.Addr().String())
	busyPort, _ := strconv.Atoi(bp)
	f := s.Update(map[string]*Want{"shop/web": {Port: web}, "shop/api": nil, "shop/db": {Port: uint16(busyPort), LocalEndpoints: 1}})
	if len(f) != 1 || f[0].Service != "shop/db" || f[0].Port != uint16(busyPort) {
		t.Errorf("failures = %v, want shop/db on its busy port", f)
	}
	if code, _, _ := get(t, url(web)); code != 503 {
		t.Errorf("web with no local endpoints left: %d, want 503", code)
	}
	if _, err := http.Get(url(api)); err == nil {
		t.Error("the health server of a deleted service still answers")
	}
	if s.Listening() != 1 {
		t.Errorf("Listening = %d, want 1", s.Listening())
	}
	// An Update with no change tries the failed listener again.
	if f := s.Update(nil); len(f) != 1 || f[0].Service != "shop/db" {
		t.Errorf("failures = %v, want shop/db still on its busy port", f)
	}
	busy.Close()
	if f := s.Update(nil); len(f) != 0 {
		t.Errorf("the freed port was not taken on the next sync: %v", f)
	}
	if code, _, body := get(t, url(uint16(busyPort))); code != 200 || body["localEndpoints"] != float64(1) {
		t.Errorf("db once its port was free: %d %v, want 200 with its 1 local endpoint", code, body)
	}

	// A new port moves the server; a Service's endpoint count follows its changes only.
	moved := port()
	if f := s.Update(map[string]*Want{"shop/web": {Port: moved, LocalEndpoints: 3}}); len(f) != 0 {
		t.Fatalf("Update failed: %v", f)
	}
	if _, err := http.Get(url(web)); err == nil {
		t.Error("web still answers on its old port")
	}
	if code, _, body := get(t, url(moved)); code != 200 || body["localEndpoints"] != float64(3) {
		t.Errorf("web on its new port: %d %v, want 200 with 3 local endpoints", code, body)
	}
	if code, _, _ := get(t, url(uint16(busyPort))); code != 200 {
		t.Errorf("db, unchanged, answers %d after web moved, want 200", code)
	}
	if s.Listening() != 2 {
		t.Errorf("Listening = %d, want 2", s.Listening())
	}
}
