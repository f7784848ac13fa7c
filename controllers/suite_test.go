//go:build !windows

package controllers

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/nodesummary"
	"github.com/winproxy/winproxy/internal/testbuild"
	"github.com/winproxy/winproxy/internal/testenv"
)

// env is the control plane the package's integration tests share.
var env *testenv.Env

func TestMain(m *testing.M) {
	// The controller's logs are shown on request; otherwise controller-runtime is told to drop
	// them, or its first client prints a warning with a stack that looks like a failure.
	logger := logr.Discard()
	if os.Getenv("WINPROXY_TEST_LOG") != "" {
		logger = zap.New(zap.UseDevMode(true))
	}
	ctrl.SetLogger(logger)
	testenv.Main(m, &env)
}

// offsetClock is the wall clock plus an offset a test can move forward.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *offsetClock) advance(d time.Duration)         { c.offset.Add(int64(d)) }

// writeCounter counts the API writes a client makes, by verb, type and subresource, and
// classifies each WindowsProxyNode spec write by why it was made (see why).
type writeCounter struct {
	mu     sync.Mutex
	counts map[string]int
	// first and last are the times of the first WindowsProxyNode write since markFirst, and of
	// the last one.
	first, last time.Time
	// wpns is the last spec write to each WindowsProxyNode, reasons the writes by why.
	wpns    map[string]wpnWrite
	reasons map[string]int
}

// wpnWrite is one WindowsProxyNode spec write: the hash it wrote, the resourceVersion it was
// based on and the one it produced, when it ended and how.
type wpnWrite struct {
	hash, base, rv string
	at             time.Time
	err            error
}

// wpnWriteAudit wraps a WindowsProxyNode spec write (create or patch) to classify it.
func (w *writeCounter) wpnWriteAudit(obj client.Object, write func() error) error {
	wpn, ok := obj.(*winproxyv1alpha1.WindowsProxyNode)
	if !ok {
		return write()
	}
	base := wpn.ResourceVersion
	err := write()
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, had := w.wpns[wpn.Name]
	w.reasons[why(prev, had, wpn.Spec.Hash, base, now)]++
	if err != nil {
		w.reasons["failed: "+string(apierrors.ReasonForError(err))]++
	}
	w.wpns[wpn.Name] = wpnWrite{hash: wpn.Spec.Hash, base: base, rv: wpn.ResourceVersion, at: now, err: err}
	return err
}

// why a WindowsProxyNode was written with hash over version base, given the previous write.
func why(prev wpnWrite, had bool, hash, base string, now time.Time) string {
	switch {
	case !had || prev.hash != hash:
		return "first write of its hash"
	case prev.err != nil:
		return "again after a failed write"
	case base == prev.base:
		age := "< 30 s"
		if now.Sub(prev.at) >= 30*time.Second {
			age = ">= 30 s"
		}
		return "same hash again over the version the last write replaced (cache lagged), " + age + " after it"
	case base == prev.rv:
		return "same hash again over its own write"
	default:
		return "same hash again over a later version"
	}
}

// wpnReasons is why the WindowsProxyNode spec writes were made, with how many of each.
func (w *writeCounter) wpnReasons() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.reasons)
}

func (w *writeCounter) add(verb string, obj client.Object, sub string) {
	key := fmt.Sprintf("%s %T", verb, obj)
	if sub != "" {
		key += "/" + sub
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counts[key]++
	if _, ok := obj.(*winproxyv1alpha1.WindowsProxyNode); ok && sub == "" {
		w.last = time.Now()
		if w.first.IsZero() {
			w.first = w.last
		}
	}
}

// markFirst starts looking for the next first WindowsProxyNode write; firstAt returns it.
func (w *writeCounter) markFirst() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.first = time.Time{}
}

func (w *writeCounter) firstAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first
}

// lastAt is when the last WindowsProxyNode (spec) write was made.
func (w *writeCounter) lastAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

func (w *writeCounter) snapshot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.counts))
	for k, v := range w.counts {
		out[k] = v
	}
	return out
}

func (w *writeCounter) total() int {
	n := 0
	for _, v := range w.snapshot() {
		n += v
	}
	return n
}

