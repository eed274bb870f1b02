package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"

	"github.com/agentcapsule/capsule/manifest"
)

// IDKind names a kind of identifier a request carries.
type IDKind string

// The identifiers the API checks (docs/PROTOCOL.md §5): agent and move IDs
// are ULIDs, node IDs are "n" and 26 lower-case base32 characters.
const (
	AgentID IDKind = "agent ID"
	MoveID  IDKind = "move ID"
	NodeID  IDKind = "node ID"
)

// nodeIDLen is the length of a node ID: "n" and 26 base32 characters.
const nodeIDLen = 27

// CheckID is the one check of every identifier that reaches the API, local
// and peer alike, before anything uses it: agent and move IDs name folders
// under the data folder and node IDs name peers, so a value that is not of
// its kind's exact form ("..", "a/b", NUL, an over-long string) is refused
// with ErrInvalid and never reaches a path or a map.
func CheckID(kind IDKind, s string) error {
	ok := false
	switch kind {
	case AgentID, MoveID:
		ok = manifest.IsULID(s)
	case NodeID:
		ok = isNodeID(s)
	}
	if !ok {
		return fmt.Errorf("%w: %s %q is not well formed (%s)", ErrInvalid, kind, clip(s), idForm(kind))
	}
	return nil
}

func isNodeID(s string) bool {
	if len(s) != nodeIDLen || s[0] != 'n' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}

func idForm(kind IDKind) string {
	if kind == NodeID {
		return `"n" and 26 lower-case base32 characters`
	}
	return "a ULID: 26 upper-case Crockford base32 characters"
}

// messageIDs are the identifiers of a move-protocol message body.
type messageIDs struct {
	Agent string `json:"agent"`
	Move  string `json:"move"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// checkMessage checks the identifiers of a peer's message; agent, if not
// empty, is the agent the request's path names, which the message must
// name too.
func checkMessage(m Message, agent string) error {
	var ids messageIDs
	if err := json.Unmarshal(m.Body, &ids); err != nil {
		return fmt.Errorf("%w: message: %v", ErrInvalid, err)
	}
	for _, c := range []struct {
		kind IDKind
		s    string
	}{{AgentID, ids.Agent}, {MoveID, ids.Move}, {NodeID, ids.From}, {NodeID, ids.To}} {
		if err := CheckID(c.kind, c.s); err != nil {
			return fmt.Errorf("message: %w", err)
		}
	}
	if agent != "" && ids.Agent != agent {
		return fmt.Errorf("%w: message for agent %s in a push for agent %s", ErrInvalid, ids.Agent, agent)
	}
	return nil
}

// cleanPaths refuses a request whose decoded path is not clean (an empty
// segment, "." or "..", perhaps percent-encoded) with ErrInvalid, before
// the router would redirect or match it, then serves it with h.
func cleanPaths(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; path.Clean(p) != p {
			writeError(w, fmt.Errorf("%w: path %q is not clean", ErrInvalid, clip(p)))
			return
		}
		h.ServeHTTP(w, r)
	})
}
