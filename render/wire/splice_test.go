package wire

import (
	"errors"
	"testing"

	"github.com/agentcapsule/capsule/render"
	"github.com/google/go-cmp/cmp"
)

// TestCut checks that a body is cut around its top-level list member
// only: a member of the same name deeper down, or a string that spells
// the key or holds brackets, is not the list.
func TestCut(t *testing.T) {
	tests := []struct {
		name, body     string
		prefix, suffix string
		elems          []string
		err            error
	}{
		{name: "nested key first", body: `{"a":{"messages":[1]},"messages":[{"x":"]"},2],"z":"\"messages\":[]"}`,
			prefix: `{"a":{"messages":[1]},"messages":[`, elems: []string{`{"x":"]"}`, `2`}, suffix: `],"z":"\"messages\":[]"}`},
		{name: "empty list", body: `{"messages":[],"model":"m"}`, prefix: `{"messages":[`, elems: []string{}, suffix: `],"model":"m"}`},
		{name: "escapes in strings", body: `{"s":"a\\\"]","messages":["\"],\\",{"k":[1,{"x":null}]},true]}`,
			prefix: `{"s":"a\\\"]","messages":[`, elems: []string{`"\"],\\"`, `{"k":[1,{"x":null}]}`, `true`}, suffix: `]}`},
		{name: "whitespace", body: `{"messages": [1]}`, err: errShape},
		{name: "no list", body: `{"model":"m"}`, err: errShape},
		{name: "not an array", body: `{"messages":{"a":1}}`, err: errShape},
		{name: "not an object", body: `[1]`, err: errShape},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := cut([]byte(tc.body), "messages")
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			elems := []string{}
			for _, e := range f.elems {
				elems = append(elems, string(e))
			}
			got := []string{string(f.prefix), string(f.suffix)}
			want := []string{tc.prefix, tc.suffix}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("prefix, suffix (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.elems, elems); d != "" {
				t.Errorf("elements (-want +got):\n%s", d)
			}
		})
	}
}

// TestRuns checks where runs end: for Anthropic and Gemini, only between
// an item that ends on one role and one that starts with the other.
func TestRuns(t *testing.T) {
	user := userItem("u")
	step := stepItem(false)
	looped := stepItem(true) // a step with results ends on the user side
	items := []render.Item{user, user, step, step, looped, user, looped, step}
	for _, tc := range []struct {
		api  render.API
		want []int
	}{
		{render.Anthropic, []int{2, 4, 1, 1}},
		{render.Gemini, []int{2, 4, 1, 1}},
		{render.OpenAIChat, []int{1, 1, 1, 1, 1, 1, 1, 1}},
	} {
		var got []int
		for _, r := range runs(tc.api, items) {
			got = append(got, len(r))
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: run lengths (-want +got):\n%s", tc.api, d)
		}
	}
}

func userItem(text string) render.Item { return render.Item{Kind: render.ItemUser, Text: text} }

// stepItem is a step with one call, and its result when answered.
func stepItem(answered bool) render.Item {
	st := &render.Step{Parts: []render.Part{{Kind: render.PartCall, Call: render.Call{ID: "c", Name: "t"}}}}
	if answered {
		st.Results = []render.Result{{CallID: "c", Name: "t", Content: "ok"}}
	}
	return render.Item{Kind: render.ItemStep, Step: st}
}
