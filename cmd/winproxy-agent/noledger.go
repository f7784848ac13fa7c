package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/api/v1alpha1"
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
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for _, cond := range []metav1.Condition{
		{Type: v1alpha1.ConditionProgrammed, Status: metav1.ConditionFalse},
		{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue},
		{Type: v1alpha1.ConditionOwnershipRecorded, Status: metav1.ConditionFalse},
	} {
		cond.Reason, cond.Message, cond.ObservedGeneration, cond.LastTransitionTime = v1alpha1.ReasonLedgerNotWritable, msg, wpn.Generation, now
		meta.SetStatusCondition(&wpn.Status.Conditions, cond)
	}
	_ = c.Status().Update(ctx, wpn)
}
