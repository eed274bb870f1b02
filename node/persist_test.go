package node

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/vfs"
)

// sendLog records, in order, the source's record writes and the requests
// it sends, to check that nothing leaves while a record is not durable.
type sendLog struct {
	mu     sync.Mutex
	events []string
}

func (l *sendLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *sendLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

type loggedTransport struct {
	next http.RoundTripper
	log  *sendLog
}

func (t loggedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.log.add("send " + r.Header.Get(api.CallHeader))
	return t.next.RoundTrip(r)
}

// isSourceLog reports whether path is the source record log or the temp
// file it is rewritten through.
func isSourceLog(path string) bool {
	base := filepath.Base(path)
	return base == record.SourceFile || strings.HasPrefix(base, vfs.TempPrefix+record.SourceFile)
}

// TestSourcePersistBeforeSend fails the write, then the fsync, of each
// source record of a move in turn (PROTOCOL §5: a record is durable before
// any message of its step leaves): no request may be sent from the failed
// persist until a later record is durable, the activate of a failed
// ACTIVATE_SENT and the offer of a failed MIGRATING are never sent, and the
// move ends as the Source decides (the agent runs exactly once).
func TestSourcePersistBeforeSend(t *testing.T) {
	cases := []struct {
		record   string
		nth      int    // the record's place among the source's record writes
		lose     string // a call lost every time, steering the move
		never    string // a call that must never be sent
		outcome  string
		onTarget bool
	}{
		{"MIGRATING", 1, "", "offer", api.OutcomeRolledBack, false},
		{"ACTIVATE_SENT", 2, "", "activate", api.OutcomeRolledBack, false},
		{"RETIRED", 3, "", "", api.OutcomeCommitted, true},
		{"ROLLED_BACK", 2, "prepare", "", api.OutcomeRolledBack, false},
	}
	for _, c := range cases {
		for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync} {
			t.Run(fmt.Sprintf("%s/%s", c.record, op), func(t *testing.T) {
				log := &sendLog{}
				f := &faults{}
				ffs := vfs.NewFaulty(vfs.OS{})
				wrap := func(_ ID, rt http.RoundTripper) http.RoundTripper {
					return loggedTransport{next: faultTransport{next: rt, f: f}, log: log}
				}
				cl := newCluster(t, nodeOpts{fsys: ffs, wrap: wrap}, nodeOpts{})
				a, b := cl.nodes[0], cl.nodes[1]
				id := createAgent(t, a, "")
				var mu sync.Mutex
				seen, cleanup := 0, false
				ffs.OnOp(func(r vfs.OpRecord) error {
					if !isSourceLog(r.Path) {
						return nil
					}
					mu.Lock()
					defer mu.Unlock()
					switch {
					case r.Op == vfs.OpTruncate:
						cleanup = true // a failed append is cut off and synced: not a record
						return nil
					case r.Op == vfs.OpSync && cleanup:
						cleanup = false
						return nil
					case r.Op != op:
						return nil
					}
					if seen++; seen == c.nth {
						log.add("record failed")
						return vfs.ErrIO
					}
					log.add("record written")
					return nil
				})
				if c.lose != "" {
					f.set(c.lose, false, -1)
				}
				res := move(t, a, b, id)
				if res.Outcome != c.outcome {
					t.Fatalf("outcome %s (%s), want %s", res.Outcome, res.Reason, c.outcome)
				}
				holder := a
				if c.onTarget {
					holder = b
				}
				f.heal()
				waitSteps(t, holder, id, 3)
				ffs.OnOp(nil)
				checkPersistBeforeSend(t, log.all(), c.never)
				cl.checkHolder(holder, id)
			})
		}
	}
}

// checkPersistBeforeSend checks events: after a failed record write, no
// request is sent until a record is written, and never is never sent.
func checkPersistBeforeSend(t *testing.T, events []string, never string) {
	t.Helper()
	failed, blocked := false, false
	for i, e := range events {
		switch {
		case e == "record failed":
			failed, blocked = true, true
		case e == "record written":
			blocked = false
		case blocked:
			t.Errorf("event %d: %s while the failed record is not durable: %v", i, e, events)
		case failed && never != "" && e == "send "+never:
			t.Errorf("event %d: %s after its record failed: %v", i, e, events)
		}
	}
	if !failed {
		t.Fatalf("the record fault was never reached: %v", events)
	}
}
