package ownership

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/netip"
	"slices"
	"strconv"

	"github.com/winproxy/winproxy/agent/hns"
)

// Owned enforces ownership on the writes the agent makes. Every delete or
// modify takes the object as the caller listed it and is refused
// (hns.ErrNotOwned, without reaching HNS) unless that object proves to be
// winproxy's: an endpoint by its winproxy- name, a load balancer by a ledger
// entry whose fingerprint matches its content. An ID alone is never enough,
// so a stale or forged ledger entry cannot delete a stranger's object, and
// a load balancer someone else changed is no longer winproxy's.
//
// HNS has no conditional write: the object may change between the caller's
// list and the write. The window is one sync, and only the admin or another
// proxy, which can delete the object anyway, can change it.
type Owned struct {
	c      hns.Client
	Ledger *Ledger
}

// NewOwned wraps c with ownership enforcement backed by l.
func NewOwned(c hns.Client, l *Ledger) *Owned { return &Owned{c: c, Ledger: l} }

// OwnsLoadBalancer reports whether lb, as listed, is winproxy's: recorded,
// with a content the agent created or last wrote.
func (o *Owned) OwnsLoadBalancer(lb hns.LoadBalancer) bool {
	return o.Ledger.proves(lb)
}

// OwnsEndpoint reports whether winproxy created ep: it carries the
// winproxy- name.
func (o *Owned) OwnsEndpoint(ep hns.Endpoint) bool { return hns.HasOwnedName(ep) }

// CreateEndpoint names the endpoint winproxy-<first IP> unless it already
// carries the prefix, and creates it.
func (o *Owned) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	if !hns.HasOwnedName(ep) {
		suffix := ep.Name
		if suffix == "" && len(ep.IPs) > 0 {
			suffix = ep.IPs[0].String()
		}
		ep.Name = hns.EndpointNamePrefix + suffix
	}
	return o.c.CreateEndpoint(ctx, networkID, ep)
}

// DeleteEndpoint deletes ep, as listed, if it is winproxy's. A delete that fails with a code that
// does not say why is checked by ID (goneAnyway): an endpoint HNS no longer has is deleted.
func (o *Owned) DeleteEndpoint(ctx context.Context, ep hns.Endpoint) error {
	if !o.OwnsEndpoint(ep) {
		return &hns.Error{Op: hns.OpDeleteEndpoint, ID: ep.ID, Kind: hns.ErrNotOwned}
	}
	err := o.c.DeleteEndpoint(ctx, ep.ID)
	return goneAnyway(hns.OpDeleteEndpoint, ep.ID, err, hns.ErrEndpointNotFound, func() (bool, error) {
		ids, lerr := o.c.ListEndpointIDs(ctx, ep.NetworkID)
		return ids.Contains(ep.ID), lerr
	})
}

// goneAnyway settles a delete that failed with err without saying why: HNS answers a delete of an
// object that is gone with 0x490 or 0x803B0002 where winproxy has seen it, and no source states
// that it always does (upstream looks the object up before it deletes). A failure that says what
// happened (not found, HNS not running, a timeout, the caller gave up) is returned as it is; for
// any other, exists looks the object up by ID, and an object HNS no longer has is reported as not
// found (the original error kept as the cause), which every caller takes as deleted.
func goneAnyway(op hns.Op, id string, err, notFound error, exists func() (bool, error)) error {
	if err == nil || hns.IsNotFound(err) || hns.IsHNSNotRunning(err) || hns.IsTimeout(err) || ctxErr(err) {
		return err
	}
	if there, lerr := exists(); lerr != nil || there {
		return err
	}
	return &hns.Error{Op: op, ID: id, Kind: notFound, Err: err}
}

func ctxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// CreateLoadBalancer creates an LB and records it with the fingerprint of
// the content HNS returned. An intent is recorded first: should the process
// be killed before the ID is, Settle can still tell the LB from a
// stranger's, which HNS offers no tag for. A create that timed out may
// still be carried out, so its intent is kept for the next Settle.
func (o *Owned) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	intent := fingerprint(lb)
	if err := o.Ledger.change(entry{op: '+', kind: lineIntent, id: intent}); err != nil {
		return hns.LoadBalancer{}, err
	}
	created, err := o.c.CreateLoadBalancer(ctx, lb)
	if err != nil {
		if hns.IsTimeout(err) {
			return created, err
		}
		if ferr := o.Ledger.change(entry{op: '-', kind: lineIntent, id: intent}); ferr != nil {
			return created, errors.Join(err, ferr)
		}
		return created, err
	}
	proof := intent
	if !sameContent(created, lb) {
		proof = fingerprint(created)
	}
	return created, o.Ledger.change(
		entry{op: '+', kind: lineLoadBalancer, id: created.ID, proofs: []string{proof}},
		entry{op: '-', kind: lineIntent, id: intent})
}

