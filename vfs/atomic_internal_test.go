package vfs

import (
	"strconv"
	"testing"
)

// TestWriteFileSkipsLeftoverTemp: a temporary file left by a crashed earlier
// process may hold the name the sequence gives next; WriteFile must use
// another name instead of failing with "file exists".
func TestWriteFileSkipsLeftoverTemp(t *testing.T) {
	m := NewMem()
	next := tempSeq.Load() + 1
	for i := range uint64(3) {
		leftover := "/" + TempPrefix + "f-" + strconv.FormatUint(next+i, 36)
		if err := WriteFile(m, leftover, []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tempSeq.Store(next - 1)
	if err := WriteFile(m, "/f", []byte("data"), 0o644); err != nil {
		t.Fatalf("WriteFile with leftovers in the way: %v", err)
	}
	got, err := ReadFile(m, "/f")
	if err != nil || string(got) != "data" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
}
