package hns_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

const (
	guidA = "0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3"
	guidB = "11111111-2222-4333-8444-555555555555"
)

// guidN is the n-th of a run of distinct GUIDs.
func guidN(n int) string { return fmt.Sprintf("%08X-0000-4000-8000-%012X", n, n) }

func TestParseIDListReadsHNSAnswers(t *testing.T) {
	lower := strings.ToLower(guidA)
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"no answer", "", nil},
		{"null, as encoding/json reads it", "null", nil},
		{"empty", "[]", nil},
		{"one", `["` + guidA + `"]`, []string{guidA}},
		{"in HNS's order", `["` + guidB + `","` + guidA + `"]`, []string{guidB, guidA}},
		{"as spelt, either case", `["` + lower + `","` + guidB + `"]`, []string{lower, guidB}},
		{"braces dropped", `["{` + guidA + `}","` + guidB + `"]`, []string{guidA, guidB}},
		{"whitespace", " \r\n\t[ \"" + guidA + "\" ,\n\t\"" + guidB + "\" ] \n", []string{guidA, guidB}},
		{"duplicates kept, for the comparison to see", `["` + guidA + `","` + guidA + `"]`, []string{guidA, guidA}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := hns.ParseIDList(c.text)
			if err != nil {
				t.Fatalf("ParseIDList(%q): %v", c.text, err)
			}
			if got := slices.Collect(l.All()); !slices.Equal(got, c.want) || l.Len() != len(c.want) {
				t.Errorf("ParseIDList(%q) = %q (Len %d), want %q", c.text, got, l.Len(), c.want)
			}
		})
	}
}

func TestParseIDListRefusesMalformedAnswers(t *testing.T) {
	quoted := `"` + guidA + `"`
	for _, c := range []struct{ name, text, says string }{
		// Truncated.
		{"open array", "[", "unexpected EOF"},
		{"after an element", "[" + quoted, "unexpected EOF"},
		{"after a comma", "[" + quoted + ",", "unexpected EOF"},
		{"inside a string", `["` + guidA[:10], "unexpected EOF"},
		// Not JSON.
		{"whitespace alone", " \n", "no JSON value"},
		{"garbage", "GUIDs", "invalid character"},
		{"trailing comma", "[" + quoted + ",]", "invalid character"},
		{"missing comma", "[" + quoted + quoted + "]", "after array element"},
		{"single quotes", "['" + guidA + "']", "invalid character"},
		{"invalid UTF-8", "[\"\xff\"]", "invalid UTF-8"},
		{"control character in a string", "[\"\x01\"]", "invalid character"},
		// Other types.
		{"a string", quoted, "a JSON string where an array of GUIDs belongs"},
		{"an object", `{"ID":` + quoted + `}`, "a JSON { where an array of GUIDs belongs"},
		{"a number", "1", "a JSON number where an array of GUIDs belongs"},
		{"true", "true", "a JSON true where an array of GUIDs belongs"},
		{"objects", `[{"ID":` + quoted + `}]`, `element 0 (at byte 1) is not a GUID: {"ID":`},
		{"a number among GUIDs", "[" + quoted + ",7]", "element 1 (at byte 40) is not a GUID: 7"},
		{"null element", "[null]", "element 0 (at byte 1) is not a GUID: null"},
		{"nested array", "[[" + quoted + "]]", "element 0 (at byte 1) is not a GUID: [" + quoted},
		// Strings that are not GUIDs.
		{"empty string", `[""]`, "is not a GUID"},
		{"a name", `["winproxy-10.0.0.1"]`, "is not a GUID"},
		{"too long", `["` + guidA + `0"]`, "is not a GUID"},
		{"not hex", `["` + strings.Replace(guidA, "A", "G", 1) + `"]`, "is not a GUID"},
		{"dashes elsewhere", `["` + guidA[:7] + "-" + guidA[7:35] + `"]`, "is not a GUID"},
		{"one brace", `["{` + guidA + `"]`, "is not a GUID"},
		{"escaped, though JSON would read a GUID", `["\u0030` + guidA[1:] + `"]`, "is not a GUID"},
		// More than one value.
		{"two arrays", "[] []", "more than one JSON value"},
		{"after the array", "[" + quoted + "]x", "invalid character"},
		{"two nulls", "null null", "more than one JSON value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := hns.ParseIDList(c.text)
			if err == nil {
				t.Fatalf("ParseIDList(%q) = %q, want an error", c.text, slices.Collect(l.All()))
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("ParseIDList(%q): %v, want it to say %q", c.text, err, c.says)
			}
		})
	}
}

