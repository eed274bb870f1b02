package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/schema"
)

func TestVersionJSON(t *testing.T) {
	var v versionInfo
	if err := json.Unmarshal([]byte(mustCLI(t, "version", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Release != schema.Release || v.Commit == "" || !strings.HasPrefix(v.Go, "go") {
		t.Errorf("version --json = %+v", v)
	}
	all := schema.AllKinds()
	if len(v.Schemas) != len(all) || len(v.Floors) != len(all) {
		t.Errorf("%d schemas and %d floors for %d kinds", len(v.Schemas), len(v.Floors), len(all))
	}
	for _, k := range all {
		h, _ := schema.Lookup(k)
		if v.Schemas[string(k)] != schema.Current[k] || v.Floors[string(k)] != h.Floor {
			t.Errorf("schema %s = %d from %d, want %d from %d", k, v.Schemas[string(k)], v.Floors[string(k)], schema.Current[k], h.Floor)
		}
	}
	for _, k := range []string{"manifest", "journal", "environment", "memory_index", "snapshot", "holder_log", "agent_meta", "peers", "host_record"} {
		if _, ok := v.Schemas[k]; !ok {
			t.Errorf("kind %s missing", k)
		}
	}
}

func TestVersionText(t *testing.T) {
	out := mustCLI(t, "version")
	if !strings.HasPrefix(out, "capsule 0.3.0\n") || !strings.Contains(out, "schema  journal       2 (reads from 1)") || !strings.Contains(out, "schema  environment   2 (reads from 1)") || !strings.Contains(out, "schema  stat_cache") {
		t.Errorf("version =\n%s", out)
	}
}

func TestCheckSchemasPassesForThisBuild(t *testing.T) {
	if err := checkSchemas(); err != nil {
		t.Fatal(err)
	}
}

// TestReleasesListEveryFixtureRelease: docs/RELEASES.md names every release
// whose fixtures are in testdata/fixtures with the commit they were made
// from, and the release this build is.
func TestReleasesListEveryFixtureRelease(t *testing.T) {
	doc, err := os.ReadFile("../../docs/RELEASES.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) > 3 {
			rows[strings.TrimSpace(cells[1])] = cells[2]
		}
	}
	if _, ok := rows[schema.Release]; !ok {
		t.Errorf("RELEASES.md has no row for %s", schema.Release)
	}
	for _, e := range fixtureReleases(t) {
		if len(e.Commit) != 40 || !strings.Contains(rows[e.Release], "`"+e.Commit[:7]+"`") {
			t.Errorf("RELEASES.md row of %s = %q, want its commit %s", e.Release, rows[e.Release], e.Commit)
		}
	}
}
