package compat

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The discard policy (FORMAT §11.9.4): only an ephemeral agent may be
// discarded, and never one whose journal holds an approval, usage above the
// spec's bound or a dispatched external effect; each refusal names its
// event.
func TestCanDiscard(t *testing.T) {
	type ref struct{ Code, Event string }
	eph := map[string]any{"ephemeral": true, "discard_max_tokens": 1000}
	servers := []any{server("web", "read", "never", nil), server("pay", "external", "required", nil)}
	for _, tc := range []struct {
		name      string
		lifecycle map[string]any
		build     func(j *jb)
		want      func(j *jb) []ref
	}{
		{"not ephemeral", map[string]any{"ephemeral": false}, func(j *jb) {},
			func(j *jb) []ref { return []ref{{CodeNotEphemeral, ""}} }},
		{"ephemeral, cheap and read-only", eph, func(j *jb) {
			j.usage("u1", 300, 200)
			j.usage("u2", 400, 100)
			j.call("", 2, "1", "web.search")
			j.dispatch("", "1", "read")
			j.result("", 2, "1", "web.search")
			j.call("", 1, "2", "counter.increment")
			j.result("", 1, "2", "counter.increment")
		}, func(j *jb) []ref { return []ref{} }},
		{"usage above the bound", eph, func(j *jb) {
			j.usage("u1", 300, 200)
			j.usage("u2", 400, 101)
			j.usage("u3", 1, 1)
		}, func(j *jb) []ref { return []ref{{CodeUsage, j.id("u2")}} }},
		{"no bound: any usage", map[string]any{"ephemeral": true}, func(j *jb) { j.usage("u1", 1, 0) },
			func(j *jb) []ref { return []ref{{CodeUsage, j.id("u1")}} }},
		{"an approval", eph, func(j *jb) {
			j.call("", 2, "1", "pay.send")
			q := j.request("", "1", "pay.send", fakeDigest("spec"))
			j.decide("a", "1", q, "approved")
		}, func(j *jb) []ref { return []ref{{CodeApproval, j.id("a")}} }},
		{"a denial", eph, func(j *jb) {
			j.call("", 2, "1", "pay.send")
			q := j.request("", "1", "pay.send", fakeDigest("spec"))
			j.decide("a", "1", q, "denied")
		}, func(j *jb) []ref { return []ref{{CodeApproval, j.id("a")}} }},
		{"an external dispatch", eph, func(j *jb) {
			j.call("", 2, "1", "pay.send")
			j.dispatch("d", "1", "external")
		}, func(j *jb) []ref { return []ref{{CodeEffect, j.id("d")}} }},
		{"a version-1 call of an unknown tool with a result", eph, func(j *jb) {
			j.call("", 1, "1", "gone.fetch")
			j.result("r", 1, "1", "gone.fetch")
		}, func(j *jb) []ref { return []ref{{CodeEffect, j.id("r")}} }},
		{"a version-1 call of a built-in workspace tool with a result", eph, func(j *jb) {
			j.call("", 1, "1", "read_file")
			j.result("", 1, "1", "read_file")
			j.call("", 1, "2", "write_file")
			j.result("", 1, "2", "write_file")
		}, func(j *jb) []ref { return []ref{} }},
		{"a version-1 call without a result", eph, func(j *jb) { j.call("", 1, "1", "gone.fetch") },
			func(j *jb) []ref { return []ref{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := specV2(t, map[string]any{"mcp_servers": servers, "lifecycle": tc.lifecycle})
			j := newJournal(t)
			tc.build(j)
			d, err := CanDiscard(spec, bytes.NewReader(j.bytes()), Current())
			if err != nil {
				t.Fatal(err)
			}
			got := []ref{}
			for _, r := range d.Refusals {
				got = append(got, ref{r.Code, r.Event})
				if r.Event != "" {
					mustContain(t, r.Message, r.Event)
				}
			}
			want := tc.want(j)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("refusals (-want +got):\n%s", diff)
			}
			if d.Allowed != (len(want) == 0) {
				t.Errorf("allowed %v with refusals %v", d.Allowed, got)
			}
		})
	}
}

// A version-1 spec cannot declare an agent ephemeral, so no agent an
// earlier release wrote may be discarded.
func TestCanDiscardV1Spec(t *testing.T) {
	v1 := []byte(`{"version":1,"workdir":"","env":{},"secrets":[],"tools":[],"sandbox":{"network":"none"}}`)
	d, err := CanDiscard(v1, nil, Current())
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || len(d.Refusals) != 1 || d.Refusals[0].Code != CodeNotEphemeral {
		t.Errorf("got %+v", d)
	}
}
