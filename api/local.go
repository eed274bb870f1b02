package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// LocalService is what the local API serves; package node implements it.
type LocalService interface {
	Info(ctx context.Context) (NodeInfo, error)
	Peers(ctx context.Context) ([]Peer, error)
	AddPeer(ctx context.Context, p Peer) error
	RemovePeer(ctx context.Context, id string) error
	Agents(ctx context.Context) ([]AgentStatus, error)
	CreateAgent(ctx context.Context, req CreateAgentRequest) (AgentStatus, error)
	Agent(ctx context.Context, id string) (AgentStatus, error)
	StopAgent(ctx context.Context, id string) (AgentStatus, error)
	StartAgent(ctx context.Context, id string) (AgentStatus, error)
	// RemoveAgent removes a copy of an agent the node no longer holds, and
	// its caches (`capsule agent rm`).
	RemoveAgent(ctx context.Context, id string) error
	Discarder
	// Move moves agent id and reports progress until it ends. The move does
	// not depend on ctx: a caller that goes away stops hearing about it, the
	// move itself goes on.
	Move(ctx context.Context, id string, req MoveRequest, progress func(MoveProgress)) (MoveResult, error)
	MoveStatus(ctx context.Context, id string) (MoveStatus, error)
	Resolve(ctx context.Context, id string, req ResolveRequest) (MoveStatus, error)
	// Say journals a user message for an agent the node holds and wakes
	// its runner.
	Say(ctx context.Context, id string, req SayRequest) (EventRef, error)
	// SetModel journals a model_change for an agent the node holds and
	// wakes its runner.
	SetModel(ctx context.Context, id string, req ModelRequest) (EventRef, error)
	// WatchAgent passes send the agent's journal from opts, then its live
	// events, text deltas and state changes, until ctx is done, send
	// fails, or the node ends the watch (a watcher that lagged is sent a
	// final Lagged message).
	WatchAgent(ctx context.Context, id string, opts WatchOptions, send func(WatchMessage) error) error
}

// Paths of the local API.
const (
	PathInfo   = "/v1/node"
	PathPeers  = "/v1/peers"
	PathAgents = "/v1/agents"
)

// maxRequest bounds a JSON request body of the local API.
const maxRequest = 1 << 20

// NewLocalHandler serves svc as the local API.
func NewLocalHandler(svc LocalService) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathInfo, func(w http.ResponseWriter, r *http.Request) {
		reply(w, func() (any, error) { return svc.Info(r.Context()) })
	})
	mux.HandleFunc("GET "+PathPeers, func(w http.ResponseWriter, r *http.Request) {
		reply(w, func() (any, error) { return svc.Peers(r.Context()) })
	})
	mux.HandleFunc("POST "+PathPeers, func(w http.ResponseWriter, r *http.Request) {
		var p Peer
		replyDecoded(w, r, &p, func() (any, error) {
			if err := CheckID(NodeID, p.ID); err != nil {
				return nil, err
			}
			return p, svc.AddPeer(r.Context(), p)
		})
	})
	mux.HandleFunc("DELETE "+PathPeers+"/{id}", withID(NodeID, "id", func(w http.ResponseWriter, r *http.Request, id string) {
		reply(w, func() (any, error) { return struct{}{}, svc.RemovePeer(r.Context(), id) })
	}))
	mux.HandleFunc("GET "+PathAgents, func(w http.ResponseWriter, r *http.Request) {
		reply(w, func() (any, error) { return svc.Agents(r.Context()) })
	})
	mux.HandleFunc("POST "+PathAgents, func(w http.ResponseWriter, r *http.Request) {
		var req CreateAgentRequest
		replyDecoded(w, r, &req, func() (any, error) { return svc.CreateAgent(r.Context(), req) })
	})
	agentRoutes(mux, svc)
	discardRoutes(mux, svc)
	approveRoutes(mux, svc)
	talkRoutes(mux, svc)
	eventsRoutes(mux, svc)
	workspaceRoutes(mux, svc)
	memoryRoutes(mux, svc)
	return cleanPaths(mux)
}

func agentRoutes(mux *http.ServeMux, svc LocalService) {
	mux.HandleFunc("GET "+PathAgents+"/{id}", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		reply(w, func() (any, error) { return svc.Agent(r.Context(), id) })
	}))
	mux.HandleFunc("POST "+PathAgents+"/{id}/stop", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		reply(w, func() (any, error) { return svc.StopAgent(r.Context(), id) })
	}))
	mux.HandleFunc("POST "+PathAgents+"/{id}/start", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		reply(w, func() (any, error) { return svc.StartAgent(r.Context(), id) })
	}))
	mux.HandleFunc("DELETE "+PathAgents+"/{id}", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		reply(w, func() (any, error) { return struct{}{}, svc.RemoveAgent(r.Context(), id) })
	}))
	mux.HandleFunc("GET "+PathAgents+"/{id}/move", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		reply(w, func() (any, error) { return svc.MoveStatus(r.Context(), id) })
	}))
	mux.HandleFunc("POST "+PathAgents+"/{id}/move/resolve", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		var req ResolveRequest
		replyDecoded(w, r, &req, func() (any, error) { return svc.Resolve(r.Context(), id, req) })
	}))
	mux.HandleFunc("POST "+PathAgents+"/{id}/move", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		serveMove(w, r, svc, id)
	}))
}

// withID checks the path value name with CheckID before h sees it, so a
// malformed identifier is a 400 and reaches nothing.
func withID(kind IDKind, name string, h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue(name)
		if err := CheckID(kind, id); err != nil {
			writeError(w, err)
			return
		}
		h(w, r, id)
	}
}

func withAgent(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return withID(AgentID, "id", h)
}

// serveMove answers with NDJSON: progress lines as the move advances, then
// one result or error line.
func serveMove(w http.ResponseWriter, r *http.Request, svc LocalService, id string) {
	var req MoveRequest
	err := decodeJSON(r.Body, maxRequest, &req)
	if err == nil {
		err = CheckID(NodeID, req.To)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	// The move goes on in the node after this handler returns (a client that
	// hangs up does not stop a move), so progress reported after that must
	// not touch the finished response.
	var mu sync.Mutex
	done := false
	res, err := svc.Move(r.Context(), id, req, func(p MoveProgress) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		_ = enc.Encode(moveStreamLine{Progress: &p})
		flush()
	})
	mu.Lock()
	defer mu.Unlock()
	done = true
	if err != nil {
		_ = enc.Encode(moveStreamLine{Error: toError(err)})
	} else {
		_ = enc.Encode(moveStreamLine{Result: &res})
	}
	flush()
}

func reply(w http.ResponseWriter, f func() (any, error)) {
	v, err := f()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func replyDecoded(w http.ResponseWriter, r *http.Request, into any, f func() (any, error)) {
	if err := decodeJSON(r.Body, maxRequest, into); err != nil {
		writeError(w, err)
		return
	}
	reply(w, f)
}

// decodeJSON decodes exactly one JSON value of at most limit bytes, refusing
// unknown fields, so a typo in a request is an error and not a default.
func decodeJSON(r io.Reader, limit int64, into any) error {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	dec := json.NewDecoder(lr)
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		if lr.N <= 0 {
			return fmt.Errorf("%w: body larger than %d bytes", ErrInvalid, limit)
		}
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: more than one JSON value", ErrInvalid)
	}
	return nil
}
