package node

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/google/go-cmp/cmp"
)

// peerPair is a linked source a and target b (at dir), with a's client of b.
func peerPair(t *testing.T) (a, b *Node, dir string, c *api.PeerClient) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "b")
	a = newNode(t, filepath.Join(t.TempDir(), "a"), nodeOpts{})
	b = newNode(t, dir, nodeOpts{})
	(&cluster{t: t, nodes: []*Node{a, b}}).link()
	c, err := a.client(b.ID())
	if err != nil {
		t.Fatal(err)
	}
	return a, b, dir, c
}

// wireMsg is a move-protocol request of a to an agent, as a peer sends it.
func wireMsg(typ transfer.MsgType, agent, move string, epoch uint64, from, to ID) api.Message {
	m := transfer.Message{Type: typ, Agent: agent, Move: move, Epoch: epoch, From: string(from), To: string(to)}
	return api.Message{Call: string(typ), Body: mustJSON(&m)}
}

// blobStream is a push stream of blob frames (the digest of each frame's
// bytes, or bad for a digest that does not match) and an optional message.
func blobStream(t *testing.T, blobs [][]byte, bad bool, msg *api.Message) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := api.WriteStreamHeader(&b); err != nil {
		t.Fatal(err)
	}
	for _, blob := range blobs {
		d := digest.FromBytes(blob)
		if bad {
			d = digest.FromBytes(append([]byte("other "), blob...))
		}
		if _, err := api.WriteFrame(&b, api.Frame{Kind: api.FrameBlob, Digest: d, Size: int64(len(blob))}, bytes.NewReader(blob)); err != nil {
			t.Fatal(err)
		}
	}
	if msg != nil {
		m := mustJSON(msg)
		if _, err := api.WriteFrame(&b, api.Frame{Kind: api.FrameMessage, Size: int64(len(m))}, bytes.NewReader(m)); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestRefusedPeerRequestsLeaveNothing (issue 10 items 1 and 6, PROTOCOL
// §7.3): a push or a message about a well-formed agent ID the node does
// not know that the node refuses (an error, or a refused reply) leaves no
// folder, no file and no agent behind: `agent list` does not show it (it
// used to show it as retired) and `agent status` does not know it.
func TestRefusedPeerRequestsLeaveNothing(t *testing.T) {
	a, b, dir, c := peerPair(t)
	const mv = "01HZX3K9Q8V7N6M5B4C3D2E1F1"
	blob := [][]byte{[]byte("payload\n")}
	offer := func(epoch uint64, from, to ID) func(agent string) *api.Message {
		return func(agent string) *api.Message {
			m := wireMsg(transfer.MsgOffer, agent, mv, epoch, from, to)
			return &m
		}
	}
	push := func(call string, blobs [][]byte, bad bool, msg func(string) *api.Message) func(string) error {
		return func(agent string) error {
			var m *api.Message
			if msg != nil {
				m = msg(agent)
			}
			rep, err := c.Push(context.Background(), api.PushRequest{Agent: agent, Call: call}, bytes.NewReader(blobStream(t, blobs, bad, m)))
			if err == nil && !refusedReplies(rep.Messages) {
				return errors.New("accepted")
			}
			return nil
		}
	}
	message := func(msg func(string) *api.Message) func(string) error {
		return func(agent string) error {
			reps, err := c.Message(context.Background(), *msg(agent))
			if err == nil && !refusedReplies(reps.Messages) {
				return errors.New("accepted")
			}
			return nil
		}
	}
	prepare := func(agent string) *api.Message {
		m := wireMsg(transfer.MsgPrepare, agent, mv, 1, a.ID(), b.ID())
		return &m
	}
	cases := []struct {
		name, agent string
		call        func(agent string) error
	}{
		{"pre-copy blob with a wrong digest", "01HZX3K9Q8V7N6M5B4C3D2E1G0", push("push", blob, true, nil)},
		{"offer addressed to another node", "01HZX3K9Q8V7N6M5B4C3D2E1G1", message(offer(1, a.ID(), a.ID()))},
		{"offer at epoch 0", "01HZX3K9Q8V7N6M5B4C3D2E1G2", message(offer(0, a.ID(), b.ID()))},
		{"prepare of an unknown move", "01HZX3K9Q8V7N6M5B4C3D2E1G3", message(prepare)},
		{"blob, then an offer to another node", "01HZX3K9Q8V7N6M5B4C3D2E1G4", push("offer", blob, false, offer(1, a.ID(), a.ID()))},
		{"blob, then an offer claiming another sender", "01HZX3K9Q8V7N6M5B4C3D2E1G5", push("offer", blob, false, offer(1, b.ID(), b.ID()))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := treeOf(t, dir)
			if err := tc.call(tc.agent); err != nil {
				t.Fatalf("the request was %v, want it refused", err)
			}
			if diff := cmp.Diff(before, treeOf(t, dir)); diff != "" {
				t.Errorf("the refused request changed the data folder (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff([]listEntry{}, listView(t, b)); diff != "" {
				t.Errorf("agent list (-want +got):\n%s", diff)
			}
			if _, err := b.Agent(context.Background(), tc.agent); !errors.Is(err, api.ErrNotFound) {
				t.Errorf("agent status: %v, want %v", err, api.ErrNotFound)
			}
		})
	}
}

// TestUnheldAgentStates (issue 10 items 1 and 6, PROTOCOL §7.3): an agent
// a node never held is listed as incoming while a move into it is pending
// or while only pre-copied blobs of one are here, not as retired and not
// counted as hosted; once an incoming move is aborted and nothing of it is
// kept, the node does not list it (its records stay: they fence offers).
func TestUnheldAgentStates(t *testing.T) {
	a, b, dir, c := peerPair(t)
	const pre, off, mv = "01HZX3K9Q8V7N6M5B4C3D2E1F0", "01HZX3K9Q8V7N6M5B4C3D2E1F2", "01HZX3K9Q8V7N6M5B4C3D2E1F1"
	if _, err := c.Push(context.Background(), api.PushRequest{Agent: pre, Call: "push"}, bytes.NewReader(blobStream(t, [][]byte{[]byte("payload\n")}, false, nil))); err != nil {
		t.Fatal(err)
	}
	if reps, err := c.Message(context.Background(), wireMsg(transfer.MsgOffer, off, mv, 1, a.ID(), b.ID())); err != nil || reps.Messages[0].Call != string(transfer.MsgPromise) {
		t.Fatalf("offer: %+v, %v", reps, err)
	}
	want := []listEntry{{pre, api.StateIncoming}, {off, api.StateIncoming}}
	if diff := cmp.Diff(want, listView(t, b)); diff != "" {
		t.Errorf("agent list (-want +got):\n%s", diff)
	}
	if info, err := b.Info(context.Background()); err != nil || info.Agents != 0 {
		t.Errorf("info: %+v, %v; want 0 agents hosted", info, err)
	}
	if reps, err := c.Message(context.Background(), wireMsg(transfer.MsgAbort, off, mv, 1, a.ID(), b.ID())); err != nil || reps.Messages[0].Call != string(transfer.MsgAborted) {
		t.Fatalf("abort: %+v, %v", reps, err)
	}
	if diff := cmp.Diff(want[:1], listView(t, b)); diff != "" {
		t.Errorf("agent list after the abort (-want +got):\n%s", diff)
	}
	if _, err := b.Agent(context.Background(), off); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("agent status of the aborted move's agent: %v, want %v", err, api.ErrNotFound)
	}
	addr := b.Addr()
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b = newNodeAt(t, dir, addr, nodeOpts{})
	if diff := cmp.Diff(want[:1], listView(t, b)); diff != "" {
		t.Errorf("agent list after a restart (-want +got):\n%s", diff)
	}
}

// listEntry is the ID and state of an agent in `agent list`.
type listEntry struct{ ID, State string }

// listView is the ID and state of every agent n lists.
func listView(t *testing.T, n *Node) []listEntry {
	t.Helper()
	list, err := n.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := []listEntry{}
	for _, st := range list {
		out = append(out, listEntry{st.ID, st.State})
	}
	return out
}