// ModifyLoadBalancer rewrites cur, as listed, to want if cur is winproxy's.
// Before the call the entry accepts both cur's content and want's, after it
// also the content HNS returned: a kill or a timeout in between, or an HNS
// that accepts a modify without carrying it out (k/k #131466), leaves a
// content the entry still proves. The next modify narrows it again.
func (o *Owned) ModifyLoadBalancer(ctx context.Context, cur, want hns.LoadBalancer) (hns.LoadBalancer, error) {
	have := fingerprint(cur)
	if !o.Ledger.recordedWith(cur.ID, have) {
		return hns.LoadBalancer{}, &hns.Error{Op: hns.OpModifyLoadBalancer, ID: cur.ID, Kind: hns.ErrNotOwned}
	}
	proofs := []string{have}
	if p := fingerprint(want); p != have {
		proofs = append(proofs, p)
	}
	if err := o.Ledger.change(entry{op: '+', kind: lineLoadBalancer, id: cur.ID, proofs: proofs}); err != nil {
		return hns.LoadBalancer{}, err
	}
	got, err := o.c.ModifyLoadBalancer(ctx, cur.ID, want)
	if err != nil {
		return got, err
	}
	if sameContent(got, want) {
		return got, nil
	}
	if p := fingerprint(got); !slices.Contains(proofs, p) {
		return got, o.Ledger.change(entry{op: '+', kind: lineLoadBalancer, id: cur.ID, proofs: append(proofs, p)})
	}
	return got, nil
}

// DeleteLoadBalancer deletes cur, as listed, if it is winproxy's. A
// not-found answer also drops it from the ledger: it is gone either way. A
// failure that does not say why is checked by ID (goneAnyway).
func (o *Owned) DeleteLoadBalancer(ctx context.Context, cur hns.LoadBalancer) error {
	if !o.OwnsLoadBalancer(cur) {
		return &hns.Error{Op: hns.OpDeleteLoadBalancer, ID: cur.ID, Kind: hns.ErrNotOwned}
	}
	err := goneAnyway(hns.OpDeleteLoadBalancer, cur.ID, o.c.DeleteLoadBalancer(ctx, cur.ID), hns.ErrLoadBalancerNotFound, func() (bool, error) {
		_, gerr := o.c.GetLoadBalancer(ctx, cur.ID)
		if hns.IsNotFound(gerr) {
			return false, nil
		}
		return gerr == nil, gerr
	})
	if err == nil || hns.IsNotFound(err) {
		if ferr := o.Ledger.forgetDeleted(cur.ID); ferr != nil {
			return errors.Join(err, ferr)
		}
	}
	return err
}

// Adopt records lb, as listed, as winproxy's without an HNS call. The
// caller vouches that lb is identical to a load balancer it would create
// now: taking it over changes nothing on the data plane, and the
// alternative, replacing it because it holds that frontend
// (docs/design/dataplane.md#foreign-load-balancers), ends in the same state
// after a delete and a create.
func (o *Owned) Adopt(lb hns.LoadBalancer) error {
	return o.Ledger.change(entry{op: '+', kind: lineLoadBalancer, id: lb.ID, proofs: []string{fingerprint(lb)}})
}

// Disown drops the entry of a load balancer that no longer proves to be
// winproxy's (changed behind the agent's back, or recorded without a
// fingerprint by an earlier version and not identical to a desired one):
// from now on it is a stranger's.
func (o *Owned) Disown(id string) error { return o.Ledger.Forget(id) }

