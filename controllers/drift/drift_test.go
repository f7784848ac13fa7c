package drift

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/resolve"
)

func TestChecker(t *testing.T) {
	proxy := winproxyv1alpha1.ResolvedProxyConfig{Network: winproxyv1alpha1.NetworkSpec{Name: "cbr0"}}
	w := &winproxyv1alpha1.WindowsProxyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u1", Generation: 1},
		Spec:       winproxyv1alpha1.WindowsProxyNodeSpec{ConfigName: "c", Hash: resolve.Hash(&proxy), Proxy: proxy},
	}
	var c Checker
	if c.Drifted(w) {
		t.Fatal("a spec that matches its hash drifted")
	}
	w.Spec.Proxy.EnableDSR = true
	w.Generation = 2
	if !c.Drifted(w) {
		t.Error("a spec edited under its hash did not drift")
	}
	w.Spec.Proxy.EnableDSR = false
	w.Generation = 3
	if c.Drifted(w) {
		t.Error("a restored spec drifted")
	}
	// The same generation is not hashed again: its verdict is remembered.
	w.Spec.Proxy.EnableDSR = true
	if c.Drifted(w) {
		t.Error("the remembered generation was hashed again")
	}
	w.UID = "u2"
	if !c.Drifted(w) {
		t.Error("a WindowsProxyNode created again under the same name reused the verdict of the old one")
	}
	// A forgotten node is hashed again, even at a generation seen before.
	w.UID, w.Spec.Proxy.EnableDSR = "u1", true
	c.Forget("n")
	if !c.Drifted(w) {
		t.Error("a forgotten WindowsProxyNode reused the verdict of before")
	}
}
