package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/conditions"
)

// reportNoLedger tells the cluster, where its API server answers, why the agent exits before it
// programs anything: its node's WindowsProxyNode turns Programmed=False and Degraded=True with
// reason LedgerNotWritable, instead of keeping the Programmed=True of the last run. Whatever
// fails here is left unsaid: the exit error says it all on the node.
func reportNoLedger(kubeconfig, node string, cause error) {
	if node == "" {
		return
	}
	api, err := restConfig(kubeconfig)
	if err != nil {
		return
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return
	}
	c, err := client.New(api.config, client.Options{Scheme: scheme})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wpn := &v1alpha1.WindowsProxyNode{}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, wpn); err != nil {
		return
	}
	msg := fmt.Sprintf("the agent exited without programming anything: %v; it cannot tell the load balancers it created from others' without it. Load balancers already programmed are left as they are", cause)
	set := conditions.For(&wpn.Status.Conditions, wpn.Generation, time.Now())
	set.Set(v1alpha1.ConditionProgrammed, metav1.ConditionFalse, v1alpha1.ReasonLedgerNotWritable, msg)
	set.Set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonLedgerNotWritable, msg)
	set.Set(v1alpha1.ConditionOwnershipRecorded, metav1.ConditionFalse, v1alpha1.ReasonLedgerNotWritable, msg)
	_ = c.Status().Update(ctx, wpn)
}
