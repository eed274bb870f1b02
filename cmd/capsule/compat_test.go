package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/compat"
	"github.com/agentcapsule/capsule/schema"
)

// compatCheck runs capsule compat check --json and decodes its report.
func compatCheck(t *testing.T, args ...string) (*compat.Report, int, string) {
	t.Helper()
	out, errOut, code := capsuleCLI(t, append([]string{"compat", "check", "--json"}, args...)...)
	var rep compat.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("compat check %v: exit %d, %v\n%s%s", args, code, err, out, errOut)
	}
	return &rep, code, errOut
}

// Every capsule and archive of every release's fixtures, checked against
// every release: under 0.1.0 the conversations, whose journals name
// read_file and list_files (built in from 0.2.0), refuse restore (exit 1);
// under 0.2.0 they restore, and so do the node's agents, whose journals
// name the built-in counter tool, and the empty capsule (exit 0).
func TestCompatCheckFixtures(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(fixturesRoot, "*", "capsules", "*"))
	archives, _ := filepath.Glob(filepath.Join(fixturesRoot, "*", "archives", "*"))
	nodes, _ := filepath.Glob(filepath.Join(fixturesRoot, "*", "nodes", "*", "agents", "*", "capsule"))
	if len(paths) == 0 || len(archives) == 0 || len(nodes) == 0 {
		t.Fatal("no fixtures: run scripts/fixtures.sh")
	}
	missing := map[string]string{"conversation": "read_file", "dangling": "list_files"}
	for _, rel := range []string{"0.1.0", "0.2.0"} {
		for _, p := range append(append(paths, archives...), nodes...) {
			name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p), ".zst"), ".tar"), ".capsule")
			name = strings.TrimSuffix(name, "-signed")
			rep, code, _ := compatCheck(t, p, "--release", rel)
			var tools []string
			for _, is := range rep.Issues {
				tools = append(tools, is.Code+":"+is.Tool)
			}
			want := ""
			if m := missing[name]; m != "" && rel == "0.1.0" {
				want = compat.CodeToolMissing + ":" + m
			}
			// 0.3.0's empty capsule holds no journal line, so its journal is
			// version 1 and its other kinds are 0.2.0's: 0.2.0 reads it.
			readable := fixtureRelease(p) == "0.3.0" && rel == "0.2.0" && name == "empty"
			if fixRel := fixtureRelease(p); fixRel != rel && fixRel != "0.1.0" && !readable {
				// written at versions rel does not read (0.2.0's spec and index
				// for 0.1.0): refused, naming the kinds (roll back with capsule
				// migrate --to rel first)
				if !rep.Refused || code != 1 || !strings.Contains(strings.Join(tools, " "), "schema:") {
					t.Errorf("%s --release %s: exit %d, refused %v, issues %v; want the versions refused", p, rel, code, rep.Refused, tools)
				}
				continue
			}
			if strings.Join(tools, " ") != want || rep.Refused != (want != "") || code != map[bool]int{true: 1, false: 0}[want != ""] {
				t.Errorf("%s --release %s: exit %d, refused %v, issues %v; want %q", p, rel, code, rep.Refused, tools, want)
			}
			if rep.Release != rel || len(rep.Kinds) != 7 {
				t.Errorf("%s: release %q, %d kinds", p, rep.Release, len(rep.Kinds))
			}
		}
	}
}

// A capsule whose spec is version 2 is refused by every release that reads
// version 1 only (0.1.0 at least), naming the kind, the version and the
// release; the text form says so too.
func TestCompatCheckNewerSpec(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v2")
	sh(t, nil, "cp", "-a", filepath.Join(fixturesRoot, "0.1.0", "capsules", "empty"), dir)
	sh(t, nil, "chmod", "-R", "u+w", dir)
	sh(t, nil, "cp", "../../envspec/testdata/example.v2.spec.json", filepath.Join(dir, "environment", "spec.json"))
	m, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(m, &doc); err != nil {
		t.Fatal(err)
	}
	doc["schemas"].(map[string]any)["environment"] = 2 // compat check reads no digest
	m, _ = json.Marshal(doc)
	writeTree(t, dir, map[string]string{"manifest.json": string(m)})
	for _, rel := range []string{"0.1.0", "0.2.0"} {
		r, _ := compat.LookupRelease(rel)
		refuse := r.Reads[schema.Environment].Current < 2 // the releases that read version 1 only
		rep, code, _ := compatCheck(t, dir, "--release", rel)
		if (code == exitVerify) != refuse || rep.Refused != refuse {
			t.Fatalf("--release %s: exit %d, refused %v, want refused %v", rel, code, rep.Refused, refuse)
		}
		for _, k := range rep.Kinds {
			if (k.Action == compat.ActionRefuse) != (refuse && k.Kind == "environment") {
				t.Errorf("--release %s: %s %s", rel, k.Kind, k.Action)
			}
			if refuse && k.Kind == "environment" && !strings.Contains(k.Reason, "version 2 is newer than release "+rel) {
				t.Errorf("reason %q", k.Reason)
			}
		}
	}
	out, _, code := capsuleCLI(t, "compat", "check", dir, "--release", "0.1.0")
	if code != exitVerify || !strings.Contains(out, "environment   version 2") || !strings.Contains(out, "restore would refuse") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestCompatCheckUnknownRelease(t *testing.T) {
	_, errOut, code := capsuleCLI(t, "compat", "check", filepath.Join(fixturesRoot, "0.1.0", "capsules", "empty"), "--release", "9.9.9")
	if code != exitUsage || !strings.Contains(errOut, "0.1.0") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// fixtureRelease is the release folder a fixture path lies in.
func fixtureRelease(p string) string {
	rel, err := filepath.Rel(fixturesRoot, p)
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return first
}
