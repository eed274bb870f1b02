package main

// The golden fixtures of every release (testdata/fixtures/<release>/, made
// by scripts/fixtures.sh from that release's commit) read through today's
// read paths: verify, inspect, env show, log, log verify, render for every
// provider, checkout and import, each compared with what the release that
// wrote the fixture read back when it made it (expect/). A fixture read
// differently fails (issue 12, requirement 6).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/fixtures"
	"github.com/agentcapsule/capsule/schema"
)

const fixturesRoot = "../../testdata/fixtures"

// expectations is a release's expectations.json.
type expectations struct {
	Release   string   `json:"release"`
	Commit    string   `json:"commit"`
	Capsules  []string `json:"capsules"`
	Archives  []string `json:"archives"`
	Providers []struct {
		API   string `json:"api"`
		Model string `json:"model"`
	} `json:"providers"`
	Signed struct {
		Archive        string `json:"archive"`
		AllowedSigners string `json:"allowed_signers"`
		Identity       string `json:"identity"`
	} `json:"signed"`
}

func fixtureReleases(t *testing.T) map[string]expectations {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixturesRoot, "*", "expectations.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures under %s (%v): run scripts/fixtures.sh", fixturesRoot, err)
	}
	out := map[string]expectations{}
	for _, f := range files {
		var e expectations
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if e.Release != filepath.Base(filepath.Dir(f)) || len(e.Capsules) == 0 || len(e.Archives) == 0 || len(e.Providers) == 0 {
			t.Fatalf("%s: incomplete: %+v", f, e)
		}
		out[filepath.Dir(f)] = e
	}
	return out
}

func TestFixturesOfEveryRelease(t *testing.T) {
	for root, e := range fixtureReleases(t) {
		t.Run(e.Release, func(t *testing.T) {
			for _, name := range e.Capsules {
				t.Run(name, func(t *testing.T) { readCapsuleFixture(t, root, name, e) })
			}
			for _, name := range e.Archives {
				t.Run(name, func(t *testing.T) { readArchiveFixture(t, root, name, e) })
			}
		})
	}
}

func readCapsuleFixture(t *testing.T, root, name string, e expectations) {
	exp := filepath.Join(root, "expect", name)
	dir := restoreFolder(t, filepath.Join(root, "capsules", name), filepath.Join(exp, "folder.txt"))
	read := func(file string, args ...string) {
		t.Helper()
		compareRead(t, filepath.Join(exp, file), map[string]string{dir: "capsules/" + name}, args...)
	}
	read("verify.json", "verify", dir, "--json")
	read("inspect.json", "inspect", dir, "--json")
	read("env.json", "env", "show", dir, "--json")
	read("log.jsonl", "log", dir, "--json")
	read("log-verify.json", "log", "verify", dir, "--json")
	for _, p := range e.Providers {
		read("render-"+p.API+".json", "render", dir, "--provider", p.API, "--model", p.Model, "--json")
	}
	to := filepath.Join(t.TempDir(), "ws")
	if _, errs, code := capsuleCLI(t, "checkout", dir, "--to", to, "-q"); code != exitOK {
		t.Fatalf("checkout: exit %d: %s", code, errs)
	}
	compareTree(t, filepath.Join(exp, "checkout.txt"), to)
	compareTree(t, filepath.Join(exp, "folder.txt"), dir) // no read path wrote to the capsule
	migrateUpAndBack(t, dir, e.Release, filepath.Join(exp, "folder.txt"))
}

