package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/agent/hns/hnsrpc"
	"github.com/winproxy/winproxy/agent/hns/sim"
	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/agent/ownership"
)

// hnsFlags select the HNS the agent talks to: the host's (Windows), a simulated host persisted
// to a file (Linux, tests, the demo) or one served by another process (tests, benchmarks).
type hnsFlags struct {
	kind      string
	simState  string
	simSocket string
	profile   string
	stateDir  string
}

func (f *hnsFlags) register(fs *pflag.FlagSet) {
	def := "sim"
	if runtime.GOOS == "windows" {
		def = "windows"
	}
	fs.StringVar(&f.kind, "hns", def, "HNS to program: windows (the host's HNS) or sim (a simulated host)")
	fs.StringVar(&f.simState, "hns-sim-state", "", "with --hns=sim: file holding the simulated host, shared by every process that opens it")
	fs.StringVar(&f.simSocket, "hns-sim-socket", "", "with --hns=sim: the simulated host is served by another process on this Unix socket, a PATH (tests and benchmarks: as on Windows, where HNS is a service of its own); instead of --hns-sim-state")
	fs.StringVar(&f.profile, "hns-sim-profile", "ws2022", "with --hns=sim: Windows Server profile of a new simulated host (ws2019, ws2022, ws2025)")
	fs.StringVar(&f.stateDir, "state-dir", "", "directory of the ledger of HNS objects this agent created, on Windows restricted to SYSTEM and Administrators (default: beside --hns-sim-state, or %ProgramData%\\winproxy on Windows)")
}

// host is an opened HNS with what the agent needs to know about the machine.
type host struct {
	client       hns.Client
	windowsBuild string
	// hostMAC returns the MAC of the interface holding ip.
	hostMAC func(ip netip.Addr) string
	// simulated is set for the HNS simulator, whose host has no real interfaces.
	simulated bool
	// diskFault fails the ledger's writes while the simulated host's disk is full.
	diskFault func() error
	// close releases the host (and ledger); nothing is left unwritten by then, so it reports no
	// error.
	close func()
}

func (f *hnsFlags) open() (*host, error) {
	switch f.kind {
	case "sim":
		switch {
		case f.simSocket != "" && f.simState != "":
			return nil, errors.New("--hns-sim-socket and --hns-sim-state exclude each other: the simulated host is served by another process or kept in a file, not both")
		case f.simSocket != "":
			return openServedSim(f.simSocket)
		case f.simState == "":
			return nil, errors.New("--hns=sim needs --hns-sim-state FILE or --hns-sim-socket PATH")
		}
		profile, err := sim.ProfileByName(f.profile)
		if err != nil {
			return nil, err
		}
		s, err := sim.New(sim.WithStateFile(f.simState), sim.WithProfile(profile))
		if err != nil {
			return nil, fmt.Errorf("opening the simulated host %s: %w", f.simState, err)
		}
		p, err := s.Profile()
		if err != nil {
			return nil, err
		}
		return &host{client: s, windowsBuild: fmt.Sprint(p.Build), hostMAC: sim.HostMAC, simulated: true, diskFault: s.DiskFault, close: func() { _ = s.Close() }}, nil
	case "windows":
		c, build, err := openWindowsHNS()
		if err != nil {
			return nil, err
		}
		return &host{client: c, windowsBuild: build, hostMAC: interfaceMAC, close: func() {}}, nil
	}
	return nil, fmt.Errorf("--hns must be windows or sim, not %q", f.kind)
}

// openServedSim calls the simulated host another process serves on the socket at path
// (hnsrpc.Serve). Its Windows build is the release of the HNS version it reports.
func openServedSim(path string) (*host, error) {
	c, err := hnsrpc.NewClient(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := c.Version(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("the simulated host at %s: %w", path, err)
	}
	build := ""
	for _, r := range hns.Releases() {
		if r.HNS == v {
			build = fmt.Sprint(r.Build)
		}
	}
	return &host{client: c, windowsBuild: build, hostMAC: sim.HostMAC, simulated: true, close: c.Close}, nil
}

// openOwned opens the HNS and the ledger of what this agent created; close releases both.
func (f *hnsFlags) openOwned() (*host, *ownership.Ledger, error) {
	h, err := f.open()
	if err != nil {
		return nil, nil, err
	}
	path, err := f.ledgerPath()
	if err == nil {
		var ledger *ownership.Ledger
		var opts []ownership.LedgerOption
		if h.diskFault != nil {
			opts = append(opts, ownership.WithWriteFault(h.diskFault))
		}
		if ledger, err = ownership.OpenLedger(path, opts...); err == nil {
			closeHost := h.close
			h.close = func() { _ = ledger.Close(); closeHost() }
			return h, ledger, nil
		}
	}
	h.close()
	return nil, nil, fmt.Errorf("%w: %w", errNoLedger, err)
}

// errNoLedger marks an ownership ledger that cannot be opened: without it the agent cannot tell
// the load balancers it created from others', so it programs nothing (reportNoLedger).
var errNoLedger = errors.New("the ownership ledger cannot be opened")

// ledgerFile is where the agent records the HNS objects it created; it changes nothing on disk.
func (f *hnsFlags) ledgerFile() (string, error) {
	dir := f.stateDir
	switch {
	case dir != "":
	case f.kind == "sim" && f.simState != "":
		return f.simState + ".owned", nil
	case os.Getenv("ProgramData") != "":
		dir = filepath.Join(os.Getenv("ProgramData"), "winproxy")
	case f.kind == "sim" && f.simSocket != "":
		return "", errors.New("--state-dir is required with --hns-sim-socket: there is no state file to keep the ledger beside")
	default:
		return "", errors.New("--state-dir is required")
	}
	return filepath.Join(dir, "owned.ledger"), nil
}

// ledgerPath is ledgerFile, its folder created and, on Windows, restricted.
func (f *hnsFlags) ledgerPath() (string, error) {
	path, err := f.ledgerFile()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Whoever can write the ledger decides what the agent may delete: on Windows the folder is
	// SYSTEM's and the Administrators' only.
	if err := ownership.SecureLedgerDir(dir); err != nil {
		return "", err
	}
	return path, nil
}

// hostInterfaces lists the host's network interfaces that have a MAC, with their addresses.
func hostInterfaces() []hnsdump.Interface {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []hnsdump.Interface
	for _, iface := range ifaces {
		// Each interface's addresses are another enumeration of them all on Windows
		// (GetAdaptersAddresses): only those with a MAC are asked.
		if len(iface.HardwareAddr) == 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		i := hnsdump.Interface{MAC: strings.ReplaceAll(iface.HardwareAddr.String(), ":", "-")}
		for _, a := range addrs {
			if prefix, err := netip.ParsePrefix(a.String()); err == nil {
				i.IPs = append(i.IPs, prefix.Addr())
			}
		}
		out = append(out, i)
	}
	return out
}

// interfaceMAC finds the MAC of the host interface that holds ip, as kube-proxy does for the
// overlay source-VIP endpoint.
func interfaceMAC(ip netip.Addr) string { return hnsdump.InterfaceMAC(hostInterfaces(), ip) }
