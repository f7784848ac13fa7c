package hns

import "testing"

type theirFlags uint32

// The adapter's name-by-name mapping: named bits and values move to their counterparts (here
// deliberately not equal to ours), unnamed ones pass as they are, and the way back undoes it.
func TestFlagMapping(t *testing.T) {
	pairs := []pair[PortMappingFlags, theirFlags]{{PortMappingILB, 0x100}, {PortMappingUseMux, 0x200}}
	f := PortMappingILB | PortMappingUseMux | PortMappingVipExternalIP
	got := flagsTo(f, pairs, forward)
	if want := theirFlags(0x100 | 0x200 | 16); got != want {
		t.Errorf("flagsTo(%#x) = %#x, want %#x", f, got, want)
	}
	if back := flagsTo(got, swapped(pairs), forward); back != f {
		t.Errorf("back = %#x, want %#x", back, f)
	}
	dist := []pair[DistributionType, theirFlags]{{DistributionNone, 7}, {DistributionSourceIP, 9}}
	if got := valueTo(DistributionSourceIP, dist, forward); got != 9 {
		t.Errorf("valueTo(SourceIP) = %d, want 9", got)
	}
	if got := valueTo(DistributionSourceIPProtocol, dist, forward); got != theirFlags(DistributionSourceIPProtocol) {
		t.Errorf("an unnamed value became %d, want it as it is", got)
	}
	if got := valueTo(theirFlags(7), swapped(dist), forward); got != DistributionNone {
		t.Errorf("the way back gave %d, want DistributionNone", got)
	}
}
