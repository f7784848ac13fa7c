//go:build !windows

package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// The inputs that change what win-2025's agent programs: the chaos config, win-2025's
// WindowsProxyNode and Node, and several configs claiming it. Each runs alone and is undone
// before the next, with the rig settled in between.

// patchChaos changes the chaos config (the one win-2025's agent programs) from the spec the rig
// gave it.
func (x *hostile) patchChaos(ctx context.Context, mutate func(*v1alpha1.WindowsProxyConfigSpec)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := x.config(ctx, "chaos")
		if err != nil {
			return err
		}
		cfg.Spec = *x.chaosSpec.DeepCopy()
		mutate(&cfg.Spec)
		return x.c.Update(ctx, cfg)
	})
}

// restoreChaos puts the chaos config's spec back as the rig created it.
func (x *hostile) restoreChaos(ctx context.Context) error {
	return x.patchChaos(ctx, func(*v1alpha1.WindowsProxyConfigSpec) {})
}

// agentWarning finds a Warning Event of the agent about win-2025's WindowsProxyNode.
func (x *hostile) agentWarning(ctx context.Context, reason string) error {
	return x.warning(ctx, node.Name, reason, "node "+node.Name)
}

// wpnPatch merge-patches win-2025's WindowsProxyNode.
func (x *hostile) wpnPatch(ctx context.Context, patch string) error {
	w := &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	return x.c.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// collectGarbage does what the garbage collector (which envtest lacks) does once configs are
// gone: owner references to them are dropped, and an object left without owners is deleted.
func (x *hostile) collectGarbage(ctx context.Context) error {
	var configs v1alpha1.WindowsProxyConfigList
	if err := x.c.List(ctx, &configs); err != nil {
		return err
	}
	live := map[types.UID]bool{}
	for _, c := range configs.Items {
		live[c.UID] = true
	}
	var wpns v1alpha1.WindowsProxyNodeList
	if err := x.c.List(ctx, &wpns); err != nil {
		return err
	}
	for _, w := range wpns.Items {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &v1alpha1.WindowsProxyNode{}
			if err := x.c.Get(ctx, client.ObjectKey{Name: w.Name}, cur); err != nil {
				return err
			}
			before := cur.DeepCopy()
			cur.OwnerReferences = slices.DeleteFunc(cur.OwnerReferences, func(o metav1.OwnerReference) bool { return !live[o.UID] })
			switch {
			case len(before.OwnerReferences) == 0 || len(cur.OwnerReferences) == len(before.OwnerReferences):
				return nil
			case len(cur.OwnerReferences) == 0:
				return x.c.Delete(ctx, cur, client.Preconditions{ResourceVersion: &before.ResourceVersion})
			}
			return x.c.Patch(ctx, cur, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		})
		if client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// mustWPN returns node's WindowsProxyNode, and an error when it has none.
func (x *hostile) mustWPN(ctx context.Context, node string) (*v1alpha1.WindowsProxyNode, error) {
	w, err := x.wpnOf(ctx, node)
	if err == nil && w == nil {
		err = fmt.Errorf("node %s has no WindowsProxyNode", node)
	}
	return w, err
}

// heldBy fails unless node's WindowsProxyNode belongs to config.
func (x *hostile) heldBy(ctx context.Context, node, config string) error {
	w, err := x.mustWPN(ctx, node)
	if err != nil {
		return err
	}
	if w.Spec.ConfigName != config {
		return fmt.Errorf("node %s belongs to config %q, want %q", node, w.Spec.ConfigName, config)
	}
	return nil
}

// updateNode changes a node, retrying on conflicts with the status writes of others.
func (x *hostile) updateNode(ctx context.Context, name string, mutate func(*corev1.Node)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := x.c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		mutate(n)
		return x.c.Update(ctx, n)
	})
}

// updateNodeStatus changes a node's status.
func (x *hostile) updateNodeStatus(ctx context.Context, name string, mutate func(*corev1.Node)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := x.c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		mutate(n)
		return x.c.Status().Update(ctx, n)
	})
}

// --- the chaos config, which win-2025's agent programs --------------------------------------

