//go:build !windows

package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/fleet"
)

// The helpers of TestHostile: building hostile objects, and reading what the controller, the
// agent and the simulated host made of them.

const (
	// hostileNamespace holds the hostile Services and EndpointSlices, apart from the model's.
	hostileNamespace = "hostile"
	// caseLabel marks the fake Windows nodes of one case; that case's config selects them by it.
	caseLabel = "hostile.winproxy.io/case"
	// canaryName is a config that selects no node: its status follows its generation as long as
	// the controller reconciles.
	canaryName = "hx-canary"
)

// hostile is what the cases act on: the rig (control plane, controller, agent on win-2025) and
// the state the cases restore.
type hostile struct {
	r *rig
	c client.Client
	// chaosSpec is the chaos config's spec as the rig created it; cases that change it put it back.
	chaosSpec v1alpha1.WindowsProxyConfigSpec
	// canaryPeriod alternates to bump the canary's generation.
	canaryPeriod int32

	mu sync.Mutex
	// since is when the running batch started: the Events a case expects must be newer.
	since time.Time
	// warned are the Events found so far, by what was looked for: the controller and the agent
	// report a node failing again for the same reason only after some minutes, by design, so a
	// later case may find only the first one.
	warned map[string]bool
}

func newHostile(ctx context.Context, r *rig) (*hostile, error) {
	x := &hostile{r: r, c: r.env.Client, canaryPeriod: 10, warned: map[string]bool{}, since: time.Now()}
	if err := x.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostileNamespace}}); err != nil {
		return nil, err
	}
	canary := &v1alpha1.WindowsProxyConfig{
		ObjectMeta: metav1.ObjectMeta{Name: canaryName},
		Spec: v1alpha1.WindowsProxyConfigSpec{
			NodeSelector: selectCase("canary"),
			Network:      v1alpha1.NetworkSpec{Name: "cbr0"},
			Sync:         v1alpha1.SyncSpec{PeriodSeconds: x.canaryPeriod},
		},
	}
	if err := x.c.Create(ctx, canary); err != nil {
		return nil, err
	}
	cfg := &v1alpha1.WindowsProxyConfig{}
	if err := x.c.Get(ctx, client.ObjectKey{Name: "chaos"}, cfg); err != nil {
		return nil, err
	}
	x.chaosSpec = cfg.Spec
	return x, nil
}

func selectCase(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{caseLabel: name}}
}

// canaryReconciled bumps the canary's generation and waits until the controller reports it: the
// controller still reconciles, whatever the other configs hold.
func (x *hostile) canaryReconciled(ctx context.Context, timeout time.Duration) error {
	x.canaryPeriod = 21 - x.canaryPeriod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg := &v1alpha1.WindowsProxyConfig{}
		if err := x.c.Get(ctx, client.ObjectKey{Name: canaryName}, cfg); err != nil {
			return err
		}
		cfg.Spec.Sync.PeriodSeconds = x.canaryPeriod
		return x.c.Update(ctx, cfg)
	})
	if err != nil {
		return fmt.Errorf("changing the canary config: %w", err)
	}
	return poll(ctx, timeout, func() error {
		cfg, err := x.config(ctx, canaryName)
		if err != nil {
			return err
		}
		if err := atGeneration(cfg); err != nil {
			return fmt.Errorf("canary: %w", err)
		}
		return wantCondition(cfg.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonNoNodesSelected)
	})
}

