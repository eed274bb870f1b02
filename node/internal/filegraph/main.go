// Command filegraph prints the file reference graph of one Go package
// directory, type-checked from source (test files left out): the number of
// levels (the longest chain of files referring down, plus one) and the
// back-references, the file edges that lie on a cycle (0 when the files
// read top-down). With -v it lists each file's level and the files it
// refers to, with counts, and with -cross the identifiers by which a
// source_ or target_ file reaches another role's file (or tenant_run.go).
//
//	go run ./node/internal/filegraph [-v] [-cross] node
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	v := flag.Bool("v", false, "list each file's level and references")
	cross := flag.Bool("cross", false, "list references between the roles' files")
	flag.Parse()
	dir, verbose := flag.Arg(0), *v
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		panic(err)
	}
	for _, p := range pkgs {
		var files []*ast.File
		for _, f := range p.Files {
			files = append(files, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(error) {}}
		tp, _ := conf.Check(p.Name, fset, files, info)
		edges := map[string]map[string]int{}
		names := map[string]bool{}
		for _, f := range files {
			names[filepath.Base(fset.File(f.Pos()).Name())] = true
		}
		for id, obj := range info.Uses {
			if obj == nil || obj.Pkg() != tp || !obj.Pos().IsValid() {
				continue
			}
			from := filepath.Base(fset.File(id.Pos()).Name())
			to := filepath.Base(fset.File(obj.Pos()).Name())
			if from == to {
				continue
			}
			if *cross && strings.Split(from, "_")[0] != strings.Split(to, "_")[0] && (strings.HasPrefix(from, "source_") || strings.HasPrefix(from, "target_")) && (strings.HasPrefix(to, "source_") || strings.HasPrefix(to, "target_") || strings.HasPrefix(to, "tenant_run")) {
				fmt.Printf("cross %s -> %s: %s\n", from, to, obj.Name())
			}
			if edges[from] == nil {
				edges[from] = map[string]int{}
			}
			edges[from][to]++
		}
		// SCCs via Tarjan.
		idx, low, on := map[string]int{}, map[string]int{}, map[string]bool{}
		var st []string
		comp := map[string]int{}
		n, c := 0, 0
		var strong func(v string)
		strong = func(v string) {
			idx[v], low[v] = n, n
			n++
			st = append(st, v)
			on[v] = true
			for w := range edges[v] {
				if _, ok := idx[w]; !ok {
					strong(w)
					low[v] = min(low[v], low[w])
				} else if on[w] {
					low[v] = min(low[v], idx[w])
				}
			}
			if low[v] == idx[v] {
				for {
					w := st[len(st)-1]
					st = st[:len(st)-1]
					on[w] = false
					comp[w] = c
					if w == v {
						break
					}
				}
				c++
			}
		}
		var all []string
		for k := range names {
			all = append(all, k)
		}
		sort.Strings(all)
		for _, v := range all {
			if _, ok := idx[v]; !ok {
				strong(v)
			}
		}
		back := 0
		for v, m := range edges {
			for w, k := range m {
				if comp[v] == comp[w] {
					back++
					if verbose {
						fmt.Printf("cycle edge %s -> %s (%d)\n", v, w, k)
					}
				}
			}
		}
		level := map[string]int{}
		var lv func(v string, d int) int
		lv = func(v string, d int) int {
			if l, ok := level[v]; ok {
				return l
			}
			if d > 200 {
				return 0
			}
			l := 0
			for w := range edges[v] {
				if comp[w] != comp[v] {
					l = max(l, lv(w, d+1)+1)
				}
			}
			level[v] = l
			return l
		}
		maxl := 0
		for _, v := range all {
			maxl = max(maxl, lv(v, 0))
		}
		fmt.Printf("package %s: %d files, %d levels, %d cyclic file edges (back-references)\n", p.Name, len(all), maxl+1, back)
		if verbose {
			for _, v := range all {
				var ds []string
				for w, k := range edges[v] {
					ds = append(ds, fmt.Sprintf("%s:%d", w, k))
				}
				sort.Strings(ds)
				fmt.Printf("L%d %s -> %s\n", level[v], v, strings.Join(ds, " "))
			}
		}
	}
}
