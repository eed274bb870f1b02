package render_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestSubpackagesArePure extends the repository's boundary test (which
// walks render and its in-module imports) to the provider packages, which
// render does not import: none may import os, net, time or math/rand, or
// an impure package of this module. The SDKs they build on are outside
// the module and not walked.
func TestSubpackagesArePure(t *testing.T) {
	const module = "github.com/agentcapsule/capsule"
	forbidden := map[string]bool{"os": true, "net": true, "time": true, "math/rand": true, "math/rand/v2": true, "os/exec": true, "net/http": true}
	pure := map[string]bool{"digest": true, "manifest": true, "journal": true, "render": true, "transfer": true}
	for _, dir := range []string{"openai", "anthropic", "gemini", "ollama", "wire"} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range pkg.Imports {
			if forbidden[imp] {
				t.Errorf("render/%s imports %s", dir, imp)
			}
			if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				top, _, _ := strings.Cut(rest, "/")
				if !pure[top] {
					t.Errorf("render/%s imports %s, which is not a pure package", dir, imp)
				}
			}
		}
	}
}
