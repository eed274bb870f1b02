package render

import (
	"crypto/sha256"
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// Tool-name rules, as each API documents them:
//
//   - Anthropic: ^[a-zA-Z0-9_-]{1,64}$ (rendering reference, additions of
//     2026-12-01: a name with a dot is refused in a declaration).
//   - OpenAI Chat and Responses: "Must be a-z, A-Z, 0-9, or contain
//     underscores and dashes, with a maximum length of 64"
//     (openai-go shared.FunctionDefinitionParam.Name).
//   - Gemini: "Must start with a letter or an underscore. Must be a-z,
//     A-Z, 0-9, or contain underscores, dots, colons and dashes, with a
//     maximum length of 128" (genai.FunctionDeclaration.Name).
//   - Ollama documents no rule: any non-empty name.

// ValidToolName reports whether api accepts name as a tool name.
func ValidToolName(api API, name string) bool {
	switch api {
	case Anthropic, OpenAIChat, OpenAIResponses:
		return len(name) >= 1 && len(name) <= 64 && allBytes(name, isIDByte)
	case Gemini:
		return len(name) >= 1 && len(name) <= 128 && (isASCIILetter(name[0]) || name[0] == '_') && allBytes(name, isGeminiNameByte)
	}
	return name != ""
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isGeminiNameByte(c byte) bool {
	return isIDByte(c) || c == '.' || c == ':'
}

// toolNameHash is the number of base62 digits that make a mapped name
// unique.
const toolNameHash = 8

// hashedToolName derives a name every API accepts from name and an
// attempt number: name with each other byte replaced by "_", cut to 55
// bytes, then "_" and base62 digits of sha256(name, attempt). It starts
// with a letter or "_" (Gemini) and is at most 64 bytes.
func hashedToolName(name string, attempt int) string {
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < 64-toolNameHash-1; i++ {
		c := name[i]
		if !isIDByte(c) {
			c = '_'
		}
		if b.Len() == 0 && !isASCIILetter(c) && c != '_' {
			b.WriteByte('_')
		}
		b.WriteByte(c)
	}
	sum := sha256.Sum256([]byte(name + "\x00" + strconv.Itoa(attempt)))
	digits := new(big.Int).SetBytes(sum[:]).Text(62)
	for len(digits) < toolNameHash {
		digits = "0" + digits
	}
	return b.String() + "_" + digits[:toolNameHash]
}

// mapToolNames decides the name each tool goes by in the request: the
// target's tools and every tool the journal's calls use. A name the API
// accepts is kept; another is hashed (hashedToolName), avoiding every kept
// name and every name already given, in sorted order of the journal
// names, so the mapping is a pure function of the journal and the target
// and is reversible through Report.ToolNames.
func (b *builder) mapToolNames() {
	names := map[string]bool{}
	for _, t := range b.t.Tools {
		names[t.Name] = true
	}
	for raw := range b.seg.toolNames {
		if n, ok := rawString([]byte(raw)); ok {
			names[n] = true
		}
	}
	used := map[string]bool{}
	var redo []string
	for n := range names {
		if ValidToolName(b.t.API, n) {
			used[n] = true
		} else {
			redo = append(redo, n)
		}
	}
	sort.Strings(redo)
	for _, n := range redo {
		for k := 0; ; k++ {
			if w := hashedToolName(n, k); !used[w] {
				used[w] = true
				b.wireNames[n] = w
				break
			}
		}
	}
}

// wireName is the name tool name goes by in the request.
func (b *builder) wireName(name string) string {
	if w, ok := b.wireNames[name]; ok {
		return w
	}
	return name
}

// wireTools returns tools under their request names.
func (b *builder) wireTools(tools []Tool) []Tool {
	out := make([]Tool, len(tools))
	for i, t := range tools {
		t.Name = b.wireName(t.Name)
		out[i] = t
	}
	return out
}

// noteToolName records a mapped name the request uses, once.
func (b *builder) noteToolName(name string, seen map[string]bool) {
	w, ok := b.wireNames[name]
	if !ok || seen[name] {
		return
	}
	seen[name] = true
	b.report.ToolNames = append(b.report.ToolNames, NameMapping{From: name, To: w})
}
