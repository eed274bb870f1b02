package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/sandbox"
	"github.com/agentcapsule/capsule/schema"
)

// RunCommand is the name of the tool that runs a shell command in the
// workspace, inside the sandbox.
const RunCommand = "run"

// Defaults of the run tool, used when the policy sets no limit.
const (
	DefaultRunTimeout = 2 * time.Minute
	// DefaultRunOutput bounds what a command may write (stdout and stderr
	// together) before it is killed; the model sees at most MaxOutput.
	DefaultRunOutput = 4 << 20
)

// RunEffect returns the effect class of the run tool under p:
// schema.EffectWorkspace when the sandbox has no network (its effects are
// confined to the workspace, which the capsule captures), else
// schema.EffectExternal.
func RunEffect(p sandbox.Policy) string {
	if p.Unsandboxed || (p.Network != "" && p.Network != sandbox.NetworkNone) || len(p.Hosts) > 0 {
		return schema.EffectExternal
	}
	return schema.EffectWorkspace
}

// runSpec declares the run tool. It is not in specs: whether it is offered
// and its effect class depend on the workspace's sandbox.
var runSpec = spec{RunCommand, schema.EffectWorkspace,
	"Run a shell command (/bin/sh -c) in the workspace, inside a sandbox: the workspace is the current " +
		"directory and HOME, and is the only place you can write besides a private /tmp; the system's programs " +
		"(/usr, /bin) are readable; other files of the machine are not there, and there is no network unless " +
		"the environment grants hosts (then through HTTPS_PROXY). Nothing is interactive: stdin is empty, so " +
		"pass flags like -y. The result starts with the exit status, then stdout and stderr apart; a long output " +
		"is cut (the whole output is attached). timeout_seconds (default 120) kills the command and everything " +
		"it started; prefer several short commands to one long one.",
	`{"type":"object","properties":{` +
		`"command":{"type":"string","minLength":1,"description":"the shell command, e.g. go test ./... 2>&1 | tail -n 40"},` +
		`"timeout_seconds":{"type":"integer","minimum":1,"maximum":3600,"description":"kill the command after this many seconds; default 120"}},` +
		`"required":["command"],"additionalProperties":false}`}

var runSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(runSpec.params))
	if err != nil {
		return nil, fmt.Errorf("tool: schema of %s: %w", RunCommand, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("run.json", doc); err != nil {
		return nil, fmt.Errorf("tool: schema of %s: %w", RunCommand, err)
	}
	return c.Compile("run.json")
})

// runOffered reports whether the workspace offers the run tool, and why
// not when it does not.
func (w *Workspace) runOffered() (bool, string) {
	sb := w.opts.Sandbox
	switch {
	case sb == nil:
		return false, "no sandbox was set up for this agent"
	case sb.Kind() == sandbox.KindNone && !w.opts.Policy.Unsandboxed:
		return false, "no sandbox works on this node, and commands never run unsandboxed unless the environment " +
			"spec says sandbox: none and the node allows it: " + sb.Reason()
	}
	return true, ""
}

func (w *Workspace) runDeclaration() []render.Tool {
	if ok, _ := w.runOffered(); ok {
		return []render.Tool{runSpec.declaration()}
	}
	return nil
}

// runArgs are the run tool's arguments.
type runArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

// run is the run tool: it checks its arguments, runs the command in the
// sandbox and reports the exit status, stdout and stderr.
func (w *Workspace) run(ctx context.Context, args json.RawMessage) Result {
	if ok, why := w.runOffered(); !ok {
		return failf("unknown tool %q; the tools are: %s (%s is not offered: %s)",
			RunCommand, strings.Join(w.names(), ", "), RunCommand, why)
	}
	var a runArgs
	if msg := w.runCheck(args, &a); msg != "" {
		return capped(failf("%s", msg), w.opts.MaxOutput)
	}
	p, wall, limit := w.runPolicy(a)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(wall, func() { cancel(errTimedOut) })
	defer timer.Stop()
	cmd, err := w.opts.Sandbox.Command(runCtx, p, []string{"/bin/sh", "-c", a.Command})
	if err != nil {
		return failf("%s: refused: %v", RunCommand, err)
	}
	var stdout, stderr bytes.Buffer
	out := &outputCap{left: limit, cancel: cancel}
	cmd.Stdout, cmd.Stderr = out.to(&stdout), out.to(&stderr)
	err = cmd.Run()
	w.opts.Sandbox.Release(cmd)
	status, isErr := runStatus(cmd, err, stderr.String())
	switch cause := context.Cause(runCtx); {
	case errors.Is(cause, errTimedOut):
		status = fmt.Sprintf("timed out after %v: the command and everything it started were killed", wall)
	case errors.Is(cause, errTooMuchOutput):
		status = fmt.Sprintf("killed: it wrote more than %d bytes of output", limit)
	case ctx.Err() != nil:
		status = fmt.Sprintf("canceled: %v", ctx.Err())
	default:
		return w.runResult(status, isErr, stdout.String(), stripMarker(stderr.String()))
	}
	return w.runResult(status, true, stdout.String(), stripMarker(stderr.String()))
}

