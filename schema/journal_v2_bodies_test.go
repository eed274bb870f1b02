package schema

import (
	"errors"
	"strings"
	"testing"
)

const dg = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

func TestCheckJournalV2Body(t *testing.T) {
	good := map[string]string{
		"tool_dispatch":    `{"call_id":"c1","effect":"external","arguments_digest":"` + dg + `","tool_digest":"` + dg + `","approval":"` + dg + `"}`,
		"approval_request": `{"call_id":"c1","name":"deploy","arguments_digest":"` + dg + `","tool_digest":"` + dg + `","spec_digest":"` + dg + `","rule":"spec"}`,
		"approval":         `{"call_id":"c1","request":"` + dg + `","decision":"denied","by":"alice","reason":"not today"}`,
		"effect_outcome":   `{"call_id":"c1","outcome":"done","by":"alice","note":"deployed once"}`,
		"tool_mapping":     `{"from":"search","to":"search.web_search","source":"spec"}`,
	}
	for k := range journalV2Kinds {
		if _, ok := good[k]; !ok {
			t.Errorf("no example of %s", k)
		}
	}
	for k, b := range good {
		if err := CheckJournalV2Body(k, []byte(b)); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	bad := map[string][2]string{
		"effect unknown":    {"tool_dispatch", strings.Replace(good["tool_dispatch"], "external", "network", 1)},
		"digest malformed":  {"approval_request", strings.Replace(good["approval_request"], `"spec_digest":"`+dg, `"spec_digest":"sha256:xyz`, 1)},
		"decision unknown":  {"approval", strings.Replace(good["approval"], "denied", "maybe", 1)},
		"no approver":       {"approval", strings.Replace(good["approval"], `"by":"alice",`, ``, 1)},
		"unknown member":    {"effect_outcome", strings.Replace(good["effect_outcome"], `"by"`, `"extra":1,"by"`, 1)},
		"source unknown":    {"tool_mapping", strings.Replace(good["tool_mapping"], `"spec"`, `"guess"`, 1)},
		"a version-1 kind":  {"user", `{"text":"hi"}`},
		"no call id":        {"tool_dispatch", strings.Replace(good["tool_dispatch"], `"call_id":"c1",`, ``, 1)},
		"outcome not known": {"effect_outcome", strings.Replace(good["effect_outcome"], `"done"`, `"unknown"`, 1)},
	}
	for name, c := range bad {
		if err := CheckJournalV2Body(c[0], []byte(c[1])); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want ErrInput", name, err)
		}
	}
}
