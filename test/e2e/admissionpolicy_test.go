//go:build !windows

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/testenv"
)

// agentFixture is what an agent has on a real cluster: its node, a WindowsProxyNode per node, and
// the service-account tokens of agent pods.
type agentFixture struct {
	e         *testenv.Env
	namespace string
	sa        string
}

// node creates a Node and its WindowsProxyNode (as the controller would), removed at cleanup.
func (f agentFixture) node(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "windows"}}}
	wpn := &v1alpha1.WindowsProxyNode{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.WindowsProxyNodeSpec{
			ConfigName: "policy-test",
			Hash:       "h1",
			Proxy:      v1alpha1.ResolvedProxyConfig{Network: v1alpha1.NetworkSpec{Name: "cbr0", Type: v1alpha1.NetworkTypeL2Bridge}},
		},
	}
	for _, obj := range []client.Object{node, wpn} {
		if err := f.e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.e.Client.Delete(ctx, obj) })
	}
}

// agentClient returns a client that authenticates with a token of the agent's service account,
// bound to an agent pod on node (the token the kubelet would mount), or unbound when node is empty.
func (f agentFixture) agentClient(t *testing.T, node string) client.Client {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(f.e.Config)
	if err != nil {
		t.Fatal(err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}}
	if node != "" {
		// Nothing runs this pod: it exists so that the token can be bound to it and to its node.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "agent-", Namespace: f.namespace},
			Spec: corev1.PodSpec{
				NodeName:           node,
				ServiceAccountName: f.sa,
				Containers:         []corev1.Container{{Name: "agent", Image: "winproxy-agent"}},
			},
		}
		if err := f.e.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.e.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)) })
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tok, err := cs.CoreV1().ServiceAccounts(f.namespace).CreateToken(ctx, f.sa, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", f.namespace, f.sa, err)
	}
	cfg := rest.AnonymousClientConfig(f.e.Config)
	cfg.BearerToken = tok.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: f.e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }

// writeStatus patches a WindowsProxyNode's status as the agent does.
func writeStatus(c client.Client, name, hash string) error {
	wpn := &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"status":{"observedHash":%q}}`, hash))
	return c.Status().Patch(context.Background(), wpn, patch)
}

// checkOwnNodeOnly is the property the policy exists for, with tokens the apiserver really issued.
func checkOwnNodeOnly(t *testing.T, f agentFixture, prefix string) {
	nodeA, nodeB := prefix+"-a", prefix+"-b"
	f.node(t, nodeA)
	f.node(t, nodeB)
	agentA := f.agentClient(t, nodeA)

	// The policy takes effect shortly after it is created: wait for the refusal, then check its words.
	var err error
	testenv.Eventually(t, 30*time.Second, func() error {
		if err = writeStatus(agentA, nodeB, "from-a"); err == nil {
			return fmt.Errorf("the agent of %s wrote the status of %s", nodeA, nodeB)
		}
		return nil
	})
	t.Logf("refusal: %v", err)
	want := fmt.Sprintf("the winproxy agent on node %s may only write WindowsProxyNode %s, not %s", nodeA, nodeA, nodeB)
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("writing %s's status as %s's agent: %v\nwant a refusal saying %q", nodeB, nodeA, err, want)
	}

	if err := writeStatus(agentA, nodeA, "from-a"); err != nil {
		t.Errorf("the agent of %s cannot write its own status: %v", nodeA, err)
	}
	var got v1alpha1.WindowsProxyNode
	if err := f.e.Client.Get(context.Background(), client.ObjectKey{Name: nodeA}, &got); err != nil {
		t.Fatal(err)
	} else if got.Status.ObservedHash != "from-a" {
		t.Errorf("%s status.observedHash = %q after the agent's write", nodeA, got.Status.ObservedHash)
	}

	// B's own agent still can.
	if err := writeStatus(f.agentClient(t, nodeB), nodeB, "from-b"); err != nil {
		t.Errorf("the agent of %s cannot write its own status: %v", nodeB, err)
	}

	// A token not bound to a pod carries no node: refused, not matched by accident.
	if err := writeStatus(f.agentClient(t, ""), nodeA, "unbound"); err == nil || !strings.Contains(err.Error(), "not bound to a node") {
		t.Errorf("writing with an unbound agent token: %v, want a refusal saying it is not bound to a node", err)
	}

	// RBAC still keeps the spec out of reach, even of the node's own agent.
	wpn := &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: nodeA}}
	if err := agentA.Patch(context.Background(), wpn, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"hash":"forged"}}`))); !apierrors.IsForbidden(err) {
		t.Errorf("the agent patched its WindowsProxyNode's spec: %v, want Forbidden", err)
	}
}

