package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/schema"
)

// nodeRecordKinds names the kind of every record file a node keeps outside
// the capsule folders, by its path below the data folder ("*" is an agent
// ID). A file a fixture holds that is neither listed here nor inside a
// capsule, a workspace, a blob store or a shadow fails the test: a record
// that package schema does not know cannot be migrated.
var nodeRecordKinds = map[string]schema.Kind{
	"node.key":                schema.NodeKey,
	"peers.json":              schema.Peers,
	"secrets.json":            schema.Secrets,
	"node.lock.json":          schema.HostRecord,
	"agents/*/holder.jsonl":   schema.HolderLog,
	"agents/*/holder.json":    schema.HolderLog,
	"agents/*/source.jsonl":   schema.SourceLog,
	"agents/*/source.json":    schema.SourceLog,
	"agents/*/agent.json":     schema.AgentMeta,
	"agents/*/shadow.json":    schema.Shadow,
	"agents/*/statcache.json": schema.StatCache,
	"agents/*/incoming.jsonl": schema.Journal,
	// the node's scratch copy of the capsule's working memory (FORMAT §11.1)
	"agents/*/working_memory.md": schema.Session,
	// an atomic write of a record that a SIGKILL cut before its rename (the
	// crashed move of the fixtures): never read, the record is the named file
	"agents/*/.tmp-*":     "",
	"agents/*/capsule/**": "",
	"agents/*/work/**":    "",
	"agents/*/cas/**":     "",
	"agents/*/shadow/**":  "",
	"agents/*/staging/**": "",
	"agents/*/fresh/**":   "",
	"node.lock":           "",
}

func kindOfNodeFile(rel string) (schema.Kind, bool) {
	parts := strings.Split(rel, "/")
	if len(parts) > 1 && parts[0] == "agents" {
		parts[1] = "*"
	}
	for i := len(parts); i > 0; i-- {
		p := strings.Join(parts[:i], "/")
		if i < len(parts) {
			p += "/**"
		}
		if k, ok := nodeRecordKinds[p]; ok {
			return k, true
		}
	}
	for pat, k := range nodeRecordKinds { // patterns with a wildcard in the name
		if ok, _ := path.Match(pat, strings.Join(parts, "/")); ok && !strings.HasSuffix(pat, "**") {
			return k, true
		}
	}
	return "", false
}

// TestNodeFixturesOfEveryRelease reads the node data folders every release
// wrote: every record file is of a kind package schema knows, at a version
// this release reads (a record without a version member is version 1,
// FORMAT §11.1); every capsule a node holds verifies, and its journal holds
// the events the release reported for it.
func TestNodeFixturesOfEveryRelease(t *testing.T) {
	for root, e := range fixtureReleases(t) {
		t.Run(e.Release, func(t *testing.T) {
			for _, n := range []string{"a", "b"} {
				t.Run(n, func(t *testing.T) { readNodeFixture(t, root, n) })
			}
		})
	}
}

func readNodeFixture(t *testing.T, root, n string) {
	exp := filepath.Join(root, "expect", "nodes")
	data := restoreFolder(t, filepath.Join(root, "nodes", n), filepath.Join(exp, n+"-folder.txt"))
	err := filepath.Walk(data, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(data, p)
		rel = filepath.ToSlash(rel)
		k, ok := kindOfNodeFile(rel)
		switch {
		case !ok:
			t.Errorf("%s: no kind of package schema covers this record", rel)
		case k != "":
			for _, v := range recordVersions(t, p, k) {
				if !schema.CanRead(k, v) {
					t.Errorf("%s: %s version %d is not readable by %s", rel, k, v, schema.Release)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct {
		ID     string `json:"id"`
		State  string `json:"state"`
		Events int    `json:"events"`
	}
	b, err := os.ReadFile(filepath.Join(exp, n+"-list.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &listed); err != nil || len(listed) == 0 {
		t.Fatalf("%s-list.json: %v", n, err)
	}
	for _, a := range listed {
		capDir := filepath.Join(data, "agents", a.ID, "capsule")
		if a.State == "retired" {
			if _, err := os.Stat(capDir); err == nil {
				t.Errorf("agent %s retired on node %s still has a capsule", a.ID, n)
			}
			continue
		}
		if a.Events < 1 {
			t.Errorf("agent %s on node %s: the release listed no events", a.ID, n)
		}
		rel := "nodes/" + n + "/agents/" + a.ID + "/capsule"
		got := filepath.Join(exp, n, a.ID)
		compareRead(t, filepath.Join(got, "verify.json"), map[string]string{capDir: rel}, "verify", capDir, "--json")
		compareRead(t, filepath.Join(got, "log-verify.json"), map[string]string{capDir: rel}, "log", "verify", capDir, "--json")
		compareRead(t, filepath.Join(got, "log.jsonl"), nil, "log", capDir, "--json")
	}
}

// recordVersions returns the schema version of every record in the file
// at p: each line of a record log or journal copy, or the one JSON object;
// a record without a version member (or a file that is not JSON, like the
// PEM key) is version 1.
func recordVersions(t *testing.T, p string, k schema.Kind) []int {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if k == schema.NodeKey {
		if !bytes.HasPrefix(b, []byte("-----BEGIN ")) {
			t.Errorf("%s: not PEM", p)
		}
		return []int{1}
	}
	if k == schema.Session { // Markdown: its version is the capsule's schemas.session
		if !utf8.Valid(b) {
			t.Errorf("%s: not UTF-8", p)
		}
		return []int{1}
	}
	var recs [][]byte
	if strings.HasSuffix(p, ".jsonl") {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			recs = append(recs, append([]byte(nil), sc.Bytes()...))
		}
	} else {
		recs = [][]byte{b}
	}
	var out []int
	for _, r := range recs {
		var m struct {
			V       *int `json:"v"`
			Version *int `json:"version"`
		}
		if err := json.Unmarshal(r, &m); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		switch {
		case m.V != nil:
			out = append(out, *m.V)
		case m.Version != nil:
			out = append(out, *m.Version)
		default:
			out = append(out, 1)
		}
	}
	return out
}
