package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentcapsule/capsule/agent"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newRenderCmd) }

type renderFlags struct {
	provider   string
	producer   string
	model      string
	window     int
	tools      string
	noThinking bool
	report     bool
	json       bool
}

func newRenderCmd() *cobra.Command {
	var f renderFlags
	cmd := &cobra.Command{
		Use:   "render PATH",
		Short: "Print the request an agent's journal renders to for one model",
		Long: `Render the journal of a capsule (PATH is a capsule folder, or a journal .jsonl
file) into the request body of one model API and print it on stdout, exactly
as it would be sent (a folder's working memory included, after the
instructions). Rendering is a pure function of the journal, the target
and the window: it never calls the provider.

The renderer keeps private reasoning only for the model that produced it,
gives every call without a result an explicit error result, drops results
that answer no call, maps tool-call IDs into the target's syntax, and fits
the window by keeping the newest whole units behind a short digest of what
it dropped. --report says what it did and how many tokens it estimates.

Providers: openai-chat (also OpenAI-compatible servers), openai-responses
(stateless), anthropic, gemini (the REST body; the model goes in the URL),
ollama (native /api/chat). Without --provider and --model the target is
the model the journal's newest model_change names, as the agent's next
model step would render for it.`,
		Example: `  capsule render ./agent                                  # for the journal's current model
  capsule render ./agent --provider anthropic --model claude-sonnet-4-6
  capsule render ./agent --provider openai-chat --model gpt-4.1 --window 8000 --report
  capsule render ./agent --provider gemini --model gemini-3-pro --tools tools.json
  capsule render ./agent --provider openai-chat --producer deepseek --model deepseek-reasoner
  capsule render ./agent --provider ollama --model qwen3 --json | jq .report.tokens

tools.json is a JSON array of {"name", "description", "parameters"}, where
parameters is the JSON Schema of the arguments.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runRender(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.provider, "provider", "", "wire API: openai-chat, openai-responses, anthropic, gemini or ollama (default: the journal's current model)")
	fl.StringVar(&f.model, "model", "", "model name (with --provider; default: the journal's current model)")
	fl.StringVar(&f.producer, "producer", "", "provider name the journal records for this model, when not the API's default (e.g. deepseek)")
	fl.IntVar(&f.window, "window", 0, "input token budget (default: the model's context window minus its maximum output)")
	fl.StringVar(&f.tools, "tools", "", "JSON file with the tool set: an array of {name, description, parameters}")
	fl.BoolVar(&f.noThinking, "no-thinking", false, "ask for a request without extended thinking where the model allows it")
	fl.BoolVar(&f.report, "report", false, "print what was dropped, synthesized, remapped or truncated, and the token estimate, on stderr")
	fl.BoolVar(&f.json, "json", false, `print {"request": BODY, "report": REPORT} as one JSON object`)
	return cmd
}

func runRender(cmd *cobra.Command, path string, f renderFlags) error {
	if f.provider == "" && f.model == "" && f.producer == "" {
		mc, err := journalModel(path)
		if err != nil {
			return err
		}
		t := agent.TargetOf(mc)
		f.provider, f.model, f.producer = string(t.API), t.Model, t.Provider
	}
	t, err := renderTarget(f)
	if err != nil {
		return usageError{err}
	}
	body, rep, err := renderFile(path, t)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.json {
		return json.NewEncoder(out).Encode(emptyLists(struct {
			Request json.RawMessage `json:"request"`
			Report  *render.Report  `json:"report"`
		}{body, rep}))
	}
	if _, err := out.Write(append(body, '\n')); err != nil {
		return err
	}
	if f.report {
		return rep.WriteText(cmd.ErrOrStderr())
	}
	return nil
}

// journalModel returns the model the newest model_change of the journal
// at path (a capsule folder or a .jsonl file) names: what the agent's next
// model step would render for.
func journalModel(path string) (journal.ModelChange, error) {
	jpath := path
	if !strings.HasSuffix(path, ".jsonl") {
		if err := capsule.CheckReadable(vfs.OS{}, path); err != nil && !errors.Is(err, capsule.ErrNotCapsule) {
			return journal.ModelChange{}, verifyError{err}
		}
		jpath = filepath.Join(path, "memory", "timeline_events.jsonl")
	}
	file, err := os.Open(jpath)
	if err != nil {
		return journal.ModelChange{}, err
	}
	defer file.Close()
	var newest *journal.Event
	err = journal.Each(file, func(e *journal.Event, _ journal.Pos) error {
		if e.Kind == journal.KindModelChange && (newest == nil || journal.Compare(newest, e) < 0) {
			c := *e
			c.Body = append(json.RawMessage(nil), e.Body...)
			newest = &c
		}
		return nil
	})
	if err != nil {
		return journal.ModelChange{}, verifyError{fmt.Errorf("%s: %w", jpath, err)}
	}
	if newest == nil {
		return journal.ModelChange{}, usageError{fmt.Errorf("%s names no model (no model_change event): give --provider and --model", jpath)}
	}
	var mc journal.ModelChange
	if err := json.Unmarshal(newest.Body, &mc); err != nil {
		return mc, verifyError{fmt.Errorf("%s: model_change %s: %w", jpath, newest.ID, err)}
	}
	return mc, nil
}

func renderTarget(f renderFlags) (render.Target, error) {
	t := render.Target{API: render.API(f.provider), Provider: f.producer, Model: f.model, Window: f.window, NoThinking: f.noThinking}
	if f.provider == "" || f.model == "" {
		return t, errors.New("--provider and --model are required")
	}
	if f.window < 0 {
		return t, errors.New("--window must not be negative")
	}
	if f.tools != "" {
		data, err := os.ReadFile(f.tools)
		if err != nil {
			return t, fmt.Errorf("--tools: %w", err)
		}
		if err := json.Unmarshal(data, &t.Tools); err != nil {
			return t, fmt.Errorf("--tools %s: want a JSON array of {name, description, parameters}: %w", f.tools, err)
		}
	}
	return t, t.Validate()
}

// renderFile renders a capsule's journal (or a .jsonl file) for t. It
// streams the journal once into a render.Index, which keeps where each body
// is and reads back only the bodies the window keeps; a journal whose lines
// are not in total order is read whole and sorted instead, with the same
// result.
func renderFile(path string, t render.Target) ([]byte, *render.Report, error) {
	defer boundHeap(streamingHeap)()
	if !strings.HasSuffix(path, ".jsonl") {
		if err := capsule.CheckReadable(vfs.OS{}, path); err != nil && !errors.Is(err, capsule.ErrNotCapsule) {
			return nil, nil, verifyError{err} // versions first (FORMAT §11.4)
		}
		mem, err := os.ReadFile(filepath.Join(path, "memory", "working_memory.md")) // pinned after the instructions (FORMAT §6.4)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		t.WorkingMemory = string(mem)
		path = filepath.Join(path, "memory", "timeline_events.jsonl")
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer file.Close()
	x := render.NewIndex(file)
	err = journal.EachWith(file, render.ReadHeader, func(e *journal.Event, pos journal.Pos, h render.Header) error {
		return x.AddHeader(e, pos.Body, h)
	})
	var body []byte
	var rep *render.Report
	switch {
	case errors.Is(err, render.ErrOrder):
		body, rep, err = renderSorted(file, t)
	case err == nil:
		body, rep, err = wire.RenderIndex(x, t)
	default:
		return nil, nil, verifyError{fmt.Errorf("%s: %w", path, err)}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("render: %w", err)
	}
	return body, rep, nil
}

// renderSorted reads a journal whose lines are out of order whole and
// puts its events in total order before rendering.
func renderSorted(file *os.File, t render.Target) ([]byte, *render.Report, error) {
	events, err := journal.Decode(io.NewSectionReader(file, 0, 1<<62))
	if err != nil {
		return nil, nil, err
	}
	journal.Sort(events)
	return wire.Render(events, t)
}
