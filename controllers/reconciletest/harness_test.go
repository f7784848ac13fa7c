// Package reconciletest tests the controller's Reconcile decisions without a control plane, as
// kueue tests its reconcilers: each case gives the objects in the cluster, calls Reconcile, and
// lists the writes (creates, patches and deletes, with their content) and the events it must
// make, read through controller-runtime's fake client. It holds tests only, and lives outside
// package controllers because that package's TestMain starts kube-apiserver and etcd: what needs
// them (admission, watches, the garbage collector, the fleet benchmarks) stays there, on envtest.
package reconciletest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/controllers"
	"github.com/winproxy/winproxy/internal/resolve"
)

// t0 is when every case's clock starts.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := winproxyv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// write is one API write a reconcile made.
type write struct {
	// Verb is create, patch, delete or patch-status.
	Verb, Kind, Name string
	// Content is what was written: a nodeSpec, a nodeStatus or a configStatus; nil for a delete.
	Content any
}

// nodeSpec is what the controller writes into a WindowsProxyNode.
type nodeSpec struct {
	// Config is spec.configName; Spec names the spec its hash is of, as "config@generation".
	Config, Spec string
	// Owners are the owner references by name, the controller's marked with "*".
	Owners []string
	// UpdatedAt is the winproxy.io/updated-at annotation, relative to t0.
	UpdatedAt time.Duration
}

// nodeStatus is what the heartbeat reconciler writes into a WindowsProxyNode's status.
type nodeStatus struct {
	ObservedGeneration int64
	// Conditions are "Type=Status/Reason", in type order.
	Conditions []string
}

// configStatus is a WindowsProxyConfig's status, without messages (package configstatus tests
// those).
type configStatus struct {
	ObservedGeneration int64
	// Nodes are the counts of status.nodes.
	Nodes string
	// Conditions are "Type=Status/Reason", in type order.
	Conditions []string
	// Failing are status.failingNodes as "node/Reason".
	Failing []string
	// LastGood is the generation of status.lastGood, 0 without one.
	LastGood int64
	// Rollback is status.rollback as "generation N: node/Reason, ...", "" without one.
	Rollback string
}

// cluster is a fake API server with the objects of a case, and what the reconciler wrote to it.
type cluster struct {
	client.WithWatch
	// specs names the hash of each config's spec (and last good spec) on each node.
	specs map[string]string

	mu     sync.Mutex
	writes []write
}

// newCluster returns a fake API server holding objs, with the status subresources and the
// reconciler's indexes of a real one.
func newCluster(t *testing.T, objs ...client.Object) *cluster {
	t.Helper()
	c := &cluster{specs: specNames(objs)}
	b := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&winproxyv1alpha1.WindowsProxyConfig{}, &winproxyv1alpha1.WindowsProxyNode{})
	if err := controllers.IndexFields(context.Background(), indexer{b}); err != nil {
		t.Fatal(err)
	}
	c.WithWatch = b.WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			c.record("create", obj)
			return cl.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			c.record("patch", obj)
			return cl.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			c.record("delete", obj)
			return cl.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			c.record("patch-"+sub, obj)
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			return fmt.Errorf("the controller only patches")
		},
	}).Build()
	return c
}

// indexer registers indexes with a fake client's builder.
type indexer struct{ b *fake.ClientBuilder }

func (i indexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	i.b.WithIndex(obj, field, fn)
	return nil
}

func (c *cluster) record(verb string, obj client.Object) {
	w := write{Verb: verb, Kind: reflect.TypeOf(obj).Elem().Name(), Name: obj.GetName()}
	switch o := obj.(type) {
	case *winproxyv1alpha1.WindowsProxyNode:
		if verb == "patch-status" {
			w.Content = summariseNodeStatus(o)
		} else if verb != "delete" {
			w.Content = c.summariseNodeSpec(o)
		}
	case *winproxyv1alpha1.WindowsProxyConfig:
		w.Content = summariseConfigStatus(&o.Status)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, w)
}

