package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README is a test (STYLE.md): TestREADMEWalkthrough runs every
// command of its walkthrough, as written, top to bottom, in one shell in a
// fresh folder with the binary its install line builds, and checks each
// command's exit code against what the README says: 0, or the N of a
// comment "refused (exit N)". A line ending in "&" starts a background job
// and is not checked.

// walkthroughStart and walkthroughEnd bound the part of the README whose
// sh blocks are the walkthrough.
const (
	walkthroughStart = "## Walkthrough"
	walkthroughEnd   = "## Tests and benchmarks"
)

// readmeCommand is one command of the walkthrough.
type readmeCommand struct {
	line int    // line number in the README
	text string // the command without its comment
	want int    // the exit code the README implies; -1 for a background job
}

var refusedRe = regexp.MustCompile(`refused \(exit ([0-9])\)`)

// readmeCommands extracts the walkthrough's commands.
func readmeCommands(readme []byte) ([]readmeCommand, error) {
	s := string(readme)
	i, j := strings.Index(s, walkthroughStart), strings.Index(s, walkthroughEnd)
	if i < 0 || j < i {
		return nil, fmt.Errorf("README has no %q section before %q", walkthroughStart, walkthroughEnd)
	}
	first := strings.Count(s[:i], "\n") + 1
	var out []readmeCommand
	in := false
	sc := bufio.NewScanner(strings.NewReader(s[i:j]))
	for n := first; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "```"):
			in = !in && strings.TrimPrefix(l, "```") == "sh"
			continue
		case !in || strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#"):
			continue
		}
		c, err := parseCommand(n, l)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// parseCommand splits a line into the command and the exit code its
// comment (after "  # ") implies.
func parseCommand(n int, l string) (readmeCommand, error) {
	cmd, comment, _ := strings.Cut(l, "  # ")
	c := readmeCommand{line: n, text: strings.TrimSpace(cmd)}
	if m := refusedRe.FindStringSubmatch(comment); m != nil {
		c.want, _ = strconv.Atoi(m[1])
	} else if strings.Contains(comment, "refused") {
		return c, fmt.Errorf("README line %d says refused but names no exit code: %s", n, l)
	}
	if strings.HasSuffix(c.text, "&") {
		c.want = -1
	}
	return c, nil
}

// walkthroughScript is the bash script that runs the commands in order and
// stops at the first one whose exit code is not the README's.
func walkthroughScript(cmds []readmeCommand) string {
	var b strings.Builder
	b.WriteString("set -u\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "echo %s >&2\n", shellQuote(fmt.Sprintf("+ [README:%d] %s", c.line, c.text)))
		b.WriteString(c.text + "\n")
		if c.want < 0 {
			continue
		}
		fmt.Fprintf(&b, "rc=$?; if [ $rc -ne %d ]; then echo \"README line %d: exit $rc, want %d\" >&2; exit 97; fi\n", c.want, c.line, c.want)
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestREADMECommandsParse: the walkthrough has the commands this test
// relies on, and refusals carry their exit code.
func TestREADMECommandsParse(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := readmeCommands(readme)
	if err != nil {
		t.Fatal(err)
	}
	var refused, background int
	for _, c := range cmds {
		switch {
		case c.want > 0:
			refused++
		case c.want < 0:
			background++
		}
	}
	if len(cmds) < 40 || refused < 4 || background != 5 || !strings.HasPrefix(cmds[0].text, "go install") {
		t.Errorf("the walkthrough has %d commands, %d refused, %d in the background; first %q", len(cmds), refused, background, cmds[0].text)
	}
	if !bytes.Contains(readme, []byte(exitTable())) {
		t.Errorf("README's exit-code table is not exitTable(); paste it:\n%s", exitTable())
	}
	if got := strings.Count(setupSection(string(readme)), "```sh"); got != 2 {
		t.Errorf("the README's set-up section has %d commands blocks, want exactly 2 (demo, tests)", got)
	}
}

func setupSection(s string) string {
	i := strings.Index(s, "## Set up")
	if i < 0 {
		return ""
	}
	rest := s[i+1:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestREADMEWalkthrough runs the walkthrough in a fresh HOME, config
// folder, GOPATH and TMPDIR (keeping Go's caches and settings), from the
// repository root as the install line expects.
func TestREADMEWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs the binary, starts two nodes")
	}
	for _, bin := range []string{"bash", "git", "go", "tar", "zstd", "ssh-keygen", "diff"} {
		needBin(t, bin)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := readmeCommands(readme)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../..")
	tmp := t.TempDir()
	goenv := func(k string) string { return k + "=" + strings.TrimSpace(string(sh(t, nil, "go", "env", k))) }
	c := exec.Command("bash", "-c", walkthroughScript(cmds))
	c.Dir = root
	c.Env = append(os.Environ(), "HOME="+filepath.Join(tmp, "home"), "XDG_CONFIG_HOME="+filepath.Join(tmp, "home", ".config"),
		"GOPATH="+filepath.Join(tmp, "gopath"), goenv("GOMODCACHE"), goenv("GOCACHE"), goenv("GOENV"), "GOBIN=", "TMPDIR="+tmp, "CAPSULE_CONFIG_DIR=", "CAPSULE_DATA=")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The nodes run in the script's process group: end them whatever happens.
	defer func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the walkthrough did not finish in 5 minutes:\n%s", out.String())
	}
	if err != nil {
		t.Fatalf("the README walkthrough failed: %v\n%s", err, out.String())
	}
	t.Logf("the walkthrough ran:\n%s", out.String())
	checkInstalledVersion(t, filepath.Join(tmp, "gopath", "bin", "capsule"), root)
}

// checkInstalledVersion: the binary the README installs records the
// commit of the tree it was built from.
func checkInstalledVersion(t *testing.T, bin, root string) {
	t.Helper()
	var v versionInfo
	if err := json.Unmarshal(sh(t, nil, bin, "version", "--json"), &v); err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(string(sh(t, nil, "git", "-C", root, "rev-parse", "HEAD")))
	if v.Commit != head {
		t.Errorf("the installed capsule says commit %q, the tree is at %s", v.Commit, head)
	}
}
