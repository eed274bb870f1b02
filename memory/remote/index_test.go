package remote_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/memory"
	"github.com/agentcapsule/capsule/memory/remote"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/vfs"
)

// agentDir makes a capsule folder whose journal holds n turns.
func agentDir(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	if _, err := capsule.Init(vfs.OS{}, dir, capsule.InitConfig{}); err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter("m1")
	p := journal.Producer{Provider: "openai", API: "chat", Model: "m"}
	var b []byte
	for i := 0; i < n; i++ {
		for _, ev := range []struct {
			kind journal.Kind
			body any
		}{
			{journal.KindUser, journal.UserMessage{Text: fmt.Sprintf("question %d: where does service %d keep its logs", i, i)}},
			{journal.KindAssistant, journal.AssistantMessage{Text: fmt.Sprintf("service %d writes its logs to /var/log/s%d", i, i), Producer: p}},
		} {
			e, err := w.Next(ev.kind, 0, "", ev.body)
			if err != nil {
				t.Fatal(err)
			}
			b = append(journal.AppendEncode(b, &e), '\n')
		}
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(manifest.JournalPath)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func indexFile(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(manifest.IndexPath)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ISSUE 15 req 6: a capsule's index built by the built-in embedder is
// rebuilt by a remote one through the simulator's endpoint. When that
// endpoint fails halfway through the rebuild, the capsule keeps the old
// index byte for byte; once it answers, the rebuild commits an index that
// equals a clean build with that embedder, and swapping back to the
// built-in embedder gives back the first index's exact bytes.
func TestIndexRebuildThroughAnEndpointThatFailsHalfway(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p), func(t *testing.T) {
			ctx := context.Background()
			dir := agentDir(t, 20)
			cfg := capsule.Config{}
			if _, _, err := memory.Rebuild(ctx, vfs.OS{}, dir, cfg, memory.Hash{}); err != nil {
				t.Fatal(err)
			}
			builtin := indexFile(t, dir)

			s := serve(t, sim.Config{})
			s.SetEmbedFaults(sim.EmbedFaults{Status: 500, FailAfter: 10})
			e := embedder(t, p, s.URL, func(c *remote.Config) { c.Batch = 4 })
			if _, _, err := memory.Rebuild(ctx, vfs.OS{}, dir, cfg, e); err == nil {
				t.Fatal("a rebuild through an endpoint that fails halfway succeeded")
			}
			if n := s.EmbeddedTexts(); n == 0 || n >= 40 {
				t.Fatalf("%d texts embedded before the failure, want some but not all 40", n)
			}
			if got := indexFile(t, dir); !bytes.Equal(got, builtin) {
				t.Fatalf("the failed rebuild changed the stored index")
			}

			s.SetEmbedFaults(sim.EmbedFaults{})
			if _, _, err := memory.Rebuild(ctx, vfs.OS{}, dir, cfg, e); err != nil {
				t.Fatal(err)
			}
			res, err := memory.Check(ctx, vfs.OS{}, dir, e)
			if err != nil || !res.Equal {
				t.Fatalf("after the rebuild: %+v (%v), want the clean build's bytes", res, err)
			}
			hits, err := openAndSearch(ctx, dir, e, "which folder holds the logs of service 7")
			if err != nil || len(hits) == 0 {
				t.Fatalf("search: %v, %v", hits, err)
			}
			if _, _, err := memory.Rebuild(ctx, vfs.OS{}, dir, cfg, memory.Hash{}); err != nil {
				t.Fatal(err)
			}
			if got := indexFile(t, dir); !bytes.Equal(got, builtin) {
				t.Error("back on the built-in embedder, the index differs from its first build")
			}
		})
	}
}

func openAndSearch(ctx context.Context, dir string, e memory.Embedder, q string) ([]memory.Hit, error) {
	x, _, _, err := memory.Open(ctx, vfs.OS{}, dir, e)
	if err != nil {
		return nil, err
	}
	return x.Search(ctx, e, q, 3)
}
