package daemon

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeChangedIgnoresHeartbeats(t *testing.T) {
	old := &corev1.Node{Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24"}}}
	heartbeat := old.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, LastHeartbeatTime: metav1.Now()}}
	if nodeChanged(old, heartbeat) {
		t.Error("a heartbeat triggered a sync")
	}
	moved := old.DeepCopy()
	moved.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.20.0.99"}}
	if !nodeChanged(old, moved) {
		t.Error("a new node IP did not trigger a sync")
	}
}
