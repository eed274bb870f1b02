package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/ui"
)

// capsule ui open prints the login address made of the data folder's
// token and the address the node recorded; without them it says how to
// start the view.
func TestUIOpenPrintsTheLoginURL(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := capsuleCLI(t, "ui", "open", "--data", dir); code != exitInternal || !strings.Contains(errOut, "--ui ADDR") {
		t.Errorf("ui open before the view ran: exit %d, %q; want %d naming --ui ADDR", code, errOut, exitInternal)
	}
	tok, err := ui.LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ui.WriteAddr(dir, "127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := capsuleCLI(t, "ui", "open", "--data", dir)
	if want := "http://127.0.0.1:8080/login?token=" + tok + "\n"; code != 0 || out != want {
		t.Errorf("ui open: exit %d, %q (%s); want %q", code, out, errOut, want)
	}
	if err := os.Chmod(filepath.Join(dir, ui.TokenFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := capsuleCLI(t, "ui", "open", "--data", dir); code == 0 || !strings.Contains(errOut, "others may read it") {
		t.Errorf("ui open with a token file others may read: exit %d, %q; want a refusal", code, errOut)
	}
}

// capsule node refuses a --ui address that is not loopback, as a usage
// error, unless --ui-allow-remote.
func TestNodeUIIsLoopbackOnly(t *testing.T) {
	_, errOut, code := capsuleCLI(t, "node", "--data", t.TempDir(), "--ui", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(errOut, "--ui-allow-remote") {
		t.Errorf("node --ui 0.0.0.0:0: exit %d, %q; want %d naming --ui-allow-remote", code, errOut, exitUsage)
	}
}
