// Command mutate is the project's mutation check (issue 18, "Keep it that
// way"): it applies each safety mutation of a list, one at a time, to a
// temporary copy of the module, runs the packages that should catch it and
// prints killed or survived per mutation, then a summary. The working tree
// is never changed. bench/mutate.sh runs it with bench/mutations.txt.
//
//	go run ./bench/mutate -list bench/mutations.txt
//	go run ./bench/mutate -list bench/mutations.txt -only source-not-frozen-activating,adopt-not-above
//	go run ./bench/mutate -list bench/mutations.txt -check   # only look the snippets up
//
// A mutation whose original snippet is not in its file (the code moved on)
// is reported "not applicable"; one whose snippet occurs more than once is
// "ambiguous"; one that no longer builds is "broken". Packages run cheapest
// first and a mutation is killed by the first that fails, so the chaos test
// (./e2e) runs only for mutations the unit tests let through.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

type config struct {
	list      string
	root      string
	only      map[string]bool
	timeout   time.Duration
	e2eRounds int
	skipE2E   bool
	baseline  bool
	check     bool
	logs      string
}

func main() {
	var cfg config
	var only string
	flag.StringVar(&cfg.list, "list", "bench/mutations.txt", "the mutation list")
	flag.StringVar(&cfg.root, "root", ".", "the module to copy (its working tree, uncommitted changes included)")
	flag.StringVar(&only, "only", "", "comma-separated names of the mutations to run (default: all)")
	flag.DurationVar(&cfg.timeout, "timeout", 8*time.Minute, "go test -timeout of each package run")
	flag.IntVar(&cfg.e2eRounds, "e2e.rounds", 0, "rounds of the chaos test (0: its default)")
	flag.BoolVar(&cfg.skipE2E, "skip-e2e", false, "do not run ./e2e")
	flag.BoolVar(&cfg.baseline, "baseline", true, "run every package once unmutated first, and leave out those that fail")
	flag.BoolVar(&cfg.check, "check", false, "only report whether each snippet is found in the working tree")
	flag.StringVar(&cfg.logs, "logs", "", "folder to keep each run's go test output in")
	flag.Parse()
	if only != "" {
		cfg.only = map[string]bool{}
		for _, n := range strings.Split(only, ",") {
			cfg.only[strings.TrimSpace(n)] = true
		}
	}
	code, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// status is what became of one mutation.
type status string

const (
	killed        status = "killed"
	survived      status = "survived"
	notApplicable status = "not applicable"
	ambiguous     status = "ambiguous"
	broken        status = "broken"
	notRun        status = "not run"
)

type result struct {
	m      mutation
	status status
	by     string // package and test that killed it
	took   time.Duration
}

func run(cfg config) (int, error) {
	f, err := os.Open(cfg.list)
	if err != nil {
		return 0, err
	}
	ms, err := parseList(f)
	f.Close()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", cfg.list, err)
	}
	ms, err = selectMutations(ms, cfg.only)
	if err != nil {
		return 0, err
	}
	if cfg.check {
		return checkSnippets(cfg.root, ms), nil
	}
	tmp, err := os.MkdirTemp("", "capsule-mutate-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "src")
	if err := copyTree(cfg.root, tree); err != nil {
		return 0, fmt.Errorf("copy the tree: %w", err)
	}
	fmt.Printf("mutate: %d mutations on a copy of %s in %s\n", len(ms), absPath(cfg.root), tree)
	r := runner{cfg: cfg, tree: tree, failing: map[string]bool{}}
	if cfg.baseline {
		r.runBaseline(ms)
	}
	var results []result
	for _, m := range ms {
		res := r.mutate(m)
		results = append(results, res)
		printResult(res)
	}
	return summarize(results), nil
}

func selectMutations(ms []mutation, only map[string]bool) ([]mutation, error) {
	if only == nil {
		return ms, nil
	}
	var out []mutation
	for _, m := range ms {
		if only[m.Name] {
			out = append(out, m)
			delete(only, m.Name)
		}
	}
	for n := range only {
		return nil, fmt.Errorf("no mutation named %q in the list", n)
	}
	return out, nil
}

// checkSnippets reports, without running anything, which snippets are
// found once in the working tree; it returns 1 if any is not.
func checkSnippets(root string, ms []mutation) int {
	code := 0
	for _, m := range ms {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.File)))
		n := 0
		if err == nil {
			n = bytes.Count(b, []byte(m.Original))
		}
		st := "found"
		switch {
		case err != nil:
			st = err.Error()
		case n == 0:
			st = string(notApplicable)
		case n > 1:
			st = fmt.Sprintf("%s (%d matches)", ambiguous, n)
		}
		if st != "found" {
			code = 1
		}
		fmt.Printf("%-40s %-28s %s\n", m.Name, m.File, st)
	}
	return code
}

type runner struct {
	cfg     config
	tree    string
	failing map[string]bool // packages that fail unmutated
}

// runBaseline runs every package the list names once, unmutated.
func (r *runner) runBaseline(ms []mutation) {
	var pkgs []string
	for _, m := range ms {
		for _, p := range m.Run {
			if !slices.Contains(pkgs, p) && r.wanted(p) {
				pkgs = append(pkgs, p)
			}
		}
	}
	for _, p := range pkgs {
		start := time.Now()
		ok, _, out := r.goTest(p, "baseline")
		fmt.Printf("baseline %-22s %-6s %v\n", p, passFail(ok), time.Since(start).Round(time.Second))
		if !ok {
			r.failing[p] = true
			fmt.Printf("  left out of every mutation: it fails unmutated\n%s\n", indent(lastLines(out, 15)))
		}
	}
}

