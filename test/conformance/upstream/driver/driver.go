//go:build ignore

// This file is not part of winproxy's build: the conformance suite writes it,
// without the line above, into a temporary copy of upstream's
// k8s.io/kubernetes/pkg/proxy/winkernel (see ../build.go) so that it can
// drive upstream's Proxier through its unexported test constructor, the way
// upstream's own proxier_test.go does, against upstream's fake HNS.

package winkernel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/Microsoft/hnslib/hcn"
	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/proxy/apis/config"
	"k8s.io/kubernetes/pkg/proxy/healthcheck"

	fakehcn "upstream/winkernel/testing"
)

// The wire format mirrors test/conformance/wire.go.

type driverCluster struct {
	Name                  string            `json:"name"`
	NodeName              string            `json:"nodeName"`
	NodeIPs               map[string]string `json:"nodeIPs"`
	Families              []string          `json:"families"`
	Network               driverNetwork     `json:"network"`
	Features              driverFeatures    `json:"features"`
	HostMAC               string            `json:"hostMAC"`
	EnableDSR             bool              `json:"enableDSR"`
	SourceVIP             string            `json:"sourceVIP"`
	ForwardHealthCheckVIP bool              `json:"forwardHealthCheckVIP"`
	RootEndpointName      string            `json:"rootEndpointName"`
	HealthzPort           int               `json:"healthzPort"`
	Endpoints             []driverLocalEP   `json:"endpoints"`
	Steps                 []driverStep      `json:"steps"`
	Measure               bool              `json:"measure,omitempty"`
}

type driverNetwork struct {
	ID     string        `json:"id"`
	Name   string        `json:"name"`
	Type   string        `json:"type"`
	Routes []driverRoute `json:"routes"`
}

type driverRoute struct {
	Prefix          string `json:"prefix"`
	ProviderAddress string `json:"providerAddress"`
	IsolationID     uint16 `json:"isolationID"`
}

type driverFeatures struct {
	DSR             bool `json:"dsr"`
	SessionAffinity bool `json:"sessionAffinity"`
	IPv6DualStack   bool `json:"ipv6DualStack"`
	Modify          bool `json:"modify"`
}

// driverLocalEP is an endpoint the CNI (or the host) created; the fake
// names and identifies it by Name.
type driverLocalEP struct {
	Name string   `json:"name"`
	IPs  []string `json:"ips"`
	MAC  string   `json:"mac,omitempty"`
}

type driverStep struct {
	Restart         bool                       `json:"restart,omitempty"`
	AddEndpoints    []driverLocalEP            `json:"addEndpoints,omitempty"`
	RemoveEndpoints []string                   `json:"removeEndpoints,omitempty"`
	Services        []*v1.Service              `json:"services,omitempty"`
	DeleteServices  []string                   `json:"deleteServices,omitempty"`
	Slices          []*discovery.EndpointSlice `json:"slices,omitempty"`
	DeleteSlices    []string                   `json:"deleteSlices,omitempty"`
}

type driverResult struct {
	Name  string             `json:"name"`
	Steps []driverStepResult `json:"steps"`
}

type driverStepResult struct {
	Error         string     `json:"error,omitempty"`
	Endpoints     []driverEP `json:"endpoints"`
	LoadBalancers []driverLB `json:"loadBalancers"`
	Cost          driverCost `json:"cost"`
}

// driverCost is what a step cost upstream (test/conformance/wire.go's Cost).
type driverCost struct {
	HNSReads  int    `json:"hnsReads"`
	HNSWrites int    `json:"hnsWrites"`
	HCN       int    `json:"hcn"`
	CPUNanos  int64  `json:"cpuNanos"`
	FakeNanos int64  `json:"fakeNanos"`
	Allocs    uint64 `json:"allocs"`
	Bytes     uint64 `json:"bytes"`
}

type driverEP struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	IPs             []string `json:"ips"`
	MAC             string   `json:"mac"`
	Remote          bool     `json:"remote"`
	ProviderAddress string   `json:"providerAddress,omitempty"`
}

type driverLB struct {
	ID           string   `json:"id"`
	VIPs         []string `json:"vips"`
	Protocol     uint32   `json:"protocol"`
	InternalPort uint16   `json:"internalPort"`
	ExternalPort uint16   `json:"externalPort"`
	Distribution uint32   `json:"distribution"`
	PortFlags    uint32   `json:"portFlags"`
	Flags        uint32   `json:"flags"`
	SourceVIP    string   `json:"sourceVIP"`
	Endpoints    []string `json:"endpoints"`
}

