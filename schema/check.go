package schema

import (
	"errors"
	"fmt"
)

// Check proves that every kind's chain is complete: each kind of AllKinds
// has a history whose versions are numbered 1, 2, 3… with a summary each,
// whose floor and current version lie within it, whose versions up to the
// current one name the release that first wrote them, and which has an up
// step with a summary for every version from the floor to the newest; a
// down step, where there is one, joins adjacent versions of a known kind.
// It reports every problem, not only the first. The binary calls it at
// start and refuses to run when it fails.
func Check() error {
	var errs []error
	bad := func(k Kind, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrBrokenChain, k, fmt.Sprintf(format, a...)))
	}
	for _, k := range AllKinds() {
		h, ok := registry[k]
		if !ok {
			bad(k, "no history")
			continue
		}
		checkHistory(k, h, bad)
		for v := h.Floor; v < h.Newest(); v++ {
			s, ok := ups[k][v]
			switch {
			case !ok:
				bad(k, "no step from version %d to %d", v, v+1)
			case s.Kind != k || s.From != v || s.To != v+1 || s.Apply == nil || s.Summary == "":
				bad(k, "step from version %d is malformed", v)
			}
		}
	}
	for _, m := range []map[Kind]map[int]Step{ups, downs} {
		for k, byFrom := range m {
			h, ok := registry[k]
			for from, s := range byFrom {
				if !ok || s.Kind != k || s.From != from || abs(s.To-s.From) != 1 || s.Apply == nil || s.Summary == "" ||
					min(s.From, s.To) < 1 || max(s.From, s.To) > h.Newest() {
					bad(k, "stray or malformed step from version %d to %d", s.From, s.To)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func checkHistory(k Kind, h History, bad func(Kind, string, ...any)) {
	if h.Kind != k {
		bad(k, "history names kind %q", h.Kind)
	}
	if h.Where == "" {
		bad(k, "history does not say where the kind is stored")
	}
	for i, v := range h.Versions {
		if v.N != i+1 {
			bad(k, "version %d is numbered %d", i+1, v.N)
		}
		if v.Summary == "" {
			bad(k, "version %d has no summary", v.N)
		}
		if v.N <= h.Current && v.Since == "" {
			bad(k, "version %d is written but names no release", v.N)
		}
		if v.N > h.Current && v.Since != "" {
			bad(k, "version %d names release %s but this release does not write it", v.N, v.Since)
		}
	}
	if h.Floor < 1 || h.Floor > h.Current || h.Current > h.Newest() {
		bad(k, "floor %d, current %d and newest %d are out of order", h.Floor, h.Current, h.Newest())
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
