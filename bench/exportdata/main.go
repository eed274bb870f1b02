// Command exportdata builds the capsule bench/export.sh measures: a real
// capsule (package capsule) whose workspace snapshot holds N files of SIZE
// bytes of pseudo-random (incompressible) content, stored as blobs. It also
// writes SUMS, a `sha256sum -c` list of every file of the folder, for the
// comparison with tar -xf followed by sha256sum -c.
//
//	go run ./bench/exportdata -dir /tmp/x/agent -n 10000 -size 102400
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

func main() {
	dir := flag.String("dir", "", "capsule folder to create (must not exist)")
	n := flag.Int("n", 10000, "number of workspace files")
	size := flag.Int("size", 100<<10, "bytes per file")
	sums := flag.String("sums", "", "write a sha256sum -c list of the folder's files here")
	seed := flag.Uint64("seed", 1, "seed of the content")
	direct := flag.Bool("direct", false, "write the blob files directly, with one sync(2) at the end instead of the store's fsync per blob (fast for 1,000,000 files)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "exportdata: -dir is required")
		os.Exit(2)
	}
	if err := build(*dir, *n, *size, *seed, *direct); err != nil {
		fmt.Fprintln(os.Stderr, "exportdata:", err)
		os.Exit(1)
	}
	if *sums != "" {
		if err := writeSums(*dir, *sums); err != nil {
			fmt.Fprintln(os.Stderr, "exportdata:", err)
			os.Exit(1)
		}
	}
}

func build(dir string, n, size int, seed uint64, direct bool) error {
	c, err := capsule.Init(vfs.OS{}, dir, capsule.InitConfig{Name: "export-bench"})
	if err != nil {
		return err
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	src := rand.NewChaCha8(key)
	return c.Commit(func(tx *capsule.Tx) error {
		s := capsule.NewSnapshot()
		buf := make([]byte, size)
		for i := 0; i < n; i++ {
			_, _ = src.Read(buf)
			put := tx.PutBlob
			if direct {
				put = func(r io.Reader) (digest.Digest, int64, error) { return writeBlob(dir, buf) }
			}
			d, m, err := put(bytesReader(buf))
			if err != nil {
				return err
			}
			s.Entries = append(s.Entries, capsule.Entry{Path: fmt.Sprintf("src/d%04d/f%07d.bin", i/1000, i), Type: capsule.TypeFile, Size: m, Blob: d})
		}
		if direct {
			syscall.Sync()
		}
		return tx.SetSnapshot(s)
	})
}

// writeBlob writes b as the blob file of the capsule dir, named by its
// digest, without an fsync (the caller syncs once at the end).
func writeBlob(dir string, b []byte) (digest.Digest, int64, error) {
	d := digest.FromBytes(b)
	err := os.WriteFile(filepath.Join(dir, "artifacts", "blobs", d.Hex()), b, 0o644)
	return d, int64(len(b)), err
}

type sliceReader struct {
	b []byte
	i int
}

func bytesReader(b []byte) io.Reader { return &sliceReader{b: b} }

func (r *sliceReader) Read(p []byte) (int, error) {
	if r.i >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.i:])
	r.i += n
	return n, nil
}

// writeSums lists every regular file under dir as sha256sum prints it,
// with paths relative to dir.
func writeSums(dir, out string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, rel := range files {
		in, err := os.Open(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		d, _, err := digest.FromReader(in)
		in.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s  %s\n", d.Hex(), rel)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
