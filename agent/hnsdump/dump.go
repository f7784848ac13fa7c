package hnsdump

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// The dump's kind: not a Kubernetes API object, but printed by kubectl's printers, which want a
// kind, and read back by `winproxy-agent plan --hns`, which checks it.
const (
	APIVersion = "hnsdump.winproxy.io/v1"
	Kind       = "HNSDump"
)

// Owners of HNS objects, as the agent's ownership rules decide (ownership.Owned).
const (
	// OwnerWinproxy marks an object that proves to be winproxy's: an endpoint by its winproxy-
	// name, a load balancer by a ledger entry whose fingerprint matches what HNS holds. Only these
	// are modified by the agent or deleted by `winproxy-agent cleanup`.
	OwnerWinproxy = "winproxy"
	// OwnerForeign marks everything else: kube-proxy's load balancers, the CNI's endpoints, an
	// admin's. The agent replaces a foreign load balancer only when it holds a frontend the agent
	// programs, as kube-proxy does.
	OwnerForeign = "foreign"
)

// Dump is what `winproxy-agent hns dump -o json|yaml` prints: the host's HNS load balancers and
// endpoints with their owners, and what a plan needs to know about the host. Its JSON is the
// input of `winproxy-agent plan --hns`, so every HNS field the agent reads is kept as HNS gave it.
type Dump struct {
	metav1.TypeMeta `json:",inline"`
	Host            Host `json:"host"`
	// Networks holds the network named by `hns dump --network`, when given: the HNS client has no
	// call that lists networks, and a plan needs the one its config names.
	Networks      []hns.Network  `json:"networks,omitempty"`
	LoadBalancers []LoadBalancer `json:"loadBalancers"`
	Endpoints     []Endpoint     `json:"endpoints"`
}

// Host is what the dump says about the machine.
type Host struct {
	// HNSVersion is "major.minor"; it decides what HNS supports (hns.CapabilitiesFor).
	HNSVersion   string `json:"hnsVersion"`
	WindowsBuild string `json:"windowsBuild,omitempty"`
	// Simulated is set for a host of the HNS simulator, whose interfaces are not real.
	Simulated bool `json:"simulated,omitempty"`
	// Interfaces are the host's network interfaces: on overlay networks the agent gives the
	// endpoints it creates for the host the MAC of the interface holding the node IP.
	Interfaces []Interface `json:"interfaces,omitempty"`
}

// Interface is one network interface of the host.
type Interface struct {
	MAC string       `json:"mac"`
	IPs []netip.Addr `json:"ips"`
}

// LoadBalancer is an HNS load balancer and its owner.
type LoadBalancer struct {
	hns.LoadBalancer `json:",inline"`
	Owner            string `json:"owner"`
}

// Endpoint is an HNS endpoint and its owner.
type Endpoint struct {
	hns.Endpoint `json:",inline"`
	Owner        string `json:"owner"`
}

// Owners tells which objects prove to be winproxy's; *ownership.Owned answers it as the agent does.
type Owners interface {
	OwnsLoadBalancer(hns.LoadBalancer) bool
	OwnsEndpoint(hns.Endpoint) bool
}

// New builds the dump of what the host listed, sorted as the tables are.
func New(host Host, networks []hns.Network, lbs []hns.LoadBalancer, eps []hns.Endpoint, owners Owners) *Dump {
	d := &Dump{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		Host:     host, Networks: networks,
		LoadBalancers: make([]LoadBalancer, 0, len(lbs)), Endpoints: make([]Endpoint, 0, len(eps)),
	}
	for _, lb := range sortLoadBalancers(lbs) {
		d.LoadBalancers = append(d.LoadBalancers, LoadBalancer{LoadBalancer: lb, Owner: owner(owners.OwnsLoadBalancer(lb))})
	}
	for _, ep := range sortEndpoints(eps) {
		d.Endpoints = append(d.Endpoints, Endpoint{Endpoint: ep, Owner: owner(owners.OwnsEndpoint(ep))})
	}
	return d
}

func owner(winproxy bool) string {
	if winproxy {
		return OwnerWinproxy
	}
	return OwnerForeign
}

// Version parses Host.HNSVersion.
func (d *Dump) Version() (hns.Version, error) {
	var v hns.Version
	if _, err := fmt.Sscanf(d.Host.HNSVersion, "%d.%d", &v.Major, &v.Minor); err != nil || v.String() != d.Host.HNSVersion {
		return v, fmt.Errorf("host.hnsVersion: %q is not an HNS version such as \"13.3\"", d.Host.HNSVersion)
	}
	return v, nil
}

