//go:build linux

package secret

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKeyErrorNamesTheWayOut: where seccomp blocks keyctl (EPERM) or the
// kernel lacks it (ENOSYS), the error is ErrUnavailable and names the other
// stores; other errors stay what they are.
func TestKeyErrorNamesTheWayOut(t *testing.T) {
	for _, errno := range []error{unix.EPERM, unix.ENOSYS} {
		err := keyError("add", "OPENAI_API_KEY", errno)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "--store pass or --store file") || !strings.Contains(err.Error(), "not permitted here") {
			t.Errorf("%v: %v", errno, err)
		}
	}
	if err := keyError("read", "A", unix.EACCES); errors.Is(err, ErrUnavailable) || !errors.Is(err, unix.EACCES) {
		t.Errorf("EACCES: %v, want it wrapped as is", err)
	}
}
