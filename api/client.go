package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
)

// LocalClient calls a node's local API. It implements LocalService, so the
// CLI and the tests use a remote node and an in-process one alike.
type LocalClient struct {
	base string
	hc   *http.Client
}

var _ LocalService = (*LocalClient)(nil)

// NewLocalClient returns a client for the node listening on the unix socket.
func NewLocalClient(socket string) *LocalClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	return &LocalClient{base: "http://node", hc: &http.Client{Transport: tr}}
}

// NewLocalClientHTTP returns a client for a local API served at base (a URL)
// through hc; tests use it with httptest servers.
func NewLocalClientHTTP(base string, hc *http.Client) *LocalClient {
	return &LocalClient{base: base, hc: hc}
}

// Info implements LocalService.
func (c *LocalClient) Info(ctx context.Context) (NodeInfo, error) {
	var v NodeInfo
	return v, c.do(ctx, http.MethodGet, PathInfo, nil, &v)
}

// Peers implements LocalService.
func (c *LocalClient) Peers(ctx context.Context) ([]Peer, error) {
	var v []Peer
	return v, c.do(ctx, http.MethodGet, PathPeers, nil, &v)
}

// AddPeer implements LocalService.
func (c *LocalClient) AddPeer(ctx context.Context, p Peer) error {
	return c.do(ctx, http.MethodPost, PathPeers, p, nil)
}

// RemovePeer implements LocalService.
func (c *LocalClient) RemovePeer(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, PathPeers+"/"+url.PathEscape(id), nil, nil)
}

// Agents implements LocalService.
func (c *LocalClient) Agents(ctx context.Context) ([]AgentStatus, error) {
	var v []AgentStatus
	return v, c.do(ctx, http.MethodGet, PathAgents, nil, &v)
}

// CreateAgent implements LocalService.
func (c *LocalClient) CreateAgent(ctx context.Context, req CreateAgentRequest) (AgentStatus, error) {
	var v AgentStatus
	return v, c.do(ctx, http.MethodPost, PathAgents, req, &v)
}

// Agent implements LocalService.
func (c *LocalClient) Agent(ctx context.Context, id string) (AgentStatus, error) {
	var v AgentStatus
	return v, c.do(ctx, http.MethodGet, agentPath(id, ""), nil, &v)
}

// StopAgent implements LocalService.
func (c *LocalClient) StopAgent(ctx context.Context, id string) (AgentStatus, error) {
	var v AgentStatus
	return v, c.do(ctx, http.MethodPost, agentPath(id, "/stop"), struct{}{}, &v)
}

// RemoveAgent implements LocalService.
func (c *LocalClient) RemoveAgent(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, agentPath(id, ""), nil, nil)
}

// StartAgent implements LocalService.
func (c *LocalClient) StartAgent(ctx context.Context, id string) (AgentStatus, error) {
	var v AgentStatus
	return v, c.do(ctx, http.MethodPost, agentPath(id, "/start"), struct{}{}, &v)
}

// MoveStatus implements LocalService.
func (c *LocalClient) MoveStatus(ctx context.Context, id string) (MoveStatus, error) {
	var v MoveStatus
	return v, c.do(ctx, http.MethodGet, agentPath(id, "/move"), nil, &v)
}

// Resolve implements LocalService.
func (c *LocalClient) Resolve(ctx context.Context, id string, req ResolveRequest) (MoveStatus, error) {
	var v MoveStatus
	return v, c.do(ctx, http.MethodPost, agentPath(id, "/move/resolve"), req, &v)
}

// Move implements LocalService: it reads the NDJSON progress stream and
// returns the final result.
func (c *LocalClient) Move(ctx context.Context, id string, req MoveRequest, progress func(MoveProgress)) (MoveResult, error) {
	resp, err := c.send(ctx, http.MethodPost, agentPath(id, "/move"), req)
	if err != nil {
		return MoveResult{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line moveStreamLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return MoveResult{}, fmt.Errorf("move: bad progress line: %w", err)
		}
		switch {
		case line.Error != nil:
			line.Error.Status = statusOf(line.Error.Code)
			return MoveResult{}, line.Error
		case line.Result != nil:
			return *line.Result, nil
		case line.Progress != nil && progress != nil:
			progress(*line.Progress)
		}
	}
	if err := sc.Err(); err != nil {
		return MoveResult{}, fmt.Errorf("move: %w", err)
	}
	return MoveResult{}, fmt.Errorf("move: %w: stream ended without a result", ErrUnavailable)
}

func agentPath(id, suffix string) string { return PathAgents + "/" + url.PathEscape(id) + suffix }

func (c *LocalClient) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode reply: %w", method, path, err)
	}
	return nil
}

// send performs a request and turns a non-2xx answer into an *Error.
func (c *LocalClient) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return roundTrip(c.hc, req)
}

func roundTrip(hc *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var eb errorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxRequest))
	if json.Unmarshal(b, &eb) != nil || eb.Error == nil {
		return nil, &Error{Status: resp.StatusCode, Code: "internal", Message: fmt.Sprintf("%s %s: HTTP %d", req.Method, req.URL.Path, resp.StatusCode)}
	}
	eb.Error.Status = resp.StatusCode
	return nil, eb.Error
}

// PeerClient calls another node's peer API.
type PeerClient struct {
	base string
	hc   *http.Client
}

// NewPeerClient returns a client for the peer API at base (e.g.
// "https://127.0.0.1:7070") through rt, which carries the mutual TLS setup
// pinned to that peer's ID.
func NewPeerClient(base string, rt http.RoundTripper) *PeerClient {
	return &PeerClient{base: base, hc: &http.Client{Transport: rt}}
}

// Message sends one move-protocol message and returns the replies.
func (c *PeerClient) Message(ctx context.Context, m Message) (Replies, error) {
	var v Replies
	return v, c.postJSON(ctx, PathPeerMessage, m.Call, m, &v)
}

// Push sends body, a push stream (see WriteFrame), to the peer.
func (c *PeerClient) Push(ctx context.Context, pr PushRequest, body io.Reader) (PushReply, error) {
	path := "/v1/peer/agents/" + url.PathEscape(pr.Agent) + "/push"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, body)
	if err != nil {
		return PushReply{}, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(CallHeader, pr.Call)
	if pr.Manifest != "" {
		req.Header.Set(ManifestHeader, string(pr.Manifest))
	}
	var v PushReply
	return v, decodeReply(c.hc, req, &v)
}

func (c *PeerClient) postJSON(ctx context.Context, path, call string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(CallHeader, call)
	return decodeReply(c.hc, req, out)
}

func decodeReply(hc *http.Client, req *http.Request, out any) error {
	resp, err := roundTrip(hc, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxMessage)).Decode(out); err != nil {
		return fmt.Errorf("%w: %s: decode reply: %v", ErrUnavailable, req.URL.Path, err)
	}
	return nil
}
