// Package archive turns a capsule folder into a deterministic tar stream
// (optionally zstd-compressed) and back, refusing hostile archives.
//
// Export writes the entries of a capsule folder at the root of the tar
// ("manifest.json", "memory/…"), sorted by name, with fixed metadata, so the
// same capsule always gives byte-identical files (docs/FORMAT.md §8). Import
// unpacks into a staging folder beside the destination, checks every entry
// against the rules and limits of docs/FORMAT.md §9, runs an injected
// verifier over the result, and only then renames the staging folder into
// place. Verify imports into a temporary folder and reports every problem.
//
// The package knows nothing about the manifest: what a valid capsule is comes
// from the Verifier the caller passes in (the command wires capsule.Verify).
// All file access goes through vfs.FS, so crash tests can run on vfs.Mem.
// It may be imported by cmd and node; it imports digest, vfs and signature.
package archive
