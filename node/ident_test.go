package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/digest"
	"github.com/google/go-cmp/cmp"
)

// pushBody is a push stream of one valid blob frame, or, if msg is not
// nil, of one message frame only (a blob before it would be stored for the
// well-formed agent of the push's path).
func pushBody(t *testing.T, msg *api.Message) []byte {
	t.Helper()
	var b bytes.Buffer
	blob := []byte("payload\n")
	if err := api.WriteStreamHeader(&b); err != nil {
		t.Fatal(err)
	}
	if msg == nil {
		if _, err := api.WriteFrame(&b, api.Frame{Kind: api.FrameBlob, Digest: digest.FromBytes(blob), Size: int64(len(blob))}, bytes.NewReader(blob)); err != nil {
			t.Fatal(err)
		}
	} else {
		m, _ := json.Marshal(msg)
		if _, err := api.WriteFrame(&b, api.Frame{Kind: api.FrameMessage, Size: int64(len(m))}, bytes.NewReader(m)); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestHostileIDsCreateNothing (issue 10 item 7, PROTOCOL §5): a trusted
// peer's push, message or pushed message naming a hostile agent or move
// ID, and a local request naming a hostile agent ID, are answered 400 and
// create nothing anywhere around the data folder; no bogus agent appears.
func TestHostileIDsCreateNothing(t *testing.T) {
	parent := t.TempDir()
	a := newNode(t, filepath.Join(t.TempDir(), "a"), nodeOpts{})
	b := newNode(t, filepath.Join(parent, "data"), nodeOpts{})
	(&cluster{t: t, nodes: []*Node{a, b}}).link()
	c, err := a.client(b.ID())
	if err != nil {
		t.Fatal(err)
	}
	local := httptest.NewServer(api.NewLocalHandler(b))
	defer local.Close()
	good := "01HZX3K9Q8V7N6M5B4C3D2E1F0"
	message := func(agent, move string) api.Message {
		body, _ := json.Marshal(map[string]any{"type": "offer", "agent": agent, "move": move, "epoch": 1, "from": string(a.ID()), "to": string(b.ID())})
		return api.Message{Call: "offer", Body: body}
	}
	hostile := []string{"..", "../../escape", "..%2F..%2Fescape", "../../../etc/passwd", "a/b", "/", "x\x00y",
		strings.Repeat("0", 27), strings.Repeat("A", 4096), "not-a-ulid", strings.ToLower(good)}
	before := treeOf(t, parent)
	for _, id := range hostile {
		agentMsg, moveMsg := message(id, good), message(good, id)
		calls := map[string]func() error{
			"push": func() error {
				_, err := c.Push(context.Background(), api.PushRequest{Agent: id, Call: "push"}, bytes.NewReader(pushBody(t, nil)))
				return err
			},
			"message agent": func() error { _, err := c.Message(context.Background(), agentMsg); return err },
			"message move":  func() error { _, err := c.Message(context.Background(), moveMsg); return err },
			"pushed message": func() error {
				_, err := c.Push(context.Background(), api.PushRequest{Agent: good, Call: "offer"}, bytes.NewReader(pushBody(t, &agentMsg)))
				return err
			},
			"pushed move": func() error {
				_, err := c.Push(context.Background(), api.PushRequest{Agent: good, Call: "offer"}, bytes.NewReader(pushBody(t, &moveMsg)))
				return err
			},
			"local start": func() error { return localCall(local.URL, "POST", "/v1/agents/"+escapeAll(id)+"/start") },
			"local get":   func() error { return localCall(local.URL, "GET", "/v1/agents/"+escapeAll(id)) },
		}
		for name, call := range calls {
			t.Run(fmt.Sprintf("%s/%.20q", name, id), func(t *testing.T) {
				var ae *api.Error
				if err := call(); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
					t.Errorf("got %v, want HTTP 400", err)
				}
			})
		}
	}
	if diff := cmp.Diff(before, treeOf(t, parent)); diff != "" {
		t.Errorf("hostile requests changed the files around the data folder (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(parent, "escape")); !os.IsNotExist(err) {
		t.Errorf("escape: %v, want it absent", err)
	}
	list, err := b.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 { // a refused request leaves no agent, not even the well-formed one a push named
		t.Errorf("agent list %+v, want it empty", list)
	}
}

// escapeAll percent-encodes every byte, so ".", "/" and NUL reach the
// router inside one path segment.
func escapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func localCall(base, method, path string) error {
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	return &api.Error{Status: resp.StatusCode, Code: "http"}
}

// TestMalformedAgentFolderNotLoaded: a folder under agents/ whose name is
// not an agent ID (one an earlier release let a hostile ID create) is not
// loaded as an agent, and is kept as it is.
func TestMalformedAgentFolderNotLoaded(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "agents", "..%2F..%2Fescape", "cas")
	if err := os.MkdirAll(junk, 0o700); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, dir, nodeOpts{})
	list, err := n.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Errorf("agent list %+v, want it empty", list)
	}
	if _, err := os.Stat(junk); err != nil {
		t.Errorf("the folder is gone: %v", err)
	}
}
