package main

import (
	"runtime/debug"

	"github.com/agentcapsule/capsule/schema"
)

// release and commit are set at build time with -ldflags "-X main.release=...";
// commit falls back to the VCS revision Go records in the binary.
var (
	release = schema.Release
	commit  = ""
)

func buildCommit() string {
	if commit != "" {
		return commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func versionString() string { return release + " (" + buildCommit() + ")" }
