package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/render"
)

// Defaults of Config.
const (
	DefaultCallTimeout  = 2 * time.Minute
	DefaultStartTimeout = 30 * time.Second
	DefaultStopTimeout  = 2 * time.Second
	DefaultMaxOutput    = 16 << 10
)

// ErrClosed is the error of a Set used after Close.
var ErrClosed = errors.New("mcp: the servers are stopped")

// Config says which servers a Set starts and how.
type Config struct {
	// Servers are the spec's mcp_servers, in order.
	Servers []envspec.Tool
	// Env holds the plain variables every stdio server gets (the spec's
	// env); a server's own env and secrets come after them.
	Env map[string]string
	// Dir is the working directory of stdio servers (the workspace).
	Dir string
	// Launch makes a stdio server's command (nil: Exec).
	Launch Launcher
	// Secret resolves a secret a server names, at each start. Its values
	// go only into the server's environment: never into a message.
	Secret func(name string) (string, bool)
	// HTTPClient serves http servers (nil: http.DefaultClient).
	HTTPClient *http.Client
	// CallTimeout bounds one call (DefaultCallTimeout when zero).
	CallTimeout time.Duration
	// StartTimeout bounds a server's start: connect and list its tools
	// (DefaultStartTimeout when zero).
	StartTimeout time.Duration
	// StopTimeout bounds each stage of a stop: after stdin is closed, and
	// after SIGTERM (DefaultStopTimeout when zero).
	StopTimeout time.Duration
	// MaxOutput is the most bytes of a result's Content; the whole output
	// is in Full when it is cut (DefaultMaxOutput when zero).
	MaxOutput int
}

func (c *Config) defaults() {
	if c.Launch == nil {
		c.Launch = Exec
	}
	if c.Secret == nil {
		c.Secret = func(string) (string, bool) { return "", false }
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
}

// StartError says which server did not start and why. It never holds a
// secret's value.
type StartError struct {
	Server string
	Err    error
}

// Error names the server and the cause.
func (e *StartError) Error() string {
	return fmt.Sprintf("mcp: server %s did not start: %v", e.Server, e.Err)
}

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// Set is the running MCP servers of one agent. Its methods are safe for
// concurrent use.
type Set struct {
	cfg     Config
	servers []*server
}

// Start starts every server of cfg at once and lists their tools. When one
// does not start, it stops the others and returns a *StartError for the
// first in spec order.
func Start(ctx context.Context, cfg Config) (*Set, error) {
	cfg.defaults()
	s := &Set{cfg: cfg}
	for _, sv := range cfg.Servers {
		s.servers = append(s.servers, &server{spec: sv, cfg: &s.cfg})
	}
	errs := make([]error, len(s.servers))
	var wg sync.WaitGroup
	for i, sv := range s.servers {
		wg.Go(func() { errs[i] = sv.start(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			s.Close()
			return nil, &StartError{Server: s.servers[i].spec.Name, Err: err}
		}
	}
	return s, nil
}

// Tools returns the declarations of every tool, server by server in spec
// order, each server's in the order it lists them.
func (s *Set) Tools() []render.Tool {
	var out []render.Tool
	for _, sv := range s.servers {
		for _, t := range sv.list() {
			out = append(out, t.decl)
		}
	}
	return out
}

// Infos returns what the runtime knows of every tool, in the order of Tools.
func (s *Set) Infos() []ToolInfo {
	var out []ToolInfo
	for _, sv := range s.servers {
		for _, t := range sv.list() {
			out = append(out, t.info)
		}
	}
	return out
}

// Info returns what the runtime knows of the tool name ("SERVER.TOOL").
func (s *Set) Info(name string) (ToolInfo, bool) {
	_, t, ok := s.lookup(name)
	return t.info, ok
}

// lookup finds the server and the tool that name stands for.
func (s *Set) lookup(name string) (*server, tool, bool) {
	for _, sv := range s.servers {
		if !strings.HasPrefix(name, sv.spec.Name+".") {
			continue
		}
		for _, t := range sv.list() {
			if t.info.Name == name {
				return sv, t, true
			}
		}
	}
	return nil, tool{}, false
}

// Result is what one call returned: Content is what the model reads (cut
// to Config.MaxOutput with a note), Full the whole of it when it was cut.
type Result struct {
	Content string
	IsError bool
	Full    []byte
}

// Call calls the tool name ("SERVER.TOOL") with args (a JSON object) and
// waits at most Config.CallTimeout for its answer. Every failure is a
// result the model reads: an unknown tool, a server that is not running
// and does not restart, a server that crashed during the call or did not
// answer in time (it is stopped and starts again for the next call; this
// call is never sent twice).
func (s *Set) Call(ctx context.Context, name string, args json.RawMessage) Result {
	sv, t, ok := s.lookup(name)
	if !ok {
		return failf("no MCP tool %q; the tools are: %s", name, strings.Join(s.names(), ", "))
	}
	return s.capped(sv.call(ctx, t, args))
}

func (s *Set) names() []string {
	var out []string
	for _, i := range s.Infos() {
		out = append(out, i.Name)
	}
	sort.Strings(out)
	return out
}

// Close stops every server: stdin closed, SIGTERM, then SIGKILL, each
// after Config.StopTimeout, to its whole process group. It returns once
// every process was reaped. Calls after Close fail with ErrClosed's text.
func (s *Set) Close() error {
	var wg sync.WaitGroup
	for _, sv := range s.servers {
		wg.Go(sv.close)
	}
	wg.Wait()
	return nil
}

func failf(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}