// poll calls check every 200 ms until it returns nil or timeout passes, and returns its last
// error.
func poll(ctx context.Context, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// alive fails when the controller or the agent exited: no input may crash either.
func (x *hostile) alive() error {
	var errs []error
	for _, p := range []*processLike{{"controller", x.r.ctrl.Exited, x.r.ctrl.Tail}, {"agent", x.r.agent.Exited, x.r.agent.Tail}} {
		if p.exited() {
			errs = append(errs, fmt.Errorf("the %s exited:\n%s", p.name, p.tail(15)))
		}
	}
	return errors.Join(errs...)
}

type processLike struct {
	name   string
	exited func() bool
	tail   func(int) string
}

// --- configs -------------------------------------------------------------------------------

func (x *hostile) config(ctx context.Context, name string) (*v1alpha1.WindowsProxyConfig, error) {
	cfg := &v1alpha1.WindowsProxyConfig{}
	return cfg, x.c.Get(ctx, client.ObjectKey{Name: name}, cfg)
}

// atGeneration fails until the controller reported the config's current generation.
func atGeneration(cfg *v1alpha1.WindowsProxyConfig) error {
	if cfg.Status.ObservedGeneration != cfg.Generation {
		return fmt.Errorf("config %s: status at generation %d, spec at %d", cfg.Name, cfg.Status.ObservedGeneration, cfg.Generation)
	}
	return nil
}

func wantCondition(conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return fmt.Errorf("no %s condition", typ)
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Errorf("%s=%s (%s: %s), want %s (%s)", typ, c.Status, c.Reason, clipText(c.Message, 200), status, reason)
	}
	return nil
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// createObject sends an object written as YAML (kind, name, spec), as kubectl apply would: fields
// the Go types cannot hold (a number beyond int32, a string for a bool) reach the apiserver.
func (x *hostile) createObject(ctx context.Context, kind, name, specYAML string) error {
	var spec map[string]any
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		return fmt.Errorf("bad test input: %w", err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind(kind)
	u.SetName(name)
	return x.c.Create(ctx, u)
}

func (x *hostile) deleteConfig(ctx context.Context, name string) error {
	err := x.c.Delete(ctx, &v1alpha1.WindowsProxyConfig{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return client.IgnoreNotFound(err)
}

// caseConfig is a config selecting the nodes of one case, on an overlay network whose nodes take
// their source VIP from the winproxy.io/source-vip annotation.
func caseConfig(name string, mutate func(*v1alpha1.WindowsProxyConfigSpec)) *v1alpha1.WindowsProxyConfig {
	cfg := &v1alpha1.WindowsProxyConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.WindowsProxyConfigSpec{
			NodeSelector: selectCase(name),
			Network:      v1alpha1.NetworkSpec{Name: fleet.NetworkName, Type: v1alpha1.NetworkTypeOverlay},
			Overlay: &v1alpha1.OverlaySpec{SourceVIP: v1alpha1.SourceVIPSpec{
				Strategy: v1alpha1.SourceVIPStrategyStatic, Static: &v1alpha1.SourceVIPStatic{},
			}},
		},
	}
	if mutate != nil {
		mutate(&cfg.Spec)
	}
	return cfg
}

// --- fake nodes ----------------------------------------------------------------------------

// fakeNode is a Windows node without an agent, selected by the config of the case it is named
// after: enough for the controller to resolve a config for it.
func fakeNode(name, kubelet string, annotations map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{v1alpha1.OSLabel: "windows", caseLabel: name, "kubernetes.io/hostname": name},
			Annotations: annotations,
		},
		Status: corev1.NodeStatus{
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubelet, OperatingSystem: "windows", Architecture: "amd64"},
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		},
	}
}

// createNode creates a node and then its status, as a kubelet registers.
func (x *hostile) createNode(ctx context.Context, n *corev1.Node) error {
	st := n.Status
	if err := x.c.Create(ctx, n); err != nil {
		return err
	}
	n.Status = st
	return x.c.Status().Update(ctx, n)
}

