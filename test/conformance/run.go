package conformance

import (
	"context"
	"fmt"
	"strings"
)

// dsrUnsupported is how upstream refuses --enable-dsr on an HNS without
// DSR (the fake's wording; on Windows: "platform does not support feature
// Direct Server Return (DSR)").
const dsrUnsupported = "DSR Not Supported"

// outcome is one cluster run on every side, canonicalized per step.
type outcome struct {
	c *Cluster
	// Up is upstream as it runs: one process across the steps.
	Up  []Canon
	Win []Canon
	// fresh[i] is upstream restarted at step i: what it programs from the
	// current objects alone, without the history its running process
	// carries. Differences where winproxy agrees with it but not with Up
	// are upstream's history. Computed when a predicate asks (Fresh).
	fresh  map[int]Canon
	driver *upstreamDriver
	// upCluster is the cluster upstream ran (DSR off if it refused DSR).
	upCluster *Cluster
	// UpErr is upstream's start-up error, if it refused to start; Up and
	// Fresh are then upstream's run with DSR off (see the dsr-unsupported
	// difference).
	UpErr string
}

// run runs c on both proxies.
func run(ctx context.Context, d *upstreamDriver, c *Cluster) (*outcome, error) {
	o := &outcome{c: c}
	up, err := d.Run(c)
	if err != nil {
		return nil, err
	}
	if len(up.Steps) > 0 && up.Steps[0].Error != "" {
		o.UpErr = up.Steps[0].Error
		if !c.EnableDSR || c.Features.DSR || o.UpErr != dsrUnsupported {
			return nil, fmt.Errorf("upstream failed: %s", o.UpErr)
		}
		// Compare with what upstream would program without DSR, which is
		// what winproxy does on such a host.
		noDSR := *c
		noDSR.EnableDSR = false
		if up, err = d.Run(&noDSR); err != nil {
			return nil, err
		}
		c = &noDSR
	}
	for _, s := range up.Steps {
		if s.Error != "" {
			return nil, fmt.Errorf("upstream failed: %s", s.Error)
		}
	}
	o.driver, o.upCluster, o.fresh = d, c, map[int]Canon{}
	win, err := runWinproxy(ctx, o.c)
	if err != nil {
		return nil, fmt.Errorf("winproxy: %w", err)
	}
	cni := cniNames(o.c)
	hu, hw := history{}, history{}
	for i := range up.Steps {
		o.Up = append(o.Up, canonicalize(up.Steps[i], cni, hu))
		o.Win = append(o.Win, canonicalize(win.Steps[i], cni, hw))
	}
	o.fresh[0] = o.Up[0]
	return o, nil
}

// Fresh returns upstream's state at step i when restarted at that step.
func (o *outcome) Fresh(i int) (Canon, error) {
	if c, ok := o.fresh[i]; ok {
		return c, nil
	}
	prefix := *o.upCluster
	prefix.Steps = append([]Step(nil), o.upCluster.Steps[:i+1]...)
	prefix.Steps[i].Restart = true
	r, err := o.driver.Run(&prefix)
	if err != nil {
		return Canon{}, err
	}
	if r.Steps[i].Error != "" {
		return Canon{}, fmt.Errorf("upstream failed: %s", r.Steps[i].Error)
	}
	// Endpoint IDs depend on the order upstream created them in, so each
	// run names its deleted endpoints from its own history.
	cni, h := cniNames(o.c), history{}
	var c Canon
	for j := range i + 1 {
		c = canonicalize(r.Steps[j], cni, h)
	}
	o.fresh[i] = c
	return c, nil
}

// cniNames are the endpoints the scenario (CNI, host) creates: every other
// local endpoint was created by a proxy.
func cniNames(c *Cluster) map[string]bool {
	out := map[string]bool{}
	for _, e := range c.Endpoints {
		out[e.Name] = true
	}
	for _, s := range c.Steps {
		for _, e := range s.AddEndpoints {
			out[e.Name] = true
		}
	}
	return out
}

// clusterReport is what one cluster contributed to the run.
type clusterReport struct {
	seed uint64
	// steps, and load balancers compared (frontends on either side) summed
	// over the steps.
	steps, lbs int
	// counts of atoms by difference ID.
	counts map[string]int
	// failure describes the first step with unexplained atoms ("" if none).
	failure string
	err     error
}

// check runs the cluster of seed on both proxies and explains every
// difference; verbose writes each step's differences with their
// explanations to log.
func check(ctx context.Context, d *upstreamDriver, seed uint64, verbose func(string)) clusterReport {
	r := clusterReport{seed: seed, counts: map[string]int{}}
	c := Generate(seed)
	if verbose != nil {
		verbose(describeCluster(c))
	}
	o, err := run(ctx, d, c)
	if err != nil {
		r.err = fmt.Errorf("seed %d: %w", seed, err)
		return r
	}
	w := newWorld(c)
	for i := range c.Steps {
		x := w.advance(o, i)
		r.steps++
		r.lbs += len(union(o.Up[i].LBs, o.Win[i].LBs))
		atoms := atomize(i, compare(o.Up[i], o.Win[i]))
		if i == 0 && o.UpErr != "" {
			atoms = append(atoms, atom{Step: 0, Kind: atomError, Up: o.UpErr, Win: "(started)"})
		}
		unexplained := classify(x, atoms, r.counts, verbose)
		if x.err != nil {
			r.err = fmt.Errorf("seed %d: %w", seed, x.err)
			return r
		}
		if len(unexplained) > 0 && r.failure == "" {
			r.failure = failureReport(x, seed, unexplained)
		}
	}
	return r
}

// failureReport renders unexplained differences for a person: seed, step,
// the differences, the node, the step's changes and the services involved.
func failureReport(x *stepCtx, seed uint64, unexplained []atom) string {
	c := x.o.c
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, step %d of %d: %d difference(s) match no entry of the allow-list (docs/differences-from-kube-proxy.md):\n",
		seed, x.step, len(c.Steps)-1, len(unexplained))
	svcs := map[string]bool{}
	for _, a := range unexplained {
		fmt.Fprintf(&b, "  %s\n", a)
		for _, r := range x.roles[a.Frontend] {
			svcs[r.Service] = true
		}
		if a.IP != "" {
			for _, sl := range x.slices {
				for _, e := range sl.Endpoints {
					if len(e.Addresses) > 0 && canonIP(e.Addresses[0]) == a.IP {
						svcs[sl.Namespace+"/"+sl.Labels["kubernetes.io/service-name"]] = true
					}
				}
			}
		}
	}
	fmt.Fprintf(&b, "reproduce: go test ./test/conformance -run TestConformance -v -conformance.seed=%d\n", seed)
	b.WriteString(describeNode(c))
	for i := 1; i <= x.step; i++ {
		if c.Steps[i].Restart {
			fmt.Fprintf(&b, "\nthe proxy restarted at step %d", i)
		}
	}
	fmt.Fprintf(&b, "\nchanges of step %d:\n%s", x.step, describeStep(&c.Steps[x.step]))
	b.WriteString("\nservices involved, as of that step:")
	for _, k := range sortedKeys(svcs) {
		if svc := x.services[k]; svc != nil {
			fmt.Fprintf(&b, "\n  %s", describeService(svc))
		}
		for _, sk := range sortedKeys(x.slices) {
			if sl := x.slices[sk]; sl.Namespace+"/"+sl.Labels["kubernetes.io/service-name"] == k {
				fmt.Fprintf(&b, "\n    %s", describeSlice(sl))
			}
		}
	}
	return b.String()
}
