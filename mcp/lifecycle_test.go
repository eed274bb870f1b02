package mcp_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/mcp"
)

// A server that exits in the middle of a call gives an error result that
// says so; the call is not sent again (the counter file shows one run),
// and the next call finds the server started again.
func TestCrashMidCall(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "count")
	s, l := start(t, mcp.Config{Servers: []envspec.Tool{stdio(t, "crasher", "crasher", map[string]string{"COUNTER_FILE": counter})}})
	got := s.Call(t.Context(), "crasher.crash", json.RawMessage(`{}`))
	for _, want := range []string{"crashed during the call of crasher.crash", "exited with status 3", "crasher: exiting mid-call", "not sent again"} {
		if !got.IsError || !strings.Contains(got.Content, want) {
			t.Errorf("crash result %+v; want an error containing %q", got, want)
		}
	}
	if n := lines(t, counter); n != 1 {
		t.Fatalf("the crash ran %d times; want 1", n)
	}
	if got := s.Call(t.Context(), "crasher.echo", json.RawMessage(`{"text":"again"}`)); got.IsError || got.Content != "again" {
		t.Fatalf("the call after the crash: %+v", got)
	}
	pids := l.pids()
	if len(pids) != 2 || alive(pids[0]) {
		t.Fatalf("processes %v: want the crashed one gone and one restarted", pids)
	}
	if n := lines(t, counter); n != 1 {
		t.Fatalf("after the restart the crash ran %d times; want 1", n)
	}
}

// A server that never answers is cut at the call timeout, it and its
// child killed (the hanger ignores SIGTERM and stdin's end), and starts
// again for the next call.
func TestHungCallIsCutAndKilled(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	sv := stdio(t, "h", "hanger", map[string]string{"HANGER_PIDFILE": pidfile})
	s, _ := start(t, mcp.Config{Servers: []envspec.Tool{sv}, CallTimeout: 200 * time.Millisecond, StopTimeout: 100 * time.Millisecond})
	got := s.Call(t.Context(), "h.hang", json.RawMessage(`{}`))
	if !got.IsError || !strings.Contains(got.Content, "did not answer the call of h.hang within 200ms; it was stopped") {
		t.Fatalf("hang result %+v", got)
	}
	first := hangerPIDs(t, pidfile)
	for _, pid := range first {
		if alive(pid) {
			t.Errorf("process %d of the hung server is alive", pid)
		}
	}
	if got := s.Call(t.Context(), "h.echo", json.RawMessage(`{"text":"back"}`)); got.Content != "back" {
		t.Fatalf("the call after the hang: %+v", got)
	}
	if again := hangerPIDs(t, pidfile); len(again) != 4 || slices.Contains(first, again[2]) {
		t.Fatalf("hanger starts %v: want a second start with new PIDs", again)
	}
}

// Close stops every server, including one that ignores stdin's end and
// SIGTERM and has a child, and leaves no process behind; calls after it
// fail.
func TestCloseLeavesNoProcess(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	s, l := start(t, mcp.Config{StopTimeout: 100 * time.Millisecond, Servers: []envspec.Tool{
		stdio(t, "c", "counter", nil),
		stdio(t, "h", "hanger", map[string]string{"HANGER_PIDFILE": pidfile}),
	}})
	pids := append(l.pids(), hangerPIDs(t, pidfile)...)
	if len(pids) != 4 {
		t.Fatalf("pids %v: want counter, hanger and its child", pids)
	}
	for _, pid := range pids {
		if !running(pid) {
			t.Fatalf("process %d is not running before Close", pid)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is alive after Close", pid)
		}
	}
	if got := s.Call(t.Context(), "c.echo", json.RawMessage(`{"text":"x"}`)); !got.IsError || !strings.Contains(got.Content, "stopped") {
		t.Fatalf("a call after Close: %+v", got)
	}
}

// A server that cannot start refuses the whole Set, naming the server and
// why, and the servers that did start are stopped.
func TestStartFailure(t *testing.T) {
	cases := []struct {
		name string
		sv   envspec.Tool
		want string
	}{
		{"missing command", envspec.Tool{Name: "gone", Transport: "stdio", Command: "capsule-test-no-such-server"},
			`mcp: server gone did not start: exec: "capsule-test-no-such-server": executable file not found in $PATH`},
		{"exits at once", envspec.Tool{Name: "quits", Transport: "stdio", Command: "/bin/sh", Args: []string{"-c", "echo no config >&2; exit 2"}},
			"mcp: server quits did not start: the process exited with status 2 (stderr: no config)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := &launches{}
			c.sv.Effect, c.sv.Approval = envspec.EffectExternal, envspec.ApprovalRequired
			_, err := mcp.Start(t.Context(), mcp.Config{Launch: l.launch, Servers: []envspec.Tool{stdio(t, "ok", "counter", nil), c.sv}})
			var se *mcp.StartError
			if !errors.As(err, &se) || se.Server != c.sv.Name || err.Error() != c.want {
				t.Fatalf("error %v; want %q", err, c.want)
			}
			for _, pid := range l.pids() {
				if alive(pid) {
					t.Errorf("process %d outlived the failed start", pid)
				}
			}
		})
	}
}
