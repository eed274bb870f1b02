package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

const (
	goodAgent = "01HZX3K9Q8V7N6M5B4C3D2E1F0"
	goodMove  = "01HZX3K9Q8V7N6M5B4C3D2E1F1"
	goodNode  = "nabcdefghijklmnopqrstuvwxyz"
)

// hostileIDs are identifiers no request may carry into a path or a map.
var hostileIDs = []string{
	"..", ".", "../../escape", "../../../etc/passwd", "a/b", "/", "x\x00y", "%2F",
	strings.Repeat("0", 27), strings.Repeat("A", 4096), "not-a-ulid",
	strings.ToLower(goodAgent), "8" + goodAgent[1:], goodAgent + "\n", " " + goodAgent[1:],
}

// escapeAll percent-encodes every byte, so ".", "/" and NUL reach the
// router as one path segment instead of being cleaned away.
func escapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func TestCheckID(t *testing.T) {
	for _, kind := range []IDKind{AgentID, MoveID, NodeID} {
		for _, s := range append([]string{""}, hostileIDs...) {
			if err := CheckID(kind, s); err == nil || !strings.Contains(err.Error(), string(kind)) {
				t.Errorf("CheckID(%s, %q) = %v, want an error naming the %s", kind, s, err, kind)
			}
		}
	}
	for kind, s := range map[IDKind]string{AgentID: goodAgent, MoveID: goodMove, NodeID: goodNode} {
		if err := CheckID(kind, s); err != nil {
			t.Errorf("CheckID(%s, %q) = %v", kind, s, err)
		}
	}
	if err := CheckID(NodeID, goodAgent); err == nil {
		t.Errorf("an agent ID passed as a node ID")
	}
}

// refusingService fails the test if a request reaches it.
type refusingService struct {
	LocalService
	t *testing.T
}

func (s refusingService) reached(what string) {
	s.t.Helper()
	s.t.Errorf("%s reached the service", what)
}

func (s refusingService) Agent(context.Context, string) (AgentStatus, error) {
	s.reached("Agent")
	return AgentStatus{}, nil
}
func (s refusingService) StopAgent(context.Context, string) (AgentStatus, error) {
	s.reached("StopAgent")
	return AgentStatus{}, nil
}
func (s refusingService) StartAgent(context.Context, string) (AgentStatus, error) {
	s.reached("StartAgent")
	return AgentStatus{}, nil
}
func (s refusingService) DiscardAgent(context.Context, string) (DiscardResult, error) {
	s.reached("DiscardAgent")
	return DiscardResult{}, nil
}
func (s refusingService) MoveStatus(context.Context, string) (MoveStatus, error) {
	s.reached("MoveStatus")
	return MoveStatus{}, nil
}
func (s refusingService) Resolve(context.Context, string, ResolveRequest) (MoveStatus, error) {
	s.reached("Resolve")
	return MoveStatus{}, nil
}
func (s refusingService) Move(context.Context, string, MoveRequest, func(MoveProgress)) (MoveResult, error) {
	s.reached("Move")
	return MoveResult{}, nil
}
func (s refusingService) RemovePeer(context.Context, string) error {
	s.reached("RemovePeer")
	return nil
}
func (s refusingService) AddPeer(context.Context, Peer) error {
	s.reached("AddPeer")
	return nil
}
func (s refusingService) Message(context.Context, string, Message) (Replies, error) {
	s.reached("Message")
	return Replies{}, nil
}
func (s refusingService) Push(_ context.Context, _ string, _ PushRequest, r *StreamReader) (PushReply, error) {
	for {
		if _, _, err := r.Next(); err != nil {
			if err.Error() == "EOF" {
				s.reached("the end of a push stream")
			}
			return PushReply{}, err
		}
	}
}

