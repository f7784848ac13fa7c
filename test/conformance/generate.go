package conformance

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winproxy/winproxy/agent/hns"
)

// Generate builds the cluster of a seed: a node under test (node-0) with a
// few remote nodes, a random HNS host and proxy settings, services of every
// kind with their EndpointSlices, and a sequence of changes as a cluster
// sees them (endpoints becoming ready or terminating, pods moving, services
// edited, added and deleted, the CNI creating and recreating pod
// endpoints, the proxy restarting).
//
// The clusters are valid Kubernetes objects and avoid what upstream itself
// handles nondeterministically, so that upstream's answer is well defined:
// no two services claim one frontend, and an IP listed twice across slices
// is listed once terminating and once not (within a slice, any duplicate).
func Generate(seed uint64) *Cluster {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x5eed)), pods: map[string]*pod{}, services: map[string]*svcState{},
		frontends: map[frontendUse]bool{}}
	g.node(seed)
	var first Step
	for range 2 + g.r.IntN(9) {
		g.addService(&first)
	}
	g.c.Steps = append(g.c.Steps, first)
	for range 1 + g.r.IntN(5) {
		var s Step
		g.cur = &s
		g.change(&s)
		g.c.Steps = append(g.c.Steps, s)
	}
	return g.c
}

// hnsVersions are the simulated hosts: Windows Server 2019, a release
// without DSR, 2022 and 2025 (the only one with modify).
var hnsVersions = []hns.Version{{Major: 9, Minor: 5}, {Major: 10, Minor: 1}, {Major: 13, Minor: 3}, {Major: 15, Minor: 5}}

const (
	v4 = "IPv4"
	v6 = "IPv6"
	// rootEndpoint is the host's endpoint health-check LBs forward to.
	rootEndpoint  = "cbr0"
	calicoEP      = "Calico_ep"
	hostMAC       = "00-15-5D-AA-BB-CC"
	nodeUnderTest = "node-0"
)

type gen struct {
	r        *rand.Rand
	c        *Cluster
	overlay  bool
	dual     bool
	nodes    int // remote nodes are 1..nodes
	pods     map[string]*pod
	podSeq   []int // per node
	services map[string]*svcState
	svcSeq   int
	nodePort int32
	hcPort   int32
	extIP    int
	ingIP    int
	public   int
	epGen    int
	// frontends in use: no two services may claim one (upstream resolves
	// that by map order).
	frontends map[frontendUse]bool
	ingress   []string // ingress IPs in use, for sharing
	// cur is the step being drawn; nil while drawing the cluster as the
	// proxy first finds it.
	cur *Step
}

type frontendUse struct {
	vip   string
	proto corev1.Protocol
	port  int32
}

// pod is a backend: a pod (with a CNI endpoint on node-0 once it exists), a
// host-network pod (the node's IP), or an address outside the cluster.
type pod struct {
	key  string
	node int // -1: outside the cluster
	ips  map[string]string
	cni  string // name of its CNI endpoint on node-0, "" if none (yet)
	// hostNet pods have the node's IP and never an HNS endpoint.
	hostNet bool
}

type svcState struct {
	svc    *corev1.Service
	slices []*discoveryv1.EndpointSlice
}

func (g *gen) pick(p float64) bool { return g.r.Float64() < p }

// Addresses are written in canonical form, as Kubernetes and HNS report
// them (upstream compares them as strings).

func nodeIP(k int, fam string) string {
	if fam == v6 {
		return addr("fd00::%x", k+1)
	}
	return fmt.Sprintf("10.0.0.%d", k+1)
}

func podCIDR(k int, fam string) string {
	if fam == v6 {
		return netip.PrefixFrom(netip.MustParseAddr(addr("fd10:0:%x::", k)), 48).String()
	}
	return fmt.Sprintf("10.%d.0.0/16", 100+k)
}

func podIP(k, i int, fam string) string {
	if fam == v6 {
		return addr("fd10:0:%x::%x", k, i)
	}
	return fmt.Sprintf("10.%d.%d.%d", 100+k, i/250, i%250+2)
}

// addr formats an address and returns its canonical form.
func addr(format string, args ...any) string {
	return netip.MustParseAddr(fmt.Sprintf(format, args...)).String()
}

