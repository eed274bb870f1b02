package archive

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

func importBytes(fsys vfs.FS, archive []byte, dir string, cfg ImportConfig) (*ImportResult, error) {
	if cfg.Verify == nil {
		cfg.Verify = testVerify
	}
	return Import(fsys, bytes.NewReader(archive), dir, cfg)
}

// TestRoundTrip: export then import gives back the same folder (FORMAT §9).
func TestRoundTrip(t *testing.T) {
	for _, comp := range []Compression{None, Zstd} {
		t.Run(comp.String(), func(t *testing.T) {
			mem := memWith(t)
			archive := exportBytes(t, mem, "/src", ExportConfig{Compression: comp})
			if err := mem.Mkdir("/dst", 0o755); err != nil {
				t.Fatal(err)
			}
			res, err := importBytes(mem, archive, "/dst/agent", ImportConfig{})
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if diff := cmp.Diff(vfstest.Snapshot(t, mem, "/src"), vfstest.Snapshot(t, mem, "/dst/agent")); diff != "" {
				t.Errorf("imported folder differs (-src +dst):\n%s", diff)
			}
			want := ImportResult{Dir: "/dst/agent", Entries: 12, Files: 7, Bytes: res.Bytes, Compression: comp.String()}
			if diff := cmp.Diff(want, *res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if got := entriesOf(t, mem, "/dst"); len(got) != 1 {
				t.Errorf("/dst holds %v, want only agent (no staging left)", got)
			}
		})
	}
}

func entriesOf(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestImportDestination: dir must be absent or an empty directory, and its
// parent must exist; a refusal changes nothing.
func TestImportDestination(t *testing.T) {
	mem := memWith(t)
	archive := exportBytes(t, mem, "/src", ExportConfig{})
	mustWrite(t, mem, "/full/x", "x")
	mustWrite(t, mem, "/file", "x")
	if err := mem.MkdirAll("/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir     string
		wantErr error
		msg     string
	}{
		{dir: "/full", wantErr: ErrDestExists},
		{dir: "/file", wantErr: ErrDestExists},
		{dir: "/src", wantErr: ErrDestExists},
		{dir: "/nope/agent", msg: "parent directory /nope does not exist"},
		{dir: "/empty"},
		{dir: "/fresh"},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			before := vfstest.Snapshot(t, mem, "/")
			_, err := importBytes(mem, archive, tc.dir, ImportConfig{})
			switch {
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)):
				t.Fatalf("err = %v, want %q", err, tc.msg)
			case tc.wantErr == nil && tc.msg == "" && err != nil:
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				if diff := cmp.Diff(before, vfstest.Snapshot(t, mem, "/")); diff != "" {
					t.Errorf("a refused import changed the file system:\n%s", diff)
				}
			}
		})
	}
	if _, err := Import(mem, bytes.NewReader(archive), "/other", ImportConfig{}); !errors.Is(err, ErrNoVerifier) {
		t.Errorf("no verifier: err = %v, want ErrNoVerifier", err)
	}
}

func mustWrite(t testing.TB, fsys vfs.FS, name, data string) {
	t.Helper()
	if err := fsys.MkdirAll(dirOf(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFile(fsys, name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func dirOf(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i <= 0 {
		return "/"
	}
	return name[:i]
}

// TestImportVerifierRefuses: a capsule that does not verify is never moved
// into place, and its problems come back in a *VerifyError.
func TestImportVerifierRefuses(t *testing.T) {
	mem := memWith(t)
	mustWrite(t, mem, "/src/memory/working_memory.md", "tampered\n")
	archive := exportBytes(t, mem, "/src", ExportConfig{})
	before := vfstest.Snapshot(t, mem, "/")
	_, err := importBytes(mem, archive, "/dst", ImportConfig{})
	var ve *VerifyError
	if !errors.As(err, &ve) || !errors.Is(err, ErrVerify) {
		t.Fatalf("err = %v, want a *VerifyError", err)
	}
	if len(ve.Problems) != 1 || ve.Problems[0].Path != "memory/working_memory.md" {
		t.Errorf("problems = %v, want one for memory/working_memory.md", ve.Problems)
	}
	if diff := cmp.Diff(before, vfstest.Snapshot(t, mem, "/")); diff != "" {
		t.Errorf("a refused import changed the file system:\n%s", diff)
	}
}

// TestImportRemovesOldStaging: leftovers of a crashed import into the same
// destination go when provably stale (a PID that runs no process, or this
// process's PID on a name not in use here); a running import's folder,
// a name without a PID and another destination's folder stay.
func TestImportRemovesOldStaging(t *testing.T) {
	mem := memWith(t)
	archive := exportBytes(t, mem, "/src", ExportConfig{})
	stem := "/" + stagingStem("agent")
	dead := stem + "p" + strconv.Itoa(deadPID) + "-0123456789ab"
	ours := ownedName(stem, "0123456789ab")
	live := stem + "p1-0123456789ab" // init runs
	legacy := stem + "0123456789ab"  // no PID: cannot be proven stale
	theirs := "/" + stagingStem("agent-2") + "p" + strconv.Itoa(deadPID) + "-0123456789ab"
	for _, d := range []string{dead, ours, live, legacy, theirs} {
		mustWrite(t, mem, d+"/manifest.json", "half")
	}
	if _, err := importBytes(mem, archive, "/agent", ImportConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		gone bool
	}{{dead, true}, {ours, true}, {live, false}, {legacy, false}, {theirs, false}} {
		if _, err := mem.Stat(c.dir); (err != nil) != c.gone {
			t.Errorf("%s: removed = %v, want %v", c.dir, err != nil, c.gone)
		}
	}
}

// deadPID is above Linux's largest PID (2^22): no process has it.
const deadPID = 1 << 23

// TestImportCrash: a power loss at any durable step of an import leaves
// either no destination (staging litter allowed) or the complete, verified
// capsule; the next import cleans the litter (FORMAT §9.4).
func TestImportCrash(t *testing.T) {
	src := memWith(t)
	archive := exportBytes(t, src, "/src", ExportConfig{Compression: Zstd})
	want := vfstest.Snapshot(t, src, "/src")
	setup := func(t testing.TB, fsys vfs.FS) {
		mustWrite(t, fsys, "/in/agent.capsule.tar.zst", string(archive))
		if err := fsys.Mkdir("/dst", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	op := func(fsys vfs.FS) error {
		_, err := ImportFile(fsys, "/in/agent.capsule.tar.zst", "/dst/agent", ImportConfig{Verify: testVerify})
		return err
	}
	vfstest.ForEachCrashPoint(t, setup, op, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		got := vfstest.Snapshot(t, fsys, "/dst/agent")
		if len(got) > 0 {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%v: /dst/agent exists but differs (-want +got):\n%s", at, diff)
			}
		} else if at.Done() {
			t.Fatalf("%v: the import finished but /dst/agent is missing", at)
		}
		for _, name := range entriesOf(t, fsys, "/dst") {
			if name != "agent" && !strings.HasPrefix(name, StagingPrefix) {
				t.Errorf("%v: unexpected %s in /dst", at, name)
			}
		}
		if len(got) == 0 {
			if _, err := ImportFile(fsys, "/in/agent.capsule.tar.zst", "/dst/agent", ImportConfig{Verify: testVerify}); err != nil {
				t.Fatalf("%v: import after the crash: %v", at, err)
			}
			if names := entriesOf(t, fsys, "/dst"); len(names) != 1 {
				t.Errorf("%v: after a new import /dst holds %v, want only agent", at, names)
			}
		}
	})
}
