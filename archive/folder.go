package archive

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/internal/dirlist"
	"github.com/agentcapsule/capsule/vfs"
)

// A capsule of a million files has a million blobs in one folder. Export
// lists the folder once, before it writes (it needs the sorted order and
// the total), and keeps each blob as its 32-byte digest rather than as a
// name with its metadata: 32 MB at a million blobs, where a list of names
// held several times that. The other entries of a folder, a handful, are
// kept as they are.

// folder is the folder being exported, listed: one level per directory.
type folder struct {
	levels map[string]*level // by slash path; "" is the root
	total  int64             // bytes of the regular files
}

// level is one directory: its blob-named regular files as digests, the
// rest as entries, both sorted, merged when walked.
type level struct {
	others []srcEntry
	blobs  keyList
}

// collect lists the folder in archive order (FORMAT §8.1), leaving out what
// sourceEntry leaves out.
func collect(fsys vfs.FS, dir string, skip func(string) bool) (*folder, error) {
	l := &folder{levels: map[string]*level{}}
	if err := l.list(fsys, dir, "", skip); err != nil {
		return nil, fmt.Errorf("export %s: %w", dir, err)
	}
	return l, nil
}

// addRoot puts entries held in memory (the manifest and its signature) in
// their sorted place at the root.
func (l *folder) addRoot(extra ...srcEntry) {
	root := l.levels[""]
	for _, e := range extra {
		root.others = append(root.others, e)
		l.total += e.size
	}
	sort.SliceStable(root.others, func(i, j int) bool { return root.others[i].sortKey() < root.others[j].sortKey() })
}

func (l *folder) list(fsys vfs.FS, dir, rel string, skip func(string) bool) error {
	lv := &level{}
	l.levels[rel] = lv
	err := dirlist.Each(fsys, filepath.Join(dir, filepath.FromSlash(rel)), func(de fs.DirEntry) error {
		name := path.Join(rel, de.Name())
		e, keep, err := sourceEntry(de, name, skip)
		if err != nil || !keep {
			return err
		}
		l.total += e.size
		if key, ok := blobKey(de.Name()); ok && !e.isDir {
			lv.blobs.add(key)
		} else {
			lv.others = append(lv.others, e)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(lv.others, func(i, j int) bool { return lv.others[i].sortKey() < lv.others[j].sortKey() })
	lv.blobs.sort()
	for _, e := range lv.others {
		if e.isDir {
			if err := l.list(fsys, dir, e.name, skip); err != nil {
				return err
			}
		}
	}
	return nil
}

// each calls fn with every entry below rel in archive order.
func (l *folder) each(rel string, fn func(srcEntry) error) error {
	lv := l.levels[rel]
	i, j := 0, 0
	for i < len(lv.others) || j < lv.blobs.n {
		var e srcEntry
		if j < lv.blobs.n {
			e = srcEntry{name: path.Join(rel, lv.blobs.hex(j))}
		}
		if j == lv.blobs.n || i < len(lv.others) && lv.others[i].sortKey() < e.name {
			e = lv.others[i]
			i++
		} else {
			j++
		}
		if err := fn(e); err != nil {
			return err
		}
		if e.isDir {
			if err := l.each(e.name, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// blobKey decodes a name of 64 lower-case hex digits.
func blobKey(name string) ([32]byte, bool) {
	var key [32]byte
	if len(name) != 64 || strings.ToLower(name) != name {
		return key, false
	}
	if _, err := hex.Decode(key[:], []byte(name)); err != nil {
		return key, false
	}
	return key, true
}

// keyList is a sortable list of 32-byte keys in chunks, so that it grows
// without copying.
type keyList struct {
	chunks [][][32]byte
	n      int
}

const keyChunk = 8192

func (k *keyList) add(key [32]byte) {
	if k.n%keyChunk == 0 {
		k.chunks = append(k.chunks, make([][32]byte, 0, keyChunk))
	}
	c := &k.chunks[len(k.chunks)-1]
	*c = append(*c, key)
	k.n++
}

func (k *keyList) at(i int) *[32]byte { return &k.chunks[i/keyChunk][i%keyChunk] }

func (k *keyList) hex(i int) string { return hex.EncodeToString(k.at(i)[:]) }

// Len, Less and Swap sort the keys.
func (k *keyList) Len() int           { return k.n }
func (k *keyList) Less(i, j int) bool { return bytes.Compare(k.at(i)[:], k.at(j)[:]) < 0 }
func (k *keyList) Swap(i, j int)      { a, b := k.at(i), k.at(j); *a, *b = *b, *a }

func (k *keyList) sort() { sort.Sort(k) }