// Settle reconciles the ledger with a full list of the host's load
// balancers. An LB whose content matches a pending intent was created by a
// process killed (or a call timed out) before it could be recorded: it is
// recorded.
// The other intents were never carried out and are dropped, and so are the
// entries of LBs HNS no longer has. It makes no HNS call, and in the usual
// sync (no intent, nothing gone) neither allocates nor hashes.
func (o *Owned) Settle(listed []hns.LoadBalancer) (adopted int, err error) {
	l := o.Ledger
	if l.pendingIntents() {
		if adopted, err = o.adoptIntended(listed); err != nil {
			return adopted, err
		}
	}
	return adopted, l.forgetUnlisted(listed)
}

// adoptIntended records the listed LBs not proven winproxy's whose content
// matches a pending intent, then drops every intent. An LB matching no
// intent stays as it is.
func (o *Owned) adoptIntended(listed []hns.LoadBalancer) (int, error) {
	l := o.Ledger
	adopted := 0
	for _, lb := range listed {
		p := fingerprint(lb)
		if !l.hasIntent(p) || l.recordedWith(lb.ID, p) {
			continue
		}
		if err := l.change(entry{op: '+', kind: lineLoadBalancer, id: lb.ID, proofs: []string{p}},
			entry{op: '-', kind: lineIntent, id: p}); err != nil {
			return adopted, err
		}
		adopted++
	}
	return adopted, l.dropIntents()
}

// sameContent reports whether a and b are exactly alike, the ID excepted:
// HNS usually answers a write with what it was asked, which then needs no
// second fingerprint.
func sameContent(a, b hns.LoadBalancer) bool {
	return slices.Equal(a.FrontendVIPs, b.FrontendVIPs) && a.PortMapping == b.PortMapping && a.Flags == b.Flags &&
		a.SourceVIP == b.SourceVIP && slices.Equal(a.BackendEndpointIDs, b.BackendEndpointIDs)
}

// fingerprint identifies an LB by everything winproxy compares, the ID
// excepted: frontend, port mapping (protocol, ports, distribution, flags),
// LB flags, source VIP and backends. A hash, so that an LB of many backends
// is one short line; the same function as the create intents of earlier
// versions, so that their pending intents keep their meaning.
func fingerprint(lb hns.LoadBalancer) string {
	// Room on the stack for a load balancer of up to 16 backends: a sync that programs a change
	// takes three fingerprints, which would otherwise allocate about 800 bytes each.
	var idBuf [16]string
	var textBuf [768]byte
	ids := idBuf[:0]
	for _, id := range lb.BackendEndpointIDs {
		ids = append(ids, normID(id)) // HNS keeps neither case nor, everywhere, order
	}
	slices.Sort(ids)
	sum := sha256.Sum256(fingerprintText(textBuf[:0], lb, ids))
	var out [32]byte
	hex.Encode(out[:], sum[:16])
	return string(hns.UpperHex(out[:]))
}

// fingerprintText is the text the fingerprint hashes, byte for byte what
// fmt's "%v|%+v|%d|%v|%v" made of the frontend VIPs, port mapping, LB flags,
// source VIP and sorted backend IDs in the versions that wrote today's
// ledgers (TestFingerprintTextIsTheLedgersFormat), written without fmt:
// every load balancer deleted or proven costs one, and fmt's reflection was
// a tenth of an agent's CPU per EndpointSlice event.
func fingerprintText(b []byte, lb hns.LoadBalancer, ids []string) []byte {
	b = append(b, '[')
	for i, vip := range lb.FrontendVIPs {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendAddr(b, vip)
	}
	pm := lb.PortMapping
	// The port mapping as %+v prints a struct, then the LB flags.
	for _, f := range [...]struct {
		before string
		v      uint64
	}{
		{"]|{Protocol:", uint64(pm.Protocol)}, {" InternalPort:", uint64(pm.InternalPort)},
		{" ExternalPort:", uint64(pm.ExternalPort)}, {" DistributionType:", uint64(pm.DistributionType)},
		{" Flags:", uint64(pm.Flags)}, {"}|", uint64(lb.Flags)},
	} {
		b = append(b, f.before...)
		b = strconv.AppendUint(b, f.v, 10)
	}
	b = append(b, '|')
	b = appendAddr(b, lb.SourceVIP)
	b = append(b, "|["...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, id...)
	}
	return append(b, ']')
}

// appendAddr appends ip as fmt's %v does: its String, "invalid IP" for the
// zero Addr.
func appendAddr(b []byte, ip netip.Addr) []byte {
	if !ip.IsValid() {
		return append(b, "invalid IP"...)
	}
	return ip.AppendTo(b)
}
