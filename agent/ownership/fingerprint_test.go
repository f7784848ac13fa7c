package ownership

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
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

// A fingerprint is what every ledger on disk holds as a load balancer's proof: the same load
// balancer must give the same text in every version, whatever the case and order of its backends'
// IDs and however many there are.
func TestFingerprintIsStable(t *testing.T) {
	lb := hns.LoadBalancer{
		FrontendVIPs:       []netip.Addr{netip.MustParseAddr("10.96.0.10"), netip.MustParseAddr("fd00::10")},
		PortMapping:        hns.PortMapping{Protocol: hns.ProtocolTCP, InternalPort: 8080, ExternalPort: 80, DistributionType: 1, Flags: 2},
		Flags:              1,
		SourceVIP:          netip.MustParseAddr("10.244.1.2"),
		BackendEndpointIDs: []string{"b1b2c3d4-0000-0000-0000-000000000002", " A1B2C3D4-0000-0000-0000-000000000001"},
	}
	for _, tc := range []struct {
		name string
		lb   hns.LoadBalancer
		want string
	}{
		{"two backends, one in lower case", lb, "D3A4EBC300692A91DABC621A16E42156"},
		{"nothing", hns.LoadBalancer{}, "E5EA0A79DD44D90F085945D1A12FC6D0"},
	} {
		if got := fingerprint(tc.lb); got != tc.want {
			t.Errorf("%s: fingerprint %s, want %s", tc.name, got, tc.want)
		}
	}
	many := lb
	for i := range 40 { // more backends than fingerprint has room for on the stack
		many.BackendEndpointIDs = append(many.BackendEndpointIDs, fmt.Sprintf("C1B2C3D4-0000-0000-0000-%012d", i))
	}
	ids := make([]string, len(many.BackendEndpointIDs))
	for i, id := range many.BackendEndpointIDs {
		ids[i] = normID(id)
	}
	slices.Sort(ids)
	sum := sha256.Sum256(fingerprintText(nil, many, ids))
	if got, want := fingerprint(many), strings.ToUpper(hex.EncodeToString(sum[:16])); got != want {
		t.Errorf("42 backends: fingerprint %s, want %s", got, want)
	}
}
