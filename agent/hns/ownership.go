package hns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// EndpointNamePrefix marks the endpoints winproxy creates, visible in HNS.
const EndpointNamePrefix = "winproxy-"

// OwnedEndpointName is the name winproxy gives an endpoint it creates for ip.
func OwnedEndpointName(ip netip.Addr) string { return EndpointNamePrefix + ip.String() }

// HasOwnedName reports whether ep carries winproxy's name prefix.
func HasOwnedName(ep Endpoint) bool { return strings.HasPrefix(ep.Name, EndpointNamePrefix) }

// ObjectKind distinguishes the object types in the Ledger.
type ObjectKind byte

const (
	KindLoadBalancer ObjectKind = 'L'
	KindEndpoint     ObjectKind = 'E'
	// kindIntent entries are not objects but load balancers about to be
	// created, by content key: they prove a create whose ID a kill kept
	// from being recorded was ours.
	kindIntent ObjectKind = 'I'
)

var ledgerKinds = []ObjectKind{KindLoadBalancer, KindEndpoint, kindIntent}

// Ledger records the IDs of the HNS objects winproxy created.
//
// It is an append-only journal ("+L <id>" / "-L <id>" lines) rather than a
// rewritten snapshot, so recording one of thousands of objects costs one
// small append, not a rewrite of the whole set. Opening compacts the journal
// (temp file + rename), keeping pending intents ("+I <key>"). A line torn by
// a kill is ignored, and so is a line of a kind this version does not know.
// No fsync: HNS load balancers do not survive a reboot either, and a plain
// process kill loses nothing already written.
//
// IDs are compared case-insensitively (HNS GUIDs appear in both cases).
type Ledger struct {
	mu   sync.Mutex
	path string
	f    *os.File
	ids  map[ObjectKind]map[string]struct{}
}