// HostMAC is the MAC of the host interface holding ip, "" when none does, as the agent would find
// it on that host.
func (d *Dump) HostMAC(ip netip.Addr) string {
	if d.Host.Simulated {
		return sim.HostMAC(ip)
	}
	return InterfaceMAC(d.Host.Interfaces, ip)
}

// InterfaceMAC is the MAC of the interface holding ip, "" when none does.
func InterfaceMAC(ifaces []Interface, ip netip.Addr) string {
	for _, i := range ifaces {
		if slices.Contains(i.IPs, ip) {
			return i.MAC
		}
	}
	return ""
}

// GetObjectKind and DeepCopyObject make a Dump a runtime.Object, which kubectl's printers print.
var _ runtime.Object = (*Dump)(nil)

// GetObjectKind returns the dump's kind.
func (d *Dump) GetObjectKind() schema.ObjectKind { return &d.TypeMeta }

// DeepCopyObject copies the dump and every slice in it.
func (d *Dump) DeepCopyObject() runtime.Object {
	out := *d
	out.Host.Interfaces = slices.Clone(d.Host.Interfaces)
	for i := range out.Host.Interfaces {
		out.Host.Interfaces[i].IPs = slices.Clone(out.Host.Interfaces[i].IPs)
	}
	out.Networks = slices.Clone(d.Networks)
	for i := range out.Networks {
		out.Networks[i].RemoteSubnetRoutes = slices.Clone(out.Networks[i].RemoteSubnetRoutes)
	}
	out.LoadBalancers = slices.Clone(d.LoadBalancers)
	for i := range out.LoadBalancers {
		lb := &out.LoadBalancers[i]
		lb.FrontendVIPs = slices.Clone(lb.FrontendVIPs)
		lb.BackendEndpointIDs = slices.Clone(lb.BackendEndpointIDs)
	}
	out.Endpoints = slices.Clone(d.Endpoints)
	for i := range out.Endpoints {
		out.Endpoints[i].IPs = slices.Clone(out.Endpoints[i].IPs)
	}
	return &out
}

// Formats are the values of `hns dump -o`.
var Formats = []string{"table", "json", "yaml"}

// Print writes the dump in format: a summary line and two tables (load balancers, endpoints) for
// table; for json and yaml the Dump itself, through kubectl's printers.
func Print(w io.Writer, d *Dump, format string) error {
	var p printers.ResourcePrinter
	switch format {
	case "table":
		return printTables(w, d)
	case "json":
		p = &printers.JSONPrinter{}
	case "yaml":
		p = &printers.YAMLPrinter{}
	default:
		return fmt.Errorf("-o %q: must be one of %s", format, strings.Join(Formats, ", "))
	}
	return p.PrintObj(d, w)
}

func printTables(w io.Writer, d *Dump) error {
	mine := 0
	for _, lb := range d.LoadBalancers {
		if lb.Owner == OwnerWinproxy {
			mine++
		}
	}
	fmt.Fprintf(w, "HNS %s, Windows build %s: %d load balancers (%d winproxy, %d foreign), %d endpoints\n\n",
		d.Host.HNSVersion, orDash(d.Host.WindowsBuild), len(d.LoadBalancers), mine, len(d.LoadBalancers)-mine, len(d.Endpoints))
	lbs, eps := d.Tables()
	if err := printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(lbs, w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(eps, w)
}

// Tables renders the dump as two kubectl tables: the load balancers (backends resolved to their
// endpoints' IPs) and the endpoints, each with its ID and owner.
func (d *Dump) Tables() (loadBalancers, endpoints *metav1.Table) {
	col := func(name string) metav1.TableColumnDefinition {
		return metav1.TableColumnDefinition{Name: name, Type: "string"}
	}
	loadBalancers = &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		col("ID"), col("Owner"), col("VIP"), col("Ports"), col("Proto"), col("Flags"), col("Port Flags"),
		col("Source VIP"), col("Affinity"), col("Backends"),
	}}
	eps := make([]hns.Endpoint, len(d.Endpoints))
	for i, ep := range d.Endpoints {
		eps[i] = ep.Endpoint
	}
	ips := endpointIPs(eps)
	for _, lb := range d.LoadBalancers {
		loadBalancers.Rows = append(loadBalancers.Rows, metav1.TableRow{Cells: append([]any{lb.ID, lb.Owner}, lbCells(lb.LoadBalancer, ips)...)})
	}
	endpoints = &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		col("ID"), col("Owner"), col("Name"), col("IPs"), col("Kind"), col("MAC"), col("Provider Address"),
	}}
	for _, ep := range d.Endpoints {
		endpoints.Rows = append(endpoints.Rows, metav1.TableRow{Cells: append([]any{ep.ID, ep.Owner}, endpointCells(ep.Endpoint)...)})
	}
	return loadBalancers, endpoints
}
