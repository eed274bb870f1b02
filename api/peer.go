package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/agentcapsule/capsule/digest"
)

// PeerService is what the peer API serves; package node implements it. from
// is the node ID the caller proved with its TLS certificate.
type PeerService interface {
	// Message delivers one move-protocol message and returns the replies.
	Message(ctx context.Context, from string, m Message) (Replies, error)
	// Push stores the frames of a push stream for req.Agent (blobs
	// verified on receipt, journal lines checked), then delivers its
	// message frame if it has one.
	Push(ctx context.Context, from string, req PushRequest, s *StreamReader) (PushReply, error)
}

// PushRequest describes a push stream besides its frames.
type PushRequest struct {
	// Agent is the agent the stream's blobs and journal lines belong to.
	Agent string
	// Call names the push for logs and fault injection: "push" for a
	// pre-copy round, or the call of the stream's message frame.
	Call string
	// Manifest, on a pre-copy push, is the digest of the manifest of the
	// state the round copies (one of the stream's blobs, or one the peer
	// already has). The receiver may prepare the next move's staging from
	// it ahead of the frozen window; it trusts nothing it has not verified.
	Manifest digest.Digest
}

// Paths of the peer API.
const (
	PathPeerMessage = "/v1/peer/message"
	PathPeerPush    = "/v1/peer/agents/{agent}/push"
)

// ManifestHeader carries PushRequest.Manifest on a push request.
const ManifestHeader = "Capsule-Manifest"

// CallHeader carries Message.Call on a peer message request, so a proxy or a
// test double can tell calls apart without parsing the body.
const CallHeader = "Capsule-Call"

// MaxMessage bounds a move-protocol message body; a message carries the
// journal tail, so the bound is generous.
const MaxMessage = 256 << 20

// NewPeerHandler serves svc as the peer API. identify returns the node ID
// the caller proved during the TLS handshake; a request it cannot identify
// is refused.
func NewPeerHandler(svc PeerService, identify func(*http.Request) (string, error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathPeerMessage, func(w http.ResponseWriter, r *http.Request) {
		var m Message
		err := decodeJSON(r.Body, MaxMessage, &m)
		if err == nil {
			err = checkMessage(m, "")
		}
		if err != nil {
			writeError(w, err)
			return
		}
		reply(w, func() (any, error) { return svc.Message(r.Context(), r.Header.Get(peerHeader), m) })
	})
	mux.HandleFunc("POST "+PathPeerPush, withID(AgentID, "agent", func(w http.ResponseWriter, r *http.Request, agent string) {
		reply(w, func() (any, error) {
			pr := PushRequest{Agent: agent, Call: r.Header.Get(CallHeader)}
			if m := r.Header.Get(ManifestHeader); m != "" {
				d, err := digest.Parse(m)
				if err != nil {
					return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, ManifestHeader, err)
				}
				pr.Manifest = d
			}
			s := NewStreamReader(r.Body, 0)
			s.checkMessage = func(m Message) error { return checkMessage(m, agent) }
			return svc.Push(r.Context(), r.Header.Get(peerHeader), pr, s)
		})
	}))
	return cleanPaths(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from, err := identify(r)
		if err != nil {
			writeError(w, &Error{Status: http.StatusForbidden, Code: "forbidden", Message: err.Error()})
			return
		}
		r.Header.Set(peerHeader, from)
		mux.ServeHTTP(w, r)
	}))
}

// peerHeader passes the identified caller from the wrapper to the routes;
// whatever a client sends in it is overwritten.
const peerHeader = "X-Capsule-Verified-Peer"
