package ownership

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

// TestFingerprintTextIsTheLedgersFormat holds fingerprintText to the text the ledgers on
// nodes were written with: fmt's "%v|%+v|%d|%v|%v" of the frontend VIPs, port mapping, LB
// flags, source VIP and sorted backend IDs. A different byte changes every fingerprint, and an
// upgraded agent would no longer prove the load balancers its predecessor created.
func TestFingerprintTextIsTheLedgersFormat(t *testing.T) {
	cases := []struct {
		name string
		lb   hns.LoadBalancer
	}{
		{name: "zero load balancer: no VIP, invalid source VIP, no backends"},
		{name: "IPv4 cluster IP with DSR and backends", lb: hns.LoadBalancer{
			FrontendVIPs: []netip.Addr{netip.MustParseAddr("10.96.0.10")},
			PortMapping:  hns.PortMapping{Protocol: hns.ProtocolUDP, InternalPort: 53, ExternalPort: 53, DistributionType: 1, Flags: hns.PortMappingILB | hns.PortMappingPreserveDIP},
			Flags:        hns.LBFlagDSR, SourceVIP: netip.MustParseAddr("10.244.1.2"),
			BackendEndpointIDs: []string{"A1B2C3D4-0000-0000-0000-000000000001", "A1B2C3D4-0000-0000-0000-000000000002"},
		}},
		{name: "IPv6 with two VIPs and a zone", lb: hns.LoadBalancer{
			FrontendVIPs: []netip.Addr{netip.MustParseAddr("fd00::a"), netip.MustParseAddr("fe80::1%eth0")},
			PortMapping:  hns.PortMapping{Protocol: hns.ProtocolSCTP, InternalPort: 65535, ExternalPort: 1},
			Flags:        hns.LBFlagIPv6,
		}},
		{name: "IPv4-mapped IPv6 VIP", lb: hns.LoadBalancer{FrontendVIPs: []netip.Addr{netip.MustParseAddr("::ffff:10.0.0.1")}}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		lb := hns.LoadBalancer{
			PortMapping: hns.PortMapping{Protocol: rng.Uint32(), InternalPort: uint16(rng.Uint32()), ExternalPort: uint16(rng.Uint32()),
				DistributionType: hns.DistributionType(rng.Uint32()), Flags: hns.PortMappingFlags(rng.Uint32())},
			Flags: hns.LBFlags(rng.Uint32()),
		}
		for range rng.IntN(3) {
			lb.FrontendVIPs = append(lb.FrontendVIPs, randomAddr(rng))
		}
		if rng.IntN(2) == 0 {
			lb.SourceVIP = randomAddr(rng)
		}
		for range rng.IntN(12) {
			lb.BackendEndpointIDs = append(lb.BackendEndpointIDs, fmt.Sprintf("%08X-%04X-%04X-%04X-%012X", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff))
		}
		cases = append(cases, struct {
			name string
			lb   hns.LoadBalancer
		}{fmt.Sprintf("random %d", i), lb})
	}
	for _, tc := range cases {
		ids := tc.lb.BackendEndpointIDs
		want := fmt.Sprintf("%v|%+v|%d|%v|%v", tc.lb.FrontendVIPs, tc.lb.PortMapping, tc.lb.Flags, tc.lb.SourceVIP, ids)
		if ids == nil {
			want = fmt.Sprintf("%v|%+v|%d|%v|%v", tc.lb.FrontendVIPs, tc.lb.PortMapping, tc.lb.Flags, tc.lb.SourceVIP, []string{})
		}
		if got := string(fingerprintText(nil, tc.lb, ids)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
	}
}

func randomAddr(rng *rand.Rand) netip.Addr {
	if rng.IntN(2) == 0 {
		return netip.AddrFrom4([4]byte{byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32())})
	}
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return netip.AddrFrom16(b)
}

// BenchmarkFingerprint is the cost of proving or recording one load balancer of 10 backends.
func BenchmarkFingerprint(b *testing.B) {
	lb := hns.LoadBalancer{
		FrontendVIPs: []netip.Addr{netip.MustParseAddr("10.96.0.10")},
		PortMapping:  hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80},
		SourceVIP:    netip.MustParseAddr("10.244.1.2"),
	}
	for i := range 10 {
		lb.BackendEndpointIDs = append(lb.BackendEndpointIDs, fmt.Sprintf("A1B2C3D4-0000-0000-0000-%012d", i))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = fingerprint(lb)
	}
}