// OpenLedger loads (or creates) the ledger at path. An empty path gives an
// in-memory ledger, for tests.
func OpenLedger(path string) (*Ledger, error) {
	l := &Ledger{path: path, ids: map[ObjectKind]map[string]struct{}{
		KindLoadBalancer: {}, KindEndpoint: {}, kindIntent: {},
	}}
	if path == "" {
		return l, nil
	}
	if err := l.load(); err != nil {
		return nil, err
	}
	if err := l.compact(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l.f = f
	return l, nil
}

func (l *Ledger) load() error {
	b, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	// The text after the last newline is a line torn by a kill: drop it.
	for _, line := range lines[:len(lines)-1] {
		op, k, id, ok := parseLedgerLine(line)
		if !ok {
			continue // foreign line
		}
		if op == '+' {
			l.ids[k][normID(id)] = struct{}{}
		} else {
			delete(l.ids[k], normID(id))
		}
	}
	return nil
}

func parseLedgerLine(s string) (op byte, k ObjectKind, id string, ok bool) {
	if len(s) < 4 || (s[0] != '+' && s[0] != '-') || s[2] != ' ' {
		return 0, 0, "", false
	}
	k = ObjectKind(s[1])
	if !slices.Contains(ledgerKinds, k) {
		return 0, 0, "", false
	}
	id = strings.TrimSpace(s[3:])
	if id == "" || strings.ContainsAny(id, " \t") {
		return 0, 0, "", false
	}
	return s[0], k, id, true
}

func (l *Ledger) compact() error {
	var b strings.Builder
	for _, k := range ledgerKinds {
		for _, id := range l.sorted(k) {
			fmt.Fprintf(&b, "+%c %s\n", k, id)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(l.path), filepath.Base(l.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	_, werr := tmp.WriteString(b.String())
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("ledger: %w", err)
	}
	if err := os.Rename(tmp.Name(), l.path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

func (l *Ledger) sorted(k ObjectKind) []string {
	out := make([]string, 0, len(l.ids[k]))
	for id := range l.ids[k] {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func normID(id string) string { return strings.ToUpper(strings.TrimSpace(id)) }

// Owns reports whether id of kind k was created (or adopted) by winproxy.
// It is called for every listed object on every sync, so it looks id up as
// it is first: stored IDs are normalised, and HNS returns them that way,
// which spares normID's scan (and its copy when id is in lower case).
func (l *Ledger) Owns(k ObjectKind, id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := l.ids[k]
	if _, ok := ids[id]; ok {
		return true
	}
	n := normID(id)
	if n == id {
		return false
	}
	_, ok := ids[n]
	return ok
}

// IDs lists the owned IDs of kind k, sorted.
func (l *Ledger) IDs(k ObjectKind) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sorted(k)
}

// Record marks id as owned.
func (l *Ledger) Record(k ObjectKind, id string) error { return l.change(entry{'+', k, id}) }

// Forget removes id (after it was deleted).
func (l *Ledger) Forget(k ObjectKind, id string) error { return l.change(entry{'-', k, id}) }

// entry is one journal line.
type entry struct {
	op byte
	k  ObjectKind
	id string
}

// change applies entries with one append, so that a kill keeps all of them
// or none (a torn last line is ignored). Entries that change nothing are
// not written.
func (l *Ledger) change(es ...entry) error {
	for i := range es {
		es[i].id = normID(es[i].id)
		if id := es[i].id; id == "" || strings.ContainsAny(id, " \t\n") {
			return fmt.Errorf("ledger: invalid id %q", id)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var b []byte
	for _, e := range es {
		if _, had := l.ids[e.k][e.id]; (e.op == '+') != had {
			b = fmt.Appendf(b, "%c%c %s\n", e.op, e.k, e.id)
		}
	}
	if len(b) == 0 {
		return nil // no change, no write
	}
	if l.f != nil {
		if _, err := l.f.Write(b); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
	}
	for _, e := range es {
		if e.op == '+' {
			l.ids[e.k][e.id] = struct{}{}
		} else {
			delete(l.ids[e.k], e.id)
		}
	}
	return nil
}

// Close closes the journal file.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Owned is a Client that enforces ownership: creates are recorded in the
// ledger (and endpoints get the winproxy- name prefix), and deletes or
// modifies of objects not in the ledger fail with ErrNotOwned without
// reaching HNS. Reads pass through untouched.
type Owned struct {
	Client
	Ledger *Ledger
}

// NewOwned wraps c with ownership enforcement backed by l.
func NewOwned(c Client, l *Ledger) *Owned { return &Owned{Client: c, Ledger: l} }

var _ Client = (*Owned)(nil)

// OwnsLoadBalancer reports whether winproxy created the LB.
func (o *Owned) OwnsLoadBalancer(id string) bool { return o.Ledger.Owns(KindLoadBalancer, id) }

// OwnsEndpoint reports whether winproxy created ep: recorded in the ledger,
// or (ledger lost) named with the winproxy prefix.
func (o *Owned) OwnsEndpoint(ep Endpoint) bool {
	return o.Ledger.Owns(KindEndpoint, ep.ID) || HasOwnedName(ep)
}

// Adopt records an existing object as winproxy's, e.g. an endpoint found by
// its winproxy- name after the ledger was lost. It makes no HNS call.
func (o *Owned) Adopt(k ObjectKind, id string) error { return o.Ledger.Record(k, id) }

// CreateEndpoint names the endpoint winproxy-<first IP> unless it already
// carries the prefix, creates it and records it.
func (o *Owned) CreateEndpoint(ctx context.Context, networkID string, ep Endpoint) (Endpoint, error) {
	if !HasOwnedName(ep) {
		suffix := ep.Name
		if suffix == "" && len(ep.IPs) > 0 {
			suffix = ep.IPs[0].String()
		}
		ep.Name = EndpointNamePrefix + suffix
	}
	created, err := o.Client.CreateEndpoint(ctx, networkID, ep)
	if err != nil {
		return created, err
	}
	return created, o.Ledger.Record(KindEndpoint, created.ID)
}

// DeleteEndpoint deletes an owned endpoint. A not-found answer also drops
// it from the ledger: it is gone either way.
func (o *Owned) DeleteEndpoint(ctx context.Context, id string) error {
	if !o.Ledger.Owns(KindEndpoint, id) {
		return &Error{Op: "DeleteEndpoint", ID: id, Kind: ErrNotOwned}
	}
	err := o.Client.DeleteEndpoint(ctx, id)
	if err == nil || IsNotFound(err) {
		if ferr := o.Ledger.Forget(KindEndpoint, id); ferr != nil {
			return errors.Join(err, ferr)
		}
	}
	return err
}

// CreateLoadBalancer creates and records an LB. An intent is recorded
// first: should the process be killed before the ID is, AdoptCreated can
// still tell the LB from a stranger's, which HNS offers no tag for.
func (o *Owned) CreateLoadBalancer(ctx context.Context, lb LoadBalancer) (LoadBalancer, error) {
	intent := intentKey(lb)
	if err := o.Ledger.change(entry{'+', kindIntent, intent}); err != nil {
		return LoadBalancer{}, err
	}
	created, err := o.Client.CreateLoadBalancer(ctx, lb)
	if err != nil {
		if ferr := o.Ledger.change(entry{'-', kindIntent, intent}); ferr != nil {
			return created, errors.Join(err, ferr)
		}
		return created, err
	}
	return created, o.Ledger.change(entry{'+', KindLoadBalancer, created.ID}, entry{'-', kindIntent, intent})
}

// AdoptCreated settles the intents a killed process left: a listed LB not
// in the ledger whose content matches one was created by winproxy and is
// recorded; the other intents were never carried out and are dropped. An
// unrecorded LB matching no intent stays foreign, however closely it
// resembles one winproxy wants. It makes no HNS call, and does nothing
// (not even hash) when no intent is pending, as on every sync but the
// first after a kill.
func (o *Owned) AdoptCreated(listed []LoadBalancer) (adopted int, err error) {
	l := o.Ledger
	l.mu.Lock()
	pending := len(l.ids[kindIntent])
	l.mu.Unlock()
	if pending == 0 {
		return 0, nil
	}
	for _, lb := range listed {
		if o.OwnsLoadBalancer(lb.ID) {
			continue
		}
		intent := intentKey(lb)
		if !l.Owns(kindIntent, intent) {
			continue
		}
		if err := l.change(entry{'+', KindLoadBalancer, lb.ID}, entry{'-', kindIntent, intent}); err != nil {
			return adopted, err
		}
		adopted++
	}
	for _, intent := range l.IDs(kindIntent) {
		if err := l.Forget(kindIntent, intent); err != nil {
			return adopted, err
		}
	}
	return adopted, nil
}

// intentKey identifies an LB by everything winproxy compares, the ID
// excepted: a hash, so that an LB of many backends is one short line.
func intentKey(lb LoadBalancer) string {
	ids := make([]string, len(lb.BackendEndpointIDs))
	for i, id := range lb.BackendEndpointIDs {
		ids[i] = normID(id) // HNS keeps neither case nor, everywhere, order
	}
	slices.Sort(ids)
	sum := sha256.Sum256(fmt.Appendf(nil, "%v|%+v|%d|%v|%v", lb.FrontendVIPs, lb.PortMapping, lb.Flags, lb.SourceVIP, ids))
	return strings.ToUpper(hex.EncodeToString(sum[:16]))
}

// ModifyLoadBalancer modifies an owned LB only.
func (o *Owned) ModifyLoadBalancer(ctx context.Context, id string, lb LoadBalancer) (LoadBalancer, error) {
	if !o.Ledger.Owns(KindLoadBalancer, id) {
		return LoadBalancer{}, &Error{Op: "ModifyLoadBalancer", ID: id, Kind: ErrNotOwned}
	}
	return o.Client.ModifyLoadBalancer(ctx, id, lb)
}

// DeleteLoadBalancer deletes an owned LB; not-found drops it from the ledger.
func (o *Owned) DeleteLoadBalancer(ctx context.Context, id string) error {
	if !o.Ledger.Owns(KindLoadBalancer, id) {
		return &Error{Op: "DeleteLoadBalancer", ID: id, Kind: ErrNotOwned}
	}
	err := o.Client.DeleteLoadBalancer(ctx, id)
	if err == nil || IsNotFound(err) {
		if ferr := o.Ledger.Forget(KindLoadBalancer, id); ferr != nil {
			return errors.Join(err, ferr)
		}
	}
	return err
}
