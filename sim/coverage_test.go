package sim

import (
	"fmt"
	"strings"
)

// The failure rows of the fault matrix (docs/PROTOCOL.md, "Fault matrix";
// /work/shared/reference/move-protocol.md section (a)).
const (
	coverReqLost      = "request lost"
	coverReplyLost    = "reply lost"
	coverDupLate      = "duplicate/late"
	coverTargetBefore = "target crash before write"
	coverTargetAfter  = "target crash after write"
	coverSourceCrash  = "source crash"
	coverPartition    = "partition/unreachable"
	coverCorrupt      = "corrupted blob"
	coverTruncated    = "truncated/missing/mismatch"
	coverStale        = "stale epoch"
	coverHolderLost   = "holder record lost"
	coverNoSpace      = "ENOSPC/EIO"
	coverConcurrent   = "concurrent move"
	coverOperator     = "operator start"
)

var matrixRows = []string{coverReqLost, coverReplyLost, coverDupLate, coverTargetBefore, coverTargetAfter,
	coverSourceCrash, coverPartition, coverCorrupt, coverTruncated, coverStale, coverHolderLost,
	coverNoSpace, coverConcurrent, coverOperator}

var matrixCols = []string{"Frz", "Off", "Inv", "Xfr", "Ver", "Prp", "Act", "Res", "Ret", "GC"}

// required lists, per row, the phases the random simulation must reach
// (Antithesis-style "sometimes" assertions). The other cells are either not
// applicable (— in the reference matrix) or merged into a neighbour by this
// design; docs/PROTOCOL.md, "Fault matrix", says which and why.
var required = map[string][]string{
	coverReqLost:      {"Off", "Inv", "Xfr", "Act", "Res", "GC"},
	coverReplyLost:    {"Off", "Inv", "Xfr", "Ver", "Prp", "Act", "Res", "GC"},
	coverDupLate:      {"Off", "Inv", "Xfr", "Prp", "Act", "Res", "GC"},
	coverTargetBefore: {"Off", "Xfr", "Ver", "Prp", "Act", "Res", "GC"},
	coverTargetAfter:  {"Off", "Xfr", "Prp", "Act", "Res", "GC"},
	coverSourceCrash:  {"Frz", "Off", "Inv", "Xfr", "Act", "Res", "Ret", "GC"},
	coverPartition:    {"Off", "Inv", "Xfr", "Act", "Res"},
	coverCorrupt:      {"Xfr", "Ver"},
	coverTruncated:    {"Xfr", "Ver", "Prp"},
	coverStale:        {"Off", "Act", "Res"},
	coverHolderLost:   {"Frz"},
	coverNoSpace:      {"Frz", "Off", "Inv", "Xfr", "Prp", "Act", "Res", "Ret", "GC"},
	coverConcurrent:   {"Off", "Inv", "Xfr", "Prp", "Act"},
	coverOperator:     {"Off", "Xfr", "Act", "Res", "Ret"},
}

// coverage counts how often each (failure, phase) cell was reached.
type coverage map[[2]string]int

func (w *world) cover(row, phase string) { w.cov[[2]string{row, phase}]++ }

func (c coverage) add(o coverage) {
	for k, v := range o {
		c[k] += v
	}
}

// missing lists the required cells never reached.
func (c coverage) missing() []string {
	var out []string
	for _, row := range matrixRows {
		for _, col := range required[row] {
			if c[[2]string{row, col}] == 0 {
				out = append(out, row+" x "+col)
			}
		}
	}
	return out
}

// table renders the counts as the fault matrix ("." = not required and
// not reached; a required cell never reached shows "MISSING").
func (c coverage) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-27s", "failure \\ phase")
	for _, col := range matrixCols {
		fmt.Fprintf(&b, "%8s", col)
	}
	b.WriteString("\n")
	for _, row := range matrixRows {
		fmt.Fprintf(&b, "%-27s", row)
		for _, col := range matrixCols {
			n := c[[2]string{row, col}]
			req := false
			for _, r := range required[row] {
				req = req || r == col
			}
			switch {
			case n > 0:
				fmt.Fprintf(&b, "%8d", n)
			case req:
				fmt.Fprintf(&b, "%8s", "MISSING")
			default:
				fmt.Fprintf(&b, "%8s", ".")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
