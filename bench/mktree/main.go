// Command mktree writes a workspace of N files of SIZE incompressible bytes
// for bench/verify.sh. The bytes come from a seeded ChaCha8 stream, so a
// run is reproducible and fast (no /dev/urandom bottleneck).
//
//	go run ./bench/mktree -dir /tmp/ws -n 10000 -size 102400
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", "", "the folder to create (must not exist)")
	n := flag.Int("n", 1, "number of files")
	size := flag.Int64("size", 1<<30, "bytes per file")
	seed := flag.Uint64("seed", 1, "seed of the byte stream")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "mktree: -dir is required")
		os.Exit(2)
	}
	if err := run(*dir, *n, *size, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "mktree:", err)
		os.Exit(1)
	}
}

func run(dir string, n int, size int64, seed uint64) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	src := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
	for i := range n {
		// 100 files per directory, like a source tree.
		name := filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.bin", i))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := writeFile(name, io.LimitReader(src, size)); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(name string, r io.Reader) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := io.Copy(w, r); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
