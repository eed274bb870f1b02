package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/schema"
)

// server is one declared server and, while it runs, its session.
type server struct {
	spec envspec.Tool
	cfg  *Config

	mu     sync.Mutex
	sess   *sdk.ClientSession // nil while it is not running
	proc   *proc              // nil for http
	tools  []tool             // as last listed
	closed bool
}

// start starts the server and lists its tools; s.mu must be held or s
// not yet shared.
func (s *server) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	var tr sdk.Transport
	var p *proc
	if s.spec.Transport == "http" {
		tr = &sdk.StreamableClientTransport{Endpoint: s.spec.URL, HTTPClient: s.cfg.HTTPClient, MaxRetries: -1, DisableStandaloneSSE: true}
	} else {
		env, scrub, err := s.environ()
		if err != nil {
			return err
		}
		argv := append([]string{s.spec.Command}, s.spec.Args...)
		if p, err = startProc(s.cfg.Launch, argv, env, s.cfg.Dir, scrub); err != nil {
			return err
		}
		tr = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "capsule", Version: schema.Release}, nil)
	sess, err := client.Connect(ctx, tr, nil)
	if err == nil {
		var tools []tool
		if tools, err = s.listTools(ctx, sess); err == nil {
			s.sess, s.proc, s.tools = sess, p, tools
			return nil
		}
		sess.Close()
	}
	return s.startFailed(p, err)
}

// startFailed stops what a failed start left and says why it failed: a
// process that exited says how.
func (s *server) startFailed(p *proc, err error) error {
	if p == nil {
		return err
	}
	exited := p.waitExit(200 * time.Millisecond)
	p.kill()
	if exited {
		return fmt.Errorf("the process %s", p.describe())
	}
	return err
}

// environ is a stdio server's environment: the spec's variables, the
// server's, and its secrets resolved now; scrub hides their values.
func (s *server) environ() ([]string, func(string) string, error) {
	vars := map[string]string{}
	for k, v := range s.cfg.Env {
		vars[k] = v
	}
	for k, v := range s.spec.Env {
		vars[k] = v
	}
	var values []string
	names := map[string]string{}
	for _, n := range s.spec.Secrets {
		v, ok := s.cfg.Secret(n)
		if !ok {
			return nil, nil, fmt.Errorf("secret %s is not available on this node", n)
		}
		vars[n] = v
		if v != "" {
			values = append(values, v)
			names[v] = n
		}
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
	scrub := func(t string) string {
		for _, v := range values {
			t = strings.ReplaceAll(t, v, "[secret "+names[v]+"]")
		}
		return t
	}
	return env, scrub, nil
}

// listTools lists every page of the server's tools.
func (s *server) listTools(ctx context.Context, sess *sdk.ClientSession) ([]tool, error) {
	var out []tool
	seen := map[string]bool{}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("list tools: the tool %q is listed twice", t.Name)
		}
		seen[t.Name] = true
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("list tools: input schema of %q: %w", t.Name, err)
		}
		tl, err := newTool(s.spec, t.Name, t.Description, schema)
		if err != nil {
			return nil, err
		}
		out = append(out, tl)
	}
	return out, nil
}

// list returns the tools as last listed.
func (s *server) list() []tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// live returns the running session, starting the server again when it
// stopped since the last call.
func (s *server) live(ctx context.Context) (*sdk.ClientSession, *proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, ErrClosed
	}
	if s.sess != nil && (s.proc == nil || !s.proc.dead()) {
		return s.sess, s.proc, nil
	}
	if s.sess != nil {
		s.release(s.sess, s.proc)
		s.sess, s.proc = nil, nil
	}
	if err := s.start(ctx); err != nil {
		return nil, nil, err
	}
	return s.sess, s.proc, nil
}

// release ends a session and kills its process.
func (s *server) release(sess *sdk.ClientSession, p *proc) {
	if p != nil {
		p.kill()
	}
	sess.Close()
}

// drop forgets sess if it still is the server's, and ends it.
func (s *server) drop(sess *sdk.ClientSession, p *proc) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess, s.proc = nil, nil
	}
	s.mu.Unlock()
	s.release(sess, p)
}

// close stops the server for good.
func (s *server) close() {
	s.mu.Lock()
	sess, p := s.sess, s.proc
	s.sess, s.proc, s.closed = nil, nil, true
	s.mu.Unlock()
	if p != nil {
		p.stop(s.cfg.StopTimeout)
	}
	if sess != nil {
		sess.Close()
	}
}

// call makes one call of t; see Set.Call.
func (s *server) call(ctx context.Context, t tool, args json.RawMessage) Result {
	name := s.spec.Name + "." + t.remote
	sess, p, err := s.live(ctx)
	if err != nil {
		return failf("the MCP server %s is not running and did not start again: %v; the call was not sent", s.spec.Name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := sess.CallTool(cctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err == nil {
		return result(res)
	}
	const unknown = "the call was not sent again and its effects, if any, are unknown"
	switch {
	case ctx.Err() != nil:
		s.drop(sess, p)
		return failf("the call of %s was cancelled (%v); the server was stopped and starts again for the next call; %s", name, context.Cause(ctx), unknown)
	case cctx.Err() != nil:
		s.drop(sess, p)
		return failf("the MCP server %s did not answer the call of %s within %s; it was stopped and starts again for the next call; %s", s.spec.Name, name, s.cfg.CallTimeout, unknown)
	case broken(err) && p != nil && p.waitExit(time.Second):
		s.drop(sess, p)
		return failf("the MCP server %s crashed during the call of %s: the process %s; it starts again for the next call; %s", s.spec.Name, name, p.describe(), unknown)
	case answered(err):
		return failf("the MCP server %s refused the call of %s: %v", s.spec.Name, name, err)
	}
	s.drop(sess, p)
	return failf("the connection to the MCP server %s broke during the call of %s (%v); it starts again for the next call; %s", s.spec.Name, name, err, unknown)
}

// broken reports whether err says the session is gone.
func broken(err error) bool {
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// answered reports whether err is the server's own JSON-RPC error answer
// (an unknown tool, arguments it refuses): the session is sound. Any other
// error leaves the session in doubt, so it is started again.
func answered(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && !broken(err)
}