// TestParseIDListHugeAnswers: a list of any length is read without an
// allocation per ID, and a huge element is refused with a short message.
func TestParseIDListHugeAnswers(t *testing.T) {
	const n = 20_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = guidN(i)
	}
	answer, err := json.Marshal(ids)
	if err != nil {
		t.Fatal(err)
	}
	text := string(answer)
	var l hns.IDList
	allocs := testing.AllocsPerRun(3, func() {
		if l, err = hns.ParseIDList(text); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Errorf("ParseIDList of %d IDs: %v allocations, want a few, none per ID", n, allocs)
	}
	if got := slices.Collect(l.All()); !slices.Equal(got, ids) {
		t.Errorf("read %d IDs, not the %d listed", len(got), n)
	}
	if allocs := testing.AllocsPerRun(3, func() {
		for range l.All() {
		}
	}); allocs > 2 {
		t.Errorf("reading the IDs: %v allocations, want none per ID", allocs)
	}

	huge := `["` + guidA + `","` + strings.Repeat("0", 1<<20) + `"]`
	_, err = hns.ParseIDList(huge)
	if err == nil || !strings.Contains(err.Error(), "element 1") || len(err.Error()) > 200 {
		t.Errorf("ParseIDList(a 1 MiB string) = %.300v, want a short error naming element 1", err)
	}
}

func TestIDListContainsAnyCase(t *testing.T) {
	l, err := hns.ParseIDList(`["{` + guidA + `}","` + strings.ToLower(guidB) + `"]`)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Contains(strings.ToLower(guidA)) || !l.Contains(guidB) || l.Contains(guidN(1)) {
		t.Errorf("Contains: got %v %v %v, want true true false", l.Contains(strings.ToLower(guidA)), l.Contains(guidB), l.Contains(guidN(1)))
	}
}

// FuzzParseIDList holds ParseIDList to encoding/json, which the agent used
// before: whatever it accepts, encoding/json decodes into the same IDs; and
// what encoding/json decodes into GUIDs from plain text (no escapes), it
// accepts.
func FuzzParseIDList(f *testing.F) {
	for _, s := range []string{"", "null", "[]", `["` + guidA + `"]`, `["{` + guidA + `}", "` + guidB + `"]`, `[1]`, `[null]`, `{}`, `["` + guidA + `",]`, `[] []`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		l, err := hns.ParseIDList(text)
		var decoded []string
		jerr := json.Unmarshal([]byte(text), &decoded)
		if text == "" {
			jerr = nil // what the adapter always read as no IDs
		}
		for i, id := range decoded {
			if len(id) == 38 && id[0] == '{' && id[37] == '}' {
				decoded[i] = id[1:37]
			}
		}
		if err == nil {
			if jerr != nil {
				t.Fatalf("ParseIDList(%q) accepted what encoding/json refuses: %v", text, jerr)
			}
			if got := slices.Collect(l.All()); !slices.Equal(got, decoded) && len(got)+len(decoded) > 0 {
				t.Fatalf("ParseIDList(%q) = %q, encoding/json %q", text, got, decoded)
			}
			return
		}
		plainGUIDs := jerr == nil && !strings.Contains(text, `\`) && !slices.ContainsFunc(decoded, func(id string) bool {
			_, perr := hns.ParseIDList(`["` + id + `"]`)
			return perr != nil
		})
		if plainGUIDs {
			t.Fatalf("ParseIDList(%q): %v, where encoding/json reads the GUIDs %q", text, err, decoded)
		}
	})
}

// BenchmarkParseIDList reads an answer of 120,000 IDs, an ID check's at 10k
// services, and every ID in it.
func BenchmarkParseIDList(b *testing.B) {
	ids := make([]string, 120_000)
	for i := range ids {
		ids[i] = guidN(i)
	}
	answer, err := json.Marshal(ids)
	if err != nil {
		b.Fatal(err)
	}
	text := string(answer)
	b.ReportAllocs()
	for b.Loop() {
		l, err := hns.ParseIDList(text)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for range l.All() {
			n++
		}
		if n != len(ids) {
			b.Fatalf("read %d IDs, want %d", n, len(ids))
		}
	}
}
