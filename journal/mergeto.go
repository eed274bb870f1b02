package journal

import (
	"errors"
	"io"
	"iter"
	"slices"
)

// MergeStats counts the events MergeTo read from each journal and wrote.
type MergeStats struct {
	A, B, Out int
}

// errStopped ends a pulled stream early.
var errStopped = errors.New("journal: stream stopped")

// MergeTo writes the merge of two journals to w as they stream by, one
// event per line: the set union by id, in total order, exactly the events
// Merge returns for the same inputs, with the same *ForkError and
// *VerifyError (in which case what w received must be discarded). Each
// input must verify (Scan it first): it is then in total order, which
// MergeTo relies on. Memory stays bounded whatever the journals' length: a
// few batches of each in flight and the chain check's dozen bytes per
// event. A fork is named by reading both journals once more, which is why
// they are io.ReaderAt, of sizeA and sizeB bytes.
func MergeTo(w io.Writer, a, b io.ReaderAt, sizeA, sizeB int64) (MergeStats, error) {
	var st MergeStats
	na, stopA, errA := pull(io.NewSectionReader(a, 0, sizeA))
	defer stopA()
	nb, stopB, errB := pull(io.NewSectionReader(b, 0, sizeB))
	defer stopB()
	ea, oka := na()
	eb, okb := nb()
	heads := map[string]Head{}
	c := newChecker()
	var line []byte
	for oka || okb {
		takeA, takeB := oka, okb
		if oka && okb {
			cmp := Compare(ea, eb)
			takeA, takeB = cmp <= 0, cmp >= 0
		}
		e := eb
		if takeA {
			e = ea
		}
		h, seen := heads[e.Machine]
		switch {
		case seen && e.Seq <= h.Seq && e.ID == h.ID: // repeated within one input
		case seen && e.Seq <= h.Seq:
			return st, forkIn(a, b, sizeA, sizeB, e.Machine, e.Seq)
		default:
			line = append(AppendEncode(line[:0], e), '\n')
			if _, err := w.Write(line); err != nil {
				return st, err
			}
			st.Out++
			c.add(e, st.Out)
			heads[e.Machine] = Head{Seq: e.Seq, ID: e.ID}
		}
		if takeA {
			st.A++
			ea, oka = na()
		}
		if takeB {
			st.B++
			eb, okb = nb()
		}
	}
	if err := errors.Join(*errA, *errB); err != nil {
		return st, err
	}
	if len(c.probs) > 0 {
		return st, &VerifyError{Problems: c.probs}
	}
	return st, nil
}

// pull turns Each into a pull iterator. The event next returns is valid
// until the next call; *err is Each's error once next reports false.
func pull(r io.Reader) (next func() (*Event, bool), stop func(), err *error) {
	var e error
	seq := func(yield func(*Event) bool) {
		e = Each(r, func(ev *Event, _ Pos) error {
			if !yield(ev) {
				return errStopped
			}
			return nil
		})
		if errors.Is(e, errStopped) {
			e = nil
		}
	}
	next, stop = iter.Pull(seq)
	return next, stop, &e
}

// forkIn names the first two different events at (machine, seq), looking
// in a before b, as Merge's error does.
func forkIn(a, b io.ReaderAt, sizeA, sizeB int64, machine string, seq uint64) error {
	var ids []string
	for _, in := range []*io.SectionReader{io.NewSectionReader(a, 0, sizeA), io.NewSectionReader(b, 0, sizeB)} {
		err := Each(in, func(e *Event, _ Pos) error {
			if e.Machine == machine && e.Seq == seq && !slices.Contains(ids, e.ID) {
				ids = append(ids, e.ID)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		return &ForkError{Machine: machine, Seq: seq}
	}
	return &ForkError{Machine: machine, Seq: seq, A: ids[0], B: ids[len(ids)-1]}
}