// chaosCase changes the chaos config and expects handled; undo restores it.
func chaosCase(caseName string, mutate func(*v1alpha1.WindowsProxyConfigSpec), handled func(ctx context.Context, x *hostile) error) hostileCase {
	return hostileCase{
		name:      caseName,
		send:      func(ctx context.Context, x *hostile) error { return x.patchChaos(ctx, mutate) },
		handled:   handled,
		undo:      func(ctx context.Context, x *hostile) error { return x.restoreChaos(ctx) },
		watchLoss: true,
	}
}

// staticVIP gives win-2025 the static source VIP ip.
func staticVIP(ip netip.Addr) func(*v1alpha1.WindowsProxyConfigSpec) {
	return func(s *v1alpha1.WindowsProxyConfigSpec) {
		s.Overlay.SourceVIP = v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyStatic, Static: &v1alpha1.SourceVIPStatic{
			NodeAnnotation: v1alpha1.SourceVIPAnnotation, Addresses: []v1alpha1.NodeAddress{{NodeName: node.Name, Address: ip.String()}},
		}}
	}
}

// refusedOnNode expects win-2025's agent to refuse the source VIP ip, which a pod's endpoint holds
// (SourceVIPConflict, a Warning, the config not Ready), and no load balancer to use it.
func refusedOnNode(ip netip.Addr) func(ctx context.Context, x *hostile) error {
	return func(ctx context.Context, x *hostile) error {
		if err := nothingProgrammed(v1alpha1.ReasonSourceVIPConflict, true)(ctx, x); err != nil {
			return err
		}
		v, err := x.view()
		if err != nil {
			return err
		}
		for _, lb := range v.st.LoadBalancers {
			if lb.SourceVIP == ip {
				return fmt.Errorf("load balancer %s uses the pod's address %s as its source VIP", lb.ID, ip)
			}
		}
		return nil
	}
}

// keptLastGood expects the chaos config to refuse win-2025 with reason (a Warning naming it), and
// the node to keep programming the config it had.
func keptLastGood(reason, want string) func(ctx context.Context, x *hostile) error {
	return func(ctx context.Context, x *hostile) error {
		cfg, err := x.config(ctx, "chaos")
		if err != nil {
			return err
		}
		if err := atGeneration(cfg); err != nil {
			return err
		}
		i := -1
		for j, p := range cfg.Status.FailingNodes {
			if p.Name == node.Name {
				i = j
			}
		}
		if i < 0 || cfg.Status.FailingNodes[i].Reason != reason || !strings.Contains(cfg.Status.FailingNodes[i].Message, want) {
			return fmt.Errorf("failing nodes %+v, want %s refused with %s (%q)", cfg.Status.FailingNodes, node.Name, reason, want)
		}
		if err := x.warning(ctx, "chaos", reason, "Node "+node.Name+":"); err != nil {
			return err
		}
		if err := x.r.settled(); err != nil {
			return fmt.Errorf("the node lost its last good config: %w", err)
		}
		return nil
	}
}

// nothingProgrammed expects the agent to report Programmed=False with reason, a Warning about it,
// the conditions about what is in effect Unknown, and HNS left as it was.
func nothingProgrammed(reason string, warn bool) func(ctx context.Context, x *hostile) error {
	return func(ctx context.Context, x *hostile) error {
		if err := x.agentReports(ctx, v1alpha1.ConditionProgrammed, metav1.ConditionFalse, reason); err != nil {
			return err
		}
		if err := x.agentReports(ctx, v1alpha1.ConditionDSRActive, metav1.ConditionUnknown, ""); err != nil {
			return err
		}
		if warn {
			if err := x.agentWarning(ctx, reason); err != nil {
				return err
			}
		}
		cfg, err := x.config(ctx, "chaos")
		if err != nil {
			return err
		}
		if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, ""); err != nil {
			return err
		}
		if c := cfg.Status.Conditions; !strings.Contains(conditionMessage(c, v1alpha1.ConditionReady), reason) {
			return fmt.Errorf("the config's Ready message %q does not say why win-2025 waits (%s)", conditionMessage(c, v1alpha1.ConditionReady), reason)
		}
		return x.modelLBsKept()
	}
}

