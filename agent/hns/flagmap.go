package hns

// The Windows adapter maps this package's flags and enumerations to hcsshim's name by name
// (hcn_consts_windows.go); the mapping itself is here, where it is tested on every platform.

// pair is one of this package's values and hcsshim's of the same name.
type pair[O, T ~uint32] struct {
	ours   O
	theirs T
}

// flagsTo maps each named bit of f to its counterpart; other bits pass as they are.
func flagsTo[F, T ~uint32](f F, pairs []pair[F, T], to func(pair[F, T]) (F, T)) T {
	var out T
	for _, p := range pairs {
		if from, into := to(p); f&from != 0 {
			out |= into
			f &^= from
		}
	}
	return out | T(f)
}

// valueTo maps v to its counterpart; a value without one passes as it is.
func valueTo[F, T ~uint32](v F, pairs []pair[F, T], to func(pair[F, T]) (F, T)) T {
	for _, p := range pairs {
		if from, into := to(p); v == from {
			return into
		}
	}
	return T(v)
}

// forward reads a pair the way it is written.
func forward[O, T ~uint32](p pair[O, T]) (O, T) { return p.ours, p.theirs }

// swapped turns pairs around, for the way back from hcsshim.
func swapped[O, T ~uint32](pairs []pair[O, T]) []pair[T, O] {
	out := make([]pair[T, O], len(pairs))
	for i, p := range pairs {
		out[i] = pair[T, O]{p.theirs, p.ours}
	}
	return out
}