func (x *hostile) deleteNode(ctx context.Context, name string) error {
	return client.IgnoreNotFound(x.c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

// --- what the controller made of a case's node ----------------------------------------------

// maxProblemMessage is the bound of status.failingNodes[].message.
const maxProblemMessage = 1024

// nodeRefused checks that config refused node with reason, in a bounded message containing
// want, said so in a Warning Event naming the node, is Stalled, and gave the node no config.
func (x *hostile) nodeRefused(ctx context.Context, config, node, reason, want string) error {
	cfg, err := x.config(ctx, config)
	if err != nil {
		return err
	}
	if err := atGeneration(cfg); err != nil {
		return err
	}
	i := slices.IndexFunc(cfg.Status.FailingNodes, func(p v1alpha1.NodeProblem) bool { return p.Name == node })
	if i < 0 {
		return fmt.Errorf("config %s does not list node %s as failing: %+v", config, node, cfg.Status.FailingNodes)
	}
	p := cfg.Status.FailingNodes[i]
	if p.Reason != reason || !strings.Contains(p.Message, want) {
		return fmt.Errorf("node %s fails with %s: %q, want %s with %q", node, p.Reason, clipText(p.Message, 200), reason, want)
	}
	if len(p.Message) > maxProblemMessage {
		return fmt.Errorf("node %s's problem message is %d bytes, more than the API's %d", node, len(p.Message), maxProblemMessage)
	}
	for _, c := range cfg.Status.Conditions {
		if len(c.Message) > 32*1024 {
			return fmt.Errorf("%s message is %d bytes", c.Type, len(c.Message))
		}
	}
	if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionStalled, metav1.ConditionTrue, ""); err != nil {
		return err
	}
	if err := x.noWPN(ctx, node); err != nil {
		return fmt.Errorf("refused node %s: %w", node, err)
	}
	return x.warning(ctx, config, reason, "Node "+node+":")
}

// nodeResolved checks that config gave node a resolved config and reports it truthfully: no agent
// runs on a fake node, so it is not Ready and waits for the node (NodesNotProgrammed).
func (x *hostile) nodeResolved(ctx context.Context, config, node string, check func(*v1alpha1.WindowsProxyNode) error) error {
	cfg, err := x.config(ctx, config)
	if err != nil {
		return err
	}
	if err := atGeneration(cfg); err != nil {
		return err
	}
	w, err := x.wpnOf(ctx, node)
	if err != nil {
		return err
	}
	if w == nil || w.Spec.ConfigName != config || w.Spec.Hash == "" {
		return fmt.Errorf("node %s has no WindowsProxyNode of config %s: %+v", node, config, w)
	}
	if check != nil {
		if err := check(w); err != nil {
			return fmt.Errorf("node %s's resolved config: %w", node, err)
		}
	}
	if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionAccepted, metav1.ConditionTrue, ""); err != nil {
		return err
	}
	return wantCondition(cfg.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNodesNotProgrammed)
}

// configStalled checks that config reports the generation it has as Stalled for reason, not
// Ready, with a Warning Event of that reason.
func (x *hostile) configStalled(ctx context.Context, config, reason string) error {
	cfg, err := x.config(ctx, config)
	if err != nil {
		return err
	}
	if err := atGeneration(cfg); err != nil {
		return err
	}
	if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason); err != nil {
		return err
	}
	if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, ""); err != nil {
		return err
	}
	return x.warning(ctx, config, reason, "")
}

// warning finds a Warning Event about the object named name with reason whose note contains
// note, recorded since the batch started (or earlier, when an earlier case found it: repeats are
// rate-limited).
func (x *hostile) warning(ctx context.Context, name, reason, note string) error {
	var list eventsv1.EventList
	if err := x.c.List(ctx, &list); err != nil {
		return err
	}
	key := name + "/" + reason + "/" + note
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Note, note) &&
			(x.warned[key] || !lastSeen(e).Before(x.since.Add(-time.Second))) {
			x.warned[key] = true
			return nil
		}
	}
	return fmt.Errorf("no Warning Event %s about %s with %q since %s", reason, name, note, x.since.Format(time.TimeOnly))
}

// lastSeen is when an Event last happened.
func lastSeen(e eventsv1.Event) time.Time {
	t := e.EventTime.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.DeprecatedLastTimestamp.After(t) {
		t = e.DeprecatedLastTimestamp.Time
	}
	return t
}

