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
