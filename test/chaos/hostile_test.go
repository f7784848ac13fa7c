//go:build !windows

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// TestHostile sends what an attacker or a careless admin could send to the API (configs, nodes,
// Services, EndpointSlices, WindowsProxyNodes) while the real controller and an agent run, and
// classifies each input:
//
//   - rejected: the apiserver refused it and its message names the problem;
//   - handled: it was accepted and the system stayed correct: the controller keeps reconciling
//     (a canary config follows its generation), the agent keeps programming its current config
//     with HNS exactly as the cluster says, neither process exited, and where the input calls for
//     a condition or an Event (a refused node, a shadowed config) it is there;
//   - harmful: anything else.
//
// The test fails on a harmful input that knownHarmful does not list. Under `make test` the inputs
// that cannot interfere run together in batches, with the invariants checked after each batch;
// `make test-chaos` runs every input alone, with its own check, and a bigger model.
func TestHostile(t *testing.T) {
	began := time.Now()
	ctx := context.Background()
	cases := hostileCases()
	checkNames(t, cases)
	r := newRig(t, scale(8, 60))
	if _, err := r.settle(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	x, err := newHostile(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.canaryReconciled(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}

	results := map[string]result{}
	for _, batch := range batches(cases) {
		for name, res := range x.runBatch(ctx, t, batch) {
			results[name] = res
		}
	}

	var rejected, handled, harmful int
	var unexpected []string
	for _, c := range cases {
		res := results[c.name]
		if res.detail == "" {
			t.Logf("%-8s %s", res.kind, c.name)
		} else {
			t.Logf("%-8s %s: %s", res.kind, c.name, clipText(res.detail, 300))
		}
		switch res.kind {
		case rejectedInput:
			rejected++
		case handledInput:
			handled++
		default:
			harmful++
			if bug, known := knownHarmful[c.name]; known {
				t.Logf("known harmful input %q: %s\n    seen: %s", c.name, bug, res.detail)
				continue
			}
			unexpected = append(unexpected, fmt.Sprintf("%s: %s", c.name, res.detail))
		}
	}
	for name := range knownHarmful {
		if res, ok := results[name]; ok && res.kind != harmfulInput {
			t.Logf("input %q listed in knownHarmful was %s this time: remove it from the list once its fix is in", name, res.kind)
		}
	}
	for _, u := range unexpected {
		t.Errorf("harmful input %s", u)
	}
	took := time.Since(began).Round(time.Second)
	t.Logf("%d hostile inputs in %v: %d rejected, %d handled, %d harmful (%d known)", len(cases), took, rejected, handled, harmful, harmful-len(unexpected))
	record("hostile inputs (%s): %d tried, %d rejected, %d handled, %d harmful (%d of them known bugs, listed in test/chaos/hostile_test.go)",
		scale("batched", "one at a time"), len(cases), rejected, handled, harmful, harmful-len(unexpected))
}

// knownHarmful lists the inputs found harmful whose fix lies outside this test, with the bug:
// the test fails only when an input not listed here turns out harmful.
var knownHarmful = map[string]string{}

// inputKind is how the system took an input.
type inputKind string

const (
	rejectedInput inputKind = "rejected"
	handledInput  inputKind = "handled"
	harmfulInput  inputKind = "harmful"
)

type result struct {
	kind   inputKind
	detail string
}

// hostileCase is one hostile input.
type hostileCase struct {
	name string
	// group puts inputs that cannot interfere together: under `make test` the cases of a group
	// run at the same time. Cases without a group change shared state (the chaos config,
	// win-2025's Node or WindowsProxyNode) and always run alone.
	group string
	// send sends the input and returns the apiserver's answer.
	send func(ctx context.Context, x *hostile) error
	// rejected lists what the apiserver's refusal must say (the field path, the rule's
	// message); empty means the input must be accepted.
	rejected []string
	// handled, for an accepted input, reports what is not (yet) as it should be; it is polled
	// until it returns nil.
	handled func(ctx context.Context, x *hostile) error
	// undo restores what send changed, also after a refusal (in case the input got through).
	undo func(ctx context.Context, x *hostile) error
	// watchLoss samples HNS from before send until the case is undone and settled: no load
	// balancer of the model may go missing meanwhile.
	watchLoss bool
}

// Groups of inputs that cannot interfere with each other.
const (
	// groupAdmission inputs are all expected to be refused.
	groupAdmission = "admission"
	// groupResolution inputs are configs on fake nodes of their own, each selecting its nodes only.
	groupResolution = "resolution"
	// groupWorkloads inputs are Services and EndpointSlices in the hostile namespace, each with a
	// ClusterIP and endpoint IPs of its own.
	groupWorkloads = "workloads"
)

// batches splits the cases into what runs together: under `make test` a group's cases, under
// `make test-chaos` every case alone.
func batches(cases []hostileCase) [][]hostileCase {
	var out [][]hostileCase
	byGroup := map[string]int{}
	for _, c := range cases {
		if c.group == "" || full {
			out = append(out, []hostileCase{c})
			continue
		}
		if i, ok := byGroup[c.group]; ok {
			out[i] = append(out[i], c)
			continue
		}
		byGroup[c.group] = len(out)
		out = append(out, []hostileCase{c})
	}
	return out
}

// checkNames fails on duplicate or empty case names: results are keyed by name.
func checkNames(t *testing.T, cases []hostileCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if c.name == "" || seen[c.name] {
			t.Fatalf("case name %q empty or used twice", c.name)
		}
		seen[c.name] = true
		if len(c.rejected) == 0 && c.handled == nil {
			t.Fatalf("case %q says neither what refusal nor what handling to expect", c.name)
		}
	}
	for name := range knownHarmful {
		if !seen[name] {
			t.Fatalf("knownHarmful names %q, which is no case", name)
		}
	}
}

// Timeouts of one batch's steps: generous for a loaded 2-core machine, reached only when
// something is wrong. An input known to be harmful gets a short one under `make test`, so that
// known bugs do not eat CI's time; its fix makes it pass well within it.
var (
	handleTimeout = scale(45*time.Second, 90*time.Second)
	settleTimeout = scale(45*time.Second, 90*time.Second)
	knownTimeout  = scale(5*time.Second, 90*time.Second)
)

// timeoutFor is how long to wait for an input to be handled.
func timeoutFor(c hostileCase) time.Duration {
	if _, known := knownHarmful[c.name]; known {
		return knownTimeout
	}
	return handleTimeout
}

// runBatch sends a batch's inputs at once, checks each one's handling, then the invariants,
// undoes them and checks that the system is back where it was: settled, exact, and the controller
// still reconciling.
func (x *hostile) runBatch(ctx context.Context, t *testing.T, batch []hostileCase) map[string]result {
	t.Helper()
	start := time.Now()
	x.mu.Lock()
	x.since = start
	x.mu.Unlock()
	results := make(map[string]result, len(batch))
	var mu sync.Mutex
	set := func(name string, kind inputKind, format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := results[name]; ok && prev.kind == harmfulInput {
			return
		}
		results[name] = result{kind: kind, detail: fmt.Sprintf(format, args...)}
	}
	var s *sampler
	if slices.ContainsFunc(batch, func(c hostileCase) bool { return c.watchLoss }) {
		s = x.r.sample()
	}

	// Send every input; classify the apiserver's answer.
	accepted := make([]bool, len(batch))
	each(len(batch), func(i int) {
		c := batch[i]
		err := c.send(ctx, x)
		switch {
		case err != nil && len(c.rejected) == 0:
			set(c.name, harmfulInput, "refused, want it accepted and handled: %v", err)
		case err != nil:
			if missing := slices.DeleteFunc(slices.Clone(c.rejected), func(w string) bool { return strings.Contains(err.Error(), w) }); len(missing) > 0 {
				set(c.name, harmfulInput, "refused without saying %q: %v", missing, err)
			} else {
				set(c.name, rejectedInput, "%v", err)
			}
		case len(c.rejected) > 0:
			accepted[i] = true
			set(c.name, harmfulInput, "accepted, want a refusal saying %q", c.rejected)
		default:
			accepted[i] = true
		}
	})

	// A sentinel Service created after the batch's workloads: once its load balancer is in HNS,
	// the agent has seen every earlier Service and EndpointSlice, so an absence means something.
	if slices.ContainsFunc(batch, func(c hostileCase) bool { return c.group == groupWorkloads }) {
		if err := x.sentinel(ctx); err != nil {
			for _, c := range batch {
				set(c.name, harmfulInput, "the agent did not program a Service created after this input: %v", err)
			}
		}
	}

	// Each accepted input is handled as it should be.
	each(len(batch), func(i int) {
		c := batch[i]
		if !accepted[i] || c.handled == nil {
			return
		}
		if err := poll(ctx, timeoutFor(c), func() error { return c.handled(ctx, x) }); err != nil {
			set(c.name, harmfulInput, "accepted and not handled: %v", err)
			return
		}
		set(c.name, handledInput, "")
	})

	// While the inputs are in place, the processes run and the model's Services are programmed.
	if slices.ContainsFunc(batch, func(c hostileCase) bool { return c.group == groupWorkloads }) {
		if err := poll(ctx, settleTimeout, func() error { return x.intact(ctx) }); err != nil {
			x.blame(batch, set, "with the input in place: %v", err)
		}
	} else if err := x.alive(); err != nil {
		x.blame(batch, set, "%v", err)
	}

	// Undo, then everything must be back: settled and exact, nothing leaked, the controller
	// reconciling.
	each(len(batch), func(i int) {
		if c := batch[i]; c.undo != nil {
			if err := c.undo(ctx, x); err != nil {
				set(c.name, harmfulInput, "cannot be undone: %v", err)
			}
		}
	})
	if slices.ContainsFunc(batch, func(c hostileCase) bool { return c.group == groupWorkloads }) {
		_ = x.deleteSentinel(ctx)
	}
	recoverWait := settleTimeout
	if len(batch) == 1 {
		recoverWait = min(recoverWait, timeoutFor(batch[0]))
	}
	if err := x.recovered(ctx, recoverWait); err != nil {
		x.blame(batch, set, "after undoing it: %v", err)
		x.recover(ctx, t)
	}
	if s != nil {
		s.finish()
		if s.losses > 0 {
			x.blame(batch, set, "%d of %d samples missed a load balancer the cluster wants, e.g. %v", s.losses, s.samples, s.examples)
		}
	}
	label := batch[0].group
	if label == "" || len(batch) == 1 {
		label = batch[0].name
	}
	t.Logf("batch %q: %d inputs in %v", label, len(batch), time.Since(start).Round(100*time.Millisecond))
	return results
}

// blame marks every case of a batch harmful for a failure of the batch as a whole: under `make
// test` the culprit is one of them; `make test-chaos` runs each alone and names it.
func (x *hostile) blame(batch []hostileCase, set func(string, inputKind, string, ...any), format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(batch) > 1 {
		msg += fmt.Sprintf(" (in a batch of %d inputs; WINPROXY_CHAOS=full runs each alone)", len(batch))
	}
	for _, c := range batch {
		set(c.name, harmfulInput, "%s", msg)
	}
}

// recovered checks that the system is back to the rig's state: both processes run, the agent
// has programmed its config with HNS exactly as the model says, the CNI's objects are intact, and
// the controller reconciles.
func (x *hostile) recovered(ctx context.Context, timeout time.Duration) error {
	if err := x.alive(); err != nil {
		return err
	}
	// The chaos config is Ready at its generation: win-2025 programmed what it says now, not
	// what a case left, before settle looks at HNS.
	err := poll(ctx, timeout, func() error {
		cfg, err := x.config(ctx, "chaos")
		if err != nil {
			return err
		}
		if err := atGeneration(cfg); err != nil {
			return err
		}
		return wantCondition(cfg.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAllNodesProgrammed)
	})
	if err != nil {
		return err
	}
	if _, err := x.r.settle(timeout); err != nil {
		return err
	}
	if err := x.hostIntact(); err != nil {
		return err
	}
	return x.canaryReconciled(ctx, timeout)
}

// recover restarts what a harmful input broke, so that the next inputs are judged on their own.
func (x *hostile) recover(ctx context.Context, t *testing.T) {
	t.Helper()
	t.Logf("restarting the controller and the agent after a harmful input")
	for _, p := range []interface {
		Kill()
		Start() error
	}{x.r.ctrl, x.r.agent} {
		p.Kill()
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.recovered(ctx, settleTimeout); err != nil {
		t.Fatalf("the system did not recover after a restart, the remaining inputs cannot be judged: %v", err)
	}
}

// each runs fn(0..n-1) on a few goroutines: a batch sends its inputs at once, as a busy cluster
// would, without flooding a 2-core machine.
func each(n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, 8) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
