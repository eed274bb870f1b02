package schema

import (
	"encoding/json"
	"fmt"
)

// The journal's versions (FORMAT §7, §11.7). A line is never rewritten: its
// id is the hash of its bytes. So the journal's steps take one line (without
// its newline) and give the line a reader of the other version reads, which
// is the same bytes; a step checks that the line may be read so, and
// refuses a line whose meaning the other version cannot hold.

// journalV2Kinds are the event kinds journal version 2 adds. Each carries or
// records authority over an effect (tool_mapping changes which tool a name
// reaches), so none may appear in a version-1 line, and none may be handed
// to a release that does not know it.
var journalV2Kinds = map[string]bool{
	"tool_dispatch":    true,
	"approval_request": true,
	"approval":         true,
	"effect_outcome":   true,
	"tool_mapping":     true,
}

// lineHead is what a step reads of an envelope.
type lineHead struct {
	ID   string `json:"id"`
	V    int    `json:"v"`
	Kind string `json:"kind"`
}

func readLineHead(b []byte) (lineHead, error) {
	var h lineHead
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if h.V < 1 || h.Kind == "" {
		return h, fmt.Errorf("%w: a journal line needs v and kind", ErrInput)
	}
	return h, nil
}