// wpnOf returns node's WindowsProxyNode, or nil when it has none.
func (x *hostile) wpnOf(ctx context.Context, node string) (*v1alpha1.WindowsProxyNode, error) {
	w := &v1alpha1.WindowsProxyNode{}
	if err := x.c.Get(ctx, client.ObjectKey{Name: node}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return w, nil
}

// noWPN fails while node has a WindowsProxyNode.
func (x *hostile) noWPN(ctx context.Context, node string) error {
	w, err := x.wpnOf(ctx, node)
	if err != nil {
		return err
	}
	if w != nil {
		return fmt.Errorf("WindowsProxyNode %s (config %q) still exists", node, w.Spec.ConfigName)
	}
	return nil
}

// --- what the agent on win-2025 reports ----------------------------------------------------

// agentReports checks that win-2025's agent acted on its current spec and reports typ with
// status and reason.
func (x *hostile) agentReports(ctx context.Context, typ string, status metav1.ConditionStatus, reason string) error {
	w, err := x.wpnOf(ctx, node.Name)
	if err != nil {
		return err
	}
	if w == nil {
		return errors.New("win-2025 has no WindowsProxyNode")
	}
	if w.Status.ObservedHash != w.Spec.Hash {
		return fmt.Errorf("the agent reports hash %q, the spec has %q", w.Status.ObservedHash, w.Spec.Hash)
	}
	c := meta.FindStatusCondition(w.Status.Conditions, typ)
	if c != nil && c.ObservedGeneration != w.Generation {
		return fmt.Errorf("%s is of generation %d, the spec is at %d", typ, c.ObservedGeneration, w.Generation)
	}
	return wantCondition(w.Status.Conditions, typ, status, reason)
}

// --- workloads -----------------------------------------------------------------------------

// hostileService is a ClusterIP Service in the hostile namespace with one TCP port, 80 -> 8080.
func hostileService(name string, mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostileNamespace, Name: name},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

// hostileSlice is the EndpointSlice of service name with its port "http" on 8080 and ready
// endpoints on linux-1 at ips (remote for win-2025's agent; the model has no pod there, so the
// cases' backends never mix with the model's).
func hostileSlice(name, service string, ips ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: hostileNamespace, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}},
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, fleet.Endpoint(fleet.Pod{Node: "linux-1", IP: ip}))
	}
	return s
}

// deleteAll deletes objects, ignoring those already gone.
func (x *hostile) deleteAll(ctx context.Context, objs ...client.Object) error {
	var errs []error
	for _, o := range objs {
		if o == nil {
			continue
		}
		if err := x.c.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setIngress writes a Service's load-balancer status, as a cloud controller does.
func (x *hostile) setIngress(ctx context.Context, svc *corev1.Service, ingress ...corev1.LoadBalancerIngress) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &corev1.Service{}
		if err := x.c.Get(ctx, client.ObjectKeyFromObject(svc), cur); err != nil {
			return err
		}
		cur.Status.LoadBalancer.Ingress = ingress
		return x.c.Status().Update(ctx, cur)
	})
}

// hnsView is the simulated host as the cases look at it.
type hnsView struct {
	st    sim.State
	ipOf  map[string]netip.Addr
	byVIP map[netip.Addr][]hns.LoadBalancer
}

func (x *hostile) view() (hnsView, error) {
	st, err := x.r.snapshot()
	if err != nil {
		return hnsView{}, err
	}
	v := hnsView{st: st, ipOf: map[string]netip.Addr{}, byVIP: map[netip.Addr][]hns.LoadBalancer{}}
	for _, ep := range st.Endpoints {
		if len(ep.IPs) > 0 {
			v.ipOf[strings.ToUpper(ep.ID)] = ep.IPs[0]
		}
	}
	for _, lb := range st.LoadBalancers {
		v.byVIP[lb.VIP()] = append(v.byVIP[lb.VIP()], lb)
	}
	return v, nil
}

