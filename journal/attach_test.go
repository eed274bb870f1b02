package journal

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLineAttachments(t *testing.T) {
	w := NewWriter("m" + "00000000000000000000000000")
	att := []Attachment{{Blob: "sha256:" + "ab" + "00000000000000000000000000000000000000000000000000000000000000", MediaType: "text/plain", Size: 3}}
	plain, err := w.Next(KindUser, 1, "", UserMessage{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	with, err := w.Next(KindToolResult, 1, "", ToolResult{CallID: "c1", Content: "see", Attachments: att})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		line    []byte
		id      string
		want    []Attachment
		wantErr bool
	}{
		{"no attachments", Encode(plain), "", nil, false},
		{"tool result with one", Encode(with), with.ID, att, false},
		{"names attachments, not an event", []byte(`{"attachments":[]}`), "", nil, true},
	} {
		id, got, err := LineAttachments(c.line)
		if (err != nil) != c.wantErr || id != c.id {
			t.Errorf("%s: id %q, err %v; want id %q, error %v", c.name, id, err, c.id, c.wantErr)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s: attachments (-want +got):\n%s", c.name, diff)
		}
	}
}
