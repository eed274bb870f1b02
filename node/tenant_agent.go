package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/secret"
	"github.com/agentcapsule/capsule/vfs"
)

// toolMarkFile records, durably, the call whose tool the runner is
// running (DATA/agents/<ID>/tool-running.json, node-local): found at the
// next start with no result journaled for the call, it means the node
// stopped while the tool ran, and the call is answered as interrupted
// instead of run again. A move never carries it: a freeze waits for the
// tool.
const toolMarkFile = "tool-running.json"

// toolMark is the content of toolMarkFile.
type toolMark struct {
	V       int    `json:"v"` // schema.ToolMark version
	Release string `json:"release"`
	CallID  string `json:"call_id"`
	Epoch   uint64 `json:"epoch"`
}

// journalView is the journal as the runner reads it: the events decoded
// so far, refreshed by reading only what was appended since (the journal
// file only grows while the node holds the agent).
type journalView struct {
	events []journal.Event
	off    int64
	sorted bool
}

// refresh reads the events appended since the last refresh.
func (v *journalView) refresh(fsys vfs.FS, path string) ([]journal.Event, error) {
	f, err := fsys.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		v.events, v.off = nil, 0
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < v.off { // rewritten (a move in): read it again
		v.events, v.off = nil, 0
	}
	if fi.Size() == v.off {
		return v.events, nil
	}
	if _, err := f.Seek(v.off, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, fi.Size()-v.off))
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(data, '\n') + 1 // a torn last line waits
	evs, err := journal.Decode(bytes.NewReader(data[:end]))
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	v.events = append(v.events, evs...)
	v.off += int64(end)
	v.order()
	return v.events, nil
}

// order keeps the events in total order (clock, machine, seq): appended
// events come in order; a journal merged from several machines may not.
func (v *journalView) order() {
	less := func(a, b *journal.Event) bool {
		if a.Clock != b.Clock {
			return a.Clock < b.Clock
		}
		if a.Machine != b.Machine {
			return a.Machine < b.Machine
		}
		return a.Seq < b.Seq
	}
	for i := 1; i < len(v.events); i++ {
		if less(&v.events[i], &v.events[i-1]) {
			sort.SliceStable(v.events, func(i, j int) bool { return less(&v.events[i], &v.events[j]) })
			return
		}
	}
}

// usesAgent reports whether the journal's current model is a language
// model (the agent loop runs it) rather than none or the built-in counter.
func usesAgent(events []journal.Event) bool {
	mc, ok, err := agent.CurrentModel(events)
	if err != nil || !ok {
		return false
	}
	return !(mc.Provider == counterProducer.Provider && mc.Model == counterProducer.Model)
}

// agentStep takes one step of the agent loop for the tenant.
func (a *tenant) agentStep(ctx context.Context, rl *runLoop, epoch uint64, events []journal.Event) error {
	mark, err := a.readToolMark()
	if err != nil {
		// Fail closed: the mark says a tool may have run; keep every byte.
		return &agent.BlockedError{Reason: "the record of the running tool cannot be read: " + err.Error(), Err: err}
	}
	values, sc, err := a.resolveSecrets(rl, events)
	if err != nil {
		return err
	}
	env := &agent.Env{
		Events:      events,
		Interrupted: mark.CallID,
		CallTimeout: a.n.cfg.ModelTimeout,
		Append: func(kinds []journal.Kind, bodies []any) error {
			_, err := a.log.AppendAll(epoch, a.n.wallTime(), kinds, bodies)
			return err
		},
		Tools:  rl.tools,
		Render: rl.render.Render,
		Client: a.n.cfg.Providers,
		BaseURL: func(providerName string, api render.API) string {
			if u, _ := a.baseURL.Load().(string); u != "" { // agent model --base-url
				return u
			}
			return a.n.endpoint(providerName, api)
		},
		Secret: func(name string) (string, bool) {
			v, ok := values[name]
			return v, ok
		},
		Scrub:   sc.Scrub,
		PutBlob: a.putBlob,
		OnText:  a.publishDelta,
		Enter: func(p agent.Phase, callID string) error {
			// stepMu is let go while the model thinks: a pre-copy may
			// commit meanwhile (nothing of the agent changes then).
			switch was := rl.enter(p); {
			case p == agent.PhaseModel && was != agent.PhaseModel:
				a.stepMu.Unlock()
			case p != agent.PhaseModel && was == agent.PhaseModel:
				a.stepMu.Lock()
			}
			switch {
			case p == agent.PhaseTool:
				return a.writeToolMark(toolMark{V: schema.Current[schema.ToolMark], Release: schema.Release, CallID: callID, Epoch: epoch})
			case p == agent.PhaseNone:
				return a.clearToolMark()
			}
			return nil
		},
	}
	if err := a.describeTools(rl, env); err != nil {
		return err
	}
	if env.WorkingMemory, err = a.workingMemory(); err != nil { // memory.go
		return err
	}
	rep, err := agent.Step(ctx, env)
	if err == nil && rep.Action != agent.Idle {
		a.n.log.Info("agent step", "agent", a.id, "action", rep.Action.String(), "step", rep.Step, "call", rep.Call)
	}
	return err
}

