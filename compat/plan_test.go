package compat

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/schema"
)

func readFixture(t *testing.T, dir string) Input {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return Input{Manifest: read("manifest.json"), Spec: read("environment/spec.json"),
		Index: read("memory/vector_index/index.json"), Journal: bytes.NewReader(read("memory/timeline_events.jsonl"))}
}

// Every capsule an earlier release wrote, checked against this release and
// against one that reads version 2: what each kind does, and that every
// tool its journal names is served (0.1.0's conversations name read_file
// and list_files, built in from 0.2.0; the node's agents name its built-in
// counter).
func TestFixturesPlan(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/fixtures/*/capsules/*")
	nodes, _ := filepath.Glob("../testdata/fixtures/*/nodes/*/agents/*/capsule")
	if len(dirs) == 0 || len(nodes) == 0 {
		t.Fatal("no fixtures: run scripts/fixtures.sh")
	}
	for _, r := range []Release{Current(), nextRelease()} {
		for _, d := range append(dirs, nodes...) {
			rep, err := Check(readFixture(t, d), r)
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			var actions, wantActions []string
			for _, k := range rep.Kinds {
				actions = append(actions, k.Kind+"="+k.Action)
			}
			have := fixtureVersions(t, d)
			for _, k := range schema.Kinds { // each kind at the version the fixture's manifest names
				a := ActionRead
				if r.Reads[k].Current > have[k] {
					a = ActionMigrate
				}
				wantActions = append(wantActions, string(k)+"="+a)
			}
			if got, want := strings.Join(actions, " "), strings.Join(wantActions, " "); got != want {
				t.Errorf("%s under %s: %s, want %s", d, r.Name, got, want)
			}
			var tools []string
			for _, is := range rep.Issues {
				tools = append(tools, is.Code+":"+is.Tool)
			}
			var want []string
			if waitingAgent(t, d) {
				// Left waiting for the approval of its write_file call
				// (scripts/fixtures.sh, from 0.3.0): it resumes waiting.
				want = []string{CodeApprovalNeeded + ":write_file"}
			}
			if strings.Join(tools, " ") != strings.Join(want, " ") || rep.Refused {
				t.Errorf("%s under %s: issues %v, refused %v; want issues %v, not refused", d, r.Name, tools, rep.Refused, want)
			}
		}
	}
}

// waitingAgent reports whether the capsule folder d is the agent a node
// fixture left waiting for an approval (expect/nodes/ids.json "waiting").
func waitingAgent(t *testing.T, d string) bool {
	t.Helper()
	agentDir := filepath.Dir(d)
	root := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(agentDir)))) // testdata/fixtures/RELEASE
	b, err := os.ReadFile(filepath.Join(root, "expect", "nodes", "ids.json"))
	if err != nil {
		return false // not a node fixture
	}
	var ids struct {
		Waiting string `json:"waiting"`
	}
	if err := json.Unmarshal(b, &ids); err != nil {
		t.Fatalf("%s: ids.json: %v", root, err)
	}
	return ids.Waiting != "" && ids.Waiting == filepath.Base(agentDir)
}

// Release 0.1.0 has none of the workspace tools, so it refuses its own
// conversations (the fixture generator's journals name them) and a
// rollback to it of any journal that used them.
func TestFixturesPlan010(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/fixtures/0.1.0/capsules/*")
	if len(dirs) == 0 {
		t.Fatal("no fixtures: run scripts/fixtures.sh")
	}
	missing := map[string]string{"conversation": "read_file", "dangling": "list_files"}
	for _, d := range dirs {
		rep, err := Check(readFixture(t, d), Release010())
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		var tools []string
		for _, is := range rep.Issues {
			tools = append(tools, is.Code+":"+is.Tool)
		}
		var want []string
		if m := missing[filepath.Base(d)]; m != "" {
			want = []string{CodeToolMissing + ":" + m}
		}
		if diff := cmp.Diff(want, tools); diff != "" {
			t.Errorf("%s under 0.1.0: issues (-want +got):\n%s", d, diff)
		}
		if rep.Refused != (len(want) > 0) {
			t.Errorf("%s under 0.1.0: refused %v", d, rep.Refused)
		}
		delete(missing, filepath.Base(d))
	}
	if len(missing) > 0 {
		t.Errorf("fixtures not found: %v", missing)
	}
}

// A capsule holding version 2 is refused by a release that reads version 1
// only, naming the kind, the version and the release.
func TestNewerVersionRefused(t *testing.T) {
	spec := specV2(t, nil)
	j := newJournal(t)
	j.add("", 2, "user", map[string]string{"text": "hi"})
	for _, r := range []Release{Release010(), Current()} {
		rep := check(t, spec, j, r)
		var refused, want []string
		for _, k := range rep.Kinds {
			if k.Action == ActionRefuse {
				refused = append(refused, k.Kind)
				mustContain(t, k.Reason, "version 2", "release "+r.Name, "up to 1")
			}
			if (k.Kind == "journal" || k.Kind == "environment") && r.Reads[schema.Kind(k.Kind)].Current < 2 {
				want = append(want, k.Kind)
			}
		}
		if rep.Refused != (len(want) > 0) {
			t.Errorf("%s: refused %v, want %v", r.Name, rep.Refused, want)
		}
		if d := cmp.Diff(want, refused); d != "" {
			t.Errorf("%s: refused kinds (-want +got):\n%s", r.Name, d)
		}
	}
	rep := check(t, spec, j, nextRelease())
	if rep.Refused {
		t.Errorf("next refuses: %+v", rep.Issues)
	}
}

// The steps listed are the registry's: a version-1 spec under a release
// that writes version 2 goes through environment 1 to 2.
func TestStepsListed(t *testing.T) {
	rep := check(t, []byte(`{"version":1,"workdir":"","env":{},"secrets":[],"tools":[],"sandbox":{"network":"none"}}`), nil, nextRelease())
	for _, k := range rep.Kinds {
		if k.Kind != string(schema.Environment) {
			continue
		}
		steps, _ := schema.Steps(schema.Environment, 1, 2)
		if len(k.Steps) != 1 || k.Steps[0].Summary != steps[0].Summary || k.Action != ActionMigrate {
			t.Errorf("environment: %+v", k)
		}
	}
}

// A version-1 line of a kind version 2 adds grants nothing and refuses.
func TestV1LineOfV2KindRefused(t *testing.T) {
	j := newJournal(t)
	id := j.add("", 1, "approval", map[string]string{"call_id": "1", "decision": "approved"})
	rep := check(t, specV2(t, nil), j, nextRelease())
	if d := cmp.Diff([]issueSummary{{CodeV1Authority, ActionRefuse, "", []string{id}}}, summaries(rep.Issues)); d != "" {
		t.Errorf("issues (-want +got):\n%s", d)
	}
}

// fixtureVersions reads the schema versions a fixture's manifest names.
func fixtureVersions(t *testing.T, dir string) map[schema.Kind]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Schemas map[schema.Kind]int `json:"schemas"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Schemas
}
