package hns

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCapabilitiesFor(t *testing.T) {
	all := Capabilities{APIV2: true, RemoteSubnet: true, DSR: true, IPv6DualStack: true, SessionAffinity: true, ModifyLoadBalancer: true}
	tests := []struct {
		name string
		v    Version
		want Capabilities
	}{
		{"query failed", Version{}, Capabilities{}},
		{"1803", Version{7, 2}, Capabilities{}},
		{"9.1", Version{9, 1}, Capabilities{}},
		{"9.2 v2 only", Version{9, 2}, Capabilities{APIV2: true, RemoteSubnet: true}},
		{"9.3 dsr", Version{9, 3}, Capabilities{APIV2: true, RemoteSubnet: true, DSR: true}},
		{"ws2019 9.5", Version{9, 5}, Capabilities{APIV2: true, RemoteSubnet: true, DSR: true}},
		{"10.0 no dsr", Version{10, 0}, Capabilities{APIV2: true, RemoteSubnet: true}},
		{"10.1 no dsr", Version{10, 1}, Capabilities{APIV2: true, RemoteSubnet: true}},
		{"10.2 dsr again", Version{10, 2}, Capabilities{APIV2: true, RemoteSubnet: true, DSR: true}},
		{"11.9", Version{11, 9}, Capabilities{APIV2: true, RemoteSubnet: true, DSR: true}},
		{"11.10 dual-stack", Version{11, 10}, Capabilities{APIV2: true, RemoteSubnet: true, DSR: true, IPv6DualStack: true}},
		{"12.0 affinity", Version{12, 0}, Capabilities{APIV2: true, RemoteSubnet: true, DSR: true, IPv6DualStack: true, SessionAffinity: true}},
		{"ws2022 13.3", Version{13, 3}, Capabilities{APIV2: true, RemoteSubnet: true, DSR: true, IPv6DualStack: true, SessionAffinity: true}},
		{"15.4 modify broken", Version{15, 4}, Capabilities{APIV2: true, RemoteSubnet: true, DSR: true, IPv6DualStack: true, SessionAffinity: true}},
		{"15.5 modify", Version{15, 5}, all},
		{"15.99", Version{15, 99}, all},
		{"16.0", Version{16, 0}, all},
		{"17.2", Version{17, 2}, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, CapabilitiesFor(tt.v)); diff != "" {
				t.Errorf("CapabilitiesFor(%v) (-want +got):\n%s", tt.v, diff)
			}
		})
	}
}

func TestVersionAtLeast(t *testing.T) {
	tests := []struct {
		v, o Version
		want bool
	}{
		{Version{9, 5}, Version{9, 5}, true},
		{Version{9, 5}, Version{9, 6}, false},
		{Version{10, 0}, Version{9, 99}, true},
		{Version{8, 99}, Version{9, 0}, false},
	}
	for _, tt := range tests {
		if got := tt.v.AtLeast(tt.o); got != tt.want {
			t.Errorf("%v.AtLeast(%v) = %v, want %v", tt.v, tt.o, got, tt.want)
		}
	}
}