// TestHostileIDsRefused (PROTOCOL §5): every route of the local and the
// peer API answers 400 to a malformed identifier, before the service sees
// the request.
func TestHostileIDsRefused(t *testing.T) {
	svc := refusingService{t: t}
	local := httptest.NewServer(NewLocalHandler(svc))
	defer local.Close()
	peer := httptest.NewServer(NewPeerHandler(svc, func(*http.Request) (string, error) { return goodNode, nil }))
	defer peer.Close()
	type call struct{ base, method, path, body string }
	calls := func(id string) map[string]call {
		e := escapeAll(id)
		msg := func(agent, move, from string) string {
			b, _ := json.Marshal(map[string]string{"type": "offer", "agent": agent, "move": move, "from": from, "to": goodNode})
			m, _ := json.Marshal(Message{Call: "offer", Body: b})
			return string(m)
		}
		stream := func(m string) string { return StreamMagic + fmt.Sprintf("message %d\n", len(m)) + m }
		return map[string]call{
			"agent":          {local.URL, "GET", "/v1/agents/" + e, ""},
			"stop":           {local.URL, "POST", "/v1/agents/" + e + "/stop", ""},
			"start":          {local.URL, "POST", "/v1/agents/" + e + "/start", ""},
			"discard":        {local.URL, "POST", "/v1/agents/" + e + "/discard", ""},
			"move status":    {local.URL, "GET", "/v1/agents/" + e + "/move", ""},
			"resolve":        {local.URL, "POST", "/v1/agents/" + e + "/move/resolve", "{}"},
			"move":           {local.URL, "POST", "/v1/agents/" + e + "/move", `{"to":"` + goodNode + `"}`},
			"move to":        {local.URL, "POST", "/v1/agents/" + goodAgent + "/move", string(mustJSON(t, MoveRequest{To: id}))},
			"remove peer":    {local.URL, "DELETE", "/v1/peers/" + e, ""},
			"add peer":       {local.URL, "POST", "/v1/peers", string(mustJSON(t, Peer{ID: id, Addr: "127.0.0.1:1"}))},
			"push":           {peer.URL, "POST", "/v1/peer/agents/" + e + "/push", StreamMagic + "blob sha256:" + strings.Repeat("0", 64) + " 0\n"},
			"message agent":  {peer.URL, "POST", PathPeerMessage, msg(id, goodMove, goodNode)},
			"message move":   {peer.URL, "POST", PathPeerMessage, msg(goodAgent, id, goodNode)},
			"message from":   {peer.URL, "POST", PathPeerMessage, msg(goodAgent, goodMove, id)},
			"pushed message": {peer.URL, "POST", "/v1/peer/agents/" + goodAgent + "/push", stream(msg(id, goodMove, goodNode))},
			"pushed move":    {peer.URL, "POST", "/v1/peer/agents/" + goodAgent + "/push", stream(msg(goodAgent, id, goodNode))},
		}
	}
	for _, id := range hostileIDs {
		for name, c := range calls(id) {
			t.Run(fmt.Sprintf("%s/%q", name, clip(id)), func(t *testing.T) {
				req, err := http.NewRequest(c.method, c.base+c.path, strings.NewReader(c.body))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var eb errorBody
				_ = json.NewDecoder(resp.Body).Decode(&eb)
				if resp.StatusCode != http.StatusBadRequest || eb.Error == nil || eb.Error.Code != "invalid" {
					t.Errorf("%s %s: HTTP %d %+v, want 400 invalid", c.method, c.path, resp.StatusCode, eb.Error)
				}
			})
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPushedMessageForAnotherAgent: a push stream's message must name the
// agent of the push's path.
func TestPushedMessageForAnotherAgent(t *testing.T) {
	b, _ := json.Marshal(map[string]string{"agent": "01HZX3K9Q8V7N6M5B4C3D2E1F9", "move": goodMove, "from": goodNode, "to": goodNode})
	if err := checkMessage(Message{Body: b}, goodAgent); err == nil {
		t.Fatal("a message for another agent was accepted")
	}
}

// FuzzCheckID: whatever CheckID accepts is one safe path component of the
// kind's fixed length.
func FuzzCheckID(f *testing.F) {
	for _, s := range append([]string{goodAgent, goodNode}, hostileIDs...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for kind, n := range map[IDKind]int{AgentID: 26, MoveID: 26, NodeID: nodeIDLen} {
			if CheckID(kind, s) != nil {
				continue
			}
			if len(s) != n || strings.ContainsAny(s, "/\\.\x00 ") || s != filepath.Base(s) {
				t.Errorf("CheckID(%s) accepted %q", kind, s)
			}
		}
	})
}