func passFail(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

func (r *runner) wanted(pkg string) bool {
	return !(r.cfg.skipE2E && isE2E(pkg))
}

func isE2E(pkg string) bool { return strings.TrimSuffix(pkg, "/...") == "./e2e" }

// mutate applies m to the copy, runs its packages and restores the file.
func (r *runner) mutate(m mutation) result {
	start := time.Now()
	res := result{m: m}
	path := filepath.Join(r.tree, filepath.FromSlash(m.File))
	orig, err := os.ReadFile(path)
	if err != nil {
		res.status, res.by = notApplicable, "file not found"
		return res
	}
	switch n := bytes.Count(orig, []byte(m.Original)); {
	case n == 0:
		res.status = notApplicable
		return res
	case n > 1:
		res.status, res.by = ambiguous, fmt.Sprintf("%d matches", n)
		return res
	}
	mutated := bytes.Replace(orig, []byte(m.Original), []byte(m.Replacement), 1)
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		res.status, res.by = broken, err.Error()
		return res
	}
	defer func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "mutate: restoring %s: %v\n", m.File, err)
			os.Exit(2)
		}
	}()
	res.status, res.by = r.runPackages(m)
	res.took = time.Since(start)
	return res
}

// runPackages runs m's packages in order until one fails.
func (r *runner) runPackages(m mutation) (status, string) {
	ran := 0
	for _, p := range m.Run {
		if !r.wanted(p) || r.failing[p] {
			continue
		}
		ran++
		ok, test, out := r.goTest(p, m.Name)
		if ok {
			continue
		}
		if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
			return broken, p + ": " + firstLine(out)
		}
		return killed, strings.TrimSpace(p + " " + test)
	}
	if ran == 0 {
		return notRun, "every package left out"
	}
	return survived, ""
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
var panicTimeout = regexp.MustCompile(`(?m)^panic: test timed out after (\S+)`)

// goTest runs one package's tests in the copy and reports whether they
// passed, which test failed first, and the output.
func (r *runner) goTest(pkg, tag string) (bool, string, string) {
	args := []string{"test", "-count=1", "-timeout", r.cfg.timeout.String(), pkg}
	if isE2E(pkg) && r.cfg.e2eRounds > 0 {
		args = append(args, fmt.Sprintf("-e2e.rounds=%d", r.cfg.e2eRounds))
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.timeout+2*time.Minute)
	defer cancel()
	out, err := r.goCmd(ctx, args...)
	r.keepLog(tag, pkg, out)
	if err == nil {
		return true, "", out
	}
	test := ""
	if m := failLine.FindStringSubmatch(out); m != nil {
		test = m[1]
	}
	if m := panicTimeout.FindStringSubmatch(out); m != nil {
		test = strings.TrimSpace(test + " (timed out after " + m[1] + ")")
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		test = strings.TrimSpace(test + " (killed after the outer timeout)")
	}
	return false, test, out
}

func (r *runner) goCmd(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = r.tree
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	return out.String(), err
}

func (r *runner) keepLog(tag, pkg, out string) {
	if r.cfg.logs == "" {
		return
	}
	if err := os.MkdirAll(r.cfg.logs, 0o755); err != nil {
		return
	}
	name := tag + "_" + strings.NewReplacer("/", "_", ".", "").Replace(pkg) + ".log"
	_ = os.WriteFile(filepath.Join(r.cfg.logs, name), []byte(out), 0o644)
}

func printResult(res result) {
	m := res.m
	line := fmt.Sprintf("%-14s %-40s %-26s", res.status, m.Name, m.File)
	switch {
	case res.by != "":
		line += " " + res.by
	case res.status == survived && m.Equivalent != "":
		line += " equivalent: " + m.Equivalent
	case res.status == survived && m.Expected != "":
		line += " expected: " + m.Expected
	}
	if res.took > 0 {
		line += fmt.Sprintf(" [%v]", res.took.Round(time.Second))
	}
	fmt.Println(line)
}

// summarize prints the totals and the survivors with their rules; it
// returns 1 when a survivor is neither equivalent nor expected.
func summarize(results []result) int {
	count := map[status]int{}
	for _, r := range results {
		count[r.status]++
	}
	fmt.Printf("\nsummary: %d mutations: %d killed, %d survived, %d not applicable, %d ambiguous, %d broken, %d not run\n",
		len(results), count[killed], count[survived], count[notApplicable], count[ambiguous], count[broken], count[notRun])
	code := 0
	for _, r := range results {
		if r.status != survived {
			continue
		}
		note := "NOT PINNED"
		switch {
		case r.m.Equivalent != "":
			note = "equivalent: " + r.m.Equivalent
		case r.m.Expected != "":
			note = "expected: " + r.m.Expected
		default:
			code = 1
		}
		fmt.Printf("  survived %-40s %s; %s\n", r.m.Name, r.m.Rule, note)
	}
	return code
}

// copyTree copies the module at src to dst, leaving out the folders go
// test and the benchmarks write to. .git comes along (a few MiB): the
// README test installs the binary with the commit `git rev-parse HEAD`
// names, so the copy must be a checkout too.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if rel == filepath.Join("bench", "out") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func firstLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			return t
		}
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
