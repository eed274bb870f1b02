package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/fixtures"
	"github.com/agentcapsule/capsule/vfs"
)

// The canary pass (FORMAT §11.10). At start, before any agent resumes and
// before an incoming move is accepted, the node restores every capsule
// fixture embedded in its binary and every capsule of the operator's
// Config.Canary folder into a scratch folder and reads each through the
// full read path (what `capsule verify` and `capsule migrate --dry-run`
// do); the originals are never touched. It also counts the capsules it
// holds per (kind, schema version). One failure keeps the node not ready:
// its agents stay stopped, blocked with the reason, and offers are refused.

// canaryScratch is the scratch folder in the data folder, removed after the pass.
const canaryScratch = "canary.tmp"

// canaryPass runs the pass and returns its report.
func (n *Node) canaryPass() *api.Readiness {
	rd := &api.Readiness{Checked: []api.CanaryCheck{}}
	scratch := filepath.Join(n.cfg.Dir, canaryScratch)
	defer func() { _ = n.fsys.RemoveAll(scratch) }()
	n.canaryEmbedded(rd, scratch)
	if n.cfg.Canary != "" {
		n.canaryFolder(rd, scratch)
	}
	rd.Counts = n.schemaCounts()
	rd.Ready = true
	for _, c := range rd.Checked {
		if !c.OK {
			rd.Ready = false
			rd.Reason = fmt.Sprintf("canary %s %s: %s", c.Source, c.Name, c.Problem)
			break
		}
	}
	return rd
}

// canaryEmbedded checks every fixture embedded in the binary.
func (n *Node) canaryEmbedded(rd *api.Readiness, scratch string) {
	caps, err := fixtures.Capsules()
	if err != nil {
		rd.Checked = append(rd.Checked, api.CanaryCheck{Source: "embedded", Name: "fixtures", Problem: err.Error()})
		return
	}
	for i, c := range caps {
		dir := filepath.Join(scratch, fmt.Sprintf("e%d", i))
		err := restoreFixture(n.fsys, c, dir)
		if err == nil {
			err = readPath(n.fsys, dir)
		}
		rd.Checked = append(rd.Checked, canaryCheck("embedded", c.ID(), err))
	}
}

// canaryFolder checks every capsule folder under Config.Canary, each on a copy.
func (n *Node) canaryFolder(rd *api.Readiness, scratch string) {
	host := vfs.OS{}
	ents, err := host.ReadDir(n.cfg.Canary)
	if err != nil {
		rd.Checked = append(rd.Checked, canaryCheck("canary", n.cfg.Canary, err))
		return
	}
	for i, e := range ents {
		if !e.IsDir() {
			continue
		}
		src := filepath.Join(n.cfg.Canary, e.Name())
		dir := filepath.Join(scratch, fmt.Sprintf("c%d", i))
		err := copyTree(host, src, n.fsys, dir)
		if err == nil {
			err = readPath(n.fsys, dir)
		}
		rd.Checked = append(rd.Checked, canaryCheck("canary", src, err))
	}
}

func canaryCheck(source, name string, err error) api.CanaryCheck {
	c := api.CanaryCheck{Source: source, Name: name, OK: err == nil}
	if err != nil {
		c.Problem = err.Error()
	}
	return c
}

// restoreFixture writes the fixture's folders (empty ones too) and files under dir.
func restoreFixture(fsys vfs.FS, c fixtures.Capsule, dir string) error {
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("node: canary: %w", err)
	}
	for _, d := range c.Dirs {
		if err := fsys.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
			return fmt.Errorf("node: canary: %w", err)
		}
	}
	for p, b := range c.Files {
		if err := writeScratch(fsys, filepath.Join(dir, filepath.FromSlash(p)), b); err != nil {
			return fmt.Errorf("node: canary: %w", err)
		}
	}
	return nil
}

// writeScratch writes a scratch file without syncing it: the pass reads it
// back at once and removes it, so nothing needs it after a crash.
func writeScratch(fsys vfs.FS, name string, b []byte) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readPath reads the capsule in dir as `capsule inspect`, `capsule verify`
// and `capsule migrate --dry-run` do: a version this release does not read
// is refused (a *capsule.RefusedError), any problem fails, an older
// version is migrated in memory only.
func readPath(fsys vfs.FS, dir string) error {
	if _, err := capsule.Inspect(fsys, dir); err != nil {
		return err
	}
	opts := capsule.VerifyOptions{JournalTail: journalTail, Workers: 2}
	if _, err := capsule.Migrate(fsys, dir, capsule.Config{}, capsule.MigrateOptions{DryRun: true, Verify: &opts}); err != nil {
		return err
	}
	return nil
}

// schemaCounts counts the capsules this node holds per (kind, version),
// from their manifests' schemas.
func (n *Node) schemaCounts() []api.SchemaCount {
	n.mu.Lock()
	agents := n.sortedTenants()
	n.mu.Unlock()
	counts := map[api.SchemaCount]int{}
	for _, a := range agents {
		a.mu.Lock()
		dir, held := a.capsule(), a.hosted()
		a.mu.Unlock()
		if !held {
			continue
		}
		b, err := vfs.ReadFile(n.fsys, filepath.Join(dir, "manifest.json"))
		var m struct {
			Schemas map[string]int `json:"schemas"`
		}
		if err != nil || json.Unmarshal(b, &m) != nil {
			continue // the agent's own load reports an unreadable manifest
		}
		for k, v := range m.Schemas {
			counts[api.SchemaCount{Kind: k, Version: v}]++
		}
	}
	return sortCounts(counts)
}

// sortCounts lists counts (keyed by kind and version) by kind, then version.
func sortCounts(counts map[api.SchemaCount]int) []api.SchemaCount {
	out := []api.SchemaCount{}
	for k, c := range counts {
		k.Capsules = c
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// applyReadiness records rd; a node that is not ready blocks every agent
// with the reason, so none runs (its status says why) until a restart
// passes.
func (n *Node) applyReadiness(rd *api.Readiness) {
	n.readiness.Store(rd)
	if rd.Ready {
		return
	}
	n.log.Error("node not ready: canary failed; agents stay stopped, incoming moves are refused", "reason", rd.Reason)
	n.mu.Lock()
	agents := n.sortedTenants()
	n.mu.Unlock()
	for _, a := range agents {
		a.mu.Lock()
		if a.blocked == nil {
			a.blocked = fmt.Errorf("node not ready: %s", rd.Reason)
		}
		a.mu.Unlock()
	}
}

// notReady returns why the node refuses an incoming move now, or nil: the
// canary pass is under way or failed. A node that was never started (tests
// that drive its handlers directly) has no pass and refuses nothing.
func (n *Node) notReady() error {
	rd := n.readiness.Load()
	if rd == nil || rd.Ready {
		return nil
	}
	reason := rd.Reason
	if reason == "" {
		reason = "starting: canary pass under way"
	}
	return fmt.Errorf("%w: node not ready: %s", api.ErrUnavailable, strings.TrimSpace(reason))
}
