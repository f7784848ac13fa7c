package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/winproxy/winproxy/agent/nodestatus"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// Formats are the values of `plan -o`.
var Formats = []string{"table", "json", "yaml"}

// Print writes the plan in format: for table a header and one table per section (conditions,
// load balancers, the agent's endpoints, problems and, against a dump, the run there), for json
// and yaml the Plan itself; all through kubectl's printers, as `hns dump` prints.
func Print(w io.Writer, p *Plan, format string) error {
	switch format {
	case "table":
		return p.printTables(w)
	case "json":
		return (&printers.JSONPrinter{}).PrintObj(p, w)
	case "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(p, w)
	}
	return fmt.Errorf("-o %q: must be one of %s", format, strings.Join(Formats, ", "))
}

// GetObjectKind and DeepCopyObject make a Plan a runtime.Object, which kubectl's printers print.
var _ runtime.Object = (*Plan)(nil)

// GetObjectKind returns the plan's kind.
func (p *Plan) GetObjectKind() schema.ObjectKind { return &p.TypeMeta }

// DeepCopyObject copies the plan through its JSON form, which holds every field.
func (p *Plan) DeepCopyObject() runtime.Object {
	data, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("a plan that cannot be marshalled: %v", err))
	}
	out := &Plan{}
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("a plan that cannot be unmarshalled: %v", err))
	}
	return out
}

// section is one titled table of the table output.
type section struct {
	title string
	table *metav1.Table
}

func (p *Plan) printTables(w io.Writer) error {
	if err := p.writeHeader(w); err != nil {
		return err
	}
	for _, s := range p.sections() {
		if _, err := fmt.Fprintf(w, "\n%s (%d)\n", s.title, len(s.table.Rows)); err != nil {
			return err
		}
		if err := printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(s.table, w); err != nil {
			return err
		}
	}
	return nil
}

// writeHeader writes the node's network, HNS, source VIP, DSR and families, and what was assumed.
func (p *Plan) writeHeader(out io.Writer) error {
	s := p.Status
	net := s.Network.Name
	if s.Network.Type != "" {
		net += " (" + s.Network.Type + ")"
	}
	svip := or(s.SourceVIP.Address, "-")
	if s.SourceVIP.Origin != "" && s.SourceVIP.Origin != v1alpha1.SourceVIPOriginNone {
		svip += " from " + string(s.SourceVIP.Origin)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "Node:\t%s\n", p.Node)
	fmt.Fprintf(w, "Network:\t%s\n", net)
	fmt.Fprintf(w, "HNS:\t%s\n", p.HNSVersion)
	fmt.Fprintf(w, "Source VIP:\t%s\n", svip)
	fmt.Fprintf(w, "DSR:\trequested=%v active=%v\n", s.DSR.Requested, s.DSR.Active)
	fmt.Fprintf(w, "IP families:\t%s\n", nodestatus.FamiliesText(s.IPFamilies))
	if !s.Programmable {
		fmt.Fprintf(w, "Programmable:\tno: HNS would be left as it is\n")
	}
	for _, a := range p.Assumptions {
		fmt.Fprintf(w, "Assumed:\t%s\n", a)
	}
	return w.Flush()
}

// sections are the plan's tables in the order they are printed; problems only when there are
// some, the run against a dump only with one.
func (p *Plan) sections() []section {
	out := []section{{"CONDITIONS", p.conditionsTable()}, {"LOAD BALANCERS", p.loadBalancersTable()}, {"AGENT ENDPOINTS", p.endpointsTable()}}
	if len(p.Problems) > 0 {
		out = append(out, section{"PROBLEMS", p.problemsTable()})
	}
	if p.HNSCalls != nil {
		out = append(out, section{"HNS CALLS AGAINST THE DUMP", p.callsTable()},
			section{"HOST LOAD BALANCERS", hostTable(p.HostLoadBalancers)}, section{"HOST ENDPOINTS", hostTable(p.HostEndpoints)})
	}
	return out
}

// newTable is a table with string columns of these names.
func newTable(names ...string) *metav1.Table {
	t := &metav1.Table{}
	for _, n := range names {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: n, Type: "string"})
	}
	return t
}

func addRow(t *metav1.Table, cells ...any) {
	t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
}

func (p *Plan) conditionsTable() *metav1.Table {
	t := newTable("Condition", "Status", "Reason", "Message")
	for _, c := range p.Status.Conditions {
		addRow(t, c.Type, c.Status, c.Reason, c.Message)
	}
	return t
}

func (p *Plan) loadBalancersTable() *metav1.Table {
	t := newTable("Family", "Kind", "Frontend", "Target", "Flags", "Port Flags", "Distribution", "Source VIP", "Backends", "Service")
	for _, lb := range p.LoadBalancers {
		be := make([]string, len(lb.Backends))
		for i, b := range lb.Backends {
			be[i] = b.IP
			if b.Local {
				be[i] += "(local)"
			}
		}
		svc := lb.Service
		if lb.Port != "" {
			svc += ":" + lb.Port
		}
		addRow(t, string(lb.Family), lb.Kind.String(), fmt.Sprintf("%s:%d/%s", or(lb.VIP, "*"), lb.ExternalPort, lb.Protocol),
			fmt.Sprint(lb.InternalPort), named(lb.Flags, lb.FlagNames), named(lb.PortMappingFlags, lb.PortMappingFlagNames), lb.Distribution,
			or(lb.SourceVIP, "-"), strings.Join(be, ","), or(svc, "-"))
	}
	return t
}

// endpointsTable lists the endpoints the agent owns: the source-VIP endpoint first.
func (p *Plan) endpointsTable() *metav1.Table {
	eps := p.RemoteEndpoints
	if p.SourceVIPEndpoint != nil {
		eps = append([]RemoteEndpoint{*p.SourceVIPEndpoint}, eps...)
	}
	t := newTable("IP", "Purpose", "MAC", "Provider Address")
	for _, e := range eps {
		addRow(t, e.IP, e.Purpose, e.MAC, or(e.ProviderAddress, "-"))
	}
	return t
}

func (p *Plan) problemsTable() *metav1.Table {
	t := newTable("Service", "Reason", "Message")
	for _, pr := range p.Problems {
		addRow(t, or(pr.Service, "(node)"), pr.Reason, pr.Message)
	}
	return t
}

// callsTable lists the HNS calls the agent would make against the dumped host, in order.
func (p *Plan) callsTable() *metav1.Table {
	t := newTable("Call", "Reason", "ID", "Owner", "Object", "Error")
	for _, c := range p.HNSCalls {
		addRow(t, c.Operation, or(c.Reason, "-"), or(c.ID, "-"), or(c.Owner, "-"), c.Object, or(c.Error, "-"))
	}
	return t
}

// hostTable lists what becomes of each object of the dumped host.
func hostTable(objects []HostObject) *metav1.Table {
	t := newTable("ID", "Owner", "Outcome", "Object")
	for _, o := range objects {
		addRow(t, o.ID, o.Owner, o.Outcome, o.Object)
	}
	return t
}