func TestPolicyAgentWritesOnlyItsOwnNode(t *testing.T) {
	installChart(t)
	checkOwnNodeOnly(t, agentFixture{e: env, namespace: releaseNamespace, sa: agentSA}, "policy-helm")
}

// checkOwnLeaseOnly: an agent's token can create and renew its own node's heartbeat Lease and
// nothing else: another node's Lease is refused for every write verb (create, update, patch by the
// policy, delete by RBAC), and so is deleting its own.
func checkOwnLeaseOnly(t *testing.T, f agentFixture, prefix string) {
	ctx := context.Background()
	nodeA, nodeB := prefix+"-a", prefix+"-b"
	f.node(t, nodeA)
	f.node(t, nodeB)
	agentA, agentB := f.agentClient(t, nodeA), f.agentClient(t, nodeB)
	lease := func(name string) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: name, Labels: map[string]string{v1alpha1.HeartbeatLabel: "true"}}}
		l.Spec.HolderIdentity = ptr(name)
		l.Spec.RenewTime = ptr(metav1.NowMicro())
		return l
	}
	t.Cleanup(func() {
		for _, n := range []string{nodeA, nodeB} {
			_ = f.e.Client.Delete(ctx, lease(n))
		}
	})

	// The policy takes effect shortly after it is created: wait for the refusal, then check its words.
	var err error
	testenv.Eventually(t, 30*time.Second, func() error {
		if err = agentA.Create(ctx, lease(nodeB)); err == nil {
			_ = f.e.Client.Delete(ctx, lease(nodeB))
			return fmt.Errorf("the agent of %s created the heartbeat Lease of %s", nodeA, nodeB)
		}
		return nil
	})
	want := fmt.Sprintf("the winproxy agent on node %s may only write the heartbeat Lease %s, not %s", nodeA, nodeA, nodeB)
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("creating %s's Lease as %s's agent: %v\nwant a refusal saying %q", nodeB, nodeA, err, want)
	}

	// Each agent creates and renews its own.
	for c, name := range map[client.Client]string{agentA: nodeA, agentB: nodeB} {
		l := lease(name)
		if err := c.Create(ctx, l); err != nil {
			t.Fatalf("the agent of %s cannot create its own Lease: %v", name, err)
		}
		l.Spec.RenewTime = ptr(metav1.NowMicro())
		if err := c.Update(ctx, l); err != nil {
			t.Errorf("the agent of %s cannot renew its own Lease: %v", name, err)
		}
	}

	// Every write verb on B's Lease, as A's agent.
	theirs := &coordinationv1.Lease{}
	if err := agentA.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: nodeB}, theirs); err != nil {
		t.Fatalf("reading %s's Lease as %s's agent: %v", nodeB, nodeA, err)
	}
	before := theirs.Spec.RenewTime.Time
	theirs.Spec.RenewTime = ptr(metav1.NewMicroTime(before.Add(time.Hour)))
	for verb, write := range map[string]func() error{
		"update": func() error { return agentA.Update(ctx, theirs.DeepCopy()) },
		"patch": func() error {
			return agentA.Patch(ctx, theirs.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"holderIdentity":"forged"}}`)))
		},
		"delete": func() error { return agentA.Delete(ctx, lease(nodeB)) },
	} {
		if err := write(); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("%s of %s's Lease as %s's agent: %v, want a refusal", verb, nodeB, nodeA, err)
		}
	}
	if err := agentA.Delete(ctx, lease(nodeA)); !apierrors.IsForbidden(err) {
		t.Errorf("the agent deleted its own Lease: %v, want Forbidden (it only creates and renews it)", err)
	}
	got := &coordinationv1.Lease{}
	if err := f.e.Client.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: nodeB}, got); err != nil {
		t.Fatal(err)
	}
	if *got.Spec.HolderIdentity != nodeB || got.Spec.RenewTime.After(before.Add(time.Minute)) {
		t.Errorf("%s's Lease changed under %s's agent: %+v", nodeB, nodeA, got.Spec)
	}
}

func TestPolicyAgentRenewsOnlyItsOwnLease(t *testing.T) {
	installChart(t)
	checkOwnLeaseOnly(t, agentFixture{e: env, namespace: releaseNamespace, sa: agentSA}, "lease-helm")
}