// node sets up the node under test, its host and proxy flags.
func (g *gen) node(seed uint64) {
	r := g.r
	v := hnsVersions[r.IntN(len(hnsVersions))]
	caps := hns.CapabilitiesFor(v)
	g.overlay = g.pick(0.4)
	g.nodes = 2 + r.IntN(4)
	g.podSeq = make([]int, g.nodes+1)
	c := &Cluster{
		Name:       fmt.Sprintf("seed-%d", seed),
		NodeName:   nodeUnderTest,
		NodeIPs:    map[string]string{v4: nodeIP(0, v4)},
		Families:   []string{v4},
		HNSVersion: v.String(),
		Features: Features{DSR: caps.DSR, SessionAffinity: caps.SessionAffinity,
			IPv6DualStack: caps.IPv6DualStack, Modify: caps.ModifyLoadBalancer},
		HostMAC:     hostMAC,
		HealthzPort: 10256,
		Network:     Network{ID: "NETWORK-1", Name: "cbr0", Type: "L2Bridge"},
	}
	g.c = c
	// DSR on a host without it makes upstream refuse to start: keep that
	// rare, it hides everything else.
	c.EnableDSR = g.pick(0.4) && (caps.DSR || g.pick(0.3))
	if g.overlay {
		c.Network = Network{ID: "NETWORK-1", Name: "vxlan0", Type: "Overlay"}
		for k := 1; k <= g.nodes; k++ {
			// The last node's route is sometimes missing (not there yet):
			// its pods then count as outside the cluster.
			if k == g.nodes && g.pick(0.2) {
				continue
			}
			c.Network.Routes = append(c.Network.Routes, Route{Prefix: podCIDR(k, v4), ProviderAddress: nodeIP(k, v4), IsolationID: 4096})
		}
		c.SourceVIP = "10.100.255.254"
		if g.pick(0.3) {
			c.SourceVIP, c.SourceVIPEndpoint = "10.100.255.253", calicoEP
			c.Endpoints = append(c.Endpoints, LocalEndpoint{Name: calicoEP, IPs: []string{c.SourceVIP}, MAC: "00-15-5D-00-00-01"})
		}
	} else if caps.IPv6DualStack && g.pick(0.5) {
		g.dual = true
		c.Families = []string{v4, v6}
		c.NodeIPs[v6] = nodeIP(0, v6)
	}
	if g.pick(0.6) {
		c.ForwardHealthCheckVIP = true
		c.RootEndpointName = rootEndpoint
		if g.pick(0.1) {
			c.HealthzPort = 10266
		}
		if g.pick(0.9) {
			ips := []string{"10.100.0.1"}
			if g.dual {
				ips = append(ips, podIP(0, 1, v6))
			}
			c.Endpoints = append(c.Endpoints, LocalEndpoint{Name: rootEndpoint, IPs: ips, MAC: "00-15-5D-00-00-02"})
		}
	}
}

// families of a new service.
func (g *gen) serviceFamilies() []string {
	if !g.dual {
		return []string{v4}
	}
	switch g.r.IntN(4) {
	case 0:
		return []string{v6}
	case 1:
		return []string{v4}
	case 2:
		return []string{v6, v4}
	}
	return []string{v4, v6}
}

func (g *gen) claim(vip string, proto corev1.Protocol, port int32) bool {
	u := frontendUse{vip, proto, port}
	if g.frontends[u] {
		return false
	}
	g.frontends[u] = true
	return true
}

func (g *gen) release(vip string, proto corev1.Protocol, port int32) {
	delete(g.frontends, frontendUse{vip, proto, port})
}

var servicePorts = []int32{80, 443, 53, 8080, 9090, 5000, 6379}

