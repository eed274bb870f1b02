package store_test

import (
	"testing"

	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/node/store/storetest"
	"github.com/agentcapsule/capsule/vfs"
)

func TestDiskOnOS(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, func() store.Store) {
		return store.Disk{FS: vfs.OS{}, Dir: t.TempDir() + "/blobs"}, nil
	})
}

func TestDiskOnMem(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, func() store.Store) {
		fsys := vfs.NewMem()
		s := store.Disk{FS: fsys, Dir: "/agent/blobs"}
		return s, func() store.Store { fsys.Crash(); return s }
	})
}

func TestMem(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, func() store.Store) {
		s := &store.Mem{}
		return s, func() store.Store { s.Crash(); return s }
	})
}
