package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/transfer"
)

// call sends one message through the peer API.
func (n *Node) call(to ID, m transfer.Message) ([]api.Message, error) {
	c, err := n.client(to)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.RequestTimeout)
	defer cancel()
	rep, err := c.Message(ctx, api.Message{Call: string(m.Type), Body: body})
	if err != nil {
		return nil, err
	}
	return rep.Messages, nil
}

// pushMessage streams a request that carries an inventory (have, offer,
// prepare) as the message frame of a push: first the manifest and
// snapshot.json the target lacks (so that the message can leave its blob
// list off the wire: inventory by manifest), then for MsgPrepare the
// blobs it lists in Send and the journal tail after JournalFrom: one
// round trip for the whole delta.
func (n *Node) pushMessage(a *tenant, mr *moveRun, m transfer.Message) ([]api.Message, error) {
	wire, heads := mr.byManifest(m)
	blobs := heads
	var from, to transfer.JournalPos
	switch m.Type {
	case transfer.MsgPrepare:
		blobs = appendNew(blobs, m.Send)
		from, to = m.JournalFrom, m.Journal
	case transfer.MsgOffer:
		// The journal tail travels with the offer (harmless, like pre-copy:
		// it only extends the target's journal copy), so the target can
		// start the render its prepare needs one round trip earlier.
		if p, ok := mr.targetJournal(); ok && p.Count <= m.Journal.Count {
			from, to = p, m.Journal
		}
	}
	err := n.push(a, mr, blobs, from, to, &wire)
	if err != nil && m.Type == transfer.MsgOffer && to.Count > 0 {
		// The target's journal copy was not where this node thought: offer
		// without the tail (the prepare brings it).
		n.log.Info("offer with the journal tail failed; offering without it", "agent", a.id, "err", err)
		err = n.push(a, mr, blobs, transfer.JournalPos{}, transfer.JournalPos{}, &wire)
	}
	if err != nil {
		return nil, err
	}
	return mr.takeReplies(), nil
}

// push streams blobs, the journal events after from up to to, and
// optionally a message to the peer in one request. A blob the target may
// hold an older version of travels as a delta frame; when the stream used
// a base the target was only guessed to hold, a failed push is sent once
// more without it.
func (n *Node) push(a *tenant, mr *moveRun, blobs []transfer.Blob, from, to transfer.JournalPos, m *wireMessage) error {
	tail, start, err := a.journalTail(mr, from, to)
	if err != nil {
		return err
	}
	guess := m != nil && m.msg.Type == transfer.MsgHave
	plan := mr.planDeltas(a, blobs, guess)
	err = n.pushOnce(a, mr, blobs, tail, start, m, plan)
	if err != nil && plan.used() {
		mr.pushFailed(plan)
		if plan.guessed {
			n.log.Info("push with a guessed delta base failed; sending whole blobs", "agent", a.id, "err", err)
			plan = mr.planDeltas(a, blobs, false)
			err = n.pushOnce(a, mr, blobs, tail, start, m, plan)
		}
	} else if err != nil && m != nil {
		mr.pushFailed(plan)
	}
	if err == nil {
		mr.pushed(blobs, plan, m)
	}
	return err
}

func (n *Node) pushOnce(a *tenant, mr *moveRun, blobs []transfer.Blob, tail []byte, start uint64, m *wireMessage, plan deltaPlan) error {
	c, err := n.client(mr.to)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(n.writeStream(pw, mr, blobs, tail, start, m, plan)) }()
	req := api.PushRequest{Agent: a.id, Call: "push"}
	if m != nil {
		req.Call = string(m.msg.Type)
	} else {
		mr.mu.Lock()
		req.Manifest = mr.manifest // the target may build the next staging from it
		mr.mu.Unlock()
	}
	rep, err := c.Push(n.ctx, req, pr)
	pr.CloseWithError(errors.New("push done"))
	if err != nil {
		return err
	}
	mr.mu.Lock()
	mr.lastReplies = rep.Messages
	if rep.Render != nil {
		mr.render = rep.Render
	}
	mr.mu.Unlock()
	n.m.bytesSent.Add(float64(rep.Bytes))
	n.m.blobsSent.Add(float64(len(blobs)))
	mr.sent(rep.Bytes, blobs)
	return nil
}