// addService adds a service with its slices to step s.
func (g *gen) addService(s *Step) {
	r := g.r
	g.svcSeq++
	name := fmt.Sprintf("svc-%d", g.svcSeq)
	ns := []string{"default", "apps"}[r.IntN(2)]
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
	st := &svcState{svc: svc}
	g.services[ns+"/"+name] = st
	switch x := r.IntN(20); {
	case x == 0:
		svc.Spec.Type = corev1.ServiceTypeExternalName
		svc.Spec.ExternalName = "example.com"
		s.Services = append(s.Services, svc)
		return
	case x == 1:
		svc.Spec.Type, svc.Spec.ClusterIP, svc.Spec.ClusterIPs = corev1.ServiceTypeClusterIP, corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	case x < 9:
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	case x < 14:
		svc.Spec.Type = corev1.ServiceTypeNodePort
	default:
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	}
	fams := g.serviceFamilies()
	for _, f := range fams {
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, corev1.IPFamily(f))
	}
	if len(fams) > 1 {
		svc.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyPreferDualStack)
	}
	if svc.Spec.ClusterIP == "" {
		for _, f := range fams {
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, clusterIP(g.svcSeq, f))
		}
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
	nports := 1 + r.IntN(3)
	for i := range nports {
		p := corev1.ServicePort{Name: fmt.Sprintf("p%d", i), Protocol: corev1.ProtocolTCP}
		if nports == 1 && g.pick(0.3) {
			p.Name = ""
		}
		if g.pick(0.25) {
			p.Protocol = corev1.ProtocolUDP
		}
		for {
			p.Port = servicePorts[r.IntN(len(servicePorts))]
			if !slices.ContainsFunc(svc.Spec.Ports, func(o corev1.ServicePort) bool { return o.Port == p.Port && o.Protocol == p.Protocol }) {
				break
			}
		}
		if g.pick(0.3) {
			p.TargetPort = intstr.FromString("tp-" + p.Name)
		} else {
			p.TargetPort = intstr.FromInt32([]int32{p.Port, 8080, 8443, 9376}[r.IntN(4)])
		}
		svc.Spec.Ports = append(svc.Spec.Ports, p)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		g.editService(svc, true)
	}
	s.Services = append(s.Services, svc)
	g.makeSlices(st, s)
}

func clusterIP(i int, fam string) string {
	if fam == v6 {
		return addr("fd00:96::%x", i)
	}
	return fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)
}

// editService (re)draws the service's type-dependent settings: node ports,
// external IPs, ingress IPs, traffic policies, affinity, annotations.
// Frontends it held are released first.
func (g *gen) editService(svc *corev1.Service, fresh bool) {
	r := g.r
	if !fresh {
		g.releaseFrontends(svc)
	}
	spec := &svc.Spec
	if !fresh && g.pick(0.3) {
		spec.Type = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer}[r.IntN(3)]
	}
	fams := familiesOf(svc)
	external := spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if !external {
			p.NodePort = 0
		} else if p.NodePort == 0 || g.pick(0.1) {
			g.nodePort++
			p.NodePort = 30000 + g.nodePort
		}
	}
	spec.ExternalIPs = nil
	if g.pick(0.15) {
		for _, f := range fams {
			g.extIP++
			ip := fmt.Sprintf("192.0.2.%d", g.extIP%250+1)
			if f == v6 {
				ip = addr("2001:db8:2::%x", g.extIP)
			}
			spec.ExternalIPs = append(spec.ExternalIPs, ip)
		}
	}
	spec.ExternalTrafficPolicy, spec.HealthCheckNodePort = "", 0
	if external || len(spec.ExternalIPs) > 0 {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		if g.pick(0.4) {
			spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		g.hcPort++
		spec.HealthCheckNodePort = 32000 + g.hcPort
	}
	spec.InternalTrafficPolicy = new(corev1.ServiceInternalTrafficPolicyCluster)
	if g.pick(0.2) {
		spec.InternalTrafficPolicy = new(corev1.ServiceInternalTrafficPolicyLocal)
	}
	spec.SessionAffinity, spec.SessionAffinityConfig = corev1.ServiceAffinityNone, nil
	if g.pick(0.2) {
		spec.SessionAffinity = corev1.ServiceAffinityClientIP
		spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: new(int32(10800))}}
	}
	svc.Annotations = nil
	if g.pick(0.15) {
		svc.Annotations = map[string]string{"preserve-destination": "true"}
	}
	if g.pick(0.1) {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations["winProxyOptimization"] = []string{"DISABLED", "disabled"}[r.IntN(2)]
	}
	svc.Status = corev1.ServiceStatus{}
	if spec.Type == corev1.ServiceTypeLoadBalancer && g.pick(0.9) {
		for _, f := range fams {
			for range 1 + r.IntN(2) {
				ing := corev1.LoadBalancerIngress{IP: g.ingressIP(svc, f)}
				if ing.IP == "" {
					continue
				}
				if g.pick(0.1) {
					ing.IPMode = new(corev1.LoadBalancerIPModeProxy)
				} else if g.pick(0.3) {
					ing.IPMode = new(corev1.LoadBalancerIPModeVIP)
				}
				svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, ing)
			}
		}
	}
	g.claimFrontends(svc)
}

