package record

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentcapsule/capsule/node/ident"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// Files of an agent's folder (DATA/agents/<agentID>/) that hold the move
// protocol's durable records, each signed with the node key. Each is a
// record log: one signed record per line (compact JSON), the newest last;
// only the newest counts. A record is appended and the file synced, one
// fsync where a replaced file costs two (the file, then its directory),
// and most records are written while an agent is frozen. A log that grew
// past MaxLog, that does not exist yet, or whose last line was cut
// by a crash is rewritten whole instead, atomically.
const (
	// HolderFile holds the records of the agent's transfer.Target on this
	// node: the highest epoch seen and the epoch this node holds the agent
	// at. Its newest record is the holder record: the node runs the agent
	// only when it verifies and grants an epoch.
	HolderFile = "holder.jsonl"
	// SourceFile holds the records of this node's latest move of the agent
	// (its transfer.Source).
	SourceFile = "source.jsonl"
)

// Releases before the record logs kept the newest record alone, indented,
// in holder.json and source.json. A node reads such a file while the log
// beside it does not exist, and removes it once the log does.
const legacySuffix = ".json"

func LegacyPath(logPath string) string {
	return strings.TrimSuffix(logPath, filepath.Ext(logPath)) + legacySuffix
}

// MaxLog is the size past which a record log is rewritten with its
// newest record alone (about 64 records).
const MaxLog = 64 << 10

// maxRecordFile bounds what is read of a record log or legacy file.
const maxRecordFile = 4 << 20

// Errors of records. A node fails closed on every one of them: it does not
// run the agent.
var (
	ErrNoHolder      = errors.New("node: no holder record")
	ErrHolderInvalid = errors.New("node: holder record invalid")
)

// Signed is a transfer.Record made durable by a node: it names the
// agent (the one identifier used everywhere), the node and, for a target
// record, the holder epoch it grants (0: none). It is signed with the node
// key over its JSON encoding without Sig, so a record copied to another
// node, or edited, does not verify.
type Signed struct {
	V       int             `json:"v"`       // schema.Coordination version
	Release string          `json:"release"` // release that wrote it
	Agent   string          `json:"agent"`
	Node    ident.ID        `json:"node"`
	Epoch   uint64          `json:"epoch"` // holder epoch granted (target records)
	Record  transfer.Record `json:"record"`
	Key     string          `json:"key"`           // base64 ed25519 public key of Node
	Sig     string          `json:"sig,omitempty"` // base64 ed25519 signature
}

func (r Signed) signedBytes() []byte {
	r.Sig = ""
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain data
	}
	return b
}

// Sign wraps rec in a Signed signed by k.
func Sign(k *ident.Key, rec transfer.Record) Signed {
	r := Signed{V: schema.Current[schema.Coordination], Release: schema.Release, Agent: rec.Agent,
		Node: k.ID(), Record: rec, Key: base64.StdEncoding.EncodeToString(k.Public())}
	if rec.Target != nil {
		r.Epoch = rec.Target.Holder
	}
	r.Sig = base64.StdEncoding.EncodeToString(k.Sign(r.signedBytes()))
	return r
}

// Verify checks that r is readable by this release, signed by the key it
// names, that the key derives r.Node, and that the envelope agrees with the
// record it wraps.
func (r Signed) Verify() error {
	if !schema.CanRead(schema.Coordination, r.V) {
		return fmt.Errorf("%w: coordination schema version %d not readable by release %s", ErrHolderInvalid, r.V, schema.Release)
	}
	pub, err := base64.StdEncoding.DecodeString(r.Key)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: bad key", ErrHolderInvalid)
	}
	if ident.IDFromPublicKey(pub) != r.Node {
		return fmt.Errorf("%w: key does not derive node %s", ErrHolderInvalid, r.Node)
	}
	sig, err := base64.StdEncoding.DecodeString(r.Sig)
	if err != nil || !ed25519.Verify(pub, r.signedBytes(), sig) {
		return fmt.Errorf("%w: bad signature", ErrHolderInvalid)
	}
	if r.Agent == "" || r.Record.Agent != r.Agent {
		return fmt.Errorf("%w: record names agent %q, envelope %q", ErrHolderInvalid, r.Record.Agent, r.Agent)
	}
	if t := r.Record.Target; t != nil && (t.Holder != r.Epoch || t.Agent != r.Agent || t.Self != string(r.Node)) {
		return fmt.Errorf("%w: target state disagrees with the envelope", ErrHolderInvalid)
	}
	return nil
}

