package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/winproxy/winproxy/agent/hns"
)

// TestIncrementalSteps runs the multi-step scenarios through one Incremental and checks
// each step against both the expectation and a full Compute.
func TestIncrementalSteps(t *testing.T) {
	type step struct {
		do      func(c *Incremental, in *Input)
		lbs     []string
		remotes []string
	}
	l1, l2 := localEP("EP-L1", "192.168.1.5"), localEP("EP-L2", "192.168.1.6")
	for _, tc := range []struct {
		name  string
		in    Input
		steps []step
	}{
		{
			name: "scenario-26-itp-local-clusterip",
			in: Input{NodeName: nodeName, Config: config(false), HNS: view(false, ws2022, l1),
				Services:       []*corev1.Service{service("svc1", itpLocal)},
				EndpointSlices: []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""})}},
			steps: []step{
				{lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1]"}},
				{do: func(c *Incremental, in *Input) {
					in.HNS.Endpoints = append(in.HNS.Endpoints, l2)
					in.EndpointSlices = []*discoveryv1.EndpointSlice{slice("svc1", "s1", 80, ep{"192.168.1.5", nodeName, ""}, ep{"192.168.1.6", nodeName, ""})}
					c.SetNode(in.NodeName, in.Config, nil, nil, in.HNS)
					c.SetEndpointSlice(in.EndpointSlices[0])
				}, lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.1.6@EP-L2]"}},
				{do: func(c *Incremental, in *Input) {
					in.EndpointSlices = append(in.EndpointSlices, slice("svc1", "s2", 80, ep{"192.168.2.3", "node-2", ""}))
					c.SetEndpointSlice(in.EndpointSlices[1])
				}, lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.1.5@EP-L1 192.168.1.6@EP-L2]"}},
			},
		},
		{
			name: "scenario-19-deleting-one-sharer-keeps-the-remote-endpoint",
			in: Input{NodeName: nodeName, Config: config(false), HNS: view(false, ws2022),
				Services: []*corev1.Service{service("svc1"), service("svc2", clusterIPs("10.20.30.42"))},
				EndpointSlices: []*discoveryv1.EndpointSlice{
					slice("svc1", "s1", 80, ep{"192.168.2.3", "node-2", ""}), slice("svc2", "s2", 80, ep{"192.168.2.3", "node-2", ""})}},
			steps: []step{
				{lbs: []string{
					"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
					"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				}, remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}},
				{do: func(c *Incremental, in *Input) {
					in.Services, in.EndpointSlices = in.Services[:1], in.EndpointSlices[:1]
					c.DeleteService("ns", "svc2")
					c.DeleteEndpointSlice("ns", "s2")
				}, lbs: []string{"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]"},
					remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}},
				{do: func(c *Incremental, in *Input) {
					in.EndpointSlices = nil
					c.DeleteEndpointSlice("ns", "s1")
				}},
			},
		},
		{
			name: "scenario-31-remote-endpoint-replaced-by-a-local-one",
			in: Input{NodeName: nodeName, Config: config(false), HNS: view(false, ws2022),
				Services: []*corev1.Service{service("svc1"), service("svc2", clusterIPs("10.20.30.42"))},
				EndpointSlices: []*discoveryv1.EndpointSlice{
					slice("svc1", "s1", 80, ep{"192.168.2.3", "node-2", ""}), slice("svc2", "s2", 80, ep{"192.168.2.3", "node-2", ""})}},
			steps: []step{
				{lbs: []string{
					"IPv4/clusterip 10.20.30.41:80/TCP ns/svc1:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
					"IPv4/clusterip 10.20.30.42:80/TCP ns/svc2:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3]",
				}, remotes: []string{"192.168.2.3 mac=02-11-c0-a8-02-03"}},
				{do: func(c *Incremental, in *Input) {
					in.HNS.Endpoints = []hns.Endpoint{localEP("EP-B", "192.168.2.3")}
					in.Services = append(in.Services, service("svc3", clusterIPs("10.20.30.43")))
					in.EndpointSlices = []*discoveryv1.EndpointSlice{slice("svc3", "s3", 80, ep{"192.168.2.3", nodeName, ""})}
					c.SetNode(in.NodeName, in.Config, nil, nil, in.HNS)
					c.SetService(in.Services[2])
					c.DeleteEndpointSlice("ns", "s1")
					c.DeleteEndpointSlice("ns", "s2")
					c.SetEndpointSlice(in.EndpointSlices[0])
				}, lbs: []string{"IPv4/clusterip 10.20.30.43:80/TCP ns/svc3:p80 int=80 flags=0 pm=0 svip=- be=[192.168.2.3@EP-B]"}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			c := NewIncremental()
			c.SetNode(in.NodeName, in.Config, nil, nil, in.HNS)
			for _, s := range in.Services {
				c.SetService(s)
			}
			for _, s := range in.EndpointSlices {
				c.SetEndpointSlice(s)
			}
			for i, st := range tc.steps {
				if st.do != nil {
					st.do(c, &in)
				}
				d := c.Desired()
				if diff := cmp.Diff(st.lbs, lbs(d)); diff != "" {
					t.Errorf("step %d: load balancers (-want +got):\n%s", i, diff)
				}
				if diff := cmp.Diff(st.remotes, remotes(d)); diff != "" {
					t.Errorf("step %d: remote endpoints (-want +got):\n%s", i, diff)
				}
				full := Compute(in)
				if diff := cmp.Diff(lbs(full), lbs(d)); diff != "" {
					t.Errorf("step %d: incremental differs from full computation (-full +incremental):\n%s", i, diff)
				}
				if diff := cmp.Diff(remotes(full), remotes(d)); diff != "" {
					t.Errorf("step %d: incremental remotes differ from full computation (-full +incremental):\n%s", i, diff)
				}
			}
		})
	}
}

func TestComputeIsDeterministic(t *testing.T) {
	in := Input{NodeName: nodeName, Config: withHC(config(true)), HNS: view(true, ws2022, sourceVIPEP(), rootEP("192.168.1.1"), localEP("EP-L1", "192.168.1.5")),
		Services: []*corev1.Service{service("svc1", loadBalancer(3001, "11.21.31.41")), service("svc2", clusterIPs("10.20.30.42"), loadBalancer(3002, "11.21.31.41"))},
		EndpointSlices: []*discoveryv1.EndpointSlice{
			slice("svc1", "b", 80, ep{"192.168.2.3", "node-2", ""}), slice("svc1", "a", 80, ep{"192.168.1.5", nodeName, ""}),
			slice("svc2", "c", 80, ep{"192.168.2.4", "node-2", ""}),
		}}
	first := Compute(in)
	// Reverse every input order.
	rev := in
	rev.Services = []*corev1.Service{in.Services[1], in.Services[0]}
	rev.EndpointSlices = []*discoveryv1.EndpointSlice{in.EndpointSlices[2], in.EndpointSlices[1], in.EndpointSlices[0]}
	second := Compute(rev)
	if diff := cmp.Diff(lbs(first), lbs(second)); diff != "" {
		t.Errorf("input order changed the result (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(remotes(first), remotes(second)); diff != "" {
		t.Errorf("input order changed remotes (-first +second):\n%s", diff)
	}
}