func familiesOf(svc *corev1.Service) []string {
	var out []string
	for _, f := range svc.Spec.IPFamilies {
		out = append(out, string(f))
	}
	return out
}

// ingressIP picks an ingress IP for svc: sometimes one another service
// already uses (cloud load balancers share IPs across services on other
// ports), if none of svc's ports is taken there.
func (g *gen) ingressIP(svc *corev1.Service, fam string) string {
	if g.pick(0.3) {
		for _, ip := range g.ingress {
			if isV6(ip) != (fam == v6) || slices.ContainsFunc(svc.Status.LoadBalancer.Ingress, func(i corev1.LoadBalancerIngress) bool { return i.IP == ip }) {
				continue
			}
			if g.portsFree(svc, ip) {
				return ip
			}
		}
	}
	g.ingIP++
	ip := fmt.Sprintf("203.0.113.%d", g.ingIP%250+1)
	if fam == v6 {
		ip = addr("2001:db8:113::%x", g.ingIP)
	}
	g.ingress = append(g.ingress, ip)
	return ip
}

func isV6(ip string) bool { return netip.MustParseAddr(ip).Is6() }

func (g *gen) portsFree(svc *corev1.Service, ip string) bool {
	for _, p := range svc.Spec.Ports {
		if g.frontends[frontendUse{ip, p.Protocol, p.Port}] {
			return false
		}
	}
	return true
}

// claimFrontends records the frontends of svc's ingress and external IPs.
// Health-check LBs are shared by design and need no claim.
func (g *gen) claimFrontends(svc *corev1.Service) {
	for _, ip := range vipsOf(svc) {
		for _, p := range svc.Spec.Ports {
			g.claim(ip, p.Protocol, p.Port)
		}
	}
}

func (g *gen) releaseFrontends(svc *corev1.Service) {
	for _, ip := range vipsOf(svc) {
		for _, p := range svc.Spec.Ports {
			g.release(ip, p.Protocol, p.Port)
		}
	}
}

func vipsOf(svc *corev1.Service) []string {
	out := slices.Clone(svc.Spec.ExternalIPs)
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		out = append(out, ing.IP)
	}
	return out
}

// makeSlices creates the service's slices: one or two per family.
func (g *gen) makeSlices(st *svcState, s *Step) {
	svc := st.svc
	fams := familiesOf(svc)
	if len(fams) == 0 {
		fams = []string{v4} // headless: slices of the primary family
	}
	// Pods serve every family of the service.
	var eps []epRef
	for range g.r.IntN(7) {
		e := g.newEndpoint()
		if !slices.ContainsFunc(eps, func(o epRef) bool { return o.p == e.p }) {
			eps = append(eps, e)
		}
	}
	for _, f := range fams {
		n := 1
		if g.pick(0.3) {
			n = 2
		}
		ports := g.slicePorts(svc)
		for j := range n {
			sl := &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: fmt.Sprintf("%s-%s-%d", svc.Name, f[2:], j),
					Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
				AddressType: discoveryv1.AddressType(f),
				Ports:       ports,
			}
			if j > 0 && g.pick(0.3) {
				// A rollout: the named target port resolves to another
				// number in the new pods' slice.
				sl.Ports = g.slicePorts(svc)
			}
			for i, e := range eps {
				if i%n == j {
					sl.Endpoints = append(sl.Endpoints, g.endpoint(e, f))
				}
			}
			plain := sl.DeepCopy()
			if j > 0 && len(st.slices) > 0 {
				g.maybeReuse(st.slices[len(st.slices)-1], sl)
			}
			g.maybeDuplicate(sl)
			if ambiguous(append(slices.Clone(st.slices), sl)) {
				sl = plain
			}
			st.slices = append(st.slices, sl)
			s.Slices = append(s.Slices, sl)
		}
	}
}

func (g *gen) slicePorts(svc *corev1.Service) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for _, p := range svc.Spec.Ports {
		port := p.TargetPort.IntVal
		if p.TargetPort.Type == intstr.String || g.pick(0.05) {
			port = []int32{8080, 8081, 9000}[g.r.IntN(3)]
		}
		out = append(out, discoveryv1.EndpointPort{Name: new(p.Name), Protocol: new(p.Protocol), Port: new(port)})
	}
	return out
}

