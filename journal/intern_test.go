package journal

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// manyMachines writes n events round-robin over m machines, each event's
// clock above every event before it.
func manyMachines(t testing.TB, m, n int) []Event {
	t.Helper()
	ws := make([]*Writer, m)
	for i := range ws {
		ws[i] = NewWriter(fmt.Sprintf("m%02d", i))
	}
	var out []Event
	for i := 0; i < n; i++ {
		e, err := ws[i%m].Next(KindUser, 1, "2026-01-01T00:00:00Z", UserMessage{Text: fmt.Sprint("message ", i)})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			w.Observe(&e)
		}
		out = append(out, e)
	}
	return out
}

// TestCheckManyMachines reads journals with fewer and more machines than
// the interner keeps in its short lists (maxRecent), so both its lists and
// its maps serve names and prev ids: every event must come back as written.
func TestCheckManyMachines(t *testing.T) {
	for _, m := range []int{1, maxRecent, maxRecent + 1, 3 * maxRecent} {
		t.Run(fmt.Sprint(m, " machines"), func(t *testing.T) {
			want := manyMachines(t, m, 40*m)
			got, probs, err := Check(bytes.NewReader(join(linesOf(want))))
			if err != nil || len(probs) > 0 {
				t.Fatalf("Check: %v %v", err, probs)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
