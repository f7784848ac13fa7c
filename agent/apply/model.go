package apply

import (
	"context"
	"slices"
	"strings"

	"github.com/winproxy/winproxy/agent/hns"
)

// model is what HNS holds as far as the applier knows: the network's
// endpoints and the host's load balancers as last listed, with every write
// the applier made since applied to them. It sits between the applier and
// HNS, so no write escapes it.
//
// It exists because a list is the expensive HNS call: through hcsshim it
// opens, queries and closes every object (about 120,000 HCN queries at 10k
// services). An event-triggered sync starts from the model instead (Recall),
// so it costs the writes the change needs and no read. The model is only as
// good as the assumption that nothing else changed HNS, which is why the
// agent still lists on its own period (drift detection), and why any write
// whose outcome is unknown (it failed) makes the model untrusted until the
// next list.
type model struct {
	hns.Client

	valid   bool
	network hns.Network
	eps     []hns.Endpoint
	lbs     []hns.LoadBalancer
	// The slices are handed out in Observations and never changed in
	// place (an Apply may be reading them): deletes and modifies are kept
	// aside, by upper-case ID, and folded in by the next recall. Appends
	// are safe: a handed-out slice keeps its length.
	epGone, lbGone map[string]bool
	lbNow          map[string]hns.LoadBalancer
	// ids are the upper-case IDs of every object in the model, for
	// matches; built on its first use after a list, then kept up to date.
	ids map[string]struct{}
}

// listed makes eps and lbs, just listed from the network, the model.
func (m *model) listed(network hns.Network, eps []hns.Endpoint, lbs []hns.LoadBalancer) {
	m.valid, m.network, m.eps, m.lbs, m.ids = true, network, eps, lbs, nil
	clear(m.epGone)
	clear(m.lbGone)
	clear(m.lbNow)
}

// forget marks the model untrusted until the next list.
func (m *model) forget() {
	m.listed(hns.Network{}, nil, nil)
	m.valid = false
}

// recall returns the model's endpoints and load balancers, to be read only.
func (m *model) recall() (hns.Network, []hns.Endpoint, []hns.LoadBalancer, bool) {
	if !m.valid {
		return hns.Network{}, nil, nil, false
	}
	if len(m.epGone) > 0 {
		m.eps = slices.DeleteFunc(slices.Clone(m.eps), func(ep hns.Endpoint) bool { return m.epGone[strings.ToUpper(ep.ID)] })
		clear(m.epGone)
	}
	if len(m.lbGone)+len(m.lbNow) > 0 {
		lbs := make([]hns.LoadBalancer, 0, len(m.lbs))
		for _, lb := range m.lbs {
			id := strings.ToUpper(lb.ID)
			if now, ok := m.lbNow[id]; ok {
				lb = now
			}
			if !m.lbGone[id] {
				lbs = append(lbs, lb)
			}
		}
		m.lbs = lbs
		clear(m.lbGone)
		clear(m.lbNow)
	}
	return m.network, m.eps, m.lbs, true
}

// matches reports whether HNS holds exactly the objects of the model, by
// their IDs as HcnEnumerate* answers them: as many IDs as the model has
// objects, each one of them.
func (m *model) matches(epIDs, lbIDs []string) bool {
	_, eps, lbs, ok := m.recall()
	if !ok || len(epIDs) != len(eps) || len(lbIDs) != len(lbs) {
		return false
	}
	if m.ids == nil {
		m.ids = make(map[string]struct{}, len(eps)+len(lbs))
		for _, ep := range eps {
			m.ids[strings.ToUpper(ep.ID)] = struct{}{}
		}
		for _, lb := range lbs {
			m.ids[strings.ToUpper(lb.ID)] = struct{}{}
		}
	}
	for _, ids := range [][]string{epIDs, lbIDs} {
		for _, id := range ids {
			// ToUpper returns an upper-case string as it is, without a copy.
			if _, ok := m.ids[strings.ToUpper(id)]; !ok {
				return false
			}
		}
	}
	return true
}

// added and removed keep ids up to date with a write, once it was built.
func (m *model) added(id string) {
	if m.ids != nil {
		m.ids[strings.ToUpper(id)] = struct{}{}
	}
}

func (m *model) removed(id string) {
	if m.ids != nil {
		delete(m.ids, strings.ToUpper(id))
	}
}

// wrote updates the model after a write: err == nil means done; a
// not-found answer to a delete means gone all the same; any other error
// leaves HNS in a state the applier cannot know (a timeout may still be
// carried out), so the model is forgotten.
func (m *model) wrote(err error, deleting bool, update func()) {
	switch {
	case !m.valid:
	case err == nil, deleting && hns.IsNotFound(err):
		update()
	default:
		m.forget()
	}
}

func (m *model) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	created, err := m.Client.CreateEndpoint(ctx, networkID, ep)
	m.wrote(err, false, func() {
		if strings.EqualFold(networkID, m.network.ID) {
			m.eps = append(m.eps, created)
			m.added(created.ID)
		}
	})
	return created, err
}

func (m *model) DeleteEndpoint(ctx context.Context, id string) error {
	err := m.Client.DeleteEndpoint(ctx, id)
	m.wrote(err, true, func() { mark(&m.epGone, id); m.removed(id) })
	return err
}

func (m *model) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	created, err := m.Client.CreateLoadBalancer(ctx, lb)
	m.wrote(err, false, func() { m.lbs = append(m.lbs, created); m.added(created.ID) })
	return created, err
}

func (m *model) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	got, err := m.Client.ModifyLoadBalancer(ctx, id, lb)
	m.wrote(err, false, func() {
		if m.lbNow == nil {
			m.lbNow = map[string]hns.LoadBalancer{}
		}
		now := got
		now.ID = id
		m.lbNow[strings.ToUpper(id)] = now
	})
	return got, err
}

func (m *model) DeleteLoadBalancer(ctx context.Context, id string) error {
	err := m.Client.DeleteLoadBalancer(ctx, id)
	m.wrote(err, true, func() { mark(&m.lbGone, id); m.removed(id) })
	return err
}

func mark(set *map[string]bool, id string) {
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[strings.ToUpper(id)] = true
}
