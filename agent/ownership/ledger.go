package ownership

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/winproxy/winproxy/agent/hns"
)

// Journal line kinds.
const (
	lineLoadBalancer byte = 'L'
	// lineIntent entries are not objects but load balancers about to be
	// created, by fingerprint: they prove a create whose ID a kill kept
	// from being recorded was ours.
	lineIntent byte = 'I'
)

// Compaction bounds: the journal is rewritten once it holds more than
// compactFactor lines per live entry, and never below minCompactLines, so
// that a small ledger is not rewritten for every few changes.
const (
	compactFactor   = 2
	minCompactLines = 512
)

// fingerprintLen is the length of a fingerprint in the journal (hex).
const fingerprintLen = 32

// errLedgerClosed is returned by writes after Close.
var errLedgerClosed = errors.New("ledger: closed")

// Ledger records the load balancers winproxy created or adopted, each with
// the fingerprints of the contents it may hold (see fingerprint): the
// content the agent created or last wrote. An entry alone proves nothing;
// Owned checks the fingerprint against the LB as HNS lists it.
//
// It is an append-only journal rather than a rewritten snapshot, so that
// recording one of thousands of objects costs one small append:
//
//	+L <id> <fingerprint>...  the LB may hold any of these contents
//	-L <id>                   the LB is no longer winproxy's (deleted, gone, disowned)
//	+I <fingerprint>          an LB with this content is about to be created
//	-I <fingerprint>          that create is settled
//
// A "+L <id>" without fingerprint is an entry of an earlier version: read,
// and proven by nothing until the applier finds the LB identical to one it
// wants (and records its fingerprint). Versions before fingerprints skip
// the lines that carry one, so after a downgrade they own no LB and
// replace each one once (docs/design/dataplane.md#foreign-load-balancers).
// A line torn by a kill is ignored, and so is a line of a kind this version
// does not know. No fsync: HNS load balancers do not survive a reboot
// either, and a plain process kill loses nothing already written.
//
// The journal is compacted (temp file + rename) when opened and whenever it
// holds more than twice as many lines as live entries; Settle drops the
// entries of LBs HNS no longer lists. IDs are compared case-insensitively
// (HNS GUIDs appear in both cases).
//
// A full disk never stops the agent: kube-proxy keeps no file, so a disk
// cannot keep it from programming HNS, and winproxy must not be worse. The
// journal reserves its space ahead (ledger_disk.go), so that its appends
// need no new blocks until the next compaction; should a write fail all the
// same, the ledger goes on in memory, says so (Status), and rewrites the
// journal whole once a write works again (Flush).
type Ledger struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	closed  bool
	lbs     map[string][]string // LB ID -> fingerprints
	intents map[string]struct{}
	// lines counts the journal's lines; retryAt delays the next compaction
	// after one failed (the journal stays valid without it).
	lines, retryAt int
	// line is the buffer an event's few lines are written from, kept between changes: built
	// anew, the lines of an event's writes were a tenth of what the agent allocates an event.
	line []byte
	// held are the lines of load balancers HNS deleted (forgetDeleted), heldN how many: applied
	// in memory and written with the journal's next append, so that an event's delete and the
	// create replacing it cost the intent's write, not one more.
	held  []byte
	heldN int
	disk
}

// LedgerOption configures OpenLedger.
type LedgerOption func(*Ledger)

// WithWriteFault makes every write to the journal ask fault first and fail
// with its error: the simulated host's full disk (sim.Weather.DiskFull).
func WithWriteFault(fault func() error) LedgerOption {
	return func(l *Ledger) { l.fault = fault }
}

// OpenLedger loads (or creates) the ledger at path and compacts it. A
// journal that cannot be read is an error: without it the agent cannot
// tell its load balancers from others'. One that cannot be written is not:
// the ledger starts in memory and Status says why. An empty path gives an
// in-memory ledger, for tests.
func OpenLedger(path string, opts ...LedgerOption) (*Ledger, error) {
	l := &Ledger{path: path, lbs: map[string][]string{}, intents: map[string]struct{}{}}
	for _, o := range opts {
		o(l)
	}
	if path == "" {
		return l, nil
	}
	torn, err := l.load()
	if err != nil {
		return nil, err
	}
	if err := l.compact(); err != nil && torn {
		// The journal ends in a line a kill tore: an append would run into
		// it, so nothing is appended before a compaction removed it.
		l.fellBehind(err, l.live())
	}
	return l, nil
}

