package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/provider/sim"
)

// demoSteps is what one node did for the agent, from the journal: its
// model steps (generations, by the model that made them) and the tool
// results it journaled.
type demoSteps struct {
	Node       string         `json:"node"`
	Machine    string         `json:"machine"`
	ModelSteps int            `json:"model_steps"`
	ByModel    map[string]int `json:"model_steps_by_model"`
	ToolSteps  int            `json:"tool_steps"`
	Tools      []string       `json:"tools"` // the tools it ran, in order
}

// demoRequests counts the requests the simulator received for one API
// and model, and how many it refused.
type demoRequests struct {
	API     string `json:"api"`
	Model   string `json:"model"`
	Count   int    `json:"count"`
	Refused int    `json:"refused"`
}

// readDemoJournal reads the journal of the capsule folder dir.
func readDemoJournal(dir string) ([]journal.Event, error) {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(manifest.JournalPath)))
	if err != nil {
		return nil, fmt.Errorf("demo: journal: %w", err)
	}
	defer f.Close()
	var out []journal.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), journal.MaxLine+64<<10)
	for sc.Scan() {
		e, err := journal.ParseLine(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("demo: journal line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("demo: journal: %w", err)
	}
	return out, nil
}

// stepsByNode counts each node's model steps and tool results; names
// lists the nodes' machine IDs and names in the order to report them.
func stepsByNode(events []journal.Event, machines, names []string) []demoSteps {
	out := make([]demoSteps, len(machines))
	at := map[string]*demoSteps{}
	for i, m := range machines {
		out[i] = demoSteps{Node: names[i], Machine: m, ByModel: map[string]int{}, Tools: []string{}}
		at[m] = &out[i]
	}
	counted := map[string]bool{} // machine + step
	for _, e := range events {
		s := at[e.Machine]
		if s == nil {
			continue
		}
		switch e.Kind {
		case journal.KindAssistant, journal.KindReasoning, journal.KindToolCall:
			var b struct {
				Step     string           `json:"step"`
				Producer journal.Producer `json:"producer"`
			}
			decodeJSON(e.Body, &b)
			if key := e.Machine + " " + b.Step; b.Step == "" || !counted[key] {
				counted[key] = true
				s.ModelSteps++
				s.ByModel[b.Producer.Provider+"/"+b.Producer.API+" "+b.Producer.Model]++
			}
		case journal.KindToolResult:
			s.ToolSteps++
			s.Tools = append(s.Tools, decodeAs[journal.ToolResult](e.Body).Name)
		}
	}
	return out
}

// requestsByModel groups the simulator's request log by API and model.
func requestsByModel(log []sim.Request) []demoRequests {
	idx := map[string]int{}
	var out []demoRequests
	for _, r := range log {
		key := string(r.API) + " " + r.Model
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, demoRequests{API: string(r.API), Model: r.Model})
		}
		out[i].Count++
		if r.Status != 200 || len(r.Violations) > 0 {
			out[i].Refused++
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].API < out[j].API })
	return out
}

// bugFixed reports whether calc.go in the work folder has the fix and no
// longer the bug.
func bugFixed(work string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(work, "calc.go"))
	if err != nil {
		return false, fmt.Errorf("demo: read the fixed file: %w", err)
	}
	s := string(b)
	return strings.Contains(s, demoFix) && !strings.Contains(s, demoBug), nil
}

// firstAnswerMachine returns the machine that journaled the first
// assistant text: the end of the task's tool loop.
func firstAnswerMachine(events []journal.Event) string {
	for _, e := range events {
		if e.Kind == journal.KindAssistant {
			return e.Machine
		}
	}
	return ""
}

// lastAnswer returns the newest assistant text of the journal and the
// machine that journaled it.
func lastAnswer(events []journal.Event) (text, machine string) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == journal.KindAssistant {
			return decodeAs[journal.AssistantMessage](events[i].Body).Text, events[i].Machine
		}
	}
	return "", ""
}

// demoTeamResult is what the team turn's call did: the posts the team
// channel received (in memory and in its file) and the journal's events
// of the call, which must be one of each.
type demoTeamResult struct {
	Call       string   `json:"call"`
	Channel    []string `json:"channel"`
	Posts      int      `json:"posts"`
	FilePosts  int      `json:"file_posts"`
	Requests   int      `json:"approval_requests"`
	Approvals  int      `json:"approvals"`
	Dispatches int      `json:"tool_dispatches"`
	Results    int      `json:"tool_results"`
}

// countCall counts the journal's approval requests, approvals,
// dispatches and results of call id into r.
func countCall(events []journal.Event, id string, r *demoTeamResult) {
	for _, e := range events {
		var b struct {
			CallID string `json:"call_id"`
		}
		switch e.Kind {
		case journal.KindApprovalRequest, journal.KindApproval, journal.KindToolDispatch, journal.KindToolResult:
			decodeJSON(e.Body, &b)
		}
		if b.CallID != id || id == "" {
			continue
		}
		switch e.Kind {
		case journal.KindApprovalRequest:
			r.Requests++
		case journal.KindApproval:
			r.Approvals++
		case journal.KindToolDispatch:
			r.Dispatches++
		case journal.KindToolResult:
			r.Results++
		}
	}
}

// fileLines counts the lines of the file at path; a missing file has none.
func fileLines(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("demo: team channel: %w", err)
	}
	return strings.Count(string(b), "\n"), nil
}
