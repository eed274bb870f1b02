package vfs

import "testing"

// TestKernelAtLeast: syncfs is trusted to report write-back errors from
// Linux 5.8 on only.
func TestKernelAtLeast(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    bool
	}{
		{"5.8.0", true}, {"5.7.19", false}, {"6.1.0-13-amd64", true}, {"5.10-rc1", true},
		{"4.19.0", false}, {"5.8-rc2", true}, {"10.0", true}, {"garbage", false}, {"5", false},
	} {
		if got := kernelAtLeast(tc.release, 5, 8); got != tc.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", tc.release, got, tc.want)
		}
	}
}
