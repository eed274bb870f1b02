package secret_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentcapsule/capsule/secret"
	"github.com/agentcapsule/capsule/secret/secrettest"
)

// childEnv makes the test binary act as "another process of the same user
// in another session": see TestMain.
const childEnv = "CAPSULE_SECRET_TEST_CHILD"

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(runChild(name))
	}
	os.Exit(m.Run())
}

// runChild joins a new session keyring, so that this process possesses
// none of the keys the parent set (as a daemon started from another login
// does not), then reads name and name_CTRL through Keyring. It prints the
// value of name and whether name_CTRL (set with the kernel's default
// permissions) could be read.
func runChild(name string) int {
	runtime.LockOSThread() // the session keyring belongs to this thread's credentials
	if _, err := unix.KeyctlJoinSessionKeyring(fmt.Sprintf("capsule-test-session-%d", os.Getpid())); err != nil {
		fmt.Fprintln(os.Stderr, "join session keyring:", err)
		return 1
	}
	v, err := secret.Keyring{}.Get(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "get:", err)
		return 1
	}
	_, ctrl := secret.Keyring{}.Get(name + "_CTRL")
	fmt.Printf("%s\n%v\n", v, ctrl != nil)
	return 0
}

// keyringOrSkip skips, with the exact reason, where keyctl is blocked.
func keyringOrSkip(t *testing.T) secret.Keyring {
	t.Helper()
	k := secret.Keyring{}
	name := secrettest.UniqueName()
	err := k.Set(name, "probe-value")
	if errors.Is(err, secret.ErrUnavailable) {
		t.Skipf("the kernel keyring is not usable on this machine: %v", err)
	}
	if err != nil {
		t.Fatalf("probe Set: %v", err)
	}
	_ = k.Remove(name)
	return k
}

func TestKeyringConformance(t *testing.T) {
	secrettest.Run(t, keyringOrSkip(t), secrettest.UniqueName)
}

// TestKeyringReadableFromAnotherSession sets a key here and reads it from
// a second process that does not possess it, as the node daemon started in
// another session reads what "capsule secret set" stored. The control key,
// added with the kernel's default permissions (possessor all, user view
// only), must stay unreadable there: that proves the child really is
// outside this session, and that Set's permissions are what make it work.
func TestKeyringReadableFromAnotherSession(t *testing.T) {
	k := keyringOrSkip(t)
	name := secrettest.UniqueName()
	t.Cleanup(func() { _ = k.Remove(name); _ = k.Remove(name + "_CTRL") })
	if err := k.Set(name, "cross-process-value-42"); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.AddKey("user", "capsule:"+name+"_CTRL", []byte("control-value"), unix.KEY_SPEC_USER_KEYRING); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("child: %v: %s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] != "cross-process-value-42" {
		t.Fatalf("child read %q, want the value set here", out)
	}
	if lines[1] != "true" {
		t.Fatalf("the child read the control key too: it possesses this session's keys, so it proves nothing")
	}
}

func TestKeyringNamesOnlyCapsuleKeys(t *testing.T) {
	k := keyringOrSkip(t)
	name := secrettest.UniqueName()
	foreign := "not-capsule:" + name
	id, err := unix.AddKey("user", foreign, []byte("x"), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0)
		_ = k.Remove(name)
	})
	if err := k.Set(name, "listed-value"); err != nil {
		t.Fatal(err)
	}
	names, err := k.Names()
	if err != nil {
		t.Fatal(err)
	}
	var mine int
	for _, n := range names {
		if strings.Contains(n, name) {
			mine++
		}
		if strings.Contains(n, ":") || strings.Contains(n, "listed-value") {
			t.Errorf("Names holds %q", n)
		}
	}
	if mine != 1 {
		t.Errorf("Names = %v, want %s once and not the foreign key", names, name)
	}
}