// newClientFunc returns a manager client whose writes are counted in w.
func (w *writeCounter) newClientFunc() client.NewClientFunc {
	return func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, opts)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.CreateOption) error {
				w.add("create", obj, "")
				return w.wpnWriteAudit(obj, func() error { return c.Create(ctx, obj, o...) })
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.UpdateOption) error {
				w.add("update", obj, "")
				return c.Update(ctx, obj, o...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
				w.add("patch", obj, "")
				return w.wpnWriteAudit(obj, func() error { return c.Patch(ctx, obj, p, o...) })
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.DeleteOption) error {
				w.add("delete", obj, "")
				return c.Delete(ctx, obj, o...)
			},
			DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.DeleteAllOfOption) error {
				w.add("deletecollection", obj, "")
				return c.DeleteAllOf(ctx, obj, o...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, o ...client.SubResourceUpdateOption) error {
				w.add("update", obj, sub)
				return c.SubResource(sub).Update(ctx, obj, o...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
				w.add("patch", obj, sub)
				return c.SubResource(sub).Patch(ctx, obj, p, o...)
			},
		}), nil
	}
}

// controller is an in-process winproxy-controller, as cmd/winproxy-controller wires it.
type controller struct {
	clock  *offsetClock
	writes *writeCounter
	cancel context.CancelFunc
	done   chan error
}

// startController starts the config reconciler, and whatever else setup adds to its manager.
func startController(t testing.TB, setup ...setupFunc) *controller {
	t.Helper()
	configs := func(mgr ctrl.Manager, c *controller) error {
		r := NewWindowsProxyConfigReconciler(mgr.GetClient(), mgr.GetEventRecorder("winproxy-controller"), WithClock(c.clock))
		return r.SetupWithManager(context.Background(), mgr)
	}
	return startManager(t, append([]setupFunc{configs}, setup...)...)
}

// setupFunc adds a reconciler to the manager of a test controller.
type setupFunc func(ctrl.Manager, *controller) error

