package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/schema"
)

func init() { addCommand(newVersionCmd) }

// commit can be set at build time with -ldflags "-X main.commit=...";
// otherwise it comes from the build info Go records in the binary. The
// release cannot be set: it is schema.Release, the one place the release
// string comes from, so the release this command prints is the one every
// record this binary writes names.
var commit = ""

// release is the release of this build, a constant so that -ldflags -X
// cannot change it.
const release = schema.Release

// buildCommit is the commit this binary was built from: the -ldflags value,
// else the VCS revision Go stamps (with "-dirty" for a modified tree), else
// the revision in a pseudo-version the module was installed at, else
// "unknown".
func buildCommit() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return commitOf(info)
}

func commitOf(info *debug.BuildInfo) string {
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev != "" {
		return rev + dirty
	}
	if r := pseudoRevision(info.Main.Version); r != "" {
		return r
	}
	return "unknown"
}

// pseudoRevision is the commit prefix in a pseudo-version such as
// v0.0.0-20261201093000-abcdef123456, or "".
func pseudoRevision(v string) string {
	v, _, _ = strings.Cut(v, "+")
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 {
		return ""
	}
	r := v[i+1:]
	for _, c := range r {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return ""
		}
	}
	return r
}

func versionString() string { return schema.Release + " (" + buildCommit() + ")" }

// versionInfo is what `capsule version --json` prints: the release, and per
// kind of state (a capsule's and a node's) the schema version this build
// writes and the oldest it reads.
type versionInfo struct {
	Release string         `json:"release"`
	Commit  string         `json:"commit"`
	Go      string         `json:"go"`
	Schemas map[string]int `json:"schemas"`
	Floors  map[string]int `json:"floors"`
}

func currentVersion() versionInfo {
	v := versionInfo{Release: schema.Release, Commit: buildCommit(), Go: runtime.Version(), Schemas: map[string]int{}, Floors: map[string]int{}}
	for _, h := range schema.Histories() {
		v.Schemas[string(h.Kind)] = h.Current
		v.Floors[string(h.Kind)] = h.Floor
	}
	return v
}

// checkSchemas is run before any command: a build whose migration chain has
// a gap refuses to start, since it could not read what an earlier release
// wrote (docs/FORMAT.md §11).
func checkSchemas() error {
	if err := schema.Check(); err != nil {
		return fmt.Errorf("this build refuses to start: %w", err)
	}
	return nil
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the release, commit, Go version and schema versions of this build",
		Long: `Print the release of this build, the commit it was built from (the VCS
revision Go records at build time, or "unknown" when the build recorded
none), the Go version, and for every kind of state a capsule or a node
stores the schema version this release writes and the oldest it reads
(docs/FORMAT.md §11; docs/RELEASES.md lists the releases).`,
		Example: `  capsule version
  capsule version --json | jq .schemas`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := currentVersion()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), v)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "capsule %s\ncommit  %s\ngo      %s\n", v.Release, v.Commit, v.Go)
			for _, h := range schema.Histories() {
				fmt.Fprintf(w, "schema  %-13s %d (reads from %d)\n", h.Kind, h.Current, h.Floor)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
