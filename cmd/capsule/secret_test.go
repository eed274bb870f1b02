package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/node"
	"github.com/agentcapsule/capsule/secret"
	"github.com/agentcapsule/capsule/vfs"
)

// secretCLI runs capsule in-process with stdin and returns everything it
// printed (stdout, stderr and the error) and the exit code.
func secretCLI(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		out.WriteString(err.Error())
		return out.String(), exitCode(err)
	}
	return out.String(), exitOK
}

// noValueOutside fails if value appears in any file under dir other than
// the store's own file (store "" for none).
func noValueOutside(t *testing.T, dir, store, value string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == store {
			return err
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(value)) {
			t.Errorf("%s holds the secret value", p)
		}
		return nil
	})
}

func TestSecretVerbsFileStore(t *testing.T) {
	t.Setenv("CAPSULE_SECRET_FROM_ENV_ONLY", "env-provided-value")
	t.Setenv(secret.StoreEnv, "")
	data := filepath.Join(t.TempDir(), "node-a")
	const value = "sk-test-file-0123456789"
	var all strings.Builder
	run := func(stdin string, want int, args ...string) string {
		t.Helper()
		out, code := secretCLI(t, stdin, args...)
		all.WriteString(out)
		if code != want {
			t.Fatalf("capsule %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
		}
		return out
	}
	run(value+"\n", exitOK, "secret", "set", "OPENAI_API_KEY", "--store", "file", "--data", data)
	run("two-lines\n\n", exitOK, "secret", "set", "OTHER_KEY", "--data", data) // default: the file exists
	store := filepath.Join(data, secret.FileName)
	f := secret.NewFile(nil, store)
	if v, err := f.Get("OPENAI_API_KEY"); err != nil || v != value {
		t.Fatalf("stored %q, %v; want the value without its newline", v, err)
	}
	if v, _ := f.Get("OTHER_KEY"); v != "two-lines\n" {
		t.Errorf("stored %q: exactly one trailing newline is stripped", v)
	}
	if fi, err := os.Stat(store); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want mode 0600", store, fi.Mode(), err)
	}
	// The node opening the same folder by default reads what the CLI set.
	s, err := node.OpenSecrets(vfs.OS{}, data, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Lookup("OPENAI_API_KEY"); !ok || v != value || s.Store() != "file" {
		t.Errorf("node lookup = %q, %v from %q", v, ok, s.Store())
	}
	out := run("", exitOK, "secret", "ls", "--data", data)
	want := fmt.Sprintf("%-32s file\n%-32s file\n%-32s env\n", "OPENAI_API_KEY", "OTHER_KEY", "FROM_ENV_ONLY")
	if out != want {
		t.Errorf("secret ls:\n%s\nwant\n%s", out, want)
	}
	var l secretListing
	if err := json.Unmarshal([]byte(run("", exitOK, "secret", "ls", "--data", data, "--json")), &l); err != nil || l.Store != "file" || len(l.Secrets) != 3 {
		t.Errorf("secret ls --json: %+v, %v", l, err)
	}
	run("", exitOK, "secret", "rm", "OPENAI_API_KEY", "--data", data)
	out = run("", exitInternal, "secret", "rm", "OPENAI_API_KEY", "--data", data)
	if !strings.Contains(out, "no secret OPENAI_API_KEY in the file store") {
		t.Errorf("second rm: %s", out)
	}
	if strings.Contains(all.String(), value) || strings.Contains(all.String(), "env-provided-value") {
		t.Errorf("a value was printed:\n%s", all.String())
	}
	noValueOutside(t, filepath.Dir(data), store, value)
}

func TestSecretSetRefuses(t *testing.T) {
	t.Setenv("CAPSULE_DATA", "")
	t.Setenv(secret.StoreEnv, "")
	data := t.TempDir()
	long := strings.Repeat("v", maxSecretValue+1)
	for _, c := range []struct {
		stdin string
		args  []string
		says  string
	}{
		{"", []string{"OPENAI_API_KEY"}, "is empty"},
		{"\n", []string{"OPENAI_API_KEY"}, "is empty"},
		{"abc", []string{"OPENAI_API_KEY"}, "shorter than 4 bytes"},
		{"[secret OPENAI_API_KEY]", []string{"OPENAI_API_KEY"}, "replaces secrets"},
		{long, []string{"OPENAI_API_KEY"}, "longer than 32767 bytes"},
		{"refused-value-1", []string{"OPENAI-API-KEY"}, "must match"},
		{"", []string{"OPENAI_API_KEY=sk-in-argument-1"}, "never an argument"},
		{"refused-value-1", []string{"OPENAI_API_KEY", "--store", "vault"}, `unknown store "vault"`},
	} {
		args := append([]string{"secret", "set"}, c.args...)
		args = append(args, "--store", "file", "--data", data)
		if len(c.args) > 1 {
			args = append([]string{"secret", "set"}, c.args...)
		}
		out, code := secretCLI(t, c.stdin, args...)
		if code != exitUsage || !strings.Contains(out, c.says) {
			t.Errorf("%v with %.20q: exit %d, %q; want 2 saying %q", c.args, c.stdin, code, out, c.says)
		}
		if strings.Contains(out, "sk-in-argument") || len(c.stdin) >= 4 && strings.Contains(out, strings.TrimSpace(c.stdin)) {
			t.Errorf("%v: the output holds the value: %s", c.args, out)
		}
	}
	out, code := secretCLI(t, "file-without-data", "secret", "set", "K", "--store", "file")
	if code != exitUsage || !strings.Contains(out, "needs the data folder") {
		t.Errorf("file store without --data: exit %d, %s", code, out)
	}
	if ents, _ := os.ReadDir(data); len(ents) != 0 {
		t.Errorf("a refused set wrote %d files", len(ents))
	}
}

// TestSecretVerbsKeyring runs the verbs on the kernel keyring where this
// machine permits keyctl; the key never reaches disk.
func TestSecretVerbsKeyring(t *testing.T) {
	t.Setenv(secret.StoreEnv, "")
	name := fmt.Sprintf("CAPSULE_CLI_TEST_%d", os.Getpid())
	value := "sk-test-keyring-" + name
	data := t.TempDir()
	out, code := secretCLI(t, value, "secret", "set", name, "--data", data)
	if code != exitOK && strings.Contains(out, "not permitted here") {
		t.Skipf("the kernel keyring is not usable on this machine: %s", out)
	}
	t.Cleanup(func() { _ = secret.Keyring{}.Remove(name) })
	if code != exitOK || out != "secret "+name+" set in the keyring store\n" {
		t.Fatalf("set: exit %d, %s", code, out)
	}
	if v, err := (secret.Keyring{}).Get(name); err != nil || v != value {
		t.Fatalf("keyring holds %q, %v", v, err)
	}
	ls, _ := secretCLI(t, "", "secret", "ls", "--store", "keyring")
	if !strings.Contains(ls, fmt.Sprintf("%-32s keyring\n", name)) {
		t.Errorf("ls:\n%s", ls)
	}
	rm, code := secretCLI(t, "", "secret", "rm", name, "--store", "keyring")
	if code != exitOK {
		t.Errorf("rm: exit %d, %s", code, rm)
	}
	if _, err := (secret.Keyring{}).Get(name); err == nil {
		t.Error("the key is still there after rm")
	}
	if strings.Contains(out+ls+rm, value) {
		t.Errorf("a value was printed:\n%s%s%s", out, ls, rm)
	}
	noValueOutside(t, data, "", value)
}

// TestSecretSetPromptsWithoutEcho types a value at the prompt of a real
// terminal (a pty from script(1)) and checks that the terminal never shows
// it and the store holds it. Echo is off before the prompt is printed, so
// typing after the prompt cannot race the program.
func TestSecretSetPromptsWithoutEcho(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skipf("script(1) (Debian bsdutils) gives the test a terminal and is not installed: %v", err)
	}
	data := filepath.Join(t.TempDir(), "d")
	const value = "typed-at-the-prompt-42"
	line := fmt.Sprintf("%q secret set TTY_KEY --store file --data %q", os.Args[0], data)
	c := exec.Command("script", "-qec", line, "/dev/null")
	c.Env = append(os.Environ(), runAsCLI+"=1")
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	c.Stdout, c.Stderr = pw, pw
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var seen bytes.Buffer
	prompted, readDone, waited := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(readDone)
		buf := make([]byte, 256)
		for once := false; ; {
			n, err := pr.Read(buf)
			seen.Write(buf[:n])
			if !once && strings.Contains(seen.String(), "(not echoed): ") {
				once = true
				close(prompted)
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { err := c.Wait(); pw.Close(); waited <- err }()
	select {
	case <-prompted:
		if _, err := io.WriteString(in, value+"\r"); err != nil {
			t.Fatal(err)
		}
	case <-readDone:
	}
	select {
	case <-readDone:
	case <-time.After(30 * time.Second): // a bound, so a hang fails instead of stalling the suite
		_ = c.Process.Kill()
		<-readDone
		t.Fatalf("capsule secret set did not finish after the value was typed:\n%q", seen.String())
	}
	if err := <-waited; err != nil {
		t.Fatalf("capsule secret set on a terminal: %v\n%s", err, seen.String())
	}
	if strings.Contains(seen.String(), value) {
		t.Errorf("the terminal showed the value:\n%q", seen.String())
	}
	if v, err := secret.NewFile(nil, filepath.Join(data, secret.FileName)).Get("TTY_KEY"); err != nil || v != value {
		t.Errorf("stored %q, %v", v, err)
	}
}
