package node

import (
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/google/go-cmp/cmp"
)

// TestSnapAhead: a parse started ahead is what parseSnapshot returns for
// its digest (also to callers that arrive while it runs), a later start
// replaces it, another digest is parsed on the spot, and bytes that do not
// parse give the error ParseSnapshot gives.
func TestSnapAhead(t *testing.T) {
	snap := &capsule.Snapshot{Version: capsule.SnapshotVersion, Entries: []capsule.Entry{
		{Path: "a.txt", Type: capsule.TypeFile, Size: 1, Blob: digest.FromBytes([]byte("a"))},
	}}
	b, err := snap.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	d := digest.FromBytes(b)
	var p snapAhead
	if s, err := p.parsed(d); s != nil || err != nil {
		t.Fatalf("nothing started: %v, %v", s, err)
	}
	p.start(d, b)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := p.parsed(d)
			if err != nil || s == nil {
				t.Errorf("parsed ahead: %v, %v", s, err)
				return
			}
			if diff := cmp.Diff(snap, s); diff != "" {
				t.Errorf("parsed ahead (-want +got):\n%s", diff)
			}
		}()
	}
	wg.Wait()
	if s, _ := p.parsed(digest.FromBytes([]byte("other"))); s != nil {
		t.Fatal("a parse ahead of another digest was returned")
	}
	bad := []byte(`{"version": 1, "entries": [{"path":"../x","type":"dir"}]}`)
	p.start(digest.FromBytes(bad), bad)
	if s, _ := p.parsed(d); s != nil {
		t.Fatal("a replaced parse ahead was returned")
	}
	_, want := capsule.ParseSnapshot(bad)
	if _, err := p.parsed(digest.FromBytes(bad)); err == nil || err.Error() != want.Error() {
		t.Fatalf("bad snapshot parsed ahead: %v, want %v", err, want)
	}
}
