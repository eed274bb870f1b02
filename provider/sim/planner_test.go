package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

// The planner's arguments validate under each schema and take the
// request's key=value where a property has that name.
func TestArgsForSchemas(t *testing.T) {
	cases := []struct {
		name, schema, request, want string
	}{
		{"enum and minimum", `{"type":"object","properties":{"mode":{"enum":["a","b"]},"n":{"type":"integer","minimum":3}},"required":["mode","n"]}`, "go", `{"mode":"a","n":3}`},
		{"request values", `{"type":"object","properties":{"n":{"type":"integer"},"q":{"type":"string"},"x":{"type":"boolean"}},"required":["q"]}`, `do n=7 q="two words" x=true.`, `{"n":7,"q":"two words","x":true}`},
		{"path from request", `{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`, "fix cmd/main.go please", `{"file_path":"cmd/main.go"}`},
		{"nested and arrays", `{"type":"object","properties":{"o":{"type":"object","properties":{"k":{"type":"string","minLength":15}},"required":["k"]},"l":{"type":"array","items":{"type":"number"},"minItems":2}},"required":["o","l"]}`, "", `{"l":[0,0],"o":{"k":"capsule-simxxxx"}}`},
		{"Gemini type names", `{"type":"OBJECT","properties":{"s":{"type":"STRING"}},"required":["s"]}`, "", `{"s":"capsule-sim"}`},
		{"no schema", ``, "", `{}`},
	}
	for _, c := range cases {
		got, err := argsFor(tool{name: "t", schema: json.RawMessage(c.schema)}, c.request)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s: args = %s, want %s", c.name, got, c.want)
		}
	}
}

// A schema the planner cannot satisfy is reported, not sent.
func TestPlannerUnsatisfiableSchema(t *testing.T) {
	c := conversation{request: "go", tools: []tool{{name: "t", schema: json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","pattern":"^[0-9]+$"}},"required":["s"]}`)}}}
	got := plan(c)
	if len(got.calls) != 0 || !strings.Contains(got.text, "cannot build valid arguments for t") {
		t.Fatalf("plan = %+v, want no call and the reason", got)
	}
}

// The planner calls the tools the request names in the order it names
// them, one per step, all at once when asked for parallel calls, and
// then answers citing every result.
func TestPlannerSteps(t *testing.T) {
	tools := []tool{{name: "search"}, {name: "read_file"}, {name: "list_files"}}
	c := conversation{request: "read_file then search", tools: tools}
	if got := plan(c); len(got.calls) != 1 || got.calls[0].name != "read_file" {
		t.Fatalf("first step = %+v, want read_file", got)
	}
	c.called, c.results = []string{"read_file"}, []result{{name: "read_file", content: "A"}}
	if got := plan(c); len(got.calls) != 1 || got.calls[0].name != "search" {
		t.Fatalf("second step = %+v, want search", got)
	}
	c.called, c.results = append(c.called, "search"), append(c.results, result{name: "search", content: "B", isError: true})
	got := plan(c)
	if len(got.calls) != 0 || !strings.Contains(got.text, `read_file returned "A"`) || !strings.Contains(got.text, `search failed with "B"`) {
		t.Fatalf("answer = %+v, want it to cite both results", got)
	}
	par := plan(conversation{request: "all three in parallel", tools: tools})
	if len(par.calls) != 3 {
		t.Fatalf("parallel step = %+v, want the three offered tools at once", par)
	}
	if e := answer(Echo, conversation{request: "hi", tools: tools}); e.text != "capsule-sim/echo: hi" || len(e.calls) != 0 {
		t.Fatalf("echo = %+v", e)
	}
}

// A journal tool name an API refuses (a dot, for Anthropic) is offered
// hashed by render; a request naming the journal's name calls it, and a
// name that only looks hashed is not mistaken for another tool.
func TestPlannerMatchesHashedNames(t *testing.T) {
	tools := []tool{{name: "read_file"}, {name: "team_post_HsTGj2Yt"}, {name: "team_x"}}
	got := plan(conversation{request: "Tell the team: call team.post with message=hi", tools: tools})
	if len(got.calls) != 1 || got.calls[0].name != "team_post_HsTGj2Yt" {
		t.Fatalf("plan = %+v, want team_post_HsTGj2Yt", got)
	}
	if _, ok := hashedStem("team_post_Hs-Gj2Yt"); ok {
		t.Fatal("a suffix with a dash is not render's hash")
	}
	if got := plan(conversation{request: "read_file then team.post", tools: tools}); len(got.calls) != 1 || got.calls[0].name != "read_file" {
		t.Fatalf("plan = %+v, want read_file first", got)
	}
}
