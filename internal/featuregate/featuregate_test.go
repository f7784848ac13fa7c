package featuregate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEffective(t *testing.T) {
	tests := []struct {
		name      string
		minor     int
		requested map[string]bool
		want      map[string]bool
		wantErr   string
	}{
		{name: "1.13 has neither Windows gate", minor: 13, want: map[string]bool{AllowServiceExternalIPs: true}},
		{name: "1.13 rejects WinDSR", minor: 13, requested: map[string]bool{WinDSR: true}, wantErr: "unrecognized feature gate: WinDSR"},
		{name: "1.14 alpha defaults off", minor: 14, want: map[string]bool{WinDSR: false, WinOverlay: false, AllowServiceExternalIPs: true}},
		{name: "1.14 alpha set on", minor: 14, requested: map[string]bool{WinDSR: true, WinOverlay: true}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true}},
		{name: "1.20 overlay beta on", minor: 20, want: map[string]bool{WinDSR: false, WinOverlay: true, AllowServiceExternalIPs: true}},
		{name: "1.32 overlay may be turned off", minor: 32, requested: map[string]bool{WinOverlay: false}, want: map[string]bool{WinDSR: false, WinOverlay: false, AllowServiceExternalIPs: true}},
		{name: "1.33 DSR beta on", minor: 33, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true}},
		{name: "1.33 DSR may be turned off", minor: 33, requested: map[string]bool{WinDSR: false}, want: map[string]bool{WinDSR: false, WinOverlay: true, AllowServiceExternalIPs: true}},
		{name: "1.34 WinDSR=false is locked", minor: 34, requested: map[string]bool{WinDSR: false}, wantErr: "cannot set feature gate WinDSR to false, feature is locked to true"},
		{name: "1.34 WinOverlay=false is locked", minor: 34, requested: map[string]bool{WinOverlay: false}, wantErr: "cannot set feature gate WinOverlay to false, feature is locked to true"},
		{name: "1.37 GA gate set to its default", minor: 37, requested: map[string]bool{WinDSR: true}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true}},
		{name: "AllowServiceExternalIPs is not locked", minor: 37, requested: map[string]bool{AllowServiceExternalIPs: false}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: false}},
		{name: "removed gate", minor: 37, requested: map[string]bool{"IPv6DualStack": false}, wantErr: "unrecognized feature gate: IPv6DualStack"},
		{name: "first bad gate in name order wins", minor: 37, requested: map[string]bool{"Zeta": true, WinDSR: false, "Alpha": true}, wantErr: "unrecognized feature gate: Alpha"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Effective(tt.minor, tt.requested)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Effective() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Effective() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Effective() (-want,+got):\n%s", diff)
			}
		})
	}
}
