package hns

import (
	"net/netip"
	"testing"
)

func TestConjureMAC(t *testing.T) {
	tests := []struct {
		ip   string
		want string
	}{
		{"192.168.2.3", "02-11-c0-a8-02-03"},
		{"10.0.0.1", "02-11-0a-00-00-01"},
		{"255.255.255.255", "02-11-ff-ff-ff-ff"},
		{"::ffff:192.168.2.3", "02-11-c0-a8-02-03"}, // IPv4-mapped: treated as IPv4, like net.IP.To4
		{"fd00::1:2:3:4", "02-11-04-00-03-00"},      // bytes 15,14,13,12
		{"2001:db8::a0b:c0d", "02-11-0d-0c-0b-0a"},
		{"", FallbackMAC},
		{"not-an-ip", FallbackMAC},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			if got := ConjureMACString(tt.ip); got != tt.want {
				t.Errorf("ConjureMACString(%q) = %q, want %q", tt.ip, got, tt.want)
			}
		})
	}
	if got := ConjureMAC(netip.Addr{}); got != FallbackMAC {
		t.Errorf("ConjureMAC(zero) = %q, want fallback", got)
	}
}

func TestNetworkTypeIsOverlay(t *testing.T) {
	for _, tt := range []struct {
		t    NetworkType
		want bool
	}{{"Overlay", true}, {"overlay", true}, {"OVERLAY", true}, {"L2Bridge", false}, {"", false}} {
		if got := tt.t.IsOverlay(); got != tt.want {
			t.Errorf("%q.IsOverlay() = %v", tt.t, got)
		}
	}
}

func TestProviderAddressFor(t *testing.T) {
	n := Network{RemoteSubnetRoutes: []RemoteSubnetRoute{
		{DestinationPrefix: netip.MustParsePrefix("10.244.1.0/24"), ProviderAddress: netip.MustParseAddr("10.0.0.2")},
		{DestinationPrefix: netip.MustParsePrefix("10.244.2.0/24"), ProviderAddress: netip.MustParseAddr("10.0.0.3")},
	}}
	if pa, ok := n.ProviderAddressFor(netip.MustParseAddr("10.244.2.7")); !ok || pa != netip.MustParseAddr("10.0.0.3") {
		t.Errorf("got %v %v", pa, ok)
	}
	if _, ok := n.ProviderAddressFor(netip.MustParseAddr("8.8.8.8")); ok {
		t.Error("public IP matched a remote subnet")
	}
}