func conditionMessage(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

// modelLBsKept checks that every load balancer of the model is still in HNS with its backends.
func (x *hostile) modelLBsKept() error {
	v, err := x.view()
	if err != nil {
		return err
	}
	if missing := x.r.model.missing(v.st); len(missing) > 0 {
		return fmt.Errorf("load balancers gone: %v", missing)
	}
	return nil
}

// programmedWith expects the agent to have programmed the changed config, with HNS exact, and
// check to pass on its status.
func programmedWith(check func(w *v1alpha1.WindowsProxyNode) error) func(ctx context.Context, x *hostile) error {
	return func(ctx context.Context, x *hostile) error {
		if err := x.r.settled(); err != nil {
			return err
		}
		w, err := x.mustWPN(ctx, node.Name)
		if err != nil {
			return err
		}
		cfg, err := x.config(ctx, "chaos")
		if err != nil {
			return err
		}
		if err := atGeneration(cfg); err != nil {
			return err
		}
		if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, ""); err != nil {
			return err
		}
		if check != nil {
			return check(w)
		}
		return nil
	}
}

// setBack makes a chaos-config case a mistake the admin corrects: once the changed config is
// handled, the admin sets the config back, and the node must program the corrected config.
func setBack(c hostileCase) hostileCase {
	handled := c.handled
	var corrected bool
	c.handled = func(ctx context.Context, x *hostile) error {
		if !corrected {
			if err := handled(ctx, x); err != nil {
				return err
			}
			if err := x.restoreChaos(ctx); err != nil {
				return err
			}
			corrected = true
		}
		// Says which hash the agent still programs when it has not taken the correction.
		if err := x.agentReports(ctx, v1alpha1.ConditionProgrammed, metav1.ConditionTrue, v1alpha1.ReasonSynced); err != nil {
			return fmt.Errorf("the corrected config did not reach the node: %w", err)
		}
		return programmedWith(func(w *v1alpha1.WindowsProxyNode) error {
			if w.Spec.Proxy.Sync != x.chaosSpec.Sync {
				return fmt.Errorf("sync %+v, want %+v", w.Spec.Proxy.Sync, x.chaosSpec.Sync)
			}
			return nil
		})(ctx, x)
	}
	return c
}

