//go:build !amd64 || purego

package digest

// hasBlock2 is false: Blocks2 hashes its two messages one after the other.
const hasBlock2 = false

func block2(*[2][8]uint32, *byte, *byte, int) { panic("digest: block2 without SHA-NI") }
