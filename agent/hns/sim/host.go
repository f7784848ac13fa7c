package sim

import (
	"fmt"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
)

// The methods below act on the host "from outside" — as an admin, a CNI or
// another component would. They are not HNS calls: they are not counted,
// ignore injected faults and work even while HNS is stopped.

func (s *Sim) outside(f func(h *host) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sync(func(h *host) (bool, error) {
		err := f(h)
		return err == nil, err
	})
}

// AddNetwork creates a network (ID generated when empty), e.g. an overlay
// network with one RemoteSubnetRoute per remote node. Names are unique.
func (s *Sim) AddNetwork(n hns.Network) (hns.Network, error) {
	err := s.outside(func(h *host) error {
		if _, ok := h.networkByName(n.Name); ok {
			return fmt.Errorf("sim: network %q already exists", n.Name)
		}
		if n.ID == "" {
			n.ID = s.newID(h)
		}
		if _, ok := h.networks[key(n.ID)]; ok {
			return fmt.Errorf("sim: network ID %s already exists", n.ID)
		}
		h.addNetwork(n)
		return nil
	})
	return cloneNetwork(n), err
}

// AddLocalEndpoint creates a local (pod) endpoint on the named network as a
// CNI would. The duplicate-IP rule of the profile applies.
func (s *Sim) AddLocalEndpoint(networkName, name string, ips ...netip.Addr) (hns.Endpoint, error) {
	var out hns.Endpoint
	err := s.outside(func(h *host) error {
		n, ok := h.networkByName(networkName)
		if !ok {
			return hns.NewError("AddLocalEndpoint", networkName, hns.CodeNetworkNotFound, nil)
		}
		var err error
		out, err = s.createEndpoint(h, "AddLocalEndpoint", n.ID, hns.Endpoint{Name: name, IPs: ips, PrefixLength: 24})
		return err
	})
	return out, err
}

// RemoveNetwork deletes a network and every endpoint on it, as a CNI does when it recreates its
// network (a node reboot, a CNI upgrade). Load balancers stay, pointing at endpoints that are gone.
func (s *Sim) RemoveNetwork(name string) error {
	return s.outside(func(h *host) error {
		n, ok := h.networkByName(name)
		if !ok {
			return hns.NewError("RemoveNetwork", name, hns.CodeNetworkNotFound, nil)
		}
		for id, r := range h.endpoints {
			if key(r.obj.NetworkID) == key(n.ID) {
				h.removeEndpoint(id)
			}
		}
		delete(h.networks, key(n.ID))
		return nil
	})
}

// SetRemoteSubnetRoutes replaces an overlay network's routes, as the CNI
// does when a node joins or leaves the cluster.
func (s *Sim) SetRemoteSubnetRoutes(networkName string, routes []hns.RemoteSubnetRoute) error {
	return s.outside(func(h *host) error {
		n, ok := h.networkByName(networkName)
		if !ok {
			return hns.NewError("SetRemoteSubnetRoutes", networkName, hns.CodeNetworkNotFound, nil)
		}
		r := h.networks[key(n.ID)]
		r.obj.RemoteSubnetRoutes = slices.Clone(routes)
		return nil
	})
}

// RemoveEndpoint deletes an endpoint behind the agent's back (pod deleted).
func (s *Sim) RemoveEndpoint(id string) error {
	return s.outside(func(h *host) error {
		if _, ok := h.endpoints[key(id)]; !ok {
			return hns.NewError("RemoveEndpoint", id, hns.CodeElementNotFound, hns.ErrEndpointNotFound)
		}
		h.removeEndpoint(id)
		return nil
	})
}

// AddLoadBalancer creates an LB as another component would (a foreign LB
// winproxy must not touch). The same validation as CreateLoadBalancer applies.
func (s *Sim) AddLoadBalancer(lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	err := s.outside(func(h *host) error {
		if err := validateLB(h, "AddLoadBalancer", "", lb); err != nil {
			return err
		}
		lb.ID = s.newID(h)
		h.addLB(lb)
		return nil
	})
	return cloneLB(lb), err
}

// RemoveLoadBalancer deletes an LB behind the agent's back (drift).
func (s *Sim) RemoveLoadBalancer(id string) error {
	return s.outside(func(h *host) error {
		if _, ok := h.lbs[key(id)]; !ok {
			return hns.NewError("RemoveLoadBalancer", id, hns.CodeElementNotFound, hns.ErrLoadBalancerNotFound)
		}
		h.removeLB(id)
		return nil
	})
}

// SetHNSRunning stops or starts the simulated HNS service; while stopped
// every call fails with 0x6b5. Persisted, so it affects every process
// sharing the state file.
func (s *Sim) SetHNSRunning(running bool) error {
	return s.outside(func(h *host) error {
		h.stopped = !running
		return nil
	})
}

// SetHNSHung makes every call block until it is unset, ignoring the caller's context, as an HCN
// RPC into a wedged HNS service does on Windows (it cannot be cancelled). Persisted, so it affects
// every process sharing the state file.
func (s *Sim) SetHNSHung(hung bool) error {
	return s.outside(func(h *host) error {
		h.hung = hung
		return nil
	})
}

// Weather is how a host's HNS behaves over time, shared by every process using the state file,
// so that chaos runs can slow or break the HNS of agents in other processes and stop doing so
// while they run.
type Weather struct {
	// FailureRate is the probability that a call fails with an injected E_FAIL; each process draws
	// from its own generator seeded with Seed.
	FailureRate float64 `json:"failureRate,omitempty"`
	Seed        int64   `json:"seed,omitempty"`
	// Latency delays every call, as HNS calls take milliseconds on Windows.
	Latency time.Duration `json:"latency,omitempty"`
	// DiskFull is set while the host's disk is full: every write of the ownership ledger of an
	// agent on this host fails with "no space left on device" (DiskFault).
	DiskFull bool `json:"diskFull,omitempty"`
}

// DiskFault is the write fault of the ownership ledger of an agent on this host
// (ownership.WithWriteFault): "no space left on device" while the host's Weather says its disk is full.
func (s *Sim) DiskFault() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	full := false
	err := s.sync(func(h *host) (bool, error) {
		full = h.weather.DiskFull
		return false, nil
	})
	if err != nil {
		return err
	}
	if full {
		return syscall.ENOSPC
	}
	return nil
}

// SetWeather sets the host's weather (the zero Weather is calm).
func (s *Sim) SetWeather(w Weather) error {
	return s.outside(func(h *host) error {
		h.weather = w
		return nil
	})
}

// SetProfile changes the host's profile (an OS upgrade).
func (s *Sim) SetProfile(p Profile) error {
	return s.outside(func(h *host) error {
		h.profile = p
		return nil
	})
}

// Profile returns the host's profile.
func (s *Sim) Profile() (Profile, error) {
	st, err := s.Snapshot()
	return st.Profile, err
}

// Snapshot returns the whole host state (reloaded from the state file if
// another process changed it).
func (s *Sim) Snapshot() (State, error) {
	var st State
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.sync(func(h *host) (bool, error) {
		st = h.state()
		return false, nil
	})
	return st, err
}

// HostMAC is the MAC of the simulated host's interface holding ip: a simulated host has no
// interfaces, so every node IP gets a stable Hyper-V style MAC derived from it.
func HostMAC(ip netip.Addr) string {
	b := ip.As16()
	return fmt.Sprintf("00-15-5d-%02x-%02x-%02x", b[13], b[14], b[15])
}
