package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/agentcapsule/capsule/archive"
	"github.com/agentcapsule/capsule/compat"
	"github.com/agentcapsule/capsule/manifest"
)

// maxCompatFile bounds each file compat check reads whole (the manifest,
// the spec, the index); the journal is streamed.
const maxCompatFile = 64 << 20

// withCompatInput opens the capsule at path, a folder or an archive, and
// calls f with its files; the journal is a stream valid during f only.
func withCompatInput(path string, f func(compat.Input) error) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return withFolderInput(path, f)
	}
	return withArchiveInput(path, f)
}

func withFolderInput(dir string, f func(compat.Input) error) error {
	var in compat.Input
	for p, dst := range map[string]*[]byte{manifest.FileName: &in.Manifest, manifest.EnvironmentPath: &in.Spec, manifest.IndexPath: &in.Index} {
		b, err := readBounded(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return fmt.Errorf("compat: %w", err)
		}
		*dst = b
	}
	j, err := os.Open(filepath.Join(dir, filepath.FromSlash(manifest.JournalPath)))
	if err != nil {
		return fmt.Errorf("compat: %w", err)
	}
	defer j.Close()
	in.Journal = bufio.NewReaderSize(j, 1<<20)
	return f(in)
}

func readBounded(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxCompatFile+1))
	if err == nil && len(b) > maxCompatFile {
		err = fmt.Errorf("%s: over %d bytes", path, maxCompatFile)
	}
	return b, err
}

// withArchiveInput reads an archive twice: once for the small files, which
// the tar may hold after the journal, then again to stream the journal.
func withArchiveInput(path string, f func(compat.Input) error) error {
	var in compat.Input
	want := map[string]*[]byte{manifest.FileName: &in.Manifest, manifest.EnvironmentPath: &in.Spec, manifest.IndexPath: &in.Index}
	err := eachTarEntry(path, func(name string, r io.Reader) (bool, error) {
		dst, ok := want[name]
		if !ok {
			return false, nil
		}
		b, err := io.ReadAll(io.LimitReader(r, maxCompatFile+1))
		if err == nil && len(b) > maxCompatFile {
			err = fmt.Errorf("%s: over %d bytes", name, maxCompatFile)
		}
		*dst = b
		delete(want, name)
		return len(want) == 0, err
	})
	if err != nil {
		return err
	}
	for name := range want {
		if name != manifest.IndexPath {
			return fmt.Errorf("compat: %s: the archive has no %s", path, name)
		}
	}
	found := false
	err = eachTarEntry(path, func(name string, r io.Reader) (bool, error) {
		if name != manifest.JournalPath {
			return false, nil
		}
		found = true
		in.Journal = bufio.NewReaderSize(r, 1<<20)
		return true, f(in)
	})
	if err == nil && !found {
		in.Journal = bytes.NewReader(nil)
		err = f(in)
	}
	return err
}

// eachTarEntry calls visit with each regular file of the archive at path
// (a tar, or a tar in zstd recognised by its magic) until visit returns
// true or an error.
func eachTarEntry(path string, visit func(name string, r io.Reader) (bool, error)) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 1<<20)
	var src io.Reader = br
	if head, _ := br.Peek(4); bytes.Equal(head, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		dec, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(archive.DefaultMaxWindow))
		if err != nil {
			return fmt.Errorf("compat: %s: %w", path, err)
		}
		defer dec.Close()
		src = dec
	}
	tr := tar.NewReader(src)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("compat: %s: not a capsule archive: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		done, err := visit(h.Name, tr)
		if done || err != nil {
			return err
		}
	}
}