// ReadLedger reads the ledger at path without changing it, for tools that
// only look (winproxy-agent hns dump) while an agent may be appending to
// it: OpenLedger's compaction would rename a new file over the one the agent
// writes, and the agent's next appends would be lost. The result is in
// memory only; a missing file reads as an empty ledger.
func ReadLedger(path string) (*Ledger, error) {
	l := &Ledger{path: path, lbs: map[string][]string{}, intents: map[string]struct{}{}}
	if _, err := l.load(); err != nil {
		return nil, err
	}
	l.path = ""
	return l, nil
}

// load reads the journal, and reports whether its last line is torn.
func (l *Ledger) load() (torn bool, err error) {
	b, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ledger: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	// The text after the last newline is a line torn by a kill: drop it.
	for _, line := range lines[:len(lines)-1] {
		if e, ok := parseLedgerLine(line); ok {
			l.apply(e)
		}
	}
	return lines[len(lines)-1] != "", nil
}

// entry is one journal line.
type entry struct {
	op     byte // '+' or '-'
	kind   byte // lineLoadBalancer or lineIntent
	id     string
	proofs []string // lineLoadBalancer '+' only
}

func parseLedgerLine(s string) (entry, bool) {
	if len(s) < 4 || (s[0] != '+' && s[0] != '-') || s[2] != ' ' {
		return entry{}, false
	}
	e := entry{op: s[0], kind: s[1]}
	fields := strings.Fields(s[3:])
	if len(fields) == 0 {
		return entry{}, false
	}
	e.id = normID(fields[0])
	switch e.kind {
	case lineLoadBalancer:
		if e.op == '+' {
			e.proofs = fields[1:]
		}
		for i, p := range e.proofs {
			if e.proofs[i] = strings.ToUpper(p); len(p) != fingerprintLen {
				return entry{}, false
			}
		}
	case lineIntent:
		if len(fields) != 1 {
			return entry{}, false
		}
	default: // endpoint lines of earlier versions (the winproxy- name proves an endpoint now, see EndpointNamePrefix), or a kind of a later version
		return entry{}, false
	}
	return e, true
}

// format renders e as a journal line.
func (e entry) format(b []byte) []byte {
	b = append(b, e.op, e.kind, ' ')
	b = append(b, e.id...)
	for _, p := range e.proofs {
		b = append(b, ' ')
		b = append(b, p...)
	}
	return append(b, '\n')
}

// apply changes the in-memory state as e says.
func (l *Ledger) apply(e entry) {
	switch {
	case e.kind == lineIntent && e.op == '+':
		l.intents[e.id] = struct{}{}
	case e.kind == lineIntent:
		delete(l.intents, e.id)
	case e.op == '+':
		l.lbs[e.id] = slices.Clone(e.proofs)
	default:
		delete(l.lbs, e.id)
	}
}

// changes reports whether e would change the in-memory state.
func (l *Ledger) changes(e entry) bool {
	if e.kind == lineIntent {
		_, had := l.intents[e.id]
		return (e.op == '+') != had
	}
	proofs, had := l.lbs[e.id]
	if e.op == '-' {
		return had
	}
	return !had || !slices.Equal(proofs, e.proofs)
}

// change applies entries with one append, so that a kill keeps all of them
// or none (a torn last line is ignored), after the lines held since the last
// append. Entries that change nothing are not written. The journal is
// compacted once it has grown enough.
func (l *Ledger) change(es ...entry) error {
	return l.changeHolding(false, es...)
}

