package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// content is a fast source of incompressible bytes, seeded.
type content struct{ src *rand.ChaCha8 }

func newContent(seed uint64) *content {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	return &content{src: rand.NewChaCha8(key)}
}

func (c *content) bytes(n int) []byte {
	b := make([]byte, n)
	_, _ = c.src.Read(b)
	return b
}

// filePath names workspace file i: 32 files per folder.
func filePath(root string, i int) string {
	return filepath.Join(root, fmt.Sprintf("d%02d", i/32), fmt.Sprintf("f%04d.bin", i))
}

// makeWorkspace writes n files of size bytes of incompressible content.
func makeWorkspace(root string, n, size int, c *content) error {
	for i := 0; i < n; i++ {
		p := filePath(root, i)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, c.bytes(size), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// rewriteFiles gives k files of the workspace at root (every n/k-th) new
// content: whole files when part is 0, else part bytes in the middle of
// each file. It returns the paths relative to root and the bytes written.
func rewriteFiles(root string, n, k, part int, c *content) ([]string, int64, error) {
	var rels []string
	var written int64
	step := max(n/k, 1)
	for i := 0; i < k; i++ {
		p := filePath(root, (i*step+step/2)%n)
		if err := rewriteOne(p, part, c); err != nil {
			return nil, 0, err
		}
		n := int64(part)
		if part == 0 {
			fi, err := os.Stat(p)
			if err != nil {
				return nil, 0, err
			}
			n = fi.Size()
		}
		written += n
		rel, _ := filepath.Rel(root, p)
		rels = append(rels, rel)
	}
	return rels, written, nil
}

func rewriteOne(path string, part int, c *content) error {
	if part == 0 {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		return os.WriteFile(path, c.bytes(int(fi.Size())), 0o644)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = f.WriteAt(c.bytes(part), fi.Size()/2)
	return err
}

// capsuleJournal is the journal file inside the agent's capsule on a node.
func capsuleJournal(dataDir, agent string) string {
	return filepath.Join(dataDir, "agents", agent, "capsule", filepath.FromSlash(manifest.JournalPath))
}

// fillJournal appends n events, as the node's own machine would have
// written them under its current epoch, to the agent's capsule journal on a
// STOPPED node: a conversation of user messages, assistant text and tool
// calls with their results, each a few hundred bytes. The node API has no
// bulk append; this writes the file the node reopens on start (the
// committed prefix the manifest names is unchanged; the tail verifies by
// hash chain).
func fillJournal(dataDir, machine, agent string, n int, c *content) (int64, error) {
	path := capsuleJournal(dataDir, agent)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	events, err := journal.Decode(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	epoch := uint64(1)
	for _, e := range events {
		epoch = max(epoch, e.Epoch)
	}
	w := journal.NewWriter(machine, events...)
	var buf bytes.Buffer
	buf.Write(data)
	for i := 0; i < n; i++ {
		kind, body := conversationEvent(i, c)
		e, err := w.Next(kind, epoch, "", body)
		if err != nil {
			return 0, err
		}
		buf.Write(journal.Encode(e))
		buf.WriteByte('\n')
	}
	if err := vfs.WriteFile(vfs.OS{}, path, buf.Bytes(), 0o644); err != nil {
		return 0, err
	}
	return int64(buf.Len() - len(data)), nil
}

var benchModel = journal.Producer{Provider: "openai", API: "responses", Model: "bench-model"}

// conversationEvent returns event i of a synthetic conversation.
func conversationEvent(i int, c *content) (journal.Kind, any) {
	text := words(c, 40+i%80)
	call := fmt.Sprintf("call_%06d", i/4)
	switch i % 4 {
	case 0:
		return journal.KindUser, journal.UserMessage{Text: text}
	case 1:
		return journal.KindAssistant, journal.AssistantMessage{Text: text, Producer: benchModel}
	case 2:
		args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("d%02d/f%04d.bin", i%32, i%1024), "query": text[:min(len(text), 60)]})
		return journal.KindToolCall, journal.ToolCall{CallID: call, Name: "search", Arguments: args, Producer: benchModel}
	}
	return journal.KindToolResult, journal.ToolResult{CallID: call, Name: "search", Content: text}
}

var vocabulary = strings.Fields("the agent moved its workspace and journal to another node while a model " +
	"answered tool calls about files blobs digests epochs holders manifests and frozen windows")

func words(c *content, n int) string {
	b := c.bytes(n)
	out := make([]string, n)
	for i := range out {
		out[i] = vocabulary[int(b[i])%len(vocabulary)]
	}
	return strings.Join(out, " ")
}

// dirSize sums the sizes of the regular files under root.
func dirSize(root string) (int64, error) {
	var total int64
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			total += fi.Size()
		}
		return nil
	})
	return total, err
}
