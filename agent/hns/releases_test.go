package hns

import "testing"

func TestReleases(t *testing.T) {
	rs := Releases()
	for i := 1; i < len(rs); i++ {
		if rs[i].Build <= rs[i-1].Build || !rs[i].HNS.AtLeast(rs[i-1].HNS) {
			t.Errorf("releases not oldest first: %+v before %+v", rs[i-1], rs[i])
		}
	}
	for _, r := range rs {
		if got, ok := ReleaseOfBuild(r.Build); !ok || got != r {
			t.Errorf("ReleaseOfBuild(%d) = %+v, %v; want %+v", r.Build, got, ok, r)
		}
	}
	if r, ok := ReleaseOfBuild(19041); ok {
		t.Errorf("ReleaseOfBuild(19041) = %+v, want none", r)
	}
	// Every supported release runs the agent: HNS API v2, remote subnets and DSR.
	for _, r := range rs {
		if c := CapabilitiesFor(r.HNS); !c.APIV2 || !c.RemoteSubnet || !c.DSR {
			t.Errorf("Windows Server %s (HNS %s) lacks what the agent needs: %+v", r.WindowsServer, r.HNS, c)
		}
	}
}
