// Package compat decides whether a release can take up a capsule written by
// another: per kind of state, the version found, what the release does with
// it (read, migrate through which steps, or refuse), and the semantic
// issues that a structurally readable capsule can still hold (FORMAT
// §11.9): a tool the journal names that the spec or release no longer has,
// a migrated spec that would grant more authority than the original, and a
// completed call that skipped a check the spec now requires. It also holds
// the bounded discard policy: when an agent may be discarded instead of
// migrated.
//
// It is pure (no file system, network, clock or randomness): callers hand
// it the bytes of each file and append the events it proposes. The CLI
// (`capsule compat check`) and, later, the node's restore path import it.
package compat
