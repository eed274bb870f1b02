package node

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// Files of an agent's folder (DATA/agents/<agentID>/) that hold the move
// protocol's durable records, each signed with the node key.
const (
	// HolderFile holds the newest record of the agent's transfer.Target on
	// this node: the highest epoch seen and the epoch this node holds the
	// agent at. It is the holder record: the node runs the agent only when
	// it verifies and grants an epoch.
	HolderFile = "holder.json"
	// SourceFile holds the newest record of this node's latest move of the
	// agent (its transfer.Source).
	SourceFile = "source.json"
)

// Errors of records. A node fails closed on every one of them: it does not
// run the agent.
var (
	ErrNoHolder      = errors.New("node: no holder record")
	ErrHolderInvalid = errors.New("node: holder record invalid")
)

// SignedRecord is a transfer.Record made durable by a node: it names the
// agent (the one identifier used everywhere), the node and, for a target
// record, the holder epoch it grants (0: none). It is signed with the node
// key over its JSON encoding without Sig, so a record copied to another
// node, or edited, does not verify.
type SignedRecord struct {
	V       int             `json:"v"`       // schema.Coordination version
	Release string          `json:"release"` // release that wrote it
	Agent   string          `json:"agent"`
	Node    ID              `json:"node"`
	Epoch   uint64          `json:"epoch"` // holder epoch granted (target records)
	Record  transfer.Record `json:"record"`
	Key     string          `json:"key"`           // base64 ed25519 public key of Node
	Sig     string          `json:"sig,omitempty"` // base64 ed25519 signature
}

func (r SignedRecord) signedBytes() []byte {
	r.Sig = ""
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain data
	}
	return b
}

// Sign wraps rec in a SignedRecord signed by k.
func Sign(k *Key, rec transfer.Record) SignedRecord {
	r := SignedRecord{V: schema.Current[schema.Coordination], Release: schema.Release, Agent: rec.Agent,
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
func (r SignedRecord) Verify() error {
	if !schema.CanRead(schema.Coordination, r.V) {
		return fmt.Errorf("%w: coordination schema version %d not readable by release %s", ErrHolderInvalid, r.V, schema.Release)
	}
	pub, err := base64.StdEncoding.DecodeString(r.Key)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: bad key", ErrHolderInvalid)
	}
	if IDFromPublicKey(pub) != r.Node {
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

// saveRecord writes r atomically and durably to path.
func saveRecord(fsys vfs.FS, path string, r SignedRecord) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := vfs.WriteFile(fsys, path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save record: %w", err)
	}
	return nil
}

// loadRecord reads and verifies the record at path and checks that self
// wrote it for agent. A missing file wraps ErrNoHolder; anything else wrong
// wraps ErrHolderInvalid.
func loadRecord(fsys vfs.FS, path string, self ID, agent string) (SignedRecord, error) {
	b, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return SignedRecord{}, fmt.Errorf("%w: %s", ErrNoHolder, path)
	}
	if err != nil {
		return SignedRecord{}, fmt.Errorf("load record: %w", err)
	}
	var r SignedRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return SignedRecord{}, fmt.Errorf("%w: %s: %v", ErrHolderInvalid, path, err)
	}
	if err := r.Verify(); err != nil {
		return SignedRecord{}, fmt.Errorf("%s: %w", path, err)
	}
	if r.Node != self {
		return SignedRecord{}, fmt.Errorf("%w: %s was written by %s, this node is %s", ErrHolderInvalid, path, r.Node, self)
	}
	if r.Agent != agent {
		return SignedRecord{}, fmt.Errorf("%w: %s names agent %s, expected %s", ErrHolderInvalid, path, r.Agent, agent)
	}
	return r, nil
}

// LoadTarget rebuilds the agent's transfer.Target from the holder record
// at path. It fails closed: no record, a bad signature, another node's or
// another agent's record are all errors.
func LoadTarget(fsys vfs.FS, path string, self ID, agent string) (*transfer.Target, error) {
	r, err := loadRecord(fsys, path, self, agent)
	if err != nil {
		return nil, err
	}
	if r.Record.Target == nil {
		return nil, fmt.Errorf("%w: %s holds no target state", ErrHolderInvalid, path)
	}
	return transfer.RecoverTarget([]transfer.Record{r.Record})
}
