// Command fsyncbench measures the cost of one fsync on a disk: it appends
// a small record to a file in a directory and syncs it, n times, and
// prints the median, as bench/loopstep.sh compares a step's cost with it.
//
//	go run ./bench/fsyncbench -dir /var/tmp -n 200
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

func main() {
	dir := flag.String("dir", os.TempDir(), "directory on the disk to measure")
	n := flag.Int("n", 200, "fsyncs to time")
	size := flag.Int("size", 512, "bytes appended before each fsync (a journal line)")
	flag.Parse()
	d, err := measure(*dir, *n, *size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsyncbench:", err)
		os.Exit(1)
	}
	fmt.Printf("fsync-median-ns %d\n", d.Nanoseconds())
}

// measure returns the median time of a write of size bytes and fsync.
func measure(dir string, n, size int) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "fsyncbench-*")
	if err != nil {
		return 0, fmt.Errorf("fsyncbench: create: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	rec := make([]byte, size)
	rec[size-1] = '\n'
	times := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := f.Write(rec); err != nil {
			return 0, fmt.Errorf("fsyncbench: write: %w", err)
		}
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("fsyncbench: sync: %w", err)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}
