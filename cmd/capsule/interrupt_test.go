package main

import (
	"bytes"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/archive"
)

// cliProcess starts the capsule command as a real process (this test
// binary, see TestMain).
func cliProcess(t *testing.T, stdin io.Reader, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), runAsCLI+"=1")
	c.Stdin = stdin
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c, &out
}

// bigCapsule is a capsule whose snapshot holds size random bytes.
func bigCapsule(t *testing.T, size int) string {
	t.Helper()
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	d := t.TempDir()
	ws, dir := filepath.Join(d, "ws"), filepath.Join(d, "agent")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	_, _ = rand.Read(b)
	if err := os.WriteFile(filepath.Join(ws, "big.bin"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "init", dir)
	mustCLI(t, "snapshot", dir, "--from", ws, "-q")
	return dir
}

// waitFor polls until a name in dir starts with prefix, and returns it.
func waitFor(t *testing.T, dir, prefix string, done <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				return e.Name()
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the command ended (%v) before %s* appeared", err, prefix)
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatalf("no %s* in %s", prefix, dir)
	return ""
}

// TestInterruptedExportLeavesNothing: SIGINT to a real `capsule export`
// while it writes removes its temporary file, and the command fails.
func TestInterruptedExportLeavesNothing(t *testing.T) {
	src := bigCapsule(t, 64<<20)
	outDir := t.TempDir()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		// zstd on random data is slow enough to catch the export mid-way;
		// the process is stopped while the signal is queued.
		c, out := cliProcess(t, nil, "export", src, "-o", filepath.Join(outDir, "a.capsule.tar.zst"), "--no-verify", "-q")
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		waitFor(t, outDir, ".tmp-", done)
		_ = c.Process.Signal(syscall.SIGSTOP)
		_ = c.Process.Signal(sig)
		_ = c.Process.Signal(syscall.SIGCONT)
		if err := <-done; err == nil {
			t.Fatalf("%v: the interrupted export succeeded:\n%s", sig, out)
		}
		if names := names(t, outDir); len(names) != 0 {
			t.Errorf("%v: an interrupted export left %v\n%s", sig, names, out)
		}
		if !strings.Contains(out.String(), "interrupted") {
			t.Errorf("%v: the export does not say it was interrupted:\n%s", sig, out)
		}
	}
}

// TestKilledExportCleanedByNextExport: an export killed with SIGKILL
// cannot clean up; the next export to the same file removes its
// temporary file (its PID runs no process any more).
func TestKilledExportCleanedByNextExport(t *testing.T) {
	src := bigCapsule(t, 64<<20)
	outDir := t.TempDir()
	out := filepath.Join(outDir, "a.capsule.tar.zst")
	c, log := cliProcess(t, nil, "export", src, "-o", out, "--no-verify", "-q")
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	left := waitFor(t, outDir, ".tmp-", done)
	_ = c.Process.Kill()
	<-done
	if _, err := os.Stat(filepath.Join(outDir, left)); err != nil {
		t.Fatalf("SIGKILL left no %s (%v); the test needs one\n%s", left, err, log)
	}
	mustCLI(t, "export", src, "-o", out, "--no-verify", "-q")
	if got := names(t, outDir); len(got) != 1 || got[0] != "a.capsule.tar.zst" {
		t.Errorf("after the next export %s holds %v, want only a.capsule.tar.zst", outDir, got)
	}
}

// TestInterruptedImportLeavesNothing: SIGINT to a real `capsule import`
// reading a pipe removes its staging folder; DIR is never created.
func TestInterruptedImportLeavesNothing(t *testing.T) {
	src := bigCapsule(t, 4<<20)
	tar := filepath.Join(t.TempDir(), "a.capsule.tar")
	mustCLI(t, "export", src, "-o", tar, "-q")
	data, err := os.ReadFile(tar)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	// A real pipe (exec then waits for no copy): half the archive, then
	// nothing, so the import waits mid-archive.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c, out := cliProcess(t, pr, "import", "-", "-o", filepath.Join(dst, "agent"), "-q")
	pr.Close()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	go func() { _, _ = pw.Write(data[:len(data)/2]) }()
	waitFor(t, dst, archive.StagingPrefix, done)
	time.Sleep(50 * time.Millisecond)
	_ = c.Process.Signal(syscall.SIGINT)
	var werr error
	select {
	case werr = <-done:
	case <-time.After(20 * time.Second):
		pw.Close()
		werr = <-done
		t.Errorf("the import did not stop on SIGINT:\n%s", out)
	}
	pw.Close()
	if werr == nil {
		t.Fatalf("the interrupted import succeeded:\n%s", out)
	}
	if names := names(t, dst); len(names) != 0 {
		t.Errorf("an interrupted import left %v\n%s", names, out)
	}
	if !strings.Contains(out.String(), "interrupted") {
		t.Errorf("the import does not say it was interrupted:\n%s", out)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