func chaosConfigCases() []hostileCase {
	heldPort := &portHolder{}
	return []hostileCase{
		chaosCase("chaos config: network name in Chinese with an emoji", func(s *v1alpha1.WindowsProxyConfigSpec) { s.Network.Name = "网络-🚀" },
			nothingProgrammed(v1alpha1.ReasonNetworkNotFound, true)),
		chaosCase("chaos config: network type L2Bridge on an overlay network", func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Network.Type, s.Overlay = v1alpha1.NetworkTypeL2Bridge, nil
		}, nothingProgrammed(v1alpha1.ReasonNetworkTypeMismatch, true)),
		chaosCase("chaos config: source-VIP endpoint that does not exist", func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Overlay.SourceVIP.Endpoint.Name = "Nope_ep"
		}, nothingProgrammed(v1alpha1.ReasonSourceVIPEndpointMissing, false)),
		// The pod's HNS endpoint holds the address on win-2025: its agent refuses it, with or
		// without a Pod object (the controller reads none), and no load balancer takes it.
		withPod(chaosCase("chaos config: static source VIP of a pod on win-2025", staticVIP(localPod(0)),
			refusedOnNode(localPod(0))), "chaos", "svc-000-pod", localPod(0).String()),
		chaosCase("chaos config: static source VIP of a pod on win-2025 that has no Pod object", staticVIP(localPod(1)),
			refusedOnNode(localPod(1))),
		chaosCase("chaos config: static source VIP equal to a ClusterIP", func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Overlay.SourceVIP = v1alpha1.SourceVIPSpec{Strategy: v1alpha1.SourceVIPStrategyStatic, Static: &v1alpha1.SourceVIPStatic{
				NodeAnnotation: v1alpha1.SourceVIPAnnotation, Addresses: []v1alpha1.NodeAddress{{NodeName: node.Name, Address: clusterIP(0).String()}},
			}}
		}, keptLastGood(v1alpha1.ReasonSourceVIPUnusable, "ClusterIP of Service chaos/svc-000")),
		chaosCase("chaos config: unknown feature gate", func(s *v1alpha1.WindowsProxyConfigSpec) { s.FeatureGates = map[string]bool{"NoSuchGate": true} },
			keptLastGood(v1alpha1.ReasonUnknownFeatureGate, "NoSuchGate")),
		chaosCase("chaos config: WinDSR false, locked on 1.34", func(s *v1alpha1.WindowsProxyConfigSpec) { s.FeatureGates = map[string]bool{"WinDSR": false} },
			keptLastGood(v1alpha1.ReasonFeatureGateLocked, "WinDSR")),
		chaosCase("chaos config: DSR on overlay", func(s *v1alpha1.WindowsProxyConfigSpec) { s.DSR.Enabled = true },
			programmedWith(func(w *v1alpha1.WindowsProxyNode) error {
				if !w.Status.DSR.Active {
					return errors.New("DSR not active")
				}
				return nil
			})),
		chaosCase("chaos config: dual-stack on overlay", func(s *v1alpha1.WindowsProxyConfigSpec) { s.DualStack.Enabled = true },
			programmedWith(func(w *v1alpha1.WindowsProxyNode) error {
				return wantCondition(w.Status.Conditions, v1alpha1.ConditionDualStackDowngraded, metav1.ConditionTrue, v1alpha1.ReasonOverlayNetwork)
			})),
		chaosCase("chaos config: sync period 1 s, minPeriod 0, maxUnavailable 100%", func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Sync = v1alpha1.SyncSpec{PeriodSeconds: 1, MinPeriodSeconds: 0}
			s.Rollout.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		}, programmedWith(nil)),
		setBack(chaosCase("chaos config: sync minPeriod 3600, then set back", func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Sync = v1alpha1.SyncSpec{PeriodSeconds: 3600, MinPeriodSeconds: 3600}
		}, programmedWith(nil))),
		{
			name: "chaos config: healthCheck.port another process holds",
			send: func(ctx context.Context, x *hostile) error {
				port, err := heldPort.hold(node.LoopbackIP(3))
				if err != nil {
					return err
				}
				return x.patchChaos(ctx, func(s *v1alpha1.WindowsProxyConfigSpec) { s.HealthCheck.Port = port })
			},
			handled: func(ctx context.Context, x *hostile) error {
				if err := x.agentReports(ctx, v1alpha1.ConditionHealthCheckServing, metav1.ConditionFalse, v1alpha1.ReasonHealthCheckPortUnavailable); err != nil {
					return err
				}
				if err := x.agentWarning(ctx, v1alpha1.ReasonHealthCheckPortUnavailable); err != nil {
					return err
				}
				return programmedWith(nil)(ctx, x)
			},
			undo: func(ctx context.Context, x *hostile) error {
				heldPort.release()
				return x.restoreChaos(ctx)
			},
		},
		chaosCase("chaos config: paused rollout of a change", func(s *v1alpha1.WindowsProxyConfigSpec) {
			s.Rollout.Paused = true
			s.DSR.Enabled = true
		}, func(ctx context.Context, x *hostile) error {
			cfg, err := x.config(ctx, "chaos")
			if err != nil {
				return err
			}
			if err := atGeneration(cfg); err != nil {
				return err
			}
			if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonRolloutPaused); err != nil {
				return err
			}
			if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, ""); err != nil {
				return err
			}
			w, err := x.mustWPN(ctx, node.Name)
			if err != nil {
				return err
			}
			if w.Spec.Proxy.EnableDSR {
				return errors.New("win-2025 got the paused change")
			}
			return x.r.settled()
		}),
	}
}

// portHolder listens on a port, as another process (an old kube-proxy) would.
type portHolder struct{ l net.Listener }

func (p *portHolder) hold(ip string) (int32, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	p.l = l
	return int32(l.Addr().(*net.TCPAddr).Port), nil
}

func (p *portHolder) release() {
	if p.l != nil {
		_ = p.l.Close()
	}
}

// --- WindowsProxyNodes and win-2025's Node -------------------------------------------------

