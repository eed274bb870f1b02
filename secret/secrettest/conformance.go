// Package secrettest holds the conformance suite every secret.Store runs.
// Only tests import it.
package secrettest

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentcapsule/capsule/secret"
)

var seq atomic.Uint64

// UniqueName returns a secret name no other test run uses at the same time,
// for stores shared by every process of the user (the keyring, pass).
func UniqueName() string {
	return fmt.Sprintf("CAPSULE_TEST_%d_%d", os.Getpid(), seq.Add(1))
}

// Run checks the Store contract on s: round trips of awkward values,
// sorted names, not-found errors, refused names, and no value in any error.
// The names it creates come from name; it removes them when the test ends.
func Run(t *testing.T, s secret.Store, name func() string) {
	t.Helper()
	var errs []error
	a, b := name(), name()
	t.Cleanup(func() { _ = s.Remove(a); _ = s.Remove(b) })
	values := []string{"sk-test-0123456789abcdef", "two\nlines\n", "ünï \"quoted\" <tag> & tab\t", strings.Repeat("x", 5000)}
	for _, v := range values {
		mustSet(t, s, a, v)
		got, err := s.Get(a)
		if err != nil || got != v {
			t.Fatalf("%s: Get after Set = %q, %v; want the value set (%d bytes)", s.Kind(), clip(got), err, len(v))
		}
	}
	mustSet(t, s, b, "other-value-0001")
	names, err := s.Names()
	if err != nil {
		t.Fatalf("%s: Names: %v", s.Kind(), err)
	}
	if !slices.Contains(names, a) || !slices.Contains(names, b) || !slices.IsSorted(names) {
		t.Errorf("%s: Names = %v, want sorted and holding %s and %s", s.Kind(), names, a, b)
	}
	if err := s.Remove(a); err != nil {
		t.Fatalf("%s: Remove: %v", s.Kind(), err)
	}
	_, err = s.Get(a)
	checkNotFound(t, s, a, "Get after Remove", err)
	errs = append(errs, err)
	err = s.Remove(a)
	checkNotFound(t, s, a, "second Remove", err)
	errs = append(errs, err)
	if names, _ = s.Names(); slices.Contains(names, a) {
		t.Errorf("%s: Names after Remove = %v, still holds %s", s.Kind(), names, a)
	}
	if got, err := s.Get(b); err != nil || got != "other-value-0001" {
		t.Errorf("%s: Remove of %s changed %s: %q, %v", s.Kind(), a, b, got, err)
	}
	errs = append(errs, checkInvalidNames(t, s)...)
	for _, e := range errs {
		for _, v := range append(values, "other-value-0001") {
			if e != nil && strings.Contains(e.Error(), v) {
				t.Errorf("%s: an error holds a value: %v", s.Kind(), e)
			}
		}
	}
}

func mustSet(t *testing.T, s secret.Store, name, value string) {
	t.Helper()
	if err := s.Set(name, value); err != nil {
		t.Fatalf("%s: Set %s: %v", s.Kind(), name, err)
	}
}

func checkNotFound(t *testing.T, s secret.Store, name, what string, err error) {
	t.Helper()
	var nf *secret.NotFoundError
	if !errors.Is(err, secret.ErrNotFound) || !errors.As(err, &nf) || nf.Name != name {
		t.Errorf("%s: %s: err = %v, want a *NotFoundError for %s", s.Kind(), what, err, name)
	}
}

// checkInvalidNames checks that a bad name is refused by every method.
func checkInvalidNames(t *testing.T, s secret.Store) []error {
	t.Helper()
	var errs []error
	for _, bad := range []string{"", "1ABC", "A-B", "capsule:X", "A B", strings.Repeat("A", 257)} {
		_, e1 := s.Get(bad)
		e2 := s.Set(bad, "some-value-1234")
		e3 := s.Remove(bad)
		for _, e := range []error{e1, e2, e3} {
			if !errors.Is(e, secret.ErrInvalidName) {
				t.Errorf("%s: name %q: err = %v, want ErrInvalidName", s.Kind(), clip(bad), e)
			}
		}
		errs = append(errs, e1, e2, e3)
	}
	return errs
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
