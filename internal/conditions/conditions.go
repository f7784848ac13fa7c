// Package conditions sets the conditions of winproxy's objects the one way every writer does, as
// cluster-api's util/conditions does for its objects: the controller (a config's status, a node's
// AgentAlive) and the agent (a node's report) share one WindowsProxyNode status and one summary of
// it, so a condition must read the same whoever wrote it last. Every condition set through it
//
//   - is observed at the generation of the object it describes, which kstatus compares with
//     metadata.generation;
//   - keeps its lastTransitionTime while its status stays the same, and otherwise takes the time
//     of the write in whole seconds, as the API server stores it (so a status read back compares
//     equal to the one written, and an unchanged status is not written again);
//   - has a message of at most MaxMessage bytes, cut on a rune boundary, which metav1.Condition's
//     validation accepts: a message built from node data (annotations, errors, names) never
//     makes the API server reject the whole status.
package conditions

import (
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxMessage is the longest condition message metav1.Condition allows, in bytes.
const MaxMessage = 32768

// Setter sets the conditions of one object's status, observed at the object's generation, as of
// one moment.
type Setter struct {
	conditions *[]metav1.Condition
	generation int64
	now        metav1.Time
}

// For returns the setter of conds, the conditions of an object at generation, as of now.
func For(conds *[]metav1.Condition, generation int64, now time.Time) Setter {
	return Setter{conditions: conds, generation: generation, now: metav1.NewTime(now.Truncate(time.Second))}
}

// Set sets the condition of type t and reports whether anything of it changed.
func (s Setter) Set(t string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(s.conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: Truncate(message, MaxMessage),
		ObservedGeneration: s.generation, LastTransitionTime: s.now,
	})
}

// SetBool sets the condition of type t True when ok, else False.
func (s Setter) SetBool(t string, ok bool, reason, message string) bool {
	return s.Set(t, Status(ok), reason, message)
}

// Status is True when ok, else False.
func Status(ok bool) metav1.ConditionStatus {
	if ok {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// Truncate cuts s to at most n bytes on a rune boundary, marking the cut: a cut inside a rune would
// be replaced by U+FFFD on the wire and could overflow the bound again. Conditions, event notes and
// the messages of status lists are bounded with it.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