func (n *Node) writeStream(w io.Writer, mr *moveRun, blobs []transfer.Blob, tail []byte, start uint64, m *wireMessage, plan deltaPlan) error {
	if err := api.WriteStreamHeader(w); err != nil {
		return err
	}
	for _, b := range blobs {
		if d, ok := plan.frames[b.Digest]; ok {
			if _, err := api.WriteFrame(w, d.f, bytesReader(d.z)); err != nil {
				return err
			}
			continue
		}
		if err := n.writeBlob(w, mr, b); err != nil {
			return err
		}
	}
	if len(tail) > 0 {
		f := api.Frame{Kind: api.FrameJournal, Count: start, Size: int64(len(tail))}
		if _, err := api.WriteFrame(w, f, bytesReader(tail)); err != nil {
			return err
		}
	}
	if m == nil {
		return nil
	}
	body, err := json.Marshal(api.Message{Call: string(m.msg.Type), Body: mustJSON(m.msg), Inventory: m.inventory})
	if err != nil {
		return err
	}
	_, err = api.WriteFrame(w, api.Frame{Kind: api.FrameMessage, Size: int64(len(body))}, bytesReader(body))
	return err
}

func (n *Node) writeBlob(w io.Writer, mr *moveRun, b transfer.Blob) error {
	mr.mu.Lock()
	mem, inMem := mr.src.mem[b.Digest]
	path, ok := mr.src.paths[b.Digest]
	mr.mu.Unlock()
	if inMem {
		_, err := api.WriteFrame(w, api.Frame{Kind: api.FrameBlob, Digest: b.Digest, Size: b.Size}, bytesReader(mem))
		return err
	}
	if !ok {
		return fmt.Errorf("push: %s is not in the inventory", b.Digest.Short())
	}
	f, err := n.fsys.Open(path)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	defer f.Close()
	_, err = api.WriteFrame(w, api.Frame{Kind: api.FrameBlob, Digest: b.Digest, Size: b.Size}, f)
	return err
}

// journalTail returns the journal lines after from up to to, and the event
// count they follow. When from does not name an event of this journal the
// whole journal up to to is sent (starting after 0 events). The journal
// file is append-only, one event per line, so the tail is a byte range:
// the offsets of positions this move's inventories recorded are known, and
// any other is found by counting lines; no event is decoded but the one
// whose ID a position names.
func (a *tenant) journalTail(mr *moveRun, from, to transfer.JournalPos) ([]byte, uint64, error) {
	if to.Count == 0 {
		return nil, 0, nil
	}
	f, err := a.n.fsys.Open(filepath.Join(a.capsule(), journalInCap))
	if err != nil {
		return nil, 0, fmt.Errorf("journal tail: %w", err)
	}
	defer f.Close()
	end, okEnd := mr.mark(to)
	start, okStart := mr.mark(from)
	if okEnd && okStart && from.Count <= to.Count {
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil {
			return nil, 0, fmt.Errorf("journal tail: %w", err)
		}
		return buf, from.Count, nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, fmt.Errorf("journal tail: %w", err)
	}
	end, ok := lineOffset(data, to)
	if !ok {
		return nil, 0, fmt.Errorf("journal tail: the journal does not hold %d events ending at %s", to.Count, to.Head)
	}
	startAt := from.Count
	start, ok = lineOffset(data, from)
	if !ok || from.Count > to.Count {
		start, startAt = 0, 0
	}
	return data[start:end], startAt, nil
}

// lineOffset returns the offset just after the line of event p.Count of a
// journal, checking that event's ID is p.Head.
func lineOffset(data []byte, p transfer.JournalPos) (int64, bool) {
	if p.Count == 0 {
		return 0, true
	}
	off, lineStart := 0, 0
	for i := uint64(0); i < p.Count; i++ {
		k := bytes.IndexByte(data[off:], '\n')
		if k < 0 {
			return 0, false
		}
		lineStart, off = off, off+k+1
	}
	events, err := journal.Decode(bytes.NewReader(data[lineStart:off]))
	if err != nil || len(events) != 1 || events[0].ID != p.Head {
		return 0, false
	}
	return int64(off), true
}
