package archive

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestExportRemovesStaleTemps: the next export to the same file removes
// the temporary files earlier interrupted exports left, when provably
// stale, and keeps the others.
func TestExportRemovesStaleTemps(t *testing.T) {
	mem := memWith(t)
	if err := mem.Mkdir("/out", 0o755); err != nil {
		t.Fatal(err)
	}
	stem := "/out/" + tempStem("a.tar")
	dead := stem + "p" + strconv.Itoa(deadPID) + "-0123456789ab"
	ours := ownedName(stem, "0123456789ab")
	live := stem + "p1-0123456789ab"
	legacy := stem + "0123456789ab"
	other := "/out/" + tempStem("b.tar") + "p" + strconv.Itoa(deadPID) + "-0123456789ab"
	for _, f := range []string{dead, ours, live, legacy, other} {
		mustWrite(t, mem, f, "half an archive")
	}
	if _, err := ExportFile(mem, "/src", "/out/a.tar", ExportConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		gone bool
	}{{dead, true}, {ours, true}, {live, false}, {legacy, false}, {other, false}} {
		if _, err := mem.Stat(c.name); (err != nil) != c.gone {
			t.Errorf("%s: removed = %v, want %v", c.name, err != nil, c.gone)
		}
	}
}

// TestCanceledLeavesNothing: an export or import whose context is done
// stops and removes its temporary file or staging folder.
func TestCanceledLeavesNothing(t *testing.T) {
	mem := memWith(t)
	archive := exportBytes(t, mem, "/src", ExportConfig{})
	if err := mem.Mkdir("/out", 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ExportFile(mem, "/src", "/out/a.tar", ExportConfig{Context: ctx}); err == nil {
		t.Error("a canceled export succeeded")
	}
	if _, err := importBytes(mem, archive, "/out/agent", ImportConfig{Context: ctx}); err == nil {
		t.Error("a canceled import succeeded")
	}
	if names := entriesOf(t, mem, "/out"); len(names) != 0 {
		t.Errorf("canceled export and import left %v", names)
	}
}

func TestStaleOwned(t *testing.T) {
	const stem = ".tmp-a.tar-"
	for _, c := range []struct {
		base string
		want bool
	}{
		{stem + "p" + strconv.Itoa(deadPID) + "-0123456789ab", true},
		{stem + "p1-0123456789ab", false},                               // PID 1 runs
		{stem + "0123456789ab", false},                                  // no PID
		{stem + "p" + strconv.Itoa(deadPID) + "-0123456789ab-x", false}, // longer
		{stem + "p0" + strconv.Itoa(deadPID) + "-0123456789ab", false},  // not canonical
		{stem + "p" + strconv.Itoa(deadPID) + "-0123456789AB", false},   // not lowercase hex
		{strings.TrimSuffix(stem, "-") + "p" + strconv.Itoa(deadPID) + "-0123456789ab", false},
	} {
		if got := staleOwned(c.base, stem, "/x/"+c.base); got != c.want {
			t.Errorf("staleOwned(%q) = %v, want %v", c.base, got, c.want)
		}
	}
}