func nodeProxyCases() []hostileCase {
	var saved *v1alpha1.WindowsProxyNode
	save := func(ctx context.Context, x *hostile) error {
		w, err := x.mustWPN(ctx, node.Name)
		if err != nil {
			return err
		}
		saved = w
		return nil
	}
	restored := func(ctx context.Context, x *hostile) error {
		w, err := x.mustWPN(ctx, node.Name)
		if err != nil {
			return err
		}
		if w.Spec.Hash != saved.Spec.Hash || w.Spec.ConfigName != saved.Spec.ConfigName || w.Spec.Proxy.EnableDSR != saved.Spec.Proxy.EnableDSR ||
			w.Spec.Proxy.HealthCheck != saved.Spec.Proxy.HealthCheck || w.Spec.Proxy.Network != saved.Spec.Proxy.Network {
			return fmt.Errorf("spec not restored: %+v, want %+v", w.Spec, saved.Spec)
		}
		// The agent acted on the restored spec, not only on its hash.
		if err := x.agentReports(ctx, v1alpha1.ConditionProgrammed, metav1.ConditionTrue, v1alpha1.ReasonSynced); err != nil {
			return err
		}
		return errors.Join(x.r.settled(), x.hostIntact())
	}
	spec := func(caseName, patch string) hostileCase {
		return hostileCase{
			name: caseName, watchLoss: true,
			send: func(ctx context.Context, x *hostile) error {
				if err := save(ctx, x); err != nil {
					return err
				}
				return x.wpnPatch(ctx, patch)
			},
			handled: restored,
		}
	}
	phantom := func(caseName, nodeName, config string) hostileCase {
		return hostileCase{
			name: caseName, group: groupResolution,
			send: func(ctx context.Context, x *hostile) error {
				return x.c.Create(ctx, &v1alpha1.WindowsProxyNode{
					ObjectMeta: metav1.ObjectMeta{Name: nodeName},
					Spec: v1alpha1.WindowsProxyNodeSpec{ConfigName: config, Hash: "0123456789abcdef",
						Proxy: v1alpha1.ResolvedProxyConfig{Network: v1alpha1.NetworkSpec{Name: "cbr0", Type: v1alpha1.NetworkTypeL2Bridge}}},
				})
			},
			handled: func(ctx context.Context, x *hostile) error { return x.noWPN(ctx, nodeName) },
			undo: func(ctx context.Context, x *hostile) error {
				return x.deleteAll(ctx, &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
			},
		}
	}
	var writesBefore float64
	return []hostileCase{
		spec("WindowsProxyNode: spec edited by hand under its hash", `{"spec":{"proxy":{"enableDSR":true,"healthCheck":{"port":12345}}}}`),
		spec("WindowsProxyNode: spec hash edited by hand", `{"spec":{"hash":"0000000000000000"}}`),
		spec("WindowsProxyNode: config name edited to another config", `{"spec":{"configName":"hx-canary"}}`),
		spec("WindowsProxyNode: network name edited to one that does not exist", `{"spec":{"proxy":{"network":{"name":"nope"}}}}`),
		{
			name: "WindowsProxyNode status patch: admin claims Programmed for a hash never programmed", watchLoss: true,
			send: func(ctx context.Context, x *hostile) error {
				return x.wpnStatusPatch(ctx, `{"status":{"observedHash":"deadbeefdeadbeef","loadBalancers":{"desired":999,"programmed":999,"failed":0},"sourceVIP":{"address":"10.9.9.9","origin":"Static"},"conditions":[{"type":"Programmed","status":"False","reason":"Hacked","message":"pwned","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}`)
			},
			// The agent writes the truth again within a sync period (5 s here).
			handled: func(ctx context.Context, x *hostile) error {
				w, err := x.mustWPN(ctx, node.Name)
				if err != nil {
					return err
				}
				if w.Status.LoadBalancers.Desired == 999 || w.Status.SourceVIP.Address == "10.9.9.9" {
					return fmt.Errorf("the garbage is still in the status: %+v", w.Status.LoadBalancers)
				}
				return x.r.settled()
			},
		},
		phantom("WindowsProxyNode: of a config that does not exist, for a node that does not exist", "hx-no-such-node", "no-such-config"),
		phantom("WindowsProxyNode: claiming the chaos config, for a node it does not select", "hx-phantom", "chaos"),
		{
			name: "WindowsProxyNode: deleted under a running agent", watchLoss: true,
			send: func(ctx context.Context, x *hostile) error {
				var err error
				if writesBefore, err = x.r.agent.HNSWrites(); err != nil {
					return err
				}
				return x.c.Delete(ctx, &v1alpha1.WindowsProxyNode{ObjectMeta: metav1.ObjectMeta{Name: node.Name}})
			},
			// The controller writes it again; the agent finds HNS as it left it and writes nothing.
			handled: func(ctx context.Context, x *hostile) error {
				if err := x.r.settled(); err != nil {
					return err
				}
				w, err := x.r.agent.HNSWrites()
				if err != nil {
					return err
				}
				if w != writesBefore {
					return fmt.Errorf("%v HNS writes after the WindowsProxyNode came back, want none", w-writesBefore)
				}
				return nil
			},
		},
		{
			name: "Node win-2025: kubernetes.io/os label removed", watchLoss: true,
			send: func(ctx context.Context, x *hostile) error {
				return x.updateNode(ctx, node.Name, func(n *corev1.Node) { delete(n.Labels, v1alpha1.OSLabel) })
			},
			// The config no longer selects it; the agent leaves HNS as it is and says so.
			handled: func(ctx context.Context, x *hostile) error {
				if err := x.noWPN(ctx, node.Name); err != nil {
					return err
				}
				if err := x.warning(ctx, node.Name, v1alpha1.ReasonNodeNotSelected, ""); err != nil {
					return err
				}
				return x.modelLBsKept()
			},
			undo: func(ctx context.Context, x *hostile) error {
				return x.updateNode(ctx, node.Name, func(n *corev1.Node) { n.Labels[v1alpha1.OSLabel] = "windows" })
			},
		},
		{
			name: "Node win-2025: kubelet version garbage", watchLoss: true,
			send: func(ctx context.Context, x *hostile) error {
				return x.updateNodeStatus(ctx, node.Name, func(n *corev1.Node) { n.Status.NodeInfo.KubeletVersion = "v1.banana" })
			},
			handled: keptLastGood(v1alpha1.ReasonInvalidNodeVersion, `"v1.banana"`),
			undo: func(ctx context.Context, x *hostile) error {
				return x.updateNodeStatus(ctx, node.Name, func(n *corev1.Node) { n.Status.NodeInfo.KubeletVersion = node.KubeletVersion })
			},
		},
		{
			name: "Node win-2025: internal IP removed", watchLoss: true,
			send: func(ctx context.Context, x *hostile) error {
				return x.updateNodeStatus(ctx, node.Name, func(n *corev1.Node) { n.Status.Addresses = nil })
			},
			// The resolved config loses the node IP; the agent cannot program overlay without it
			// and says so, leaving HNS as it is.
			handled: func(ctx context.Context, x *hostile) error {
				return nothingProgrammed(v1alpha1.ReasonNodeIPUnknown, false)(ctx, x)
			},
			undo: func(ctx context.Context, x *hostile) error {
				return x.updateNodeStatus(ctx, node.Name, func(n *corev1.Node) {
					n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: node.IP}, {Type: corev1.NodeHostName, Address: node.Name}}
				})
			},
		},
	}
}

