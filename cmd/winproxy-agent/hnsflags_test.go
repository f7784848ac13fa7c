package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/agent/hns/hnsrpc"
	"github.com/winproxy/winproxy/agent/hns/sim"
)

// With --hns-sim-socket the agent's commands call a simulated host that another process (here
// the test) serves, and keep the ledger in --state-dir.
func TestServedSimHost(t *testing.T) {
	state := migratingHost(t)
	stateDir := t.TempDir()
	if err := os.Rename(state+".owned", filepath.Join(stateDir, "owned.ledger")); err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.WithStateFile(state))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	srv, err := hnsrpc.Serve(filepath.Join(t.TempDir(), "hns.sock"), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	out, err := runAgent("hns", "dump", "--hns=sim", "--hns-sim-socket", srv.Addr(), "--state-dir", stateDir, "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := ownersDumped(t, out)
	if !d.Host.Simulated || d.Host.HNSVersion != "13.3" || d.Host.WindowsBuild != "20348" || len(d.Host.Interfaces) != 0 {
		t.Errorf("host %+v, want the simulated WS2022 of the served host", d.Host)
	}
	if n := s.Counts().Calls[sim.OpListLoadBalancers]; n != 1 {
		t.Errorf("the served host answered %d load balancer lists, want the dump's one", n)
	}
}

// --hns-sim-socket is refused with what is wrong: beside a state file, a path no socket can have,
// without a ledger folder, or with nobody serving.
func TestServedSimHostErrors(t *testing.T) {
	srv, err := hnsrpc.Serve(filepath.Join(t.TempDir(), "hns.sock"), sim.MustNew())
	if err != nil {
		t.Fatal(err)
	}
	gone := srv.Addr()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--hns-sim-socket", gone, "--hns-sim-state", filepath.Join(stateDir, "host.json")}, "--hns-sim-socket and --hns-sim-state exclude each other"},
		{[]string{"--hns-sim-socket", "/" + strings.Repeat("x", 120), "--state-dir", stateDir}, "over the 103 a Unix socket's may have"},
		{[]string{"--hns-sim-socket", gone, "--state-dir", stateDir}, "HNS not running"},
		{[]string{"--state-dir", stateDir}, "--hns=sim needs --hns-sim-state FILE or --hns-sim-socket PATH"},
	} {
		_, err := runAgent(append([]string{"hns", "dump", "--hns=sim"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	s := sim.MustNew()
	srv, err = hnsrpc.Serve(filepath.Join(t.TempDir(), "hns.sock"), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("ProgramData", "")
	if _, err := runAgent("hns", "dump", "--hns=sim", "--hns-sim-socket", srv.Addr()); err == nil || !strings.Contains(err.Error(), "--state-dir is required with --hns-sim-socket") {
		t.Errorf("without --state-dir: %v", err)
	}
}
