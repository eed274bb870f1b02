package capsule

import (
	"fmt"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
)

// commitRaw is Commit for a migration: fn stages files on tx as usual and
// returns either nil, to commit tx's manifest written by this build, or the
// exact bytes of the manifest to commit (a rollback that restores the
// manifest an earlier release wrote, FORMAT §11.5). The commit order and
// its recovery are Commit's (FORMAT §4.2): staged files and the manifest go
// to PendingDir, the manifest's write there is the commit point, and the
// manifest is renamed into place last.
func (c *Capsule) commitRaw(fn func(tx *Tx) ([]byte, error)) error {
	c.lock.commit.Lock()
	defer c.lock.commit.Unlock()
	c.lock.rw.RLock()
	defer c.lock.rw.RUnlock()
	if err := checkHost(c.fsys, c.dir, "migrate"); err != nil {
		return err
	}
	if err := c.checkUnchanged(); err != nil {
		return err
	}
	tx := &Tx{c: c, m: c.Manifest(), staged: map[string]bool{}}
	data, err := fn(tx)
	if err != nil {
		_ = c.fsys.RemoveAll(c.path(PendingDir))
		return err
	}
	m := tx.m
	if data == nil {
		m.Writer = c.cfg.writer()
		if data, err = m.Marshal(); err != nil {
			_ = c.fsys.RemoveAll(c.path(PendingDir))
			return fmt.Errorf("migrate: %w", err)
		}
	} else if m, err = manifest.Parse(data); err != nil {
		_ = c.fsys.RemoveAll(c.path(PendingDir))
		return fmt.Errorf("migrate: restored manifest: %w", err)
	}
	if err := c.commit(data); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	c.mu.Lock()
	c.m, c.mdigest = m, digest.FromBytes(data)
	c.mu.Unlock()
	return nil
}