// takeWrites returns the writes made since the last call, in kind, name and verb order: a
// reconcile writes WindowsProxyNodes in parallel.
func (c *cluster) takeWrites() []write {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.writes
	c.writes = nil
	slices.SortStableFunc(out, func(a, b write) int {
		return strings.Compare(a.Kind+"/"+a.Name+"/"+a.Verb, b.Kind+"/"+b.Name+"/"+b.Verb)
	})
	return out
}

// specNames names the hash of each config's spec and last good spec on each node in objs.
func specNames(objs []client.Object) map[string]string {
	var nodes []*corev1.Node
	var configs []*winproxyv1alpha1.WindowsProxyConfig
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Node:
			nodes = append(nodes, o)
		case *winproxyv1alpha1.WindowsProxyConfig:
			configs = append(configs, o)
		}
	}
	out := map[string]string{}
	for _, cfg := range configs {
		specs := map[int64]*winproxyv1alpha1.WindowsProxyConfigSpec{cfg.Generation: &cfg.Spec}
		if lg := cfg.Status.LastGood; lg != nil {
			specs[lg.Generation] = &lg.Spec
		}
		for gen, spec := range specs {
			for _, n := range nodes {
				if p, err := resolve.Resolve(spec, n); err == nil {
					out[resolve.Hash(&p)] = fmt.Sprintf("%s@%d", cfg.Name, gen)
				}
			}
		}
	}
	return out
}

func (c *cluster) summariseNodeSpec(w *winproxyv1alpha1.WindowsProxyNode) nodeSpec {
	s := nodeSpec{Config: w.Spec.ConfigName, Spec: c.specs[w.Spec.Hash]}
	if s.Spec == "" {
		s.Spec = "hash " + w.Spec.Hash
	}
	for _, o := range w.OwnerReferences {
		name := o.Name
		if o.Controller != nil && *o.Controller {
			name += "*"
		}
		s.Owners = append(s.Owners, name)
	}
	if at, err := time.Parse(time.RFC3339, w.Annotations[controllers.UpdatedAtAnnotation]); err == nil {
		s.UpdatedAt = at.Sub(t0)
	}
	return s
}

func conditions(cs []metav1.Condition) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	slices.Sort(out)
	return out
}

func summariseNodeStatus(w *winproxyv1alpha1.WindowsProxyNode) nodeStatus {
	return nodeStatus{ObservedGeneration: w.Status.ObservedGeneration, Conditions: conditions(w.Status.Conditions)}
}

func summariseConfigStatus(st *winproxyv1alpha1.WindowsProxyConfigStatus) configStatus {
	n := st.Nodes
	s := configStatus{
		ObservedGeneration: st.ObservedGeneration,
		Nodes: fmt.Sprintf("selected=%d updated=%d programmed=%d degraded=%d unreachable=%d",
			n.Selected, n.Updated, n.Programmed, n.Degraded, n.Unreachable),
		Conditions: conditions(st.Conditions),
	}
	for _, p := range st.FailingNodes {
		s.Failing = append(s.Failing, p.Name+"/"+p.Reason)
	}
	if st.LastGood != nil {
		s.LastGood = st.LastGood.Generation
	}
	if rb := st.Rollback; rb != nil {
		var failed []string
		for _, p := range rb.FailedNodes {
			failed = append(failed, p.Name+"/"+p.Reason)
		}
		s.Rollback = fmt.Sprintf("generation %d: %s", rb.Generation, strings.Join(failed, ", "))
	}
	return s
}

// recorder records events as "Type Reason regarding[/related]".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(regarding, related runtime.Object, typ, reason, _, _ string, _ ...any) {
	e := fmt.Sprintf("%s %s %s", typ, reason, objectName(regarding))
	if related != nil {
		e += "/" + objectName(related)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func objectName(o runtime.Object) string {
	m, err := meta.Accessor(o)
	if err != nil {
		return fmt.Sprintf("%T", o)
	}
	return m.GetName()
}
