package engine

import (
	"fmt"
	"testing"

	"github.com/winproxy/winproxy/internal/testbuild"
)

// TestChangesNameEachKeyOnce: the keys that share a frontend with a changed
// one are named once each, however the touched keys are walked (a key
// added to a map while it is ranged over may or may not be produced).
func TestChangesNameEachKeyOnce(t *testing.T) {
	c := NewIncremental()
	c.SetNode(nodeName, config(false), nil, view(false, ws2022, localPod()))
	// Services claiming one external IP and port: a change of one names
	// them all, the winner of the frontend may have changed.
	const n = 8
	svc := func(i int) string { return fmt.Sprintf("svc%d", i) }
	for i := range n {
		c.SetService(service(svc(i), testbuild.ClusterIPs(fmt.Sprintf("10.20.30.%d", 50+i)), testbuild.ExternalIPs("10.9.9.9")))
		c.SetEndpointSlice(slice(svc(i), svc(i)+"-a", 80, testbuild.Endpoint("192.168.1.5", nodeName)))
	}
	c.Desired()
	for i := range 50 {
		c.SetService(service(svc(i%n), testbuild.ClusterIPs(fmt.Sprintf("10.20.30.%d", 50+i%n)), testbuild.ExternalIPs("10.9.9.9")))
		c.Desired()
		named := map[LBKey]int{}
		for _, k := range c.Changes().LoadBalancers {
			named[k]++
		}
		if len(named) != n+1 {
			t.Fatalf("change %d names %d keys, want the service's 2 and the other %d external IP keys", i, len(named), n-1)
		}
		for k, times := range named {
			if times != 1 {
				t.Fatalf("change %d names %v %d times", i, k, times)
			}
		}
	}
}
