package vfs

import "testing"

func TestMatchPath(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"", "/any/thing", true},
		{"/cap/f", "/cap/f", true},
		{"/cap/f", "/cap/f2", false},
		{"/cap", "/cap/artifacts/blobs/x", true},
		{"/cap", "/capsule/x", false},
		{"/cap/*", "/cap/f", true},
		{"/cap/*", "/cap/a/b", true},
		{"/cap/*.json", "/cap/manifest.json", true},
		{"/cap/*.json", "/cap/memory/index.json", false},
		{"manifest.json", "/x/y/manifest.json", true},
		{"blobs", "/cap/artifacts/blobs/abc", true},
		{".tmp-*", "/cap/.tmp-manifest.json-3", true},
		{".tmp-*", "/cap/manifest.json", false},
		{"cap/f", "cap/f", true},
		{"cap/f", "/cap/f", false},
		{"/cap/f", "/cap//f/", true},
		{"[", "/cap/f", false},
	}
	for _, tc := range tests {
		if got := matchPath(tc.pattern, tc.name); got != tc.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}