// migrateUpAndBack migrates a fixture to this release's versions, checks
// that it verifies, is idempotent and reads the same journal, then rolls it
// back to the release that wrote it and compares every byte with what that
// release wrote (FORMAT §11.5).
func migrateUpAndBack(t *testing.T, dir, release, listing string) {
	t.Helper()
	logBefore, _, _ := capsuleCLI(t, "log", dir, "--json")
	if out, errs, code := capsuleCLI(t, "migrate", dir, "--json"); code != exitOK {
		t.Fatalf("migrate: exit %d: %s%s", code, out, errs)
	}
	if out, errs, code := capsuleCLI(t, "verify", dir, "--json"); code != exitOK {
		t.Fatalf("verify after migrate: exit %d: %s%s", code, out, errs)
	}
	if logAfter, _, _ := capsuleCLI(t, "log", dir, "--json"); logAfter != logBefore {
		t.Errorf("the journal reads differently after the migration")
	}
	if out, _, code := capsuleCLI(t, "migrate", dir); code != exitOK || !strings.Contains(out, "nothing to do") {
		t.Errorf("second migrate: exit %d: %s", code, out)
	}
	if release != schema.Release { // up and straight back: byte for byte what that release wrote (FORMAT §11.5)
		if out, errs, code := capsuleCLI(t, "migrate", dir, "--to", release); code != exitOK {
			t.Fatalf("migrate --to %s: exit %d: %s%s", release, code, out, errs)
		}
		compareTree(t, listing, dir)
	}
	if release == "0.1.0" {
		return
	}
	// A newer release's capsule rolls back to 0.1.0 and up again, and keeps
	// its spec; its manifest then names this build as its writer.
	for _, to := range []string{"0.1.0", schema.Release, release} {
		if out, errs, code := capsuleCLI(t, "migrate", dir, "--to", to); code != exitOK {
			t.Fatalf("migrate --to %s: exit %d: %s%s", to, code, out, errs)
		}
		if out, errs, code := capsuleCLI(t, "verify", dir); code != exitOK {
			t.Fatalf("verify at the versions of %s: exit %d: %s%s", to, code, out, errs)
		}
	}
	if out, _, _ := capsuleCLI(t, "env", "show", dir, "--json"); out != readFile(t, filepath.Join(filepath.Dir(listing), "env.json")) {
		t.Errorf("a rollback to 0.1.0 and back lost the spec %s wrote:\n%s", release, out)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readArchiveFixture(t *testing.T, root, name string, e expectations) {
	exp := filepath.Join(root, "expect", name)
	file := filepath.Join(root, "archives", name)
	rename := map[string]string{file: "archives/" + name}
	compareRead(t, filepath.Join(exp, "verify.json"), rename, "verify", file, "--json")
	if name == e.Signed.Archive {
		compareRead(t, filepath.Join(exp, "verify-trusted.json"), rename, "verify", file, "--json",
			"--allowed-signers", filepath.Join(root, e.Signed.AllowedSigners), "--identity", e.Signed.Identity)
	}
	out := filepath.Join(t.TempDir(), "imported")
	if _, errs, code := capsuleCLI(t, "import", file, "-o", out, "-q"); code != exitOK {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	// Import writes the migrated state; rolled back, it is what the
	// release that wrote the archive imported.
	if got, errs, code := capsuleCLI(t, "verify", out, "--json"); code != exitOK || !strings.Contains(got, `"problems": []`) {
		t.Fatalf("verify the imported capsule: exit %d: %s%s", code, got, errs)
	}
	var imported struct {
		Schemas map[schema.Kind]int `json:"schemas"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "manifest.json"))), &imported); err != nil {
		t.Fatal(err)
	}
	for _, k := range schema.Kinds {
		if k != schema.Journal && imported.Schemas[k] != schema.Current[k] { // journal lines keep their version
			t.Errorf("import left %s at version %d, want %d (migrated)", k, imported.Schemas[k], schema.Current[k])
		}
	}
	if got, errs, code := capsuleCLI(t, "migrate", out, "--to", e.Release); code != exitOK {
		t.Fatalf("migrate --to %s: exit %d: %s%s", e.Release, code, got, errs)
	}
	compareTree(t, filepath.Join(exp, "import.txt"), out)
}

// compareRead runs the CLI and compares its result with the recorded one:
// FILE for a success, FILE.err ("exit N" and the message) for a refusal.
// Paths named in rename are written as the script wrote them.
func compareRead(t *testing.T, file string, rename map[string]string, args ...string) {
	t.Helper()
	out, errs, code := capsuleCLI(t, args...)
	for from, to := range rename {
		out = strings.ReplaceAll(out, from, to)
	}
	want, err := os.ReadFile(file)
	if err != nil {
		wantErr, err2 := os.ReadFile(file + ".err")
		if err2 != nil {
			t.Fatalf("no expectation for %s: %v", file, err)
		}
		wantCode, _, _ := strings.Cut(string(wantErr), "\n")
		if fmt.Sprintf("exit %d", code) != wantCode {
			t.Errorf("capsule %s: exit %d, the release that wrote it: %s", strings.Join(args, " "), code, wantCode)
		}
		return
	}
	if code != exitOK {
		t.Errorf("capsule %s: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
		return
	}
	if strings.HasSuffix(file, ".jsonl") {
		if out != string(want) { // journal lines are never rewritten
			t.Errorf("capsule %s: lines differ from the release that wrote them:\n%s\nwant\n%s", strings.Join(args, " "), out, want)
		}
		return
	}
	var got, exp any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("capsule %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if path, ok := covers(got, exp, "$"); !ok {
		t.Errorf("capsule %s reads %s differently from the release that wrote it\ngot  %s\nwant %s", strings.Join(args, " "), path, out, want)
	}
}

// covers reports whether got says everything want says: equal scalars and
// arrays (an empty array and null are the same empty list), and every member
// of an object in want present and covered in got. Members got adds are
// what a newer release reports besides; they do not change the reading.
func covers(got, want any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, wv := range w {
			if p, ok := covers(g[k], wv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok && got != nil || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := covers(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	case nil:
		if g, ok := got.([]any); ok && len(g) == 0 {
			return "", true
		}
	}
	return path, reflect.DeepEqual(got, want)
}

// restoreFolder copies a fixture folder into a temporary folder as the
// script recorded it in listing (fixtures.Restore checks every file).
func restoreFolder(t *testing.T, src, listing string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := fixtures.Restore(src, listing, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// compareTree compares dir with a listing written by the script's tree
// function: one line per entry in byte order of "./path", with its type,
// and the digest of a file or the target of a link.
func compareTree(t *testing.T, listing, dir string) {
	t.Helper()
	want, err := os.ReadFile(listing)
	if err != nil {
		t.Fatal(err)
	}
	if got := treeOf(t, dir); got != string(want) {
		t.Errorf("%s differs from %s:\n%s\nwant\n%s", dir, listing, got, want)
	}
}

func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := "./" + filepath.ToSlash(rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			lines = append(lines, name+" link "+name+" -> "+target)
		case fi.IsDir():
			lines = append(lines, name+" dir "+name)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			kind := "file"
			if fi.Mode()&0o111 != 0 {
				kind = "exec"
			}
			lines = append(lines, name+" "+kind+" "+name+" "+hex.EncodeToString(sum[:]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	var buf bytes.Buffer
	for _, l := range lines {
		_, rest, _ := strings.Cut(l, " ")
		buf.WriteString(rest + "\n")
	}
	return buf.String()
}
