package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseList(t *testing.T) {
	in := "# a comment\n\n[one]\nrule: R1\nfile: a/b.go\nrun: ./a ./b\n--- original\n\tif x {\n\t\treturn\n--- replacement\n\tif !x {\n--- end\n" +
		"[two]\nrule: R2\nfile: c.go\nrun: ./c\nequivalent: a double check\n--- original\nfoo()\n--- replacement\n\n--- end\n"
	got, err := parseList(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []mutation{
		{Name: "one", Rule: "R1", File: "a/b.go", Run: []string{"./a", "./b"}, Original: "\tif x {\n\t\treturn", Replacement: "\tif !x {", Line: 3},
		{Name: "two", Rule: "R2", File: "c.go", Run: []string{"./c"}, Equivalent: "a double check", Original: "foo()", Replacement: "", Line: 13},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseList (-want +got):\n%s", diff)
	}
}

func TestParseListErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no file", "[a]\nrun: ./x\n--- original\nx\n--- replacement\ny\n--- end\n", "no file"},
		{"no run", "[a]\nfile: f.go\n--- original\nx\n--- replacement\ny\n--- end\n", "no packages"},
		{"same", "[a]\nfile: f.go\nrun: ./x\n--- original\nx\n--- replacement\nx\n--- end\n", "is the original"},
		{"unterminated", "[a]\nfile: f.go\nrun: ./x\n--- original\nx\n", "unterminated"},
		{"no replacement", "[a]\nfile: f.go\nrun: ./x\n--- original\nx\n--- end\n", "no replacement"},
		{"unknown key", "[a]\nfiles: f.go\n", "unknown key"},
		{"twice", "[a]\nfile: f.go\nrun: ./x\n--- original\nx\n--- replacement\ny\n--- end\n[a]\nfile: f.go\nrun: ./x\n--- original\nx\n--- replacement\ny\n--- end\n", "already defined"},
		{"before name", "file: f.go\n", "before the first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseList(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseList: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestMutationList checks that the project's list parses and holds the
// twelve mutations of issue 18 and every spec section it must cover.
func TestMutationList(t *testing.T) {
	f, err := os.Open("../mutations.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := parseList(f)
	if err != nil {
		t.Fatal(err)
	}
	rules := ""
	for _, m := range ms {
		rules += m.Rule + "\n"
	}
	for i := 1; i <= 12; i++ {
		if !strings.Contains(rules, "issue 18 item "+strconv.Itoa(i)+";") {
			t.Errorf("no mutation for issue 18 item %d", i)
		}
	}
	for _, sec := range []string{"PROTOCOL §6 R1", "PROTOCOL §6 R2", "PROTOCOL §6 R3", "PROTOCOL §6 R4", "PROTOCOL §6 R5",
		"PROTOCOL §6 R6", "PROTOCOL §6 R7", "PROTOCOL §6 R8", "PROTOCOL §6 R9", "PROTOCOL §6 R10", "PROTOCOL §6 R11",
		"PROTOCOL §6 R12", "FORMAT §4.1", "FORMAT §4.2", "FORMAT §4.3", "FORMAT §7.4", "FORMAT §7.8", "FORMAT §9.1",
		"FORMAT §9.2", "FORMAT §9.3", "FORMAT §9.4"} {
		if !regexp.MustCompile(regexp.QuoteMeta(sec) + `([^0-9.]|$)`).MatchString(rules) {
			t.Errorf("no mutation for %s", sec)
		}
	}
}
