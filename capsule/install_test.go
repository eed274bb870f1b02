package capsule

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

func TestInstall(t *testing.T) {
	fsys := vfs.NewMem()
	src, err := Init(fsys, "/node/staging/01J", testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := src.SetHolder(manifest.Holder{Node: "n2", Epoch: 4}); err != nil {
		t.Fatal(err)
	}
	c, err := Install(fsys, "/node/staging/01J", "/node/agents/01J/capsule", Config{}, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Holder() != (manifest.Holder{Node: "n2", Epoch: 4}) {
		t.Errorf("holder %+v", c.Holder())
	}
	if _, err := fsys.Stat("/node/staging/01J"); err == nil {
		t.Error("staging still there")
	}
	// A second install onto a held capsule is refused; so is a broken one.
	if _, err := Init(fsys, "/node/staging/again", testConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(fsys, "/node/staging/again", "/node/agents/01J/capsule", Config{}, VerifyOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("install over a capsule: %v", err)
	}
	if err := fsys.Remove("/node/staging/again/memory/working_memory.md"); err != nil {
		t.Fatal(err)
	}
	_, err = Install(fsys, "/node/staging/again", "/node/agents/other", Config{}, VerifyOptions{})
	var ve *VerifyError
	if !errors.As(err, &ve) || !errors.Is(err, ErrVerify) || ve.Report.Problems[0].Kind != KindMissing {
		t.Errorf("install of a broken capsule: %v", err)
	}
}

func TestInspect(t *testing.T) {
	c := newCapsule(t)
	populate(t, c)
	env, _ := c.Environment()
	if _, err := env.AddSecret("OPENAI_API_KEY"); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(func(tx *Tx) error { return tx.SetEnvironment(env) }); err != nil {
		t.Fatal(err)
	}
	info, err := Inspect(vfs.OS{}, c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if info.Agent.ID != testConfig().ID || info.Journal.Events != 2 || info.Blobs.Count != 3 ||
		info.Snapshot == nil || info.Snapshot.Files != 3 || info.Environment == nil ||
		len(info.Environment.Secrets) != 1 || info.Signed || info.Pending || info.TotalBytes < 400000 {
		t.Errorf("info %+v", info)
	}
}

func TestPruneBlobs(t *testing.T) {
	c := newCapsule(t)
	populate(t, c)
	kept, _, _ := c.PutBlob(strings.NewReader("attachment"))
	gone, _, _ := c.PutBlob(strings.NewReader("old file"))
	n, bytes, err := c.PruneBlobs(func(d digest.Digest) bool { return d == kept })
	if err != nil || n != 1 || bytes != int64(len("old file")) {
		t.Fatalf("pruned %d blobs, %d bytes, %v", n, bytes, err)
	}
	for d, want := range map[digest.Digest]bool{kept: true, gone: false} {
		if has, _ := c.HasBlob(d); has != want {
			t.Errorf("blob %s present %v, want %v", d.Short(), has, want)
		}
	}
	r := mustVerify(t, vfs.OS{}, c.Dir())
	if len(r.Warnings) != 1 || r.Warnings[0].Kind != KindUnreferenced {
		t.Errorf("warnings %v", r.Warnings)
	}
}
