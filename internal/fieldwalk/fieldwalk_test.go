package fieldwalk

import (
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"
)

type name string

type inner struct {
	Port uint16
	Err  error
}

type every struct {
	On    bool
	Name  name
	Count int32
	Inner inner
	Ptr   *inner
	List  []inner
	Tags  map[name]int
	At    time.Time
	Addr  netip.Addr
}

func full() every {
	return every{
		On: true, Name: "a", Count: 1, Inner: inner{Port: 80, Err: errors.New("refused")}, Ptr: &inner{Port: 443},
		List: []inner{{Port: 53}}, Tags: map[name]int{"b": 1}, At: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC),
		Addr: netip.MustParseAddr("10.0.0.1"),
	}
}

// TestEachChangesEveryField expects a path for each field, the first element of a list
// included, and each change to make the value differ from the original.
func TestEachChangesEveryField(t *testing.T) {
	v := full()
	var paths []string
	Each(reflect.ValueOf(&v).Elem(), "every", func(path string, _ func()) { paths = append(paths, path) })
	want := []string{
		"every.On", "every.Name", "every.Count", "every.Inner.Port", "every.Inner.Err",
		"every.Ptr.Port", "every.Ptr.Err", "every.Ptr (unset)",
		"every.List[0].Port", "every.List[0].Err", "every.List",
		"every.Tags", "every.At", "every.Addr",
	}
	if !slices.Equal(paths, want) {
		t.Fatalf("paths:\n got %q\nwant %q", paths, want)
	}
	n := Changes(full, "every", func(path string, changed every) {
		if reflect.DeepEqual(changed, full()) {
			t.Errorf("changing %s left the value as it was", path)
		}
	})
	if n != len(want) {
		t.Errorf("Changes made %d changes, want %d", n, len(want))
	}
}

// TestEachRefusesWhatItCannotChange expects a panic naming the field for a value Each cannot
// change, rather than a field silently left out of the test that walks it.
func TestEachRefusesWhatItCannotChange(t *testing.T) {
	for name, v := range map[string]any{
		"a nil pointer":   &struct{ P *inner }{},
		"a zero netip":    &struct{ A netip.Addr }{},
		"a float":         &struct{ F float64 }{},
		"an interface":    &struct{ S any }{},
		"a map by number": &struct{ M map[int]bool }{},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Error("Each did not panic")
				}
			}()
			Each(reflect.ValueOf(v).Elem(), "v", func(string, func()) {})
		})
	}
}
