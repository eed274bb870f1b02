package vfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestTryLock takes the lock through one open of a file, is refused it
// through a second open (the same process counts as another writer) and
// by the real flock(1) in another process, and gets it again once the
// first open is closed.
func TestTryLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock on windows")
	}
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	first, err := OS{}.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := TryLock(first); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	second, err := OS{}.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := TryLock(second); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock = %v, want ErrLocked", err)
	}
	if flock, err := exec.LookPath("flock"); err == nil {
		if err := exec.Command(flock, "--nonblock", "--exclusive", p, "true").Run(); err == nil {
			t.Error("flock(1) in another process took the lock this process holds")
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(second); err != nil {
		t.Fatalf("lock after the holder closed: %v", err)
	}
	if err := TryLock(must(NewMem().OpenFile("/x", os.O_RDWR|os.O_CREATE, 0o644))); err != nil {
		t.Errorf("a Mem file: %v, want no lock and no error", err)
	}
}

func must(f File, err error) File {
	if err != nil {
		panic(err)
	}
	return f
}
