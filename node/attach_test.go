package node

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
)

// attachToJournal stores data as a blob of the agent's capsule on n and
// journals a user message that attaches it, with the agent stopped.
func attachToJournal(t *testing.T, n *Node, id string, data []byte) digest.Digest {
	t.Helper()
	if _, err := n.StopAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	a, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	d := digest.FromBytes(data)
	store := capsule.NewBlobStore(n.fsys, filepath.Join(a.capsule(), filepath.FromSlash(manifest.BlobsDir)))
	if _, err := store.PutExpect(d, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if err := a.openLog(a.holder.Holder()); err != nil {
		t.Fatal(err)
	}
	body := journal.UserMessage{Text: "see the attached file", Attachments: []journal.Attachment{
		{Blob: string(d), MediaType: "application/octet-stream", Name: "report.bin", Size: int64(len(data))}}}
	if _, err := a.log.Append(journal.KindUser, a.holder.Holder(), n.wallTime(), body); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMoveCarriesJournalAttachments checks that a blob a journal
// attachment names, which the workspace snapshot does not reference,
// travels with the agent and is in the new holder's capsule; and that a
// source that lost such a blob cannot move the agent (the target would
// hold a conversation naming a blob nobody has).
func TestMoveCarriesJournalAttachments(t *testing.T) {
	cl := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, "")
	d := attachToJournal(t, a, id, bytes.Repeat([]byte("attachment "), 3000))
	if _, err := a.StartAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	waitSteps(t, a, id, 2)
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	ag, _ := b.getTenant(id)
	got, err := os.ReadFile(filepath.Join(ag.capsule(), filepath.FromSlash(manifest.BlobsDir), d.Hex()))
	if err != nil || digest.FromBytes(got) != d {
		t.Fatalf("the new holder's capsule lacks the attachment's blob %s: %v", d.Short(), err)
	}
	cl.checkHolder(b, id)

	// The holder loses a second attachment's blob: the move must not commit.
	lost := attachToJournal(t, b, id, []byte("a blob about to be lost"))
	if err := os.Remove(filepath.Join(ag.capsule(), filepath.FromSlash(manifest.BlobsDir), lost.Hex())); err != nil {
		t.Fatal(err)
	}
	if _, err := b.StartAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	waitSteps(t, b, id, 2)
	if res := move(t, b, a, id); res.Outcome == api.OutcomeCommitted {
		t.Fatalf("a move whose source lost an attachment's blob committed: %+v", res)
	}
	waitSteps(t, b, id, 2)
	if got := cl.running(id); len(got) != 1 || got[0] != b.ID() {
		t.Fatalf("runners = %v, want only %s", got, b.ID())
	}
	// And its capsule says what it lost (FORMAT §3.2).
	probs := verifyCapsule(b.fsys, ag.capsule())
	if len(probs) != 1 || !strings.Contains(probs[0], lost.Hex()) || !strings.Contains(probs[0], "attachment") {
		t.Errorf("verify of the capsule that lost an attachment's blob: %v", probs)
	}
}
