package engine

import (
	"fmt"
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

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
		// Each change turns client-IP affinity on or off: a service set again as it was
		// changes no load balancer, and names none.
		opts := []testbuild.ServiceOption{testbuild.ClusterIPs(fmt.Sprintf("10.20.30.%d", 50+i%n)), testbuild.ExternalIPs("10.9.9.9")}
		if i/n%2 == 0 {
			opts = append(opts, testbuild.ClientIPAffinity())
		}
		c.SetService(service(svc(i%n), opts...))
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

// TestChangesNameOnlyWhatChanged: Changes names the keys whose load balancer a change altered
// and the addresses whose remote endpoint it wants differently, and nothing the change left as it
// was: the applier checks each named one against its model, so an event's cost follows what it
// changed, not the size of its service.
func TestChangesNameOnlyWhatChanged(t *testing.T) {
	ten := func(first int, opts ...testbuild.EndpointOption) *discoveryv1.EndpointSlice {
		var eps []testbuild.SliceOption
		for i := range 10 {
			eps = append(eps, testbuild.Endpoint(fmt.Sprintf("192.168.2.%d", first+i), "node-2", opts...))
		}
		return slice("svc1", "s1", 80, eps...)
	}
	const clusterIPKey = "IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80"
	for _, tc := range []struct {
		name string
		// change is applied after the service and ten(10) were set and a Desired call.
		change func(c *Incremental)
		// lbs and remotes are what Changes must name, exactly.
		lbs, remotes []string
	}{{
		name:    "one endpoint of ten replaced",
		change:  func(c *Incremental) { c.SetEndpointSlice(ten(11)) },
		lbs:     []string{clusterIPKey},
		remotes: []string{"192.168.2.10", "192.168.2.20"},
	}, {
		name: "the service and its slice set again unchanged",
		change: func(c *Incremental) {
			c.SetService(service("svc1"))
			c.SetEndpointSlice(ten(10))
		},
	}, {
		// The engine reads terminating, and a ready endpoint is used whatever it says.
		name:   "every endpoint terminating while ready",
		change: func(c *Incremental) { c.SetEndpointSlice(ten(10, testbuild.Terminating(true))) },
	}, {
		name:   "client-IP affinity turned on",
		change: func(c *Incremental) { c.SetService(service("svc1", testbuild.ClientIPAffinity())) },
		lbs:    []string{clusterIPKey},
	}, {
		// The keys differ: the old one goes, the new one comes.
		name: "the service port changed",
		change: func(c *Incremental) {
			c.SetService(testbuild.Service("ns", "svc1", testbuild.ClusterIPs("10.20.30.41"), testbuild.TCPPort("p80", 8080, intstr.FromInt32(80))))
		},
		lbs: []string{clusterIPKey, "IPv4/clusterip 10.20.30.41:8080/TCP ns/svc1:p80"},
	}, {
		name:    "the slice deleted",
		change:  func(c *Incremental) { c.DeleteEndpointSlice("ns", "s1") },
		lbs:     []string{clusterIPKey},
		remotes: []string{"192.168.2.10", "192.168.2.11", "192.168.2.12", "192.168.2.13", "192.168.2.14", "192.168.2.15", "192.168.2.16", "192.168.2.17", "192.168.2.18", "192.168.2.19"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewIncremental()
			c.SetNode(nodeName, config(false), nil, view(false, ws2022))
			c.SetService(service("svc1"))
			c.SetEndpointSlice(ten(10))
			c.Desired()
			tc.change(c)
			c.Desired()
			ch := c.Changes()
			var lbs, remotes []string
			for _, k := range ch.LoadBalancers {
				lbs = append(lbs, k.String())
			}
			for _, ip := range ch.RemoteEndpoints {
				remotes = append(remotes, ip.String())
			}
			slices.Sort(lbs)
			slices.Sort(remotes)
			if ch.Everything || !slices.Equal(lbs, tc.lbs) || !slices.Equal(remotes, tc.remotes) {
				t.Errorf("Changes named keys %q and addresses %q (everything: %v), want keys %q and addresses %q", lbs, remotes, ch.Everything, tc.lbs, tc.remotes)
			}
			// A load balancer left as it was keeps one list of backends: the desired state's is
			// the contribution's, not an equal copy of it kept beside it.
			for key, lb := range c.desired.LoadBalancers {
				if b := c.lbs[key].pick().lb.Backends; len(b) > 0 && &b[0] != &lb.Backends[0] {
					t.Errorf("%s: the desired load balancer and the service's contribution hold two lists of backends", key)
				}
			}
		})
	}
}