// --- several configs -----------------------------------------------------------------------

func topologyCases() []hostileCase {
	const shadow = "hx-shadow"
	// The shadow differs from the chaos config only in its sync period, so that a takeover is
	// seen in the WindowsProxyNode and changes no load balancer.
	shadowConfig := func(x *hostile) *v1alpha1.WindowsProxyConfig {
		cfg := &v1alpha1.WindowsProxyConfig{ObjectMeta: metav1.ObjectMeta{Name: shadow}, Spec: *x.chaosSpec.DeepCopy()}
		cfg.Spec.Sync.PeriodSeconds = 6
		return cfg
	}
	return []hostileCase{
		{
			name: "config: a second config selecting win-2025", watchLoss: true,
			send: func(ctx context.Context, x *hostile) error {
				return x.c.Create(ctx, shadowConfig(x))
			},
			handled: func(ctx context.Context, x *hostile) error {
				if err := x.configStalled(ctx, shadow, v1alpha1.ReasonAllNodesClaimed); err != nil {
					return err
				}
				cfg, err := x.config(ctx, shadow)
				if err != nil {
					return err
				}
				if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionConflicted, metav1.ConditionTrue, ""); err != nil {
					return err
				}
				if !strings.Contains(conditionMessage(cfg.Status.Conditions, v1alpha1.ConditionReady), "chaos") {
					return fmt.Errorf("Ready message %q does not name the older config", conditionMessage(cfg.Status.Conditions, v1alpha1.ConditionReady))
				}
				if err := x.heldBy(ctx, node.Name, "chaos"); err != nil {
					return err
				}
				return x.r.settled()
			},
			undo: func(ctx context.Context, x *hostile) error {
				if err := x.deleteConfig(ctx, shadow); err != nil {
					return err
				}
				return x.collectGarbage(ctx)
			},
		},
		{
			name: "config: deleting the older of two configs selecting win-2025", watchLoss: true,
			send: func(ctx context.Context, x *hostile) error {
				if err := x.c.Create(ctx, shadowConfig(x)); err != nil {
					return err
				}
				// The newer config stands by before the older one goes.
				if err := poll(ctx, handleTimeout, func() error { return x.configStalled(ctx, shadow, v1alpha1.ReasonAllNodesClaimed) }); err != nil {
					return err
				}
				if err := x.deleteConfig(ctx, "chaos"); err != nil {
					return err
				}
				return x.collectGarbage(ctx)
			},
			// The newer config takes win-2025 over; its agent programs it without losing anything.
			handled: func(ctx context.Context, x *hostile) error {
				w, err := x.mustWPN(ctx, node.Name)
				if err != nil {
					return err
				}
				if w.Spec.ConfigName != shadow || w.Spec.Proxy.Sync.PeriodSeconds != 6 {
					return fmt.Errorf("win-2025 not taken over by %s: config %q, sync %+v", shadow, w.Spec.ConfigName, w.Spec.Proxy.Sync)
				}
				cfg, err := x.config(ctx, shadow)
				if err != nil {
					return err
				}
				if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, ""); err != nil {
					return err
				}
				return x.r.settled()
			},
			// The chaos config comes back, then the shadow goes and hands win-2025 back. (The
			// chaos config may be older than the shadow after all: creation times have a
			// resolution of a second, and then the name decides.)
			undo: func(ctx context.Context, x *hostile) error {
				chaos := &v1alpha1.WindowsProxyConfig{ObjectMeta: metav1.ObjectMeta{Name: "chaos"}, Spec: *x.chaosSpec.DeepCopy()}
				if err := x.c.Create(ctx, chaos); err != nil {
					return err
				}
				if err := x.deleteConfig(ctx, shadow); err != nil {
					return err
				}
				if err := x.collectGarbage(ctx); err != nil {
					return err
				}
				return poll(ctx, settleTimeout, func() error { return x.heldBy(ctx, node.Name, "chaos") })
			},
		},
		{
			name: "config: selecting every Windows node, newer than the others", watchLoss: true,
			send: func(ctx context.Context, x *hostile) error {
				cfg := &v1alpha1.WindowsProxyConfig{ObjectMeta: metav1.ObjectMeta{Name: "hx-everything"}, Spec: *x.chaosSpec.DeepCopy()}
				cfg.Spec.NodeSelector = nil
				return x.c.Create(ctx, cfg)
			},
			// It gets the free nodes (no agent runs there, so they wait) and reports win-2025 as
			// claimed by the chaos config, which keeps it.
			handled: func(ctx context.Context, x *hostile) error {
				cfg, err := x.config(ctx, "hx-everything")
				if err != nil {
					return err
				}
				if err := atGeneration(cfg); err != nil {
					return err
				}
				if err := wantCondition(cfg.Status.Conditions, v1alpha1.ConditionConflicted, metav1.ConditionTrue, ""); err != nil {
					return err
				}
				if !slices.Contains(cfg.Status.ConflictingNodes, node.Name) {
					return fmt.Errorf("conflicting nodes %v do not list %s", cfg.Status.ConflictingNodes, node.Name)
				}
				for _, n := range []string{"win-2019", "win-2022"} {
					if err := x.heldBy(ctx, n, "hx-everything"); err != nil {
						return err
					}
				}
				if err := x.noWPN(ctx, "linux-1"); err != nil {
					return fmt.Errorf("the Linux node was selected: %w", err)
				}
				return x.r.settled()
			},
			undo: func(ctx context.Context, x *hostile) error {
				if err := x.deleteConfig(ctx, "hx-everything"); err != nil {
					return err
				}
				if err := x.collectGarbage(ctx); err != nil {
					return err
				}
				return poll(ctx, settleTimeout, func() error {
					return errors.Join(x.noWPN(ctx, "win-2019"), x.noWPN(ctx, "win-2022"))
				})
			},
		},
	}
}
