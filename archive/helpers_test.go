package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// The archive package knows nothing of the real manifest, so its tests use
// a toy one: manifest.json maps every other file to its digest. testVerify
// checks it the way capsule.Verify checks the real one (every digest, no
// missing file, no unlisted file), which is all Import relies on.

type toyManifest struct {
	Name  string                   `json:"name"`
	Files map[string]digest.Digest `json:"files"`
}

// fixtureFiles is a capsule laid out as the seed says, with one blob.
func fixtureFiles() map[string]string {
	blob := "package main\n\nfunc main() {}\n"
	return map[string]string{
		"memory/working_memory.md":                         "# Notes\n\n- the user prefers short answers\n",
		"memory/timeline_events.jsonl":                     `{"id":"sha256:00","kind":"user","body":{"text":"hi"}}` + "\n",
		"memory/vector_index/index.json":                   "{\"v\":1,\"entries\":[]}\n",
		"artifacts/snapshot.json":                          "{\"v\":1,\"files\":{\"main.go\":\"" + string(digest.FromString(blob)) + "\"}}\n",
		"artifacts/blobs/" + digest.FromString(blob).Hex(): blob,
		"environment/spec.json":                            "{\"v\":1,\"network\":\"none\"}\n",
	}
}

// manifestFor returns the toy manifest of files.
func manifestFor(name string, files map[string]string) []byte {
	m := toyManifest{Name: name, Files: map[string]digest.Digest{}}
	for p, data := range files {
		m.Files[p] = digest.FromString(data)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// writeCapsule writes files and their toy manifest under dir, creating the
// files in the order given by order (to show export does not depend on it).
func writeCapsule(t testing.TB, fsys vfs.FS, dir string, files map[string]string, reverse bool) {
	t.Helper()
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	sort.Strings(names)
	if reverse {
		for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
			names[i], names[j] = names[j], names[i]
		}
	}
	for _, p := range names {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := fsys.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFile(fsys, full, []byte(files[p]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := vfs.WriteFile(fsys, filepath.Join(dir, ManifestName), manifestFor("test", files), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testVerify is the toy Verifier.
func testVerify(fsys vfs.FS, dir string) ([]Problem, error) {
	raw, err := vfs.ReadFile(fsys, filepath.Join(dir, ManifestName))
	if err != nil {
		return []Problem{{Path: ManifestName, Kind: "missing", Detail: err.Error()}}, nil
	}
	var m toyManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return []Problem{{Path: ManifestName, Kind: "malformed", Detail: err.Error()}}, nil
	}
	var problems []Problem
	seen := map[string]bool{}
	err = walkFiles(fsys, dir, "", func(name string) error {
		seen[name] = true
		if name == ManifestName || name == SignatureName {
			return nil
		}
		want, ok := m.Files[name]
		if !ok {
			problems = append(problems, Problem{Path: name, Kind: "unlisted", Detail: "not in the manifest"})
			return nil
		}
		data, err := vfs.ReadFile(fsys, filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return err
		}
		if got := digest.FromBytes(data); got != want {
			problems = append(problems, Problem{Path: name, Kind: "digest", Detail: fmt.Sprintf("is %s, manifest says %s", got.Short(), want.Short())})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name := range m.Files {
		if !seen[name] {
			problems = append(problems, Problem{Path: name, Kind: "missing", Detail: "listed in the manifest"})
		}
	}
	sort.Slice(problems, func(i, j int) bool { return problems[i].Path < problems[j].Path })
	return problems, nil
}

func walkFiles(fsys vfs.FS, dir, rel string, fn func(name string) error) error {
	ents, err := fsys.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := path.Join(rel, e.Name())
		if e.Type()&fs.ModeDir != 0 {
			if err := walkFiles(fsys, dir, name, fn); err != nil {
				return err
			}
			continue
		}
		if err := fn(name); err != nil {
			return err
		}
	}
	return nil
}

// exportBytes exports dir on fsys into memory.
func exportBytes(t testing.TB, fsys vfs.FS, dir string, cfg ExportConfig) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Export(fsys, dir, &buf, cfg); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return buf.Bytes()
}

// memWith returns a Mem holding a fixture capsule at /src.
func memWith(t testing.TB) *vfs.Mem {
	t.Helper()
	mem := vfs.NewMem()
	writeCapsule(t, mem, "/src", fixtureFiles(), false)
	return mem
}
