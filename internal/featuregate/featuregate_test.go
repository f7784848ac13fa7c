package featuregate

import (
	"slices"
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
		{name: "1.33 DSR beta on", minor: 33, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true, PreferSameTrafficDistribution: false}},
		{name: "1.33 DSR may be turned off", minor: 33, requested: map[string]bool{WinDSR: false}, want: map[string]bool{WinDSR: false, WinOverlay: true, AllowServiceExternalIPs: true, PreferSameTrafficDistribution: false}},
		{name: "1.34 PreferSameTrafficDistribution beta on", minor: 34, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true, PreferSameTrafficDistribution: true}},
		{name: "1.34 WinDSR=false is locked", minor: 34, requested: map[string]bool{WinDSR: false}, wantErr: "cannot set feature gate WinDSR to false, feature is locked to true"},
		{name: "1.34 WinOverlay=false is locked", minor: 34, requested: map[string]bool{WinOverlay: false}, wantErr: "cannot set feature gate WinOverlay to false, feature is locked to true"},
		{name: "1.37 GA gate set to its default", minor: 37, requested: map[string]bool{WinDSR: true}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true, PreferSameTrafficDistribution: true}},
		{name: "AllowServiceExternalIPs is not locked", minor: 37, requested: map[string]bool{AllowServiceExternalIPs: false}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: false, PreferSameTrafficDistribution: true}},
		{name: "removed gate", minor: 37, requested: map[string]bool{"IPv6DualStack": false}, wantErr: "unrecognized feature gate: IPv6DualStack"},
		{name: "PreferSameTrafficDistribution turned on where it is alpha", minor: 33, requested: map[string]bool{"PreferSameTrafficDistribution": true}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true, PreferSameTrafficDistribution: true}},
		{name: "that gate before it existed", minor: 32, requested: map[string]bool{"PreferSameTrafficDistribution": true}, wantErr: "unrecognized feature gate: PreferSameTrafficDistribution"},
		{name: "that gate once GA is locked", minor: 35, requested: map[string]bool{"PreferSameTrafficDistribution": false}, wantErr: "cannot set feature gate PreferSameTrafficDistribution to false, feature is locked to true"},
		{name: "a deprecated kubelet gate", minor: 37, requested: map[string]bool{"WindowsHostNetwork": true}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true, PreferSameTrafficDistribution: true}},
		{name: "WindowsHostNetwork before 1.26", minor: 25, requested: map[string]bool{"WindowsHostNetwork": true}, wantErr: "unrecognized feature gate: WindowsHostNetwork"},
		{name: "a client-go gate", minor: 37, requested: map[string]bool{"WatchListClient": false}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true, PreferSameTrafficDistribution: true}},
		{name: "AllAlpha turns the alpha Windows gates on", minor: 14, requested: map[string]bool{"AllAlpha": true}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true}},
		{name: "a gate set explicitly wins over AllAlpha", minor: 14, requested: map[string]bool{"AllAlpha": true, WinOverlay: false}, want: map[string]bool{WinDSR: true, WinOverlay: false, AllowServiceExternalIPs: true}},
		{name: "AllBeta=false turns the beta Windows gates off", minor: 33, requested: map[string]bool{"AllBeta": false}, want: map[string]bool{WinDSR: false, WinOverlay: false, AllowServiceExternalIPs: true, PreferSameTrafficDistribution: false}},
		{name: "AllBeta leaves GA gates alone", minor: 34, requested: map[string]bool{"AllBeta": false}, want: map[string]bool{WinDSR: true, WinOverlay: true, AllowServiceExternalIPs: true, PreferSameTrafficDistribution: false}},
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

// TestTable checks the generated table's shape: specs in ascending order, and the Windows gates
// as docs/design/dataplane.md#feature-gates lists them (pkg/features/kube_features.go).
func TestTable(t *testing.T) {
	if len(table) < 200 {
		t.Errorf("table has %d gates; kube-proxy 1.37 knows over 200", len(table))
	}
	for name, specs := range table {
		if len(specs) == 0 || !slices.IsSortedFunc(specs, func(a, b Spec) int { return a.Since - b.Since }) {
			t.Errorf("%s: specs %+v not in ascending Since order", name, specs)
		}
	}
	want := []Spec{{Since: 14, Stage: Alpha}, {Since: 33, Stage: Beta, Default: true}, {Since: 34, Stage: GA, Default: true, Locked: true}}
	if diff := cmp.Diff(want, table[WinDSR]); diff != "" {
		t.Errorf("WinDSR (-want,+got):\n%s", diff)
	}
	want = []Spec{{Since: 14, Stage: Alpha}, {Since: 20, Stage: Beta, Default: true}, {Since: 34, Stage: GA, Default: true, Locked: true}}
	if diff := cmp.Diff(want, table[WinOverlay]); diff != "" {
		t.Errorf("WinOverlay (-want,+got):\n%s", diff)
	}
}