// epRef is a pod in a slice, with its conditions.
type epRef struct {
	p    *pod
	cond conditions
}

type conditions struct{ ready, serving, terminating *bool }

// conditionSets are realistic endpoint states: ready; not ready (failing
// its probe); terminating while still serving; terminating and no longer
// serving; conditions unset (defaults: ready and serving).
var conditionSets = []conditions{
	{new(true), new(true), new(false)},
	{new(false), new(false), new(false)},
	{new(false), new(true), new(true)},
	{new(false), new(false), new(true)},
	{},
}

func (g *gen) conditions() conditions {
	switch x := g.r.IntN(100); {
	case x < 65:
		return conditionSets[0]
	case x < 75:
		return conditionSets[1]
	case x < 85:
		return conditionSets[2]
	case x < 95:
		return conditionSets[3]
	}
	return conditionSets[4]
}

// newEndpoint picks a backend: a new local or remote pod, a host-network
// pod, an address outside the cluster, or a pod another service uses.
func (g *gen) newEndpoint() epRef {
	e := epRef{cond: g.conditions()}
	switch x := g.r.IntN(100); {
	case x < 12 && len(g.pods) > 0:
		keys := sortedKeys(g.pods)
		e.p = g.pods[keys[g.r.IntN(len(keys))]]
	case x < 45:
		e.p = g.newPod(0)
	case x < 85:
		e.p = g.newPod(1 + g.r.IntN(g.nodes))
	case x < 93:
		k := g.r.IntN(g.nodes + 1)
		if k == 0 && g.pick(0.5) {
			k = 1
		}
		e.p = g.hostPod(k)
	default:
		g.public++
		key := fmt.Sprintf("public-%d", g.public)
		e.p = &pod{key: key, node: -1, ips: map[string]string{v4: fmt.Sprintf("198.51.100.%d", g.public%250+1), v6: addr("2001:db8:100::%x", g.public)}}
		g.pods[key] = e.p
	}
	return e
}

func (g *gen) newPod(k int) *pod {
	i := g.podSeq[k]
	g.podSeq[k]++
	p := &pod{key: fmt.Sprintf("pod-%d-%d", k, i), node: k, ips: map[string]string{v4: podIP(k, i+2, v4), v6: podIP(k, i+2, v6)}}
	g.pods[p.key] = p
	if k == 0 && g.pick(0.9) {
		if g.cur == nil {
			g.c.Endpoints = append(g.c.Endpoints, g.cniEndpoint(p))
		} else {
			g.cur.AddEndpoints = append(g.cur.AddEndpoints, g.cniEndpoint(p))
		}
	}
	return p
}

func (g *gen) hostPod(k int) *pod {
	key := fmt.Sprintf("host-%d", k)
	if p, ok := g.pods[key]; ok {
		return p
	}
	p := &pod{key: key, node: k, hostNet: true, ips: map[string]string{v4: nodeIP(k, v4), v6: nodeIP(k, v6)}}
	g.pods[key] = p
	return p
}

// cniEndpoint gives a local pod its HNS endpoint (a new name each time: the
// CNI names endpoints after the sandbox).
func (g *gen) cniEndpoint(p *pod) LocalEndpoint {
	g.epGen++
	p.cni = fmt.Sprintf("%s-ep%d", p.key, g.epGen)
	ep := LocalEndpoint{Name: p.cni, IPs: []string{p.ips[v4]}}
	if g.dual {
		ep.IPs = append(ep.IPs, p.ips[v6])
	}
	return ep
}

func (g *gen) endpoint(e epRef, fam string) discoveryv1.Endpoint {
	ep := discoveryv1.Endpoint{Addresses: []string{e.p.ips[fam]},
		Conditions: discoveryv1.EndpointConditions{Ready: e.cond.ready, Serving: e.cond.serving, Terminating: e.cond.terminating}}
	if e.p.node >= 0 {
		ep.NodeName = new(fmt.Sprintf("node-%d", e.p.node))
	}
	return ep
}

