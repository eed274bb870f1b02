package archive

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
	"github.com/google/go-cmp/cmp"
)

// A small file fails to be created on the writer goroutine while the
// extractor reads on: the import fails with that error, not with a later
// entry's, and leaves nothing behind (FORMAT §9.4). The entries after the
// failing one include a refused one, which the serial extractor never
// reached.
func TestImportReportsQueuedWriteFailure(t *testing.T) {
	var entries []tarEntry
	for i := range 20 {
		body := fmt.Sprint("blob ", i)
		entries = append(entries, file(blobsDir+"/"+digest.FromString(body).Hex(), body))
	}
	// In the archive's order (FORMAT §8.1), so that no look at the folder
	// waits for the writer.
	sort.Slice(entries, func(i, j int) bool { return entries[i].hdr.Name < entries[j].hdr.Name })
	failing := entries[3].hdr.Name
	entries = append(entries, file("memory/not-in-the-layout", "x"))
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/dst", 0o755); err != nil {
		t.Fatal(err)
	}
	before := vfstest.Snapshot(t, mem, "/")
	fsys := vfs.NewFaulty(mem)
	rule := fsys.Fail(vfs.OpCreate, "/dst/"+StagingPrefix+"*/"+failing, vfs.ErrNoSpace)
	fsys.OnOp(func(rec vfs.OpRecord) error { // let the reader run ahead to the refused entry
		if rec.Op == vfs.OpCreate && strings.Contains(rec.Path, "/"+blobsDir+"/") {
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	})
	accept := func(vfs.FS, string) ([]Problem, error) { return nil, nil }
	_, err := Import(fsys, tarCase(entries...)(t), "/dst/agent", ImportConfig{Verify: accept})
	if rule.Hits() != 1 {
		t.Fatalf("the create of %s failed %d times, want once", failing, rule.Hits())
	}
	if !errors.Is(err, vfs.ErrNoSpace) || !strings.Contains(err.Error(), "create "+failing) {
		t.Fatalf("err = %v, want ENOSPC naming %s", err, failing)
	}
	if diff := cmp.Diff(before, vfstest.Snapshot(t, mem, "/")); diff != "" {
		t.Errorf("the failed import left changes (-before +after):\n%s", diff)
	}
}
