//go:build hnsintegration

package hnstest_test

import (
	"testing"

	"github.com/winproxy/winproxy/agent/hns/hnstest"
)

// TestContractAgainstHNS holds this machine's HNS, through the Windows adapter, to the
// contract the simulator implements. It needs an elevated shell and the Containers feature;
// docs/windows.md says how to run it and read the result.
func TestContractAgainstHNS(t *testing.T) {
	l := openLab(t)
	t.Logf("HNS %s on Windows build %d; network %s %q (dual-stack %v)", l.version, l.build, l.typ, l.network.Name, l.dualStack)
	hnstest.Run(t, l.env)
}