// RunConformanceDriver reads clusters (JSON values) from in and writes, for
// each, what upstream's fake HNS holds after every step.
func RunConformanceDriver(in io.Reader, out io.Writer) error {
	klog.SetLogger(logr.Discard())
	dec := json.NewDecoder(bufio.NewReader(in))
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	for {
		var c driverCluster
		if err := dec.Decode(&c); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := enc.Encode(runDriverCluster(&c)); err != nil {
			return err
		}
		// The caller waits for each answer before sending the next cluster.
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// driverHcn is upstream's fake HNS with the cluster's HNS feature set (the
// fake's own is fixed), metered: every HcnService call upstream's Proxier
// makes is counted, with what it costs in HCN calls through hnslib (see
// driverMeter), and the time spent inside the fake.
type driverHcn struct {
	*fakehcn.HcnMock
	features hcn.SupportedFeatures
	meter    *driverMeter
}

// driverMeter accumulates a step's cost. The HCN calls of each HcnService
// method are hnslib v0.1.3's (hcn/*.go), which production's hcnImpl calls:
// a list or a lookup is one enumeration plus an open, a query and a close
// of every object it returns; an endpoint create opens the network,
// creates, queries and closes both (5); a load-balancer create 3, an update
// 4, a delete 1; the feature checks read the HNS version once per process
// (GetCachedSupportedFeatures).
type driverMeter struct {
	cost     driverCost
	features bool // the version was read by this process
}

func (m *driverMeter) read(objects int) {
	m.cost.HNSReads++
	m.cost.HCN += 1 + 3*objects
}

func (m *driverMeter) write(hcnCalls int) {
	m.cost.HNSWrites++
	m.cost.HCN += hcnCalls
}

func (m *driverMeter) readFeatures() {
	if !m.features {
		m.features = true
		m.cost.HNSReads++
		m.cost.HCN++
	}
}

// in adds the time since start to the time spent in the fake.
func (m *driverMeter) in(start time.Time) { m.cost.FakeNanos += int64(time.Since(start)) }

// found is 1 for a lookup that found its object, else 0.
func found(err error) int {
	if err != nil {
		return 0
	}
	return 1
}

// distinct counts the IDs of a list (the fake lists a created endpoint
// twice, by ID and by name; HNS once).
func distinct[T any](list []T, id func(T) string) int {
	seen := make(map[string]bool, len(list))
	for _, o := range list {
		seen[id(o)] = true
	}
	return len(seen)
}

func (h driverHcn) GetSupportedFeatures() hcn.SupportedFeatures {
	h.meter.readFeatures()
	return h.features
}

func (h driverHcn) DsrSupported() error {
	h.meter.readFeatures()
	if h.features.DSR {
		return nil
	}
	return fmt.Errorf("DSR Not Supported")
}

func (h driverHcn) Ipv6DualStackSupported() error {
	h.meter.readFeatures()
	if h.features.IPv6DualStack {
		return nil
	}
	return fmt.Errorf("IPV6 DualStack Not Supported")
}

func (h driverHcn) RemoteSubnetSupported() error {
	h.meter.readFeatures()
	return h.HcnMock.RemoteSubnetSupported()
}

func (h driverHcn) GetNetworkByName(name string) (*hcn.HostComputeNetwork, error) {
	defer h.meter.in(time.Now())
	n, err := h.HcnMock.GetNetworkByName(name)
	h.meter.read(found(err))
	return n, err
}

func (h driverHcn) GetNetworkByID(id string) (*hcn.HostComputeNetwork, error) {
	defer h.meter.in(time.Now())
	n, err := h.HcnMock.GetNetworkByID(id)
	h.meter.read(found(err))
	return n, err
}

func endpointID(ep hcn.HostComputeEndpoint) string { return ep.Id }

func (h driverHcn) ListEndpoints() ([]hcn.HostComputeEndpoint, error) {
	defer h.meter.in(time.Now())
	eps, err := h.HcnMock.ListEndpoints()
	h.meter.read(distinct(eps, endpointID))
	return eps, err
}

func (h driverHcn) ListEndpointsOfNetwork(networkID string) ([]hcn.HostComputeEndpoint, error) {
	defer h.meter.in(time.Now())
	eps, err := h.HcnMock.ListEndpointsOfNetwork(networkID)
	h.meter.read(distinct(eps, endpointID))
	return eps, err
}

func (h driverHcn) GetEndpointByID(id string) (*hcn.HostComputeEndpoint, error) {
	defer h.meter.in(time.Now())
	ep, err := h.HcnMock.GetEndpointByID(id)
	h.meter.read(found(err))
	return ep, err
}

func (h driverHcn) GetEndpointByName(name string) (*hcn.HostComputeEndpoint, error) {
	defer h.meter.in(time.Now())
	ep, err := h.HcnMock.GetEndpointByName(name)
	h.meter.read(found(err))
	return ep, err
}

func (h driverHcn) CreateEndpoint(n *hcn.HostComputeNetwork, ep *hcn.HostComputeEndpoint) (*hcn.HostComputeEndpoint, error) {
	defer h.meter.in(time.Now())
	h.meter.write(5)
	return h.HcnMock.CreateEndpoint(n, ep)
}

func (h driverHcn) CreateRemoteEndpoint(n *hcn.HostComputeNetwork, ep *hcn.HostComputeEndpoint) (*hcn.HostComputeEndpoint, error) {
	defer h.meter.in(time.Now())
	h.meter.write(5)
	return h.HcnMock.CreateRemoteEndpoint(n, ep)
}

func (h driverHcn) DeleteEndpoint(ep *hcn.HostComputeEndpoint) error {
	defer h.meter.in(time.Now())
	h.meter.write(1)
	return h.HcnMock.DeleteEndpoint(ep)
}

func loadBalancerID(lb hcn.HostComputeLoadBalancer) string { return lb.Id }

func (h driverHcn) ListLoadBalancers() ([]hcn.HostComputeLoadBalancer, error) {
	defer h.meter.in(time.Now())
	lbs, err := h.HcnMock.ListLoadBalancers()
	h.meter.read(distinct(lbs, loadBalancerID))
	return lbs, err
}

func (h driverHcn) GetLoadBalancerByID(id string) (*hcn.HostComputeLoadBalancer, error) {
	defer h.meter.in(time.Now())
	lb, err := h.HcnMock.GetLoadBalancerByID(id)
	h.meter.read(found(err))
	return lb, err
}

func (h driverHcn) CreateLoadBalancer(lb *hcn.HostComputeLoadBalancer) (*hcn.HostComputeLoadBalancer, error) {
	defer h.meter.in(time.Now())
	h.meter.write(3)
	return h.HcnMock.CreateLoadBalancer(lb)
}

func (h driverHcn) UpdateLoadBalancer(lb *hcn.HostComputeLoadBalancer, id string) (*hcn.HostComputeLoadBalancer, error) {
	defer h.meter.in(time.Now())
	h.meter.write(4)
	return h.HcnMock.UpdateLoadBalancer(lb, id)
}

func (h driverHcn) DeleteLoadBalancer(lb *hcn.HostComputeLoadBalancer) error {
	defer h.meter.in(time.Now())
	h.meter.write(1)
	return h.HcnMock.DeleteLoadBalancer(lb)
}

// DeleteAllHnsLoadBalancerPolicy costs what production's hcnImpl does: a
// list, then a delete of each load balancer.
func (h driverHcn) DeleteAllHnsLoadBalancerPolicy() {
	defer h.meter.in(time.Now())
	lbs, _ := h.HcnMock.ListLoadBalancers()
	h.meter.read(distinct(lbs, loadBalancerID))
	for range distinct(lbs, loadBalancerID) {
		h.meter.write(1)
	}
	h.HcnMock.DeleteAllHnsLoadBalancerPolicy()
}

type driverMac string

func (m driverMac) GetHostMac(net.IP) string { return string(m) }

type driverRun struct {
	c        *driverCluster
	hcn      driverHcn
	proxiers []*Proxier
	startErr error
	services map[string]*v1.Service
	slices   map[string]*discovery.EndpointSlice
}

func runDriverCluster(c *driverCluster) (res driverResult) {
	res.Name = c.Name
	defer func() {
		if r := recover(); r != nil {
			res.Steps = append(res.Steps, driverStepResult{Error: fmt.Sprintf("panic: %v", r)})
		}
	}()
	var policies []hcn.NetworkPolicy
	for _, r := range c.Network.Routes {
		settings, _ := json.Marshal(hcn.RemoteSubnetRoutePolicySetting{
			DestinationPrefix: r.Prefix, IsolationId: r.IsolationID, ProviderAddress: r.ProviderAddress})
		policies = append(policies, hcn.NetworkPolicy{Type: hcn.RemoteSubnetRoute, Settings: settings})
	}
	mock := fakehcn.NewHcnMock(&hcn.HostComputeNetwork{Id: c.Network.ID, Name: c.Network.Name,
		Type: hcn.NetworkType(c.Network.Type), Policies: policies})
	d := &driverRun{c: c, services: map[string]*v1.Service{}, slices: map[string]*discovery.EndpointSlice{}}
	d.hcn = driverHcn{HcnMock: mock, meter: &driverMeter{}, features: hcn.SupportedFeatures{
		Api: hcn.ApiSupport{V2: true}, RemoteSubnet: true, HostRoute: true,
		DSR: c.Features.DSR, SessionAffinity: c.Features.SessionAffinity,
		IPv6DualStack: c.Features.IPv6DualStack, ModifyLoadbalancer: c.Features.Modify,
	}}
	for _, ep := range c.Endpoints {
		d.addEndpoint(ep)
	}
	// The process's start belongs to the first step's cost.
	started := d.measure(d.start)
	for i := range c.Steps {
		res.Steps = append(res.Steps, d.step(&c.Steps[i]))
	}
	if len(res.Steps) > 0 {
		res.Steps[0].Cost.add(started)
	}
	return res
}

func (d *driverRun) addEndpoint(ep driverLocalEP) {
	for _, ip := range ep.IPs {
		d.hcn.PopulateQueriedEndpoints(ep.Name, d.c.Network.ID, ip, ep.MAC, 24)
	}
}

// start creates the proxiers as kube-proxy does at start-up (which deletes
// every load balancer on the host).
func (d *driverRun) start() {
	d.proxiers, d.startErr = nil, nil
	d.hcn.meter.features = false // a new process
	cfg := config.KubeProxyWinkernelConfiguration{
		NetworkName:           d.c.Network.Name,
		SourceVip:             d.c.SourceVIP,
		EnableDSR:             d.c.EnableDSR,
		RootHnsEndpointName:   d.c.RootEndpointName,
		ForwardHealthCheckVip: d.c.ForwardHealthCheckVIP,
	}
	for _, fam := range d.c.Families {
		nodeIP := net.ParseIP(d.c.NodeIPs[fam])
		p, err := newProxierInternal(v1.IPFamily(fam), d.c.NodeName, nodeIP, healthcheck.NewFakeServiceHealthServer(),
			nil, d.c.HealthzPort, d.hcn, driverMac(d.c.HostMAC), cfg, false)
		if err != nil {
			d.proxiers, d.startErr = nil, err
			return
		}
		d.proxiers = append(d.proxiers, p)
	}
	for _, p := range d.proxiers {
		for _, k := range sortedKeys(d.services) {
			p.OnServiceAdd(d.services[k])
		}
		for _, k := range sortedKeys(d.slices) {
			p.OnEndpointSliceAdd(d.slices[k])
		}
	}
}

// step runs one step: the CNI's changes, then the informer events and
// upstream's sync, metered (driverCost).
func (d *driverRun) step(s *driverStep) driverStepResult {
	for _, name := range s.RemoveEndpoints {
		if ep, err := d.hcn.GetEndpointByName(name); err == nil {
			_ = d.hcn.DeleteEndpoint(ep)
		}
	}
	for _, ep := range s.AddEndpoints {
		d.addEndpoint(ep)
	}
	var r driverStepResult
	r.Cost = d.measure(func() {
		d.deliver(s)
		if s.Restart {
			d.start()
		}
		for _, p := range d.proxiers {
			p.setInitialized(true)
			p.syncProxyRules()
		}
	})
	if d.startErr != nil {
		r.Error = d.startErr.Error()
	}
	r.Endpoints, r.LoadBalancers = d.dump()
	return r
}

// measure runs fn and returns its cost: the fake's counts and, if the
// cluster asks for them (make bench-upstream), the process's CPU time (all
// threads, garbage collection included) and allocations.
func (d *driverRun) measure(fn func()) driverCost {
	if !d.c.Measure {
		d.hcn.meter.cost = driverCost{}
		fn()
		return d.hcn.meter.cost
	}
	// What earlier steps left is not this step's garbage.
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocs, bytes := ms.Mallocs, ms.TotalAlloc
	cpu := cpuNanos()
	d.hcn.meter.cost = driverCost{}
	fn()
	c := d.hcn.meter.cost
	c.CPUNanos = cpuNanos() - cpu
	runtime.ReadMemStats(&ms)
	c.Allocs, c.Bytes = ms.Mallocs-allocs, ms.TotalAlloc-bytes
	return c
}

func (c *driverCost) add(o driverCost) {
	c.HNSReads += o.HNSReads
	c.HNSWrites += o.HNSWrites
	c.HCN += o.HCN
	c.CPUNanos += o.CPUNanos
	c.FakeNanos += o.FakeNanos
	c.Allocs += o.Allocs
	c.Bytes += o.Bytes
}

// cpuNanos is the user and system CPU time of this process.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// deliver passes a step's object changes to the proxiers' handlers, which
// queue them for the next sync, as after a batch of informer events. Changes
// made while upstream was down (Restart) are only recorded: the new
// process's informers list them.
func (d *driverRun) deliver(s *driverStep) {
	for _, p := range d.proxiers {
		p.setInitialized(false)
	}
	for _, svc := range s.Services {
		k := svc.Namespace + "/" + svc.Name
		old := d.services[k]
		d.services[k] = svc
		if s.Restart {
			continue
		}
		for _, p := range d.proxiers {
			if old == nil {
				p.OnServiceAdd(svc)
			} else if !reflect.DeepEqual(old, svc) {
				p.OnServiceUpdate(old, svc)
			}
		}
	}
	for _, k := range s.DeleteServices {
		old := d.services[k]
		delete(d.services, k)
		if old == nil || s.Restart {
			continue
		}
		for _, p := range d.proxiers {
			p.OnServiceDelete(old)
		}
	}
	d.deliverSlices(s)
}

func (d *driverRun) deliverSlices(s *driverStep) {
	for _, sl := range s.Slices {
		k := sl.Namespace + "/" + sl.Name
		old := d.slices[k]
		d.slices[k] = sl
		if s.Restart {
			continue
		}
		for _, p := range d.proxiers {
			if old == nil {
				p.OnEndpointSliceAdd(sl)
			} else if !reflect.DeepEqual(old, sl) {
				p.OnEndpointSliceUpdate(old, sl)
			}
		}
	}
	for _, k := range s.DeleteSlices {
		old := d.slices[k]
		delete(d.slices, k)
		if old == nil || s.Restart {
			continue
		}
		for _, p := range d.proxiers {
			p.OnEndpointSliceDelete(old)
		}
	}
}

// dump lists the fake HNS's endpoints and load balancers.
func (d *driverRun) dump() ([]driverEP, []driverLB) {
	eps, _ := d.hcn.ListEndpoints()
	seen := map[string]bool{}
	var outEPs []driverEP
	for _, ep := range eps {
		if seen[ep.Id] {
			continue // the fake lists each endpoint by ID and by name
		}
		seen[ep.Id] = true
		o := driverEP{ID: ep.Id, Name: ep.Name, MAC: ep.MacAddress, Remote: ep.Flags&hcn.EndpointFlagsRemoteEndpoint != 0}
		for _, ipc := range ep.IpConfigurations {
			o.IPs = append(o.IPs, ipc.IpAddress)
		}
		for _, pol := range ep.Policies {
			if pol.Type == hcn.NetworkProviderAddress {
				var pa hcn.ProviderAddressEndpointPolicySetting
				if json.Unmarshal(pol.Settings, &pa) == nil {
					o.ProviderAddress = pa.ProviderAddress
				}
			}
		}
		outEPs = append(outEPs, o)
	}
	sort.Slice(outEPs, func(i, j int) bool { return outEPs[i].ID < outEPs[j].ID })
	lbs, _ := d.hcn.ListLoadBalancers()
	var outLBs []driverLB
	for _, lb := range lbs {
		o := driverLB{ID: lb.Id, VIPs: lb.FrontendVIPs, Flags: uint32(lb.Flags), SourceVIP: lb.SourceVIP,
			Endpoints: lb.HostComputeEndpoints}
		if len(lb.PortMappings) > 0 {
			pm := lb.PortMappings[0]
			o.Protocol, o.InternalPort, o.ExternalPort = pm.Protocol, pm.InternalPort, pm.ExternalPort
			o.Distribution, o.PortFlags = uint32(pm.DistributionType), uint32(pm.Flags)
		}
		outLBs = append(outLBs, o)
	}
	sort.Slice(outLBs, func(i, j int) bool { return outLBs[i].ID < outLBs[j].ID })
	return outEPs, outLBs
}

func sortedKeys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