// startManager starts a manager, as cmd/winproxy-controller wires it, with what setup adds.
func startManager(t testing.TB, setup ...setupFunc) *controller {
	t.Helper()
	c := &controller{clock: &offsetClock{}, writes: &writeCounter{counts: map[string]int{}, wpns: map[string]wpnWrite{}, reasons: map[string]int{}}, done: make(chan error, 1)}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     env.Scheme,
		Cache:      CacheOptions(heartbeatNamespace),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:  c.writes.newClientFunc(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range setup {
		if err := add(mgr, c); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() { c.done <- mgr.Start(ctx) }()
	t.Cleanup(c.stop)
	return c
}

// stop stops the manager and waits for it; calling it twice is fine.
func (c *controller) stop() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	<-c.done
	c.cancel = nil
}

// wpnStatusWrites is the number of WindowsProxyNode status writes: the controller must make none.
func (c *controller) wpnStatusWrites() int {
	n := 0
	for k, v := range c.writes.snapshot() {
		if k == "patch *v1alpha1.WindowsProxyNode/status" || k == "update *v1alpha1.WindowsProxyNode/status" {
			n += v
		}
	}
	return n
}

// behaviour is how a simulated agent answers a new config.
type behaviour int

const (
	programs behaviour = iota // reports Programmed for the new hash
	degrades                  // reports Degraded for the new hash
	silent                    // never reports
	waits                     // reports Programmed=False (WaitingForNetwork) for the hash, not Degraded
)

// agents simulates the winproxy-agents of the nodes whose names start with prefix: each writes
// its WindowsProxyNode's status, only when it changes, as the real agent does.
type agents struct {
	prefix string
	mu     sync.Mutex
	how    map[string]behaviour
	// when overrides how for the configs a rule matches, by node.
	when map[string]rule
	// downgraded nodes report DualStackDowngraded=True.
	downgraded map[string]bool
}

// rule is how a node answers the configs match accepts: a node that fails one config only.
type rule struct {
	match func(*winproxyv1alpha1.ResolvedProxyConfig) bool
	how   behaviour
}

func startAgents(t testing.TB, prefix string) *agents {
	t.Helper()
	return startAgentsEvery(t, prefix, 50*time.Millisecond)
}

// startWatchingAgents starts agents that answer each change of their WindowsProxyNode as it is
// watched, as real agents do: at fleet scale, polling 1,000 objects every second would measure
// the agents' listing, not the controller. The watch never waits for the agents: it keeps the
// latest object of each node for 8 writers, as a real agent's informer and workqueue do, and a
// closed watch resumes where it was (see watchNodes). A watch that waited for the writers, then
// restarted from every object, was closed by the apiserver as unresponsive 270 times in one
// 5,000-node run, holding up every other watch of the kind each time.
func startWatchingAgents(t testing.TB, prefix string) *agents {
	t.Helper()
	a := &agents{prefix: prefix, how: map[string]behaviour{}, downgraded: map[string]bool{}}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	queue := workqueue.NewTyped[string]()
	var mu sync.Mutex
	latest := map[string]*winproxyv1alpha1.WindowsProxyNode{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				name, shutdown := queue.Get()
				if shutdown {
					return
				}
				mu.Lock()
				w := latest[name]
				delete(latest, name) // not to count in the controller's heap
				mu.Unlock()
				if w != nil {
					a.answer(ctx, w)
				}
				queue.Done(name)
			}
		})
	}
	go func() {
		defer close(done)
		defer wg.Wait()
		defer queue.ShutDown()
		watchNodes(ctx, wc, "", func(typ watch.EventType, o *winproxyv1alpha1.WindowsProxyNode) {
			if typ != watch.Deleted && strings.HasPrefix(o.Name, prefix) {
				mu.Lock()
				latest[o.Name] = o
				mu.Unlock()
				queue.Add(o.Name)
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return a
}

// startAgentsEvery starts agents that look at their WindowsProxyNodes every interval.
func startAgentsEvery(t testing.TB, prefix string, interval time.Duration) *agents {
	t.Helper()
	a := &agents{prefix: prefix, how: map[string]behaviour{}, downgraded: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				a.sync(ctx)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return a
}

// downgrade makes node's agent report DualStackDowngraded=True.
func (a *agents) downgrade(node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.downgraded[node] = true
}

func (a *agents) set(node string, b behaviour) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.how[node] = b
}

// setWhen makes node answer b to the configs match accepts, and as set says to the others.
func (a *agents) setWhen(node string, match func(*winproxyv1alpha1.ResolvedProxyConfig) bool, b behaviour) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.when == nil {
		a.when = map[string]rule{}
	}
	a.when[node] = rule{match: match, how: b}
}

// sync answers every WindowsProxyNode, with a few writers at once like independent agents.
func (a *agents) sync(ctx context.Context) {
	var list winproxyv1alpha1.WindowsProxyNodeList
	if err := env.Client.List(ctx, &list); err != nil {
		return
	}
	work := make(chan *winproxyv1alpha1.WindowsProxyNode)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for w := range work {
				a.answer(ctx, w)
			}
		})
	}
	for i := range list.Items {
		if w := &list.Items[i]; strings.HasPrefix(w.Name, a.prefix) {
			work <- w
		}
	}
	close(work)
	wg.Wait()
}

func (a *agents) answer(ctx context.Context, w *winproxyv1alpha1.WindowsProxyNode) {
	a.mu.Lock()
	how, down := a.how[w.Name], a.downgraded[w.Name]
	if r, ok := a.when[w.Name]; ok && r.match(&w.Spec.Proxy) {
		how = r.how
	}
	a.mu.Unlock()
	if how == silent {
		return
	}
	before := w.DeepCopy()
	w.Status.ObservedHash = w.Spec.Hash
	if how == programs {
		w.Status.ProgrammedHash = w.Spec.Hash
	}
	programmed, degraded := metav1.ConditionTrue, metav1.ConditionFalse
	reason := winproxyv1alpha1.ReasonSynced
	switch how {
	case degrades:
		programmed, degraded, reason = metav1.ConditionFalse, metav1.ConditionTrue, winproxyv1alpha1.ReasonSyncFailed
	case waits:
		programmed, reason = metav1.ConditionFalse, winproxyv1alpha1.ReasonWaitingForNetwork
	}
	downgraded, downReason := metav1.ConditionFalse, winproxyv1alpha1.ReasonDualStackNotRequested
	if down {
		downgraded, downReason = metav1.ConditionTrue, winproxyv1alpha1.ReasonOverlayNetwork
	}
	for _, c := range []metav1.Condition{
		{Type: winproxyv1alpha1.ConditionProgrammed, Status: programmed, Reason: reason, Message: "simulated agent"},
		{Type: winproxyv1alpha1.ConditionDegraded, Status: degraded, Reason: reason, Message: "simulated agent"},
		{Type: winproxyv1alpha1.ConditionDualStackDowngraded, Status: downgraded, Reason: downReason, Message: "simulated agent"},
	} {
		c.ObservedGeneration = w.Generation
		meta.SetStatusCondition(&w.Status.Conditions, c)
	}
	// As the real agent ends every report (agent/nodestatus): the generation and the summary.
	w.Status.ObservedGeneration = w.Generation
	nodesummary.Set(&w.Status, w, time.Now())
	if !statusEqual(before, w) {
		_ = env.Client.Status().Patch(ctx, w, client.MergeFrom(before))
	}
}