// maybeDuplicate lists an address twice in a slice now and then: a new pod
// that got the IP of a terminating one.
func (g *gen) maybeDuplicate(sl *discoveryv1.EndpointSlice) {
	if len(sl.Endpoints) == 0 || !g.pick(0.08) {
		return
	}
	i := g.r.IntN(len(sl.Endpoints))
	dup := *sl.Endpoints[i].DeepCopy()
	c := g.conditions()
	dup.Conditions = discoveryv1.EndpointConditions{Ready: c.ready, Serving: c.serving, Terminating: c.terminating}
	at := g.r.IntN(len(sl.Endpoints) + 1)
	sl.Endpoints = slices.Insert(sl.Endpoints, at, dup)
}

// maybeReuse lists in sl, now and then, an address prev lists too: a new
// pod got a terminating pod's IP during a rollout, maybe listening on
// another port.
func (g *gen) maybeReuse(prev, sl *discoveryv1.EndpointSlice) {
	if len(prev.Endpoints) == 0 || !g.pick(0.15) {
		return
	}
	e := *prev.Endpoints[g.r.IntN(len(prev.Endpoints))].DeepCopy()
	c := g.conditions()
	e.Conditions = discoveryv1.EndpointConditions{Ready: c.ready, Serving: c.serving, Terminating: c.terminating}
	sl.Endpoints = append(sl.Endpoints, e)
}

// change draws the next step: one to three changes, sometimes a restart.
func (g *gen) change(s *Step) {
	for range 1 + g.r.IntN(3) {
		switch x := g.r.IntN(100); {
		case x < 30:
			g.changeEndpoints(s)
		case x < 45:
			g.editSomeService(s)
		case x < 55:
			g.addService(s)
		case x < 63:
			g.deleteService(s)
		case x < 75:
			g.cniCatchesUp(s)
		case x < 85:
			g.cniRecreates(s)
		default:
			g.deletePod(s)
		}
	}
	s.Restart = g.pick(0.12)
}

// adding reports whether the step creates the endpoint name.
func adding(s *Step, name string) bool {
	return slices.ContainsFunc(s.AddEndpoints, func(e LocalEndpoint) bool { return e.Name == name })
}

// someSlice picks a slice, or nil.
func (g *gen) someSlice() (*svcState, int) {
	var cands []*svcState
	for _, k := range sortedKeys(g.services) {
		if len(g.services[k].slices) > 0 {
			cands = append(cands, g.services[k])
		}
	}
	if len(cands) == 0 {
		return nil, 0
	}
	st := cands[g.r.IntN(len(cands))]
	return st, g.r.IntN(len(st.slices))
}

// changeEndpoints changes a slice: conditions flip, endpoints come and go.
func (g *gen) changeEndpoints(s *Step) {
	st, i := g.someSlice()
	if st == nil {
		return
	}
	sl := st.slices[i].DeepCopy()
	fam := string(sl.AddressType)
	switch x := g.r.IntN(3); {
	case x == 0 && len(sl.Endpoints) > 0:
		j := g.r.IntN(len(sl.Endpoints))
		c := g.conditions()
		sl.Endpoints[j].Conditions = discoveryv1.EndpointConditions{Ready: c.ready, Serving: c.serving, Terminating: c.terminating}
	case x == 1 && len(sl.Endpoints) > 0:
		j := g.r.IntN(len(sl.Endpoints))
		sl.Endpoints = slices.Delete(sl.Endpoints, j, j+1)
	default:
		e := g.newEndpoint()
		if e.p.ips[fam] != "" {
			sl.Endpoints = append(sl.Endpoints, g.endpoint(e, fam))
		}
	}
	next := slices.Clone(st.slices)
	next[i] = sl
	if ambiguous(next) {
		return
	}
	st.slices[i] = sl
	s.Slices = append(s.Slices, sl)
}

func (g *gen) editSomeService(s *Step) {
	keys := sortedKeys(g.services)
	if len(keys) == 0 {
		return
	}
	st := g.services[keys[g.r.IntN(len(keys))]]
	if st.svc.Spec.ClusterIP == "" || st.svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return
	}
	svc := st.svc.DeepCopy()
	g.releaseFrontends(st.svc)
	g.editService(svc, false)
	st.svc = svc
	s.Services = append(s.Services, svc)
}

