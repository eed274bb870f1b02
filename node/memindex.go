package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/memory"
	"github.com/agentcapsule/capsule/memory/remote"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/tool"
	"github.com/agentcapsule/capsule/vfs"
)

// saveEvery is how many events (or a tenth of the journal, when that is
// more) an index may reflect beyond the one the capsule stores before a
// search saves it. The stored index is derived and
// never trusted (FORMAT §11.7.2): one that lags is brought up to date on
// open by embedding only what the journal gained, so it is saved now and
// then, not at every step.
const saveEvery = 256

// agentMemory is an agent's semantic index while its runner runs the agent
// loop (memory_search): opened on the first search (memory.Open, which
// rebuilds a stale, tampered or foreign index), brought up to date before
// each search with the events journaled since (Index.Add; a full refresh
// when they do not continue it), and saved into the capsule after a full
// build and every saveEvery events. It is used from the runner's goroutine
// only, during a tool step; mu guards it anyway.
type agentMemory struct {
	a    *tenant
	spec *envspec.Spec

	mu      sync.Mutex
	emb     memory.Embedder
	x       *memory.Index
	stored  *memory.Stored
	view    journalView // the journal's events, read incrementally
	savedAt int64       // events the stored index reflects
}

// recall is the tool's memory.Recall.
func (m *agentMemory) recall(ctx context.Context, query string, k int) ([]tool.RecallHit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.update(ctx); err != nil {
		return nil, err
	}
	hits, err := m.x.Search(ctx, m.emb, query, k)
	if err != nil {
		return nil, err
	}
	out := make([]tool.RecallHit, len(hits))
	for i, h := range hits {
		src := "working memory"
		if h.Event != "" {
			src = "event " + h.Event
		}
		out[i] = tool.RecallHit{Score: h.Score, Source: src, Snippet: h.Snippet}
	}
	return out, nil
}

// update brings the index up to date with the capsule's journal and
// working memory, and saves it when it is due.
func (m *agentMemory) update(ctx context.Context) error {
	a := m.a
	if m.emb == nil {
		e, err := a.embedder(m.spec)
		if err != nil {
			return err
		}
		m.emb = e
	}
	events, err := m.view.refresh(a.n.fsys, filepath.Join(a.capsule(), journalInCap))
	if err != nil {
		return err
	}
	wm, err := vfs.ReadFile(a.n.fsys, filepath.Join(a.capsule(), filepath.FromSlash(manifest.WorkingMemoryPath)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	full := m.x == nil
	if !full {
		have := int(m.x.Watermark().Events)
		if have > len(events) {
			full = true
		} else if _, err := m.x.Add(ctx, m.emb, events[have:], wm); errors.Is(err, memory.ErrNotContinuation) {
			full = true
		} else if err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
	}
	if full {
		x, rep, stored, err := memory.Open(ctx, a.n.fsys, a.capsule(), m.emb)
		if err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
		if rep != nil && len(rep.Failed) > 0 {
			a.n.log.Warn("memory index: texts not embedded", "agent", a.id, "failed", len(rep.Failed), "first", rep.Failed[0].Source())
		}
		m.x, m.stored, m.savedAt = x, stored, -1
	}
	if n := m.x.Watermark().Events; m.savedAt < 0 || n-m.savedAt >= max(saveEvery, n/10) {
		if _, err := memory.Save(a.n.fsys, a.capsule(), capsule.Config{Writer: a.n.writer()}, m.x, m.stored); err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
		m.savedAt = n
		if m.stored != nil { // the capsule is at this release's index version now
			m.stored.Version, m.stored.Bytes = memory.Version, nil
		}
	}
	return nil
}

// embedder returns the embedder the spec chooses: the built-in one, or a
// remote provider's, called at the spec's URL or else where this node
// calls that provider (its --endpoint or --model-endpoint), with the key
// from the host's secret store.
func (a *tenant) embedder(spec *envspec.Spec) (memory.Embedder, error) {
	var e *envspec.Embedder
	if spec != nil && spec.Memory != nil {
		e = spec.Memory.Embedder
	}
	if e == nil || e.Provider == envspec.EmbedderBuiltin {
		return memory.Hash{}, nil
	}
	cfg := remote.Config{Provider: remote.Provider(e.Provider), Model: e.Model, URL: e.URL, Dims: e.Dims}
	if cfg.URL == "" {
		switch e.Provider {
		case envspec.EmbedderOpenAI:
			cfg.URL = a.n.endpoint("openai", render.OpenAIChat)
		case envspec.EmbedderGemini:
			cfg.URL = a.n.endpoint("google", render.Gemini)
		case envspec.EmbedderOllama:
			cfg.URL = a.n.endpoint("ollama", render.Ollama)
		}
	}
	var key string
	if e.Secret != "" {
		v, ok := a.n.secrets.Lookup(e.Secret)
		if !ok {
			return nil, fmt.Errorf("memory index: the embedder's secret %s is not in this host's secret store", e.Secret)
		}
		key = v
	}
	return remote.New(cfg, key)
}

// SearchMemory implements api.MemorySearcher (capsule memory search
// AGENT): the agent's index, brought up to date in memory with the
// capsule's journal and working memory and the spec's embedder, searched
// for query. It writes nothing: the runner's searches save the index.
func (n *Node) SearchMemory(ctx context.Context, id, query string, k int) (api.MemorySearch, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.MemorySearch{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.hosted() {
		return api.MemorySearch{}, fmt.Errorf("%w: agent %s is not held by this node", api.ErrNotFound, id)
	}
	spec, err := a.spec(a.capsule())
	if err != nil {
		return api.MemorySearch{}, fmt.Errorf("node: memory of %s: %w", id, err)
	}
	e, err := a.embedder(spec)
	if err != nil {
		return api.MemorySearch{}, err
	}
	x, rep, _, err := memory.Open(ctx, n.fsys, a.capsule(), e)
	if err != nil {
		return api.MemorySearch{}, fmt.Errorf("node: memory of %s: %w", id, err)
	}
	hits, err := x.Search(ctx, e, query, k)
	if err != nil {
		return api.MemorySearch{}, fmt.Errorf("node: memory of %s: %w", id, err)
	}
	out := api.MemorySearch{Agent: id, Index: rep.Mode, Hits: make([]api.MemoryHit, len(hits))}
	for i, h := range hits {
		out.Hits[i] = api.MemoryHit{Score: h.Score, Event: h.Event, Span: h.Span, Snippet: h.Snippet}
	}
	return out, nil
}

var _ api.MemorySearcher = (*Node)(nil)