// The causes with which the run tool stops a command itself.
var (
	errTimedOut      = errors.New("timed out")
	errTooMuchOutput = errors.New("too much output")
)

// outputCap counts what a command writes to both streams and stops it
// (cancel) past its budget; what is past the budget is dropped.
type outputCap struct {
	mu     sync.Mutex
	left   int64
	cancel context.CancelCauseFunc
}

type capWriter struct {
	c   *outputCap
	buf *bytes.Buffer
}

func (c *outputCap) to(buf *bytes.Buffer) capWriter { return capWriter{c, buf} }

func (w capWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	keep := min(int64(len(p)), w.c.left)
	w.buf.Write(p[:keep])
	w.c.left -= keep
	if keep < int64(len(p)) {
		w.c.cancel(errTooMuchOutput)
	}
	return len(p), nil
}

// runCheck validates args against the schema and decodes them into a.
func (w *Workspace) runCheck(args json.RawMessage, a *runArgs) string {
	sch, err := runSchema()
	if err != nil {
		return err.Error()
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Sprintf("%s: arguments are not valid JSON: %v", RunCommand, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Sprintf("%s: invalid arguments: %v", RunCommand, err)
	}
	return decode(RunCommand, args, a)
}

// runPolicy is the workspace's policy for one call, with its workspace;
// wall is the call's timeout within the policy's wall time and limit the
// policy's output limit (or DefaultRunOutput). The tool enforces both
// itself, to tell them from the command's own failures.
func (w *Workspace) runPolicy(a runArgs) (p sandbox.Policy, wall time.Duration, limit int64) {
	p = w.opts.Policy
	p.Workspace = w.dir
	wall = DefaultRunTimeout
	if a.TimeoutSeconds > 0 {
		wall = time.Duration(a.TimeoutSeconds) * time.Second
	}
	if p.Limits.Wall > 0 {
		wall = min(wall, p.Limits.Wall)
	}
	limit = p.Limits.OutputBytes
	if limit == 0 {
		limit = DefaultRunOutput
	}
	p.Limits.Wall, p.Limits.OutputBytes = 0, 0
	return p, wall, limit
}

// runStatus says how the command ended, and whether that is an error
// result: a sandbox that could not start is; an exit status other than 0,
// or a signal, is not (the model reads it). A death by signal N reads "exit status: 128+N (killed by signal N:
// name)" as a shell reports it, since under bwrap the sandbox's own init
// reports it so.
func runStatus(cmd *exec.Cmd, err error, stderr string) (string, bool) {
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return fmt.Sprintf("not run: %v", err), true
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	marked := strings.Contains(stderr, sandbox.MarkerPrefix)
	code := cmd.ProcessState.ExitCode()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	switch {
	case code == sandbox.ExitSetup && marked:
		return "not run: the sandbox could not be set up", true
	case code > 128 && code < 128+65:
		sig := syscall.Signal(code - 128)
		return fmt.Sprintf("exit status: %d (killed by signal %d: %v)", code, int(sig), sig), false
	default:
		return fmt.Sprintf("exit status: %d", code), false
	}
}

// stripMarker removes the sandbox's own lines from stderr (runStatus has
// reported them), keeping a setup failure's reason.
func stripMarker(stderr string) string {
	lines := strings.SplitAfter(stderr, "\n")
	var b strings.Builder
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, sandbox.MarkerPrefix); ok {
			if strings.HasPrefix(rest, "setup: ") {
				b.WriteString("sandbox " + rest)
			}
			continue
		}
		b.WriteString(l)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// runResult lays out status, stdout and stderr, each stream cut to half of
// MaxOutput; when one is cut, Full holds both whole.
func (w *Workspace) runResult(status string, isErr bool, stdout, stderr string) Result {
	layout := func(o, e string) string {
		return status + "\n--- stdout ---\n" + o + "\n--- stderr ---\n" + e
	}
	half := max(w.opts.MaxOutput/2, 1)
	o, oCut := cutStream("stdout", stdout, half)
	e, eCut := cutStream("stderr", stderr, half)
	r := Result{Content: layout(o, e), IsError: isErr}
	if oCut || eCut {
		r.Full = []byte(layout(stdout, stderr))
		r.MediaType = textMediaType
	}
	return r
}

// cutStream cuts s to max bytes like capped does, with a note naming the
// stream.
func cutStream(name, s string, max int) (string, bool) {
	r := capped(Result{Content: s}, max)
	if r.Full == nil {
		return s, false
	}
	return strings.Replace(r.Content, "[output truncated:", "["+name+" truncated:", 1), true
}
