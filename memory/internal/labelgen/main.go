// Command labelgen writes the memory index's labelled set
// (memory/testdata/labelled: journal.jsonl and questions.json) from
// labelset.Seed. Run from the repository root:
//
//	go run ./memory/internal/labelgen -o memory/testdata/labelled
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentcapsule/capsule/memory/internal/labelset"
)

func main() {
	out := flag.String("o", "memory/testdata/labelled", "the folder to write")
	flag.Parse()
	files, err := labelset.Files(labelset.Seed)
	if err == nil {
		err = os.MkdirAll(*out, 0o755)
	}
	for name, b := range files {
		if err == nil {
			err = os.WriteFile(filepath.Join(*out, name), b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labelgen:", err)
		os.Exit(1)
	}
}
