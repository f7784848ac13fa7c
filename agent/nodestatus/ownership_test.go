package nodestatus

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winproxy/winproxy/agent/ownership"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// OwnershipRecorded names the disk problem while HNS stays Programmed: a full disk costs the node
// none of its load balancers, and the status says what is at risk and why.
func TestOwnershipRecorded(t *testing.T) {
	const path = `C:\ProgramData\winproxy\owned.ledger`
	for name, tc := range map[string]struct {
		ledger     ownership.LedgerStatus
		want       metav1.ConditionStatus
		reason     string
		mentioning []string
	}{
		"written":   {ownership.LedgerStatus{Path: path}, metav1.ConditionTrue, v1alpha1.ReasonLedgerWritten, []string{path}},
		"disk full": {ownership.LedgerStatus{Path: path, Unsaved: 7, WriteErr: syscall.ENOSPC}, metav1.ConditionFalse, v1alpha1.ReasonLedgerNotWritable, []string{path, "no space left on device", "7 changes"}},
		"space low": {ownership.LedgerStatus{Path: path, SpaceErr: syscall.ENOSPC}, metav1.ConditionTrue, v1alpha1.ReasonLedgerSpaceLow, []string{path, "no space left on device"}},
		"in memory": {ownership.LedgerStatus{}, "", "", nil},
	} {
		t.Run(name, func(t *testing.T) {
			s := programmedReport(time.Unix(1_700_000_000, 0))
			s.Result.Ledger = tc.ledger
			st := Build(v1alpha1.WindowsProxyNodeStatus{}, wpn(), s)
			if p := condition(t, st, v1alpha1.ConditionProgrammed); p.Status != metav1.ConditionTrue {
				t.Errorf("Programmed %s (%s), want True: HNS is programmed", p.Status, p.Message)
			}
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionOwnershipRecorded)
			if tc.reason == "" {
				if c != nil {
					t.Errorf("an in-memory ledger (a plan) reports %+v, want nothing", c)
				}
				return
			}
			if c == nil || c.Status != tc.want || c.Reason != tc.reason {
				t.Fatalf("OwnershipRecorded %+v, want %s %s", c, tc.want, tc.reason)
			}
			for _, m := range tc.mentioning {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q does not mention %q", c.Message, m)
				}
			}
		})
	}
}
