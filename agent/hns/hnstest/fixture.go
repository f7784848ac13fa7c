package hnstest

import (
	"context"
	"net/netip"
	"testing"

	"github.com/winproxy/winproxy/agent/hns"
)

// Fixture prepares the host for one case and registers on t the removal of what it set up. The
// returned network holds no endpoint but those the case creates.
type Fixture func(t *testing.T) Env

// Env is one case's view of the host under test.
type Env struct {
	Client hns.Client
	// Network is a throw-away network on Subnet4 (and Subnet6 when DualStack).
	Network   hns.Network
	DualStack bool
	// WindowsBuild is the host's Windows build. Claims that depend on the Windows release rather
	// than on the HNS version (the duplicate-IP bug) are looked up by it in hns.Releases; 0
	// means unknown and skips those cases.
	WindowsBuild int
	Harness      Harness
}

// Harness does on the host what components other than the agent do.
type Harness interface {
	// AddLocalEndpoint creates a local endpoint on the network, as a CNI does for a pod.
	AddLocalEndpoint(ctx context.Context, name string, ips ...netip.Addr) (hns.Endpoint, error)
	// RecreateNetwork deletes the network the way its CNI does when it restarts, with whatever
	// HNS deletes along with it, and creates one of the same name, type and subnets.
	RecreateNetwork(ctx context.Context) (hns.Network, error)
}
