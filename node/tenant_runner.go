package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/vfs"
)

// Runner runs one agent, one step at a time. The node calls Step
// repeatedly while it holds the agent and never concurrently for one agent;
// it freezes the agent only between steps, so a step is the unit of work a
// freeze never cuts. The LLM agent loop is a Runner; so is CounterRunner.
type Runner interface {
	Step(ctx context.Context, env *StepEnv) error
}

// StepEnv is what a runner may use during one step.
type StepEnv struct {
	Agent string // the agent ID
	Node  ID     // the node running the step
	Epoch uint64 // the holder epoch every journal event of the step carries
	Step  uint64 // steps taken on this node since the agent last started here
	// FS and Workdir locate the agent's workspace.
	FS      vfs.FS
	Workdir string
	Now     time.Time
	// Append adds an event to the journal under Epoch, durably.
	Append func(kind journal.Kind, body any) (journal.Event, error)
}

// Files the CounterRunner keeps in the workspace.
const (
	CounterFile = "counter.txt"
	StepLogFile = "steps.log"
)

// CounterTool is the tool name of the calls CounterRunner journals.
const CounterTool = "counter.increment"

// CounterRunner is the built-in runner: real, checkable work without a
// model. Each step increments the number in counter.txt, appends a line
// "<n> <node> epoch=<e>" to steps.log, and journals the step as a tool call
// and its result. After any sequence of moves, the counter equals the
// number of counter results in the journal, and steps.log shows who ran
// each step under which epoch.
type CounterRunner struct{}

var counterProducer = journal.Producer{Provider: "capsule", API: "builtin", Model: "counter"}

// Step implements Runner.
func (CounterRunner) Step(ctx context.Context, env *StepEnv) error {
	n, err := readCounter(env.FS, filepath.Join(env.Workdir, CounterFile))
	if err != nil {
		return err
	}
	n++
	callID := fmt.Sprintf("step-%s-%d", env.Node.Short(), n)
	args, _ := json.Marshal(map[string]uint64{"n": n})
	if _, err := env.Append(journal.KindToolCall, journal.ToolCall{CallID: callID, Name: CounterTool, Arguments: args, Producer: counterProducer}); err != nil {
		return err
	}
	if err := vfs.WriteFile(env.FS, filepath.Join(env.Workdir, CounterFile), []byte(strconv.FormatUint(n, 10)+"\n"), 0o644); err != nil {
		return err
	}
	if err := appendLine(env.FS, filepath.Join(env.Workdir, StepLogFile), fmt.Sprintf("%d %s epoch=%d\n", n, env.Node, env.Epoch)); err != nil {
		return err
	}
	_, err = env.Append(journal.KindToolResult, journal.ToolResult{CallID: callID, Name: CounterTool, Content: strconv.FormatUint(n, 10)})
	return err
}

func readCounter(fsys vfs.FS, path string) (uint64, error) {
	b, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("counter: %s: %w", path, err)
	}
	return n, nil
}

func appendLine(fsys vfs.FS, path, line string) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(line))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
