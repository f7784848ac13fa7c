package apply

// briefList is the model's briefs in chunks of briefChunk. Appending never
// moves what it holds: one slice of the hundred thousand briefs of a 10k
// services node, grown by the endpoint an event creates, would be copied
// whole (5 MB) each time it is full, and keep up to a quarter of its room
// unused. A brief keeps its place until the list is compacted. The zero
// value is an empty list.
type briefList struct {
	// chunks each have room for briefChunk briefs; all but the last are
	// full.
	chunks [][]brief
	n      int
}

// briefChunk is how many briefs a chunk holds: 192 KiB of them.
const briefChunk = 4096

func (l *briefList) len() int { return l.n }

// at is the brief in place i.
func (l *briefList) at(i int) *brief { return &l.chunks[i/briefChunk][i%briefChunk] }

// add appends b and returns its place.
func (l *briefList) add(b brief) int {
	if l.n%briefChunk == 0 {
		l.chunks = append(l.chunks, make([]brief, 0, briefChunk))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, b)
	l.n++
	return l.n - 1
}

// deleteFunc removes the briefs del reports, keeping the others in order,
// and lets go of the chunks left empty. It returns the places removed, in
// order, for the index to follow (briefIndex.removed).
func (l *briefList) deleteFunc(del func(brief) bool) (gone []int32) {
	kept := 0
	for i := range l.n {
		b := *l.at(i)
		if del(b) {
			gone = append(gone, int32(i))
			continue
		}
		*l.at(kept) = b
		kept++
	}
	full := kept / briefChunk
	if rest := kept % briefChunk; rest > 0 {
		clear(l.chunks[full][rest:])
		l.chunks[full] = l.chunks[full][:rest]
		full++
	}
	clear(l.chunks[full:])
	l.chunks, l.n = l.chunks[:full], kept
	return gone
}
