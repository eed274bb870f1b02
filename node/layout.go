package node

import (
	"encoding/json"

	"github.com/agentcapsule/capsule/manifest"
)

// Files and folders of an agent's folder DATA/agents/<agentID>/.
const (
	capsuleDir    = "capsule"        // the capsule folder, while this node holds the agent
	workDir       = "work"           // the materialized workspace the runner changes
	casDir        = "cas"            // pre-copied blobs (content-addressed, harmless)
	incomingFile  = "incoming.jsonl" // the journal copy a move into this node builds
	stagingDir    = "staging"        // staging/<moveID>/: one incoming move's capsule and workspace
	freshDir      = "fresh"          // verified, unsynced blobs a prepare brought (store.Pending.FinishUnsynced)
	statCacheFile = "statcache.json" // the saved stat cache of work (store.StatCache.SaveFile)
	journalInCap  = manifest.JournalPath
)

// mustJSON encodes plain data, which cannot fail to encode.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
