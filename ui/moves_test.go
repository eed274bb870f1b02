package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

// The moves page pairs each moved event with the frozen event before it
// and the epoch event of its epoch, across pages of the journal, and
// shows each frozen window in the table and as a bar of the chart.
func TestMovesPageShowsFrozenWindows(t *testing.T) {
	f := newFakeService()
	f.addAt(journal.KindFrozen, 1, "2026-12-01T10:00:00.000Z", journal.Frozen{Reason: "move m1 to nb"})
	f.addAt(journal.KindMoved, 2, "2026-12-01T10:00:00.050Z", journal.Moved{From: "na", To: "nb", Epoch: 2})
	f.addAt(journal.KindEpoch, 2, "2026-12-01T10:00:00.0715Z", journal.EpochStart{Epoch: 2, Holder: "nb"})
	for i := range 1500 { // the next move is on another page of the journal
		f.addAt(journal.KindUser, 2, "2026-12-01T10:00:01Z", journal.UserMessage{Text: fmt.Sprintf("m%d", i)})
	}
	f.addAt(journal.KindFrozen, 2, "2026-12-01T11:00:00.000Z", journal.Frozen{Reason: "move m2 to na"})
	f.addAt(journal.KindMoved, 3, "2026-12-01T11:00:00.010Z", journal.Moved{From: "nb", To: "na", Epoch: 3})
	f.addAt(journal.KindEpoch, 3, "2026-12-01T11:00:00.030Z", journal.EpochStart{Epoch: 3, Holder: "na"})
	ts := newTestServer(t, f)
	c := browser(t)
	login(t, ts, c)
	body := readBody(t, get(t, c, ts.URL+"/agents/"+fakeAgent+"/moves"))
	for _, frag := range []string{
		`<tr class="move"><td>2</td><td class="id">na</td><td class="id">nb</td><td>2026-12-01T10:00:00.000Z</td><td>71.5 ms</td></tr>`,
		`<tr class="move"><td>3</td><td class="id">nb</td><td class="id">na</td><td>2026-12-01T11:00:00.000Z</td><td>30.0 ms</td></tr>`,
		`<rect x="10" y="0" width="20" height="100"`,
		`<rect x="40" y="58.04195804195804" width="20" height="41.95804195804196"`,
	} {
		if !strings.Contains(body, frag) {
			t.Errorf("the moves page lacks %q\n%s", frag, body)
		}
	}
}
