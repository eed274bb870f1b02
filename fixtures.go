// Package capsule is the module root. It holds no code of its own beyond
// embedding the golden fixtures of every release (testdata/fixtures), which
// go:embed can only reach from a directory above them; package fixtures is
// the one that reads them, and the only importer of this package.
package capsule

import "embed"

// Fixtures holds testdata/fixtures/<release>/capsules (the capsule folders
// each release wrote) and each fixture's expect/<name>/folder.txt (every
// entry the release wrote, empty folders included, which git does not keep).
//
//go:embed testdata/fixtures/*/capsules testdata/fixtures/*/expect/*/folder.txt
var Fixtures embed.FS
