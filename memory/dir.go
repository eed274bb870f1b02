package memory

import (
	"bytes"
	"context"
	"fmt"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/vfs"
)

// Rebuild brings the index of the capsule folder dir up to date with e
// and stores it (Open, then Save). On any error, an embedder's included,
// the stored index is left as it was; the Report (which may be non-nil
// beside an error) says what was done and which texts failed.
func Rebuild(ctx context.Context, fsys vfs.FS, dir string, cfg capsule.Config, e Embedder) (*Report, bool, error) {
	x, rep, stored, err := Open(ctx, fsys, dir, e)
	if err != nil {
		return rep, false, err
	}
	wrote, err := Save(fsys, dir, cfg, x, stored)
	return rep, wrote, err
}

// CheckResult compares a folder's stored index with a clean build.
type CheckResult struct {
	// Equal is true when the stored bytes are exactly the clean build's.
	Equal bool `json:"equal"`
	// Problem says how they differ, or why the stored index is unusable.
	Problem string `json:"problem,omitempty"`
	// StoredBytes and CleanBytes are the two sizes.
	StoredBytes int `json:"stored_bytes"`
	CleanBytes  int `json:"clean_bytes"`
	// Chunks is the number of chunks of the clean build.
	Chunks int `json:"chunks"`
}

// Check builds the index of dir from scratch with e, trusting nothing in
// the stored file, and compares the bytes. It writes nothing.
func Check(ctx context.Context, fsys vfs.FS, dir string, e Embedder) (*CheckResult, error) {
	s, err := Load(fsys, dir)
	if err != nil {
		return nil, err
	}
	x, _, err := Build(ctx, s.Corpus, e)
	if err != nil {
		return nil, err
	}
	clean, err := x.Encode()
	if err != nil {
		return nil, err
	}
	r := &CheckResult{StoredBytes: len(s.Bytes), CleanBytes: len(clean), Chunks: x.Len()}
	switch {
	case s.Version != Version:
		r.Problem = fmt.Sprintf("the manifest names memory index version %d; this release writes %d", s.Version, Version)
	case bytes.Equal(s.Bytes, clean):
		r.Equal = true
	case s.Problem != "":
		r.Problem = s.Problem
	default:
		r.Problem = differs(s, x)
	}
	return r, nil
}

// differs says how a decodable stored index differs from the clean build x.
func differs(s *Stored, x *Index) string {
	old := s.Index
	switch {
	case old.fp != x.fp:
		return fmt.Sprintf("built by another embedder (%s %s, the clean build's is %s %s)", old.meta.Name, short(old.fp), x.meta.Name, short(x.fp))
	case !old.wm.Equal(x.wm):
		return fmt.Sprintf("stale: it reflects %d events, the journal holds %d (or the heads or the working memory differ)", old.wm.Events, x.wm.Events)
	case old.live != x.live:
		return fmt.Sprintf("%d chunks, the clean build has %d", old.live, x.live)
	}
	return "the chunks or vectors differ from the clean build's"
}

// Stats describes a folder's stored index.
type Stats struct {
	Embedder    string `json:"embedder"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Dims        int    `json:"dims,omitempty"`
	DType       string `json:"dtype,omitempty"`
	Chunks      int    `json:"chunks"`
	EventChunks int    `json:"event_chunks"`
	WMChunks    int    `json:"working_memory_chunks"`
	Bytes       int    `json:"bytes"`
	Events      int64  `json:"journal_events"`
	Indexed     int64  `json:"indexed_events"`
	// Current is true when the stored index reflects the folder's journal
	// and working memory and was built by the embedder in hand.
	Current bool `json:"current"`
	// Stale says why it is not current.
	Stale string `json:"stale,omitempty"`
}

// StatsOf describes the stored index of dir as e would find it. It writes
// nothing and embeds nothing.
func StatsOf(ctx context.Context, fsys vfs.FS, dir string, e Embedder) (*Stats, error) {
	s, err := Load(fsys, dir)
	if err != nil {
		return nil, err
	}
	st := &Stats{Bytes: len(s.Bytes), Events: s.Corpus.events}
	if s.Index == nil {
		st.Embedder, st.Stale = "none", s.Problem
		return st, nil
	}
	x := s.Index
	st.Embedder, st.Fingerprint, st.Dims, st.DType = x.meta.Name, x.fp, x.meta.Dims, x.meta.DType
	st.Chunks, st.Indexed = x.live, x.wm.Events
	for i := range x.docs {
		if x.docs[i].Event == "" {
			st.WMChunks++
		} else {
			st.EventChunks++
		}
	}
	p, err := assess(x, s.Corpus, e) // what a refresh would do, without embedding
	if err != nil {
		return nil, err
	}
	rep := p.rep
	st.Current = rep.Mode == ModeUnchanged
	if !st.Current {
		st.Stale = rep.Reason
		if st.Stale == "" {
			st.Stale = fmt.Sprintf("the journal or the working memory changed since (%d texts to embed)", rep.Embedded)
		}
	}
	return st, nil
}
