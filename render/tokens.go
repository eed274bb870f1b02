package render

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/journal"
	"github.com/tiktoken-go/tokenizer"
)

// Token estimates. Text is counted with the model's own tokenizer where it
// is an OpenAI encoding (exact for the text), else with o200k_base times a
// safety factor k. Message framing is a fixed estimate per message, tool
// call and tool result. The fitter works in base tokens against
// floor(window / k), so ceil(k * base) never exceeds the window.
const (
	perMessage = 4 // role and framing of one message
	perCall    = 8 // id, name and framing of one tool call
	perResult  = 6 // id and framing of one tool result
	priming    = 3 // the reply's priming tokens
)

// Default safety factors for targets without an exact tokenizer, and the
// bounds any calibrated factor is clamped to.
const (
	FactorAnthropic = 1.25
	FactorOther     = 1.15
	factorMin       = 1.0
	factorMax       = 2.0
	// calibrationEvents is how many of the newest matching usage events
	// calibrate the factor.
	calibrationEvents = 32
)

// codecs are built once per process; they are immutable after
// construction and hold no state between calls, so sharing them keeps
// rendering a pure function.
var codecs = map[string]func() tokenizer.Codec{
	o200k:  sync.OnceValue(func() tokenizer.Codec { c, _ := tokenizer.Get(tokenizer.O200kBase); return c }),
	cl100k: sync.OnceValue(func() tokenizer.Codec { c, _ := tokenizer.Get(tokenizer.Cl100kBase); return c }),
}

// counter counts tokens of text for one render. It memoizes the BPE count
// of each pre-token piece; the memo lives only as long as the render.
type counter struct {
	codec tokenizer.Codec
	split func(string, func(int, int))
	memo  map[string]int
	texts *textMemo // whole texts across plans (Incremental), or nil
}

func newCounter(encoding string) *counter {
	c := &counter{} // memo is made at the first piece: an Incremental lends its own
	if encoding == cl100k {
		c.codec, c.split = codecs[cl100k](), splitCl100k
	} else {
		c.codec, c.split = codecs[o200k](), splitO200k
	}
	return c
}

// pieceCount returns the BPE token count of one pre-token piece.
func (c *counter) pieceCount(p string) int {
	n, ok := c.memo[p]
	if !ok {
		if c.memo == nil {
			c.memo = make(map[string]int, 1024)
		}
		n, _ = c.codec.Count(p)
		c.memo[p] = n
	}
	return n
}

// count returns the number of tokens of s.
func (c *counter) count(s string) int {
	if s == "" {
		return 0
	}
	if c.texts != nil {
		return c.texts.count(s, c.countText)
	}
	return c.countText(s)
}

// countText counts the tokens of a non-empty s.
func (c *counter) countText(s string) int {
	if !utf8.ValidString(s) {
		// The library counts invalid UTF-8 through a rune conversion;
		// rendered text is always valid, so this path is rare.
		n, _ := c.codec.Count(s)
		return n
	}
	sum := 0
	c.split(s, func(i, j int) { sum += c.pieceCount(s[i:j]) })
	return sum
}

// prefix returns the longest prefix of s whose token count is at most max,
// cut at a pre-token boundary, and its count.
func (c *counter) prefix(s string, max int) (string, int) {
	if max <= 0 {
		return "", 0
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	total, end, stop := 0, 0, false
	c.split(s, func(i, j int) {
		if stop {
			return
		}
		n := c.pieceCount(s[i:j])
		if total+n > max {
			stop = true
			return
		}
		total += n
		end = j
	})
	return s[:end], total
}

// defaultFactor is the safety factor of a target before calibration.
func defaultFactor(api API, caps Caps) float64 {
	switch {
	case caps.Tokenizer != "":
		return 1
	case api == Anthropic:
		return FactorAnthropic
	}
	return FactorOther
}

// calibrate derives the safety factor from the usage the target's
// provider reported: the ratio of reported input tokens to the base
// estimate recorded beside them (journal.Usage.EstimatedTokens, which is
// Report.BaseTokens of the render that was sent), over the newest
// matching usage events, with a 5% margin, clamped to [1, 2]. Targets with
// an exact tokenizer keep factor 1. It is a pure function of the journal.
func calibrate(src source, seg *segmentation, own journal.Producer, api API, caps Caps) (float64, int) {
	def := defaultFactor(api, caps)
	if caps.Tokenizer != "" {
		return def, 0
	}
	var in, est int64
	n := 0
	for k := len(seg.usage) - 1; k >= 0 && n < calibrationEvents; k-- {
		p := seg.usageOf[k]
		if p < 0 || !mentions(seg.usageProducers[p], own.Provider) {
			continue // another provider's usage: skip it without reading it
		}
		var u journal.Usage
		if json.Unmarshal(src.body(seg.usage[k]), &u) != nil {
			continue
		}
		if u.Producer.Provider != own.Provider || u.EstimatedTokens <= 0 || u.InputTokens <= 0 {
			continue
		}
		in += u.InputTokens
		est += u.EstimatedTokens
		n++
	}
	if n == 0 {
		return def, 0
	}
	k := float64(in) / float64(est) * 1.05
	k = math.Max(factorMin, math.Min(factorMax, k))
	// Round to 1/1000 so the factor prints and compares stably.
	return math.Ceil(k*1000) / 1000, n
}

// mentions reports whether a raw producer object may name provider: a
// cheap filter before a full decode (escaped spellings also pass).
func mentions(raw []byte, provider string) bool {
	return bytes.Contains(raw, []byte(provider)) || bytes.IndexByte(raw, '\\') >= 0
}
