package vfs_test

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// TestFaultyConformance: a Faulty without rules is the FS it wraps.
func TestFaultyConformance(t *testing.T) {
	t.Run("Mem", func(t *testing.T) {
		vfstest.TestFS(t, func(t *testing.T) (vfs.FS, string) { return vfs.NewFaulty(vfs.NewMem()), "/" })
	})
	t.Run("OS", func(t *testing.T) {
		vfstest.TestFS(t, func(t *testing.T) (vfs.FS, string) { return vfs.NewFaulty(vfs.OS{}), t.TempDir() })
	})
}

func newFaulty(t *testing.T) (*vfs.Mem, *vfs.Faulty) {
	t.Helper()
	m := vfs.NewMem()
	must(t, m.MkdirAll("/cap", 0o755))
	must(t, m.MkdirAll("/other", 0o755))
	must(t, vfs.WriteFile(m, "/cap/f", []byte("old"), 0o644))
	return m, vfs.NewFaulty(m)
}

// TestFaultyRules writes /cap/f three times through a Faulty with one rule
// and checks which writes fail.
func TestFaultyRules(t *testing.T) {
	tests := []struct {
		name    string
		op      vfs.Op
		pattern string
		err     error
		opts    []vfs.FailOption
		want    []bool // per write: did it fail
		hits    int
	}{
		{"always", vfs.OpWrite, "/cap", vfs.ErrNoSpace, nil, []bool{true, true, true}, 3},
		{"once", vfs.OpSync, "/cap", vfs.ErrIO, []vfs.FailOption{vfs.Once()}, []bool{true, false, false}, 1},
		{"nth", vfs.OpSync, "/cap", vfs.ErrIO, []vfs.FailOption{vfs.Nth(2)}, []bool{false, true, false}, 1},
		{"times", vfs.OpCreate, "/cap/*", vfs.ErrNoSpace, []vfs.FailOption{vfs.Times(2)}, []bool{true, true, false}, 2},
		{"component pattern", vfs.OpSyncDir, "cap", vfs.ErrIO, nil, []bool{true, true, true}, 3},
		{"temp files", vfs.OpAny, vfs.TempPrefix + "*", vfs.ErrIO, nil, []bool{true, true, true}, 3},
		{"rename by new path", vfs.OpRename, "/cap/f", vfs.ErrIO, nil, []bool{true, true, true}, 3},
		{"other path", vfs.OpAny, "/other", vfs.ErrIO, nil, []bool{false, false, false}, 0},
		{"other op", vfs.OpMkdir, "", vfs.ErrIO, nil, []bool{false, false, false}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, f := newFaulty(t)
			rule := f.Fail(tc.op, tc.pattern, tc.err, tc.opts...)
			var got []bool
			for range tc.want {
				err := vfs.WriteFile(f, "/cap/f", []byte("new"), 0o644)
				if err != nil && !errors.Is(err, tc.err) {
					t.Errorf("WriteFile: %v, want %v", err, tc.err)
				}
				got = append(got, err != nil)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("failed writes (-want +got):\n%s", diff)
			}
			if rule.Hits() != tc.hits {
				t.Errorf("%v: Hits() = %d, want %d", rule, rule.Hits(), tc.hits)
			}
			if leftovers := vfstest.Snapshot(t, m, "/cap"); len(vfstest.DropTemp(leftovers)) != len(leftovers) {
				t.Errorf("a failed WriteFile left a temporary file: %v", leftovers)
			}
		})
	}
}

func TestFaultyErrorShape(t *testing.T) {
	_, f := newFaulty(t)
	f.Fail(vfs.OpWrite, "", vfs.ErrNoSpace)
	f.Fail(vfs.OpRename, "", vfs.ErrIO)
	f.Fail(vfs.OpStat, "/cap/f", fs.ErrNotExist)
	file, err := f.OpenFile("/cap/g", os.O_WRONLY|os.O_CREATE, 0o644)
	must(t, err)
	defer file.Close()
	n, err := file.Write([]byte("abc"))
	var pe *fs.PathError
	if n != 0 || !errors.As(err, &pe) || pe.Op != "write" || pe.Path != "/cap/g" || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Write = %d, %#v; want 0 and *fs.PathError{write /cap/g ENOSPC}", n, err)
	}
	err = f.Rename("/cap/f", "/cap/h")
	var le *os.LinkError
	if !errors.As(err, &le) || le.Old != "/cap/f" || le.New != "/cap/h" || !errors.Is(err, vfs.ErrIO) {
		t.Errorf("Rename = %#v, want *os.LinkError EIO", err)
	}
	if _, err := f.Stat("/cap/f"); !os.IsNotExist(err) {
		t.Errorf("Stat with injected ErrNotExist = %v, want os.IsNotExist", err)
	}
}

// TestFaultyAfterEffect: the operation happens, the caller sees an error.
func TestFaultyAfterEffect(t *testing.T) {
	m, f := newFaulty(t)
	rule := f.Fail(vfs.OpRename, "/cap/f", vfs.ErrIO, vfs.AfterEffect(), vfs.Once())
	err := vfs.WriteFile(f, "/cap/f", []byte("new"), 0o644)
	if !errors.Is(err, vfs.ErrIO) {
		t.Errorf("WriteFile = %v, want EIO", err)
	}
	if got := vfstest.Snapshot(t, m, "/cap"); got["f"] != "new" {
		t.Errorf("f = %q, want new: the rename must have happened", got["f"])
	}
	created := f.Fail(vfs.OpCreate, "/cap/n", vfs.ErrIO, vfs.AfterEffect())
	if _, err := f.OpenFile("/cap/n", os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, vfs.ErrIO) {
		t.Errorf("OpenFile = %v, want EIO", err)
	}
	if _, err := m.Stat("/cap/n"); err != nil {
		t.Errorf("file opened with AfterEffect not created: %v", err)
	}
	if rule.Hits() != 1 || created.Hits() != 1 {
		t.Errorf("hits = %d, %d, want 1, 1", rule.Hits(), created.Hits())
	}
}

// TestFaultyOps records what WriteFile does, and lets a hook fail any step.
func TestFaultyOps(t *testing.T) {
	_, f := newFaulty(t)
	must(t, vfs.WriteFile(f, "/cap/f", []byte("new"), 0o644))
	var got []string
	for _, r := range f.Ops() {
		got = append(got, string(r.Op))
	}
	want := []string{"create", "write", "sync", "close", "chmod", "rename", "syncdir"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ops of WriteFile (-want +got):\n%s", diff)
	}
	durable := f.DurableOps()
	if len(durable) != 3 || durable[1].NewPath != "/cap/f" {
		t.Errorf("DurableOps = %v", durable)
	}

	f.ResetOps()
	errHook := errors.New("hook says no")
	f.OnOp(func(r vfs.OpRecord) error {
		if r.Op == vfs.OpChmod {
			return errHook
		}
		return nil
	})
	err := vfs.WriteFile(f, "/cap/f", []byte("newer"), 0o644)
	if !errors.Is(err, errHook) {
		t.Errorf("WriteFile with hook = %v, want %v", err, errHook)
	}
	ops := f.Ops()
	var injected []string
	for _, r := range ops {
		if r.Injected {
			injected = append(injected, r.String())
		}
	}
	if len(injected) != 1 || ops[len(ops)-1].Op != vfs.OpRemove {
		t.Errorf("injected %v; last op %v, want the chmod only and a cleanup remove", injected, ops[len(ops)-1])
	}
	f.OnOp(nil)
	f.Clear()
	must(t, vfs.WriteFile(f, "/cap/f", []byte("newest"), 0o644))
}