func statusEqual(a, b *winproxyv1alpha1.WindowsProxyNode) bool {
	if a.Status.ObservedHash != b.Status.ObservedHash || a.Status.ProgrammedHash != b.Status.ProgrammedHash || len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	for _, c := range b.Status.Conditions {
		o := meta.FindStatusCondition(a.Status.Conditions, c.Type)
		if o == nil || o.Status != c.Status || o.Reason != c.Reason || o.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}

// nodeSpec describes a test node.
type nodeSpec struct {
	name, kubelet string
	linux         bool
	labels        map[string]string
	annotations   map[string]string
}

// createNodes creates nodes with a pod CIDR and an internal IP each, as a kubelet and the node
// IPAM controller would have set them.
func createNodes(t testing.TB, specs ...nodeSpec) {
	t.Helper()
	parallelEach(t, len(specs), func(ctx context.Context, i int) error { return createNode(ctx, i, specs[i]) })
}

// parallelEach runs fn(0..n-1) on 16 goroutines, as many clients writing at once, and fails tb
// on the first error.
func parallelEach(tb testing.TB, n int, fn func(ctx context.Context, i int) error) {
	tb.Helper()
	ctx := context.Background()
	idx := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range idx {
				if err := fn(ctx, i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		idx <- i
	}
	close(idx)
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

func createNode(ctx context.Context, i int, s nodeSpec) error {
	opts := []testbuild.NodeOption{
		testbuild.Labels(s.labels), testbuild.Annotations(s.annotations),
		testbuild.PodCIDRs(fmt.Sprintf("10.%d.%d.0/24", 100+i/250, i%250)),
		testbuild.Kubelet(s.kubelet), testbuild.InternalIPs(fmt.Sprintf("192.168.%d.%d", i/250, 1+i%250)),
	}
	if s.linux {
		opts = append(opts, testbuild.OS("linux"))
	}
	want := testbuild.Node(s.name, opts...)
	n := want.DeepCopy()
	if err := env.Client.Create(ctx, n); err != nil {
		return err
	}
	n.Status = want.Status
	return env.Client.Status().Update(ctx, n)
}

// cleanup deletes every config, node and WindowsProxyNode, so each test starts from nothing.
func cleanup(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{&winproxyv1alpha1.WindowsProxyConfig{}, &corev1.Node{}, &winproxyv1alpha1.WindowsProxyNode{}} {
		if err := env.Client.DeleteAllOf(ctx, obj); err != nil {
			t.Errorf("cleaning up %T: %v", obj, err)
		}
	}
	eventually(t, 30*time.Second, "every test object deleted", func() (bool, string) {
		var wpcs winproxyv1alpha1.WindowsProxyConfigList
		var nodes corev1.NodeList
		var wpns winproxyv1alpha1.WindowsProxyNodeList
		for _, l := range []client.ObjectList{&wpcs, &nodes, &wpns} {
			if err := env.Client.List(ctx, l); err != nil {
				return false, err.Error()
			}
		}
		n := len(wpcs.Items) + len(nodes.Items) + len(wpns.Items)
		return n == 0, fmt.Sprintf("%d objects left", n)
	})
}

// eventually polls cond every 50 ms until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
