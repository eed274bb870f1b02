package capsule_test

// The pure packages carry the logic and must stay testable without disk,
// network, clock or randomness (ARCHITECTURE.md; STYLE.md habit 2). This test
// fails if one of them, or any package it imports from this module, imports
// a forbidden package.

import (
	"go/build"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/agentcapsule/capsule"

var purePackages = []string{"digest", "manifest", "journal", "render", "transfer", "schema", "compat"}

var forbidden = map[string]bool{"os": true, "net": true, "time": true, "math/rand": true, "math/rand/v2": true, "os/exec": true, "net/http": true}

func TestPurePackagesImportNoIO(t *testing.T) {
	for _, p := range purePackages {
		seen := map[string]bool{}
		var walk func(path string, chain []string)
		walk = func(path string, chain []string) {
			if seen[path] {
				return
			}
			seen[path] = true
			dir := "." + strings.TrimPrefix(path, module)
			pkg, err := build.ImportDir(dir, 0)
			if err != nil {
				if _, ok := err.(*build.NoGoError); ok {
					return
				}
				t.Fatalf("%s: %v", path, err)
			}
			imports := append([]string(nil), pkg.Imports...)
			sort.Strings(imports)
			for _, imp := range imports {
				if forbidden[imp] {
					t.Errorf("pure package %s imports %s (via %s)", p, imp, strings.Join(append(chain, path), " -> "))
				}
				if strings.HasPrefix(imp, module+"/") {
					walk(imp, append(chain, path))
				}
			}
		}
		walk(module+"/"+p, nil)
	}
}
