package envspec

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/schema"
)

// The example of FORMAT §11.7.1 is a valid version-2 spec.
func TestCheckV2Example(t *testing.T) {
	b, err := os.ReadFile("testdata/example.v2.spec.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckV2(b); err != nil {
		t.Fatal(err)
	}
	format, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(format), strings.TrimSpace(string(b))[len("{\n"):]) {
		t.Error("FORMAT §11.7.1's example is not testdata/example.v2.spec.json")
	}
}

func TestCheckV2Refuses(t *testing.T) {
	b, err := os.ReadFile("testdata/example.v2.spec.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for name, bad := range map[string]string{
		"version 1":             strings.Replace(s, `"version": 2`, `"version": 1`, 1),
		"unknown effect":        strings.Replace(s, `"effect": "external"`, `"effect": "none"`, 1),
		"no approval":           strings.Replace(s, `, "approval": "required",`+"\n     \"tools\"", `,`+"\n     \"tools\"", 1),
		"http with a command":   strings.Replace(s, `"url": "https://mcp.example/search"`, `"url": "https://mcp.example/search", "command": "x"`, 1),
		"stdio without command": strings.Replace(s, `"command": "github-mcp-server", `, ``, 1),
		"hosts without network": strings.Replace(s, `"network": "hosts"`, `"network": "none"`, 1),
		"full network":          strings.Replace(s, `"network": "hosts"`, `"network": "full"`, 1),
		"built-in effect":       strings.Replace(s, `"run": {"approval": "required"}`, `"run": {"approval": "required", "effect": "read"}`, 1),
		"no lifecycle": strings.Replace(s, `,
  "lifecycle": {"ephemeral": false, "discard_max_tokens": 0}`, ``, 1),
	} {
		if bad == s {
			t.Fatalf("%s: the edit did not apply", name)
		}
		if err := CheckV2([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: CheckV2 = %v, want ErrInvalid", name, err)
		}
	}
}

// TestMigratedSpecsAreValidV2: package schema's up step gives a valid
// version-2 spec for this package's example, every fixture an earlier
// release wrote, and a new capsule's spec.
func TestMigratedSpecsAreValidV2(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/fixtures/*/capsules/*/environment/spec.json")
	paths = append(paths, "testdata/example.spec.json")
	inputs := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := ReadVersion(b); v != 1 {
			if _, err := Parse(b); err != nil { // written at version 2
				t.Errorf("%s: %v", p, err)
			}
			continue
		}
		inputs[p] = b
	}
	if len(inputs) < 2 {
		t.Fatalf("only %d inputs: no fixtures?", len(inputs))
	}
	for name, b := range inputs {
		up, err := schema.Up(schema.Environment, 1, 2, b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := CheckV2(up); err != nil {
			t.Errorf("%s: %v\n%s", name, err, up)
		}
		// Parse reads version 1 through the same step, and the down view
		// of the result is a version-1 spec Parse accepts (the rollback).
		viaParse, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		direct, err := Parse(up)
		if err != nil {
			t.Fatalf("%s: migrated: %v", name, err)
		}
		if !reflect.DeepEqual(viaParse, direct) {
			t.Errorf("%s: Parse of version 1 differs from Parse of its migration", name)
		}
		down, err := schema.Down(schema.Environment, 2, 1, up)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v, _ := ReadVersion(down); v != 1 || !bytes.Equal(down, b) {
			t.Errorf("%s: down view is not the version-1 bytes", name)
		}
		if _, err := Parse(down); err != nil {
			t.Errorf("%s: down view: %v", name, err)
		}
	}
}
