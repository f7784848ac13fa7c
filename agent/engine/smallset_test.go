package engine

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"testing"
)

// TestSmallSet drives a smallSet and a map through the same adds and removes: they hold the
// same elements after every step, whichever element is inline and however many are behind the
// pointer.
func TestSmallSet(t *testing.T) {
	steps := []struct {
		add bool
		v   string
	}{
		{true, "a"}, {true, "a"}, {false, "b"}, {true, "b"}, {true, "c"}, {true, "b"},
		{false, "a"}, // the inline one goes: the last of the rest takes its place
		{false, "x"}, {false, ""}, {true, "d"}, {false, "b"}, {false, "c"}, {false, "d"},
		{true, "e"}, {false, "e"}, {true, "f"},
	}
	var s smallSet[string]
	want := map[string]bool{}
	for i, st := range steps {
		if st.add {
			s.add(st.v)
			want[st.v] = true
		} else {
			s.remove(st.v)
			delete(want, st.v)
		}
		got := s.all()
		slices.Sort(got)
		var w []string
		for v := range want {
			w = append(w, v)
		}
		slices.Sort(w)
		if !slices.Equal(got, w) || s.empty() != (len(w) == 0) {
			t.Fatalf("step %d (%+v): set holds %v (empty %v), want %v", i, st, got, s.empty(), w)
		}
	}
}

// TestLBBodyIsALoadBalancerWithoutItsKey: lbBody has every field of LoadBalancer but the key,
// and a load balancer with every field set comes back whole from its body and key.
func TestLBBodyIsALoadBalancerWithoutItsKey(t *testing.T) {
	fields := func(typ reflect.Type, skip string) map[string]reflect.Type {
		out := map[string]reflect.Type{}
		for f := range typ.Fields() {
			if f.Name != skip {
				out[f.Name] = f.Type
			}
		}
		return out
	}
	if got, want := fields(reflect.TypeFor[lbBody](), ""), fields(reflect.TypeFor[LoadBalancer](), "Key"); !maps.Equal(got, want) {
		t.Fatalf("lbBody's fields %v, LoadBalancer's but the key %v: make lbBody, bodyOf and with hold the new ones", got, want)
	}
	lb := LoadBalancer{
		Key:          LBKey{Service: "ns/web", Port: "http", VIP: netip.MustParseAddr("10.96.0.10"), Protocol: 6, ExternalPort: 80, Family: FamilyIPv4, Kind: KindClusterIP},
		InternalPort: 8080, Flags: 1, PortMappingFlags: 2, Distribution: 3, SourceVIP: netip.MustParseAddr("10.244.1.2"),
		Backends: []Backend{{IP: netip.MustParseAddr("10.244.2.3")}}, Recreate: true,
	}
	// Every field set, so that one bodyOf or with forgets shows.
	for f, v := range reflect.ValueOf(lb).Fields() {
		if v.IsZero() {
			t.Fatalf("the test's load balancer leaves %s unset", f.Name)
		}
	}
	if got := bodyOf(lb).with(lb.Key); !reflect.DeepEqual(got, lb) {
		t.Errorf("from its body and key: %+v, want %+v", got, lb)
	}
}
