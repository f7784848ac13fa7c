package engine

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// TestKeyText: a key's kind and family read and write as their names (plan files, metrics
// labels, the keys' text), though each is a byte.
func TestKeyText(t *testing.T) {
	for _, k := range []Kind{KindClusterIP, KindNodePort, KindExternalIP, KindIngress, KindHealthCheck} {
		text, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		var back Kind
		if err := json.Unmarshal(text, &back); err != nil || back != k || string(text) != `"`+k.String()+`"` {
			t.Errorf("kind %d: %s, read back as %d (%v)", k, text, back, err)
		}
	}
	for _, f := range []v1alpha1.IPFamily{v1alpha1.IPv4, v1alpha1.IPv6} {
		text, err := json.Marshal(FamilyOf(f))
		if err != nil {
			t.Fatal(err)
		}
		var back Family
		if err := json.Unmarshal(text, &back); err != nil || back.IPFamily() != f || string(text) != `"`+string(f)+`"` {
			t.Errorf("family %s: %s, read back as %s (%v)", f, text, back, err)
		}
	}
	var k Kind
	if err := json.Unmarshal([]byte(`"loadbalancer"`), &k); err == nil {
		t.Error("an unknown kind was read")
	}
	var f Family
	if err := json.Unmarshal([]byte(`"IPv5"`), &f); err == nil {
		t.Error("an unknown family was read")
	}
	key := LBKey{Family: FamilyIPv6, Kind: KindIngress, Service: "ns/svc", Port: "http", ExternalPort: 80, Protocol: 6}
	if got, want := key.String(), "IPv6/ingress *:80/TCP ns/svc:http"; got != want {
		t.Errorf("key %q, want %q", got, want)
	}
	// The engine and the applier hold a key seven times over for every load balancer.
	if size := unsafe.Sizeof(LBKey{}); size > 64 {
		t.Errorf("an LBKey takes %d bytes, more than 64", size)
	}
}