// changeHolding is change; with hold, the entries' lines are held for the
// next append instead of written now.
func (l *Ledger) changeHolding(hold bool, es ...entry) error {
	for i := range es {
		es[i].id = normID(es[i].id)
		if id := es[i].id; id == "" || strings.ContainsAny(id, " \t\n") {
			return fmt.Errorf("ledger: invalid id %q", id)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errLedgerClosed
	}
	b := append(l.line[:0], l.held...)
	n := l.heldN
	for _, e := range es {
		if l.changes(e) {
			b = e.format(b)
			n++
		}
	}
	if n == l.heldN {
		return nil // no change, no write
	}
	for _, e := range es {
		l.apply(e)
	}
	switch {
	case l.path == "":
	case hold:
		l.held, l.heldN = append(l.held[:0], b...), n
	default:
		l.writeHeld(b, n)
	}
	if cap(b) <= keptLineBuffer {
		l.line = b
	}
	return nil
}

// writeHeld writes n changes, rendered as b, which starts with the held
// lines, and holds none any more.
func (l *Ledger) writeHeld(b []byte, n int) {
	l.held, l.heldN = l.held[:0], 0
	l.persist(b, n) // written, not kept
}

// keptLineBuffer bounds the line buffer the ledger keeps: an event's lines fit, a first sync's
// thousands are not held after it.
const keptLineBuffer = 16 * lineBytes

func (l *Ledger) live() int { return len(l.lbs) + len(l.intents) }

// snapshot renders the live entries, one line each: a compacted journal.
func (l *Ledger) snapshot() []byte {
	// Sized first: at 10k Services the text is 1.5 MB, which growing by appends copied twice over
	// (a quarter of a compaction's CPU).
	n := 0
	for id, proofs := range l.lbs {
		n += len("+L \n") + len(id)
		for _, p := range proofs {
			n += 1 + len(p)
		}
	}
	for id := range l.intents {
		n += len("+I \n") + len(id)
	}
	b := make([]byte, 0, n)
	for _, id := range sortedKeys(l.lbs) {
		b = entry{op: '+', kind: lineLoadBalancer, id: id, proofs: l.lbs[id]}.format(b)
	}
	for _, id := range sortedKeys(l.intents) {
		b = entry{op: '+', kind: lineIntent, id: id}.format(b)
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func normID(id string) string { return string(hns.IDOf(strings.TrimSpace(id))) }

// lookup finds id's entry. It is called for listed objects on every sync,
// so it looks id up as it is first: stored IDs are normalised, and HNS
// returns them that way, which spares normID's scan (and its copy when id
// is in lower case).
func (l *Ledger) lookup(id string) ([]string, bool) {
	if proofs, ok := l.lbs[id]; ok {
		return proofs, true
	}
	if n := normID(id); n != id {
		proofs, ok := l.lbs[n]
		return proofs, ok
	}
	return nil, false
}

// Has reports whether the LB id is recorded, proven or not.
func (l *Ledger) Has(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.lookup(id)
	return ok
}

// proves reports whether lb, as listed, is recorded with the fingerprint
// of its content. An unrecorded LB is not hashed.
func (l *Ledger) proves(lb hns.LoadBalancer) bool {
	l.mu.Lock()
	proofs, _ := l.lookup(lb.ID)
	l.mu.Unlock()
	// Entries are replaced, never changed in place: proofs stays valid.
	return len(proofs) > 0 && slices.Contains(proofs, fingerprint(lb))
}

// recordedWith reports whether the LB id is recorded with fingerprint p.
func (l *Ledger) recordedWith(id, p string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	proofs, _ := l.lookup(id)
	return slices.Contains(proofs, p)
}

// IDs lists the recorded LB IDs, sorted.
func (l *Ledger) IDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return sortedKeys(l.lbs)
}

// Forget drops the LB id.
func (l *Ledger) Forget(id string) error {
	return l.change(entry{op: '-', kind: lineLoadBalancer, id: id})
}

// forgetDeleted drops the LB id, which HNS deleted, and holds its line for
// the journal's next append (a change, or Flush at the end of every sync).
// A kill before it leaves the entry in the journal, which is harmless: HNS
// never lists the ID again, and the next list drops it (Settle).
func (l *Ledger) forgetDeleted(id string) error {
	return l.changeHolding(true, entry{op: '-', kind: lineLoadBalancer, id: id})
}

func (l *Ledger) pendingIntents() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.intents) > 0
}

func (l *Ledger) hasIntent(p string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.intents[p]
	return ok
}

func (l *Ledger) dropIntents() error {
	l.mu.Lock()
	es := make([]entry, 0, len(l.intents))
	for _, p := range sortedKeys(l.intents) {
		es = append(es, entry{op: '-', kind: lineIntent, id: p})
	}
	l.mu.Unlock()
	return l.change(es...)
}

// forgetUnlisted drops the entries of LBs missing from listed, a full list
// of the host's. Counting the recorded LBs listed first keeps the usual
// case, where none is missing, free of allocations.
func (l *Ledger) forgetUnlisted(listed []hns.LoadBalancer) error {
	l.mu.Lock()
	recorded := 0
	for i := range listed {
		if _, ok := l.lookup(listed[i].ID); ok {
			recorded++
		}
	}
	if recorded == len(l.lbs) {
		l.mu.Unlock()
		return nil
	}
	on := make(map[string]bool, len(listed))
	for i := range listed {
		on[normID(listed[i].ID)] = true
	}
	var gone []entry
	for _, id := range sortedKeys(l.lbs) {
		if !on[id] {
			gone = append(gone, entry{op: '-', kind: lineLoadBalancer, id: id})
		}
	}
	l.mu.Unlock()
	return l.change(gone...)
}

// Close closes the journal file; later writes fail.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	switch {
	case l.path == "":
	case l.unsaved > 0:
		_ = l.compact() // a last chance to write what memory holds
	case l.heldN > 0:
		l.writeHeld(l.held, l.heldN)
	}
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
