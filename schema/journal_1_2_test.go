package schema

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const (
	userLineV1     = `{"body":{"text":"hello"},"clock":1,"epoch":0,"id":"sha256:aa","kind":"user","machine":"ma","seq":1,"v":1}`
	approvalLineV1 = `{"body":{"call_id":"c1","decision":"approved"},"clock":2,"epoch":0,"id":"sha256:bb","kind":"approval","machine":"ma","seq":2,"v":1}`
	approvalLineV2 = `{"body":{"call_id":"c1","decision":"approved"},"clock":2,"epoch":0,"id":"sha256:cc","kind":"approval","machine":"ma","seq":2,"v":2}`
	userLineV2     = `{"body":{"text":"hi"},"clock":3,"epoch":0,"id":"sha256:dd","kind":"user","machine":"ma","seq":3,"v":2}`
)

func TestJournal1to2KeepsTheLine(t *testing.T) {
	out, err := journal1to2([]byte(userLineV1))
	if err != nil || !bytes.Equal(out, []byte(userLineV1)) {
		t.Fatalf("= %s, %v; a line is never rewritten", out, err)
	}
}

// TestJournal1to2RefusesAuthorityInAVersion1Line: an approval that a 0.1.0
// writer kept as an unknown kind was checked by nobody; it must not count.
func TestJournal1to2RefusesAuthorityInAVersion1Line(t *testing.T) {
	_, err := journal1to2([]byte(approvalLineV1))
	if !errors.Is(err, ErrNotExpressible) || !strings.Contains(err.Error(), "sha256:bb") {
		t.Fatalf("err = %v, want ErrNotExpressible naming the event", err)
	}
	if _, err := journal1to2([]byte(userLineV2)); !errors.Is(err, ErrInput) {
		t.Errorf("a version-2 line: %v, want ErrInput", err)
	}
	if _, err := journal1to2([]byte(`{"v":1}`)); !errors.Is(err, ErrInput) {
		t.Errorf("no kind: %v, want ErrInput", err)
	}
}