func (g *gen) deleteService(s *Step) {
	keys := sortedKeys(g.services)
	if len(keys) == 0 {
		return
	}
	k := keys[g.r.IntN(len(keys))]
	st := g.services[k]
	g.releaseFrontends(st.svc)
	delete(g.services, k)
	s.DeleteServices = append(s.DeleteServices, k)
	for _, sl := range st.slices {
		s.DeleteSlices = append(s.DeleteSlices, sl.Namespace+"/"+sl.Name)
	}
}

// cniCatchesUp creates the HNS endpoint of a local pod that had none.
func (g *gen) cniCatchesUp(s *Step) {
	for _, k := range sortedKeys(g.pods) {
		p := g.pods[k]
		if p.node == 0 && !p.hostNet && p.cni == "" {
			s.AddEndpoints = append(s.AddEndpoints, g.cniEndpoint(p))
			return
		}
	}
}

// cniRecreates replaces a local pod's HNS endpoint by a new one with the
// same address (a sandbox restart): LBs must follow the new ID.
func (g *gen) cniRecreates(s *Step) {
	var cands []*pod
	for _, k := range sortedKeys(g.pods) {
		if p := g.pods[k]; p.cni != "" && !adding(s, p.cni) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return
	}
	p := cands[g.r.IntN(len(cands))]
	s.RemoveEndpoints = append(s.RemoveEndpoints, p.cni)
	s.AddEndpoints = append(s.AddEndpoints, g.cniEndpoint(p))
}

// deletePod removes a pod from every slice; a local pod's HNS endpoint goes
// with it.
func (g *gen) deletePod(s *Step) {
	keys := sortedKeys(g.pods)
	if len(keys) == 0 {
		return
	}
	p := g.pods[keys[g.r.IntN(len(keys))]]
	if p.hostNet || p.node < 0 {
		return
	}
	// The new slices first: a deletion that would leave upstream's answer
	// to map order is not made.
	type update struct {
		st *svcState
		i  int
		sl *discoveryv1.EndpointSlice
	}
	var updates []update
	for _, k := range sortedKeys(g.services) {
		st := g.services[k]
		next := slices.Clone(st.slices)
		for i, sl := range st.slices {
			ip := p.ips[string(sl.AddressType)]
			if !slices.ContainsFunc(sl.Endpoints, func(e discoveryv1.Endpoint) bool { return e.Addresses[0] == ip }) {
				continue
			}
			n := sl.DeepCopy()
			n.Endpoints = slices.DeleteFunc(n.Endpoints, func(e discoveryv1.Endpoint) bool { return e.Addresses[0] == ip })
			next[i] = n
			updates = append(updates, update{st, i, n})
		}
		if ambiguous(next) {
			return
		}
	}
	for _, u := range updates {
		u.st.slices[u.i] = u.sl
		s.Slices = append(s.Slices, u.sl)
	}
	delete(g.pods, p.key)
	switch {
	case p.cni == "":
	case adding(s, p.cni):
		// Created in this very step: it is simply never created.
		s.AddEndpoints = slices.DeleteFunc(s.AddEndpoints, func(e LocalEndpoint) bool { return e.Name == p.cni })
	default:
		s.RemoveEndpoints = append(s.RemoveEndpoints, p.cni)
	}
}

// ambiguous reports whether kube-proxy's endpoint-slice cache would give a
// result that depends on the order it reads the service's slices in (a
// map's): for one address and port, entries that are not terminating in
// two slices, or only terminating entries in two slices. (Within a slice
// the order is fixed: the last non-terminating entry wins.)
func ambiguous(sls []*discoveryv1.EndpointSlice) bool {
	type key struct {
		fam, name string
		port      int32
		ip        string
	}
	running, terminating := map[key]map[int]bool{}, map[key]map[int]bool{}
	add := func(m map[key]map[int]bool, k key, i int) {
		if m[k] == nil {
			m[k] = map[int]bool{}
		}
		m[k][i] = true
	}
	for i, sl := range sls {
		for _, p := range sl.Ports {
			for _, e := range sl.Endpoints {
				k := key{string(sl.AddressType), deref(p.Name), deref(p.Port), e.Addresses[0]}
				if deref(e.Conditions.Terminating) {
					add(terminating, k, i)
				} else {
					add(running, k, i)
				}
			}
		}
	}
	for k, in := range running {
		if len(in) > 1 {
			return true
		}
		delete(terminating, k)
	}
	for _, in := range terminating {
		if len(in) > 1 {
			return true
		}
	}
	return false
}