// Save makes r durable as the newest record of the log at path:
// appended and synced, or the log rewritten atomically with r alone (see
// HolderFile). When an append fails the log is cut back to where it
// ended, so that the record the caller treats as not written is not read
// back either.
func Save(fsys vfs.FS, path string, r Signed) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	appended, err := appendRecord(fsys, path, line)
	if err != nil {
		return fmt.Errorf("save record: %w", err)
	}
	if appended {
		return nil
	}
	if err := vfs.WriteFile(fsys, path, line, 0o600); err != nil {
		return fmt.Errorf("save record: %w", err)
	}
	legacy := LegacyPath(path)
	if _, err := fsys.Lstat(legacy); err == nil {
		if err := fsys.Remove(legacy); err != nil {
			return fmt.Errorf("save record: %w", err)
		}
		if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("save record: %w", err)
		}
	}
	return nil
}

// appendRecord appends line to the log at path and syncs it, reporting
// false (and writing nothing) when the log must be rewritten instead: it
// does not exist, is too large, or does not end with a whole line.
func appendRecord(fsys vfs.FS, path string, line []byte) (bool, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	end := fi.Size()
	if end == 0 || end+int64(len(line)) > MaxLog {
		return false, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, end-1); err != nil {
		return false, err
	}
	if last[0] != '\n' {
		return false, nil // a crash cut the last append
	}
	_, err = f.Write(line)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		_ = f.Truncate(end)
		_ = f.Sync()
		return false, err
	}
	return true, nil
}

// Load reads the newest record of the log at path (or, where there
// is no log yet, the legacy file beside it), verifies it and checks that
// self wrote it for agent. No log and no legacy file wraps ErrNoHolder;
// anything else wrong wraps ErrHolderInvalid. A last line that a crash
// cut short (no final newline) is not a record: the one before it is the
// newest.
func Load(fsys vfs.FS, path string, self ident.ID, agent string) (Signed, error) {
	b, err := readRecordFile(fsys, path)
	name := path
	if errors.Is(err, fs.ErrNotExist) {
		name = LegacyPath(path)
		b, err = readRecordFile(fsys, name)
	} else if err == nil {
		end := bytes.LastIndexByte(b, '\n')
		if end < 0 {
			return Signed{}, fmt.Errorf("%w: %s holds no whole record", ErrHolderInvalid, path)
		}
		b = b[bytes.LastIndexByte(b[:end], '\n')+1 : end]
	}
	if errors.Is(err, fs.ErrNotExist) {
		return Signed{}, fmt.Errorf("%w: %s", ErrNoHolder, path)
	}
	if err != nil {
		return Signed{}, fmt.Errorf("load record: %w", err)
	}
	var r Signed
	if err := json.Unmarshal(b, &r); err != nil {
		return Signed{}, fmt.Errorf("%w: %s: %v", ErrHolderInvalid, name, err)
	}
	if err := r.Verify(); err != nil {
		return Signed{}, fmt.Errorf("%s: %w", name, err)
	}
	if r.Node != self {
		return Signed{}, fmt.Errorf("%w: %s was written by %s, this node is %s", ErrHolderInvalid, name, r.Node, self)
	}
	if r.Agent != agent {
		return Signed{}, fmt.Errorf("%w: %s names agent %s, expected %s", ErrHolderInvalid, name, r.Agent, agent)
	}
	return r, nil
}

// readRecordFile reads a record log or legacy file of at most
// maxRecordFile bytes.
func readRecordFile(fsys vfs.FS, path string) ([]byte, error) {
	fi, err := fsys.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxRecordFile {
		return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrHolderInvalid, path, fi.Size(), maxRecordFile)
	}
	return vfs.ReadFile(fsys, path)
}

// LoadTarget rebuilds the agent's transfer.Target from the holder record
// at path. It fails closed: no record, a bad signature, another node's or
// another agent's record are all errors.
func LoadTarget(fsys vfs.FS, path string, self ident.ID, agent string) (*transfer.Target, error) {
	r, err := Load(fsys, path, self, agent)
	if err != nil {
		return nil, err
	}
	if r.Record.Target == nil {
		return nil, fmt.Errorf("%w: %s holds no target state", ErrHolderInvalid, path)
	}
	return transfer.RecoverTarget([]transfer.Record{r.Record})
}
