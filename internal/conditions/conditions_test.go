package conditions

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 700_000_000, time.UTC)

func TestSet(t *testing.T) {
	var conds []metav1.Condition
	if !For(&conds, 3, t0).Set("Ready", metav1.ConditionFalse, "Waiting", "waiting") {
		t.Error("setting a new condition reported no change")
	}
	want := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Waiting", Message: "waiting",
		ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(t0.Truncate(time.Second))}}
	if diff := cmp.Diff(want, conds); diff != "" {
		t.Errorf("a new condition: stamped with the generation and the time in whole seconds (-want,+got):\n%s", diff)
	}

	later := t0.Add(time.Minute)
	if !For(&conds, 4, later).Set("Ready", metav1.ConditionFalse, "StillWaiting", "still") {
		t.Error("a new reason, message and generation reported no change")
	}
	if got := conds[0]; !got.LastTransitionTime.Equal(&want[0].LastTransitionTime) || got.ObservedGeneration != 4 || got.Reason != "StillWaiting" {
		t.Errorf("same status: transition time %v (want it kept, %v), generation %d (want 4), reason %s",
			got.LastTransitionTime, want[0].LastTransitionTime, got.ObservedGeneration, got.Reason)
	}
	if For(&conds, 4, later.Add(time.Hour)).Set("Ready", metav1.ConditionFalse, "StillWaiting", "still") {
		t.Error("setting the same condition again reported a change")
	}
	if !For(&conds, 4, later).SetBool("Ready", true, "Done", "done") || !conds[0].LastTransitionTime.Equal(ptr(metav1.NewTime(later.Truncate(time.Second)))) {
		t.Errorf("a status flip: transition time %v, want %v", conds[0].LastTransitionTime, later.Truncate(time.Second))
	}
}

func ptr[T any](v T) *T { return &v }

func TestMessagesAreBounded(t *testing.T) {
	var conds []metav1.Condition
	For(&conds, 1, t0).Set("Degraded", metav1.ConditionTrue, "Failed", strings.Repeat("é", MaxMessage))
	if m := conds[0].Message; len(m) > MaxMessage || !utf8.ValidString(m) || !strings.HasSuffix(m, "...") {
		t.Errorf("a long message: %d bytes (at most %d), valid UTF-8 %t, marked cut %t", len(m), MaxMessage, utf8.ValidString(m), strings.HasSuffix(m, "..."))
	}
}

func TestTruncateKeepsRunes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 8, "abcde..."},
		{"ééééé", 8, "éé..."},
		{"日本語テキスト", 10, "日本..."},
	} {
		if got := Truncate(tc.in, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