// endpoint is where this node calls provider's api: the node's endpoint
// for the provider, else its model endpoint for every provider (the
// embedded simulator), else the client's default.
func (n *Node) endpoint(providerName string, api render.API) string {
	if u, ok := n.cfg.Endpoints[providerName]; ok {
		return u
	}
	if u := strings.TrimRight(n.cfg.ModelEndpoint, "/"); u != "" {
		if api == render.OpenAIChat || api == render.OpenAIResponses {
			return u + "/v1"
		}
		return u
	}
	return ""
}

// putBlob stores data in the capsule's blob store for an attachment.
func (a *tenant) putBlob(name, mediaType string, data []byte) (journal.Attachment, error) {
	bs := capsule.NewBlobStore(a.n.fsys, filepath.Join(a.capsule(), filepath.FromSlash(manifest.BlobsDir)))
	d, n, err := bs.Put(bytes.NewReader(data))
	if err != nil {
		return journal.Attachment{}, err
	}
	return journal.Attachment{Blob: d.String(), MediaType: mediaType, Name: name, Size: n}, nil
}

func (a *tenant) readToolMark() (toolMark, error) {
	var m toolMark
	b, err := vfs.ReadFile(a.n.fsys, a.path(toolMarkFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		// Fail closed: a mark that cannot be read still says a tool ran.
		return m, fmt.Errorf("node: %s: %w", a.path(toolMarkFile), err)
	}
	if !schema.CanRead(schema.ToolMark, m.V) {
		return m, fmt.Errorf("node: %s: version %d written by release %q, which this release does not read", a.path(toolMarkFile), m.V, m.Release)
	}
	return m, nil
}

func (a *tenant) writeToolMark(m toolMark) error {
	return vfs.WriteFile(a.n.fsys, a.path(toolMarkFile), mustJSON(m), 0o600)
}

func (a *tenant) clearToolMark() error {
	err := a.n.fsys.Remove(a.path(toolMarkFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// resolveSecrets reads, at the moment of use, the values of the secrets
// the step may need: the current provider's key and every name the
// environment spec declares. What the step journals is scrubbed of all of
// them. A value the scrubber cannot hide safely (too short, or made of the
// marker's text) blocks the agent: its name is given, never the value.
func (a *tenant) resolveSecrets(rl *runLoop, events []journal.Event) (map[string]string, *secret.Scrubber, error) {
	if rl.secretNames == nil {
		names, err := a.specSecrets(a.capsule())
		if err != nil {
			return nil, nil, &agent.BlockedError{Reason: err.Error(), Err: err}
		}
		rl.secretNames = append(names, "") // non-nil once read
	}
	names := rl.secretNames
	if mc, ok, _ := agent.CurrentModel(events); ok {
		names = append(names[:len(names):len(names)], agent.KeyName(mc.Provider))
	}
	values := map[string]string{}
	for _, name := range names {
		if name == "" {
			continue
		}
		if v, ok := a.n.secrets.Lookup(name); ok {
			values[name] = v
		}
	}
	sc, err := secret.NewScrubber(values)
	if err != nil {
		return nil, nil, &agent.BlockedError{Reason: "a secret cannot be scrubbed from what the agent journals: " + err.Error(), Err: err}
	}
	return values, sc, nil
}

// MaxUserText bounds one user message (a task, agent say).
const MaxUserText = 1 << 20

// checkUserText accepts text for a user message: valid UTF-8, at most
// MaxUserText bytes. Empty text is accepted here (no message).
func checkUserText(s string) error {
	if len(s) > MaxUserText {
		return fmt.Errorf("%d bytes, more than the %d a message may hold", len(s), MaxUserText)
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	return nil
}

// checkModel validates a model reference from outside the way set model
// does (modelChange: the provider's default API when it names none).
func checkModel(m api.ModelRef) (api.ModelRef, error) {
	if len(m.Provider) > 128 || len(m.Model) > 256 || len(m.API) > 64 || !utf8.ValidString(m.Provider+m.Model+m.API) {
		return m, fmt.Errorf("%w: the provider, API or model name is too long or not UTF-8", api.ErrInvalid)
	}
	if m.Model == "" {
		return m, fmt.Errorf("%w: a model needs a provider and a model name", api.ErrInvalid)
	}
	mc, err := modelChange(api.ModelRequest{Provider: m.Provider, API: m.API, Model: m.Model})
	if err != nil {
		return m, err
	}
	return api.ModelRef{Provider: mc.Provider, API: mc.API, Model: mc.Model}, nil
}