// backendsOf lists a load balancer's backend IPs, sorted.
func (v hnsView) backendsOf(lb hns.LoadBalancer) []netip.Addr {
	var out []netip.Addr
	for _, id := range lb.BackendEndpointIDs {
		out = append(out, v.ipOf[strings.ToUpper(id)])
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// lbsOf returns the load balancers whose frontend is ip (a ClusterIP, an external or ingress IP).
func (x *hostile) lbsOf(ip string) (hnsView, []hns.LoadBalancer, error) {
	v, err := x.view()
	if err != nil {
		return v, nil, err
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return v, nil, fmt.Errorf("frontend %q: %w", ip, err)
	}
	return v, v.byVIP[addr], nil
}

// wantLBs checks that ip is the frontend of n load balancers, each with exactly the backends
// given (none given: any).
func (x *hostile) wantLBs(ip string, n int, backends ...string) error {
	v, lbs, err := x.lbsOf(ip)
	if err != nil {
		return err
	}
	if len(lbs) != n {
		return fmt.Errorf("%s is the frontend of %d load balancers, want %d", ip, len(lbs), n)
	}
	if len(backends) == 0 {
		return nil
	}
	want := make([]netip.Addr, 0, len(backends))
	for _, b := range backends {
		want = append(want, netip.MustParseAddr(b))
	}
	slices.SortFunc(want, netip.Addr.Compare)
	for _, lb := range lbs {
		if got := v.backendsOf(lb); !slices.Equal(got, want) {
			return fmt.Errorf("load balancer %s has backends %v, want %v", lb.Frontend(), got, want)
		}
	}
	return nil
}

// noEndpoint checks that HNS has no endpoint with ip: nothing was programmed for it.
func (x *hostile) noEndpoint(ip string) error {
	v, err := x.view()
	if err != nil {
		return err
	}
	addr := netip.MustParseAddr(ip)
	for _, ep := range v.st.Endpoints {
		if slices.Contains(ep.IPs, addr) {
			return fmt.Errorf("HNS has endpoint %s (%s) for %s", ep.ID, ep.Name, ip)
		}
	}
	return nil
}

// intact checks, while hostile objects exist, that the agent still programs its current config
// and that every Service of the model has its load balancer with exactly its backends.
func (x *hostile) intact(ctx context.Context) error {
	if err := x.alive(); err != nil {
		return err
	}
	if err := x.agentReports(ctx, v1alpha1.ConditionProgrammed, metav1.ConditionTrue, v1alpha1.ReasonSynced); err != nil {
		return err
	}
	v, err := x.view()
	if err != nil {
		return err
	}
	have := backends(v.st)
	x.r.model.mu.Lock()
	defer x.r.model.mu.Unlock()
	for i, remotes := range x.r.model.remotes {
		want := append([]netip.Addr{localPod(i)}, remotes...)
		slices.SortFunc(want, netip.Addr.Compare)
		if got, ok := have[clusterIP(i)]; !ok || !slices.Equal(got, want) {
			return fmt.Errorf("%s: backends %v, want %v", svcName(i), got, want)
		}
	}
	return nil
}

// hostIntact checks what the exact state of settled() leaves out: the CNI's source-VIP endpoint
// is still there (the agent never deletes what it did not create), every ClusterIP of the model
// has its overlay service-VIP endpoint, and the model's load balancers are as the rig's config
// says: no DSR, SNAT to the CNI's source VIP.
func (x *hostile) hostIntact() error {
	v, err := x.view()
	if err != nil {
		return err
	}
	for i := range x.r.model.remotes {
		for _, lb := range v.byVIP[clusterIP(i)] {
			if lb.IsDSR() || lb.SourceVIP != node.SourceVIP() {
				return fmt.Errorf("%s's load balancer %s: DSR %t, source VIP %s; want no DSR, source VIP %s", svcName(i), lb.Frontend(), lb.IsDSR(), lb.SourceVIP, node.SourceVIP())
			}
		}
	}
	have := map[netip.Addr]bool{}
	calico := false
	for _, ep := range v.st.Endpoints {
		for _, ip := range ep.IPs {
			have[ip] = true
		}
		calico = calico || (ep.Name == fleet.SourceVIPEndpointName && slices.Contains(ep.IPs, node.SourceVIP()))
	}
	if !calico {
		return fmt.Errorf("the CNI's endpoint %s (%s) is gone", fleet.SourceVIPEndpointName, node.SourceVIP())
	}
	for i := range x.r.model.remotes {
		if !have[clusterIP(i)] {
			return fmt.Errorf("%s's ClusterIP %s has no service-VIP endpoint", svcName(i), clusterIP(i))
		}
	}
	return nil
}

// wpnStatusPatch merge-patches win-2025's WindowsProxyNode status as an admin with kubectl would.
func (x *hostile) wpnStatusPatch(ctx context.Context, patch string) error {
	w := &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	return x.c.Status().Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(patch)))
}
