package render

import "strings"

// Thinking says whether a model reasons before it answers and whether a
// request may turn that off.
type Thinking int

// The thinking modes of a model.
const (
	ThinkingNone     Thinking = iota // no extended thinking
	ThinkingOptional                 // thinking can be enabled or disabled per request
	ThinkingAlways                   // thinking is always on and cannot be disabled
)

// String returns the mode's name.
func (t Thinking) String() string {
	switch t {
	case ThinkingOptional:
		return "optional"
	case ThinkingAlways:
		return "always"
	}
	return "none"
}

// IDRule names the tool-call ID syntax a target accepts. IDs that break it
// are replaced by a stable hash-derived ID (see IDMapping in the report).
type IDRule string

// The ID rules.
const (
	IDAny       IDRule = ""          // any non-empty string
	IDOpenAI    IDRule = "openai"    // ^[a-zA-Z0-9_-]{1,40}$ (Chat Completions)
	IDAnthropic IDRule = "anthropic" // ^[a-zA-Z0-9_-]{1,64}$
	IDMistral   IDRule = "mistral"   // ^[a-zA-Z0-9]{9}$
)

// Caps are the facts about a model that change how a request is rendered.
type Caps struct {
	// ContextWindow is the model's context size in tokens.
	ContextWindow int `json:"context_window"`
	// MaxOutput is the largest output the model produces, in tokens; it is
	// sent as max_tokens where the API requires one.
	MaxOutput int `json:"max_output"`
	// Thinking is the model's thinking mode.
	Thinking Thinking `json:"thinking"`
	// ThoughtSignatures is set for models that reject a function call
	// without a thought signature (Gemini 3).
	ThoughtSignatures bool `json:"thought_signatures,omitempty"`
	// MidSystem marks models announced as taking system messages inside
	// the conversation (Anthropic). The Messages API refuses role
	// "system" inside messages, so until a documented form exists the
	// renderer does not use it: later instructions become user-side text
	// for every Claude model.
	MidSystem bool `json:"mid_system,omitempty"`
	// Developer renders instructions with the "developer" role (OpenAI
	// o-series and gpt-5) instead of "system".
	Developer bool `json:"developer,omitempty"`
	// IDRule is the tool-call ID syntax the API accepts.
	IDRule IDRule `json:"id_rule,omitempty"`
	// ReasoningContent replays the model's own reasoning as
	// "reasoning_content" on Chat Completions assistant messages
	// (DeepSeek-style servers require it inside tool loops).
	ReasoningContent bool `json:"reasoning_content,omitempty"`
	// Tokenizer names the model's exact tokenizer ("o200k_base" or
	// "cl100k_base"); empty means estimate with o200k_base times a
	// calibrated safety factor.
	Tokenizer string `json:"tokenizer,omitempty"`
}

// capEntry is one row of the capability table: the first row whose
// provider matches and whose pattern is a prefix of the model wins.
type capEntry struct {
	provider string // journal producer provider; "" matches any
	prefix   string // model name prefix; "" matches any
	caps     Caps
}

const (
	o200k  = "o200k_base"
	cl100k = "cl100k_base"
)

// capTable is pure data, most specific rows first.
var capTable = []capEntry{
	// OpenAI. The embedded simulator's models (provider/sim) behave as a
	// reasoning model does there: Responses reasoning items with encrypted
	// content, replayed statelessly (instructions keep the system role).
	{"openai", "capsule-sim/", Caps{ContextWindow: 400000, MaxOutput: 128000, Thinking: ThinkingAlways, Tokenizer: o200k}},
	{"openai", "gpt-5", Caps{ContextWindow: 400000, MaxOutput: 128000, Thinking: ThinkingOptional, Developer: true, Tokenizer: o200k}},
	{"openai", "o1-mini", Caps{ContextWindow: 128000, MaxOutput: 65536, Thinking: ThinkingAlways, Developer: true, Tokenizer: o200k}},
	{"openai", "o1", Caps{ContextWindow: 200000, MaxOutput: 100000, Thinking: ThinkingAlways, Developer: true, Tokenizer: o200k}},
	{"openai", "o3", Caps{ContextWindow: 200000, MaxOutput: 100000, Thinking: ThinkingAlways, Developer: true, Tokenizer: o200k}},
	{"openai", "o4", Caps{ContextWindow: 200000, MaxOutput: 100000, Thinking: ThinkingAlways, Developer: true, Tokenizer: o200k}},
	{"openai", "gpt-4.1", Caps{ContextWindow: 1047576, MaxOutput: 32768, Tokenizer: o200k}},
	{"openai", "gpt-4o", Caps{ContextWindow: 128000, MaxOutput: 16384, Tokenizer: o200k}},
	{"openai", "chatgpt-4o", Caps{ContextWindow: 128000, MaxOutput: 16384, Tokenizer: o200k}},
	{"openai", "gpt-4-turbo", Caps{ContextWindow: 128000, MaxOutput: 4096, Tokenizer: cl100k}},
	{"openai", "gpt-4", Caps{ContextWindow: 8192, MaxOutput: 4096, Tokenizer: cl100k}},
	{"openai", "gpt-3.5", Caps{ContextWindow: 16385, MaxOutput: 4096, Tokenizer: cl100k}},
	{"openai", "", Caps{ContextWindow: 128000, MaxOutput: 16384, Tokenizer: o200k}},
	// OpenAI-compatible servers reached through the Chat renderer.
	{"", "mistral", Caps{ContextWindow: 128000, MaxOutput: 8192, IDRule: IDMistral}},
	{"", "codestral", Caps{ContextWindow: 256000, MaxOutput: 8192, IDRule: IDMistral}},
	{"", "devstral", Caps{ContextWindow: 128000, MaxOutput: 8192, IDRule: IDMistral}},
	{"", "magistral", Caps{ContextWindow: 128000, MaxOutput: 40000, Thinking: ThinkingAlways, IDRule: IDMistral}},
	{"", "ministral", Caps{ContextWindow: 128000, MaxOutput: 8192, IDRule: IDMistral}},
	{"", "open-mistral", Caps{ContextWindow: 128000, MaxOutput: 8192, IDRule: IDMistral}},
	{"", "pixtral", Caps{ContextWindow: 128000, MaxOutput: 8192, IDRule: IDMistral}},
	{"", "deepseek-reasoner", Caps{ContextWindow: 128000, MaxOutput: 32768, Thinking: ThinkingAlways, ReasoningContent: true}},
	{"", "deepseek-r1", Caps{ContextWindow: 128000, MaxOutput: 32768, Thinking: ThinkingAlways, ReasoningContent: true}},
	{"deepseek", "", Caps{ContextWindow: 128000, MaxOutput: 8192, Thinking: ThinkingOptional, ReasoningContent: true}},
	// Anthropic.
	{"anthropic", "claude-opus-5-5", Caps{ContextWindow: 1000000, MaxOutput: 128000, Thinking: ThinkingAlways, MidSystem: true, IDRule: IDAnthropic}},
	{"anthropic", "claude-fable", Caps{ContextWindow: 1000000, MaxOutput: 128000, Thinking: ThinkingAlways, MidSystem: true, IDRule: IDAnthropic}},
	{"anthropic", "claude-opus-4-8", Caps{ContextWindow: 1000000, MaxOutput: 64000, Thinking: ThinkingOptional, MidSystem: true, IDRule: IDAnthropic}},
	{"anthropic", "claude-opus-4", Caps{ContextWindow: 200000, MaxOutput: 32000, Thinking: ThinkingOptional, IDRule: IDAnthropic}},
	{"anthropic", "claude-sonnet-4", Caps{ContextWindow: 200000, MaxOutput: 64000, Thinking: ThinkingOptional, IDRule: IDAnthropic}},
	{"anthropic", "claude-haiku-4", Caps{ContextWindow: 200000, MaxOutput: 64000, Thinking: ThinkingOptional, IDRule: IDAnthropic}},
	{"anthropic", "claude-3-7", Caps{ContextWindow: 200000, MaxOutput: 64000, Thinking: ThinkingOptional, IDRule: IDAnthropic}},
	{"anthropic", "claude-3", Caps{ContextWindow: 200000, MaxOutput: 8192, IDRule: IDAnthropic}},
	{"anthropic", "", Caps{ContextWindow: 200000, MaxOutput: 32000, Thinking: ThinkingOptional, IDRule: IDAnthropic}},
	// Google. The embedded simulator's models (provider/sim) behave as
	// Gemini 3 does on this API: every function call turn is signed.
	{"google", "capsule-sim/", Caps{ContextWindow: 1048576, MaxOutput: 65536, Thinking: ThinkingAlways, ThoughtSignatures: true}},
	{"google", "gemini-3", Caps{ContextWindow: 1048576, MaxOutput: 65536, Thinking: ThinkingAlways, ThoughtSignatures: true}},
	{"google", "gemini-2.5", Caps{ContextWindow: 1048576, MaxOutput: 65536, Thinking: ThinkingOptional}},
	{"google", "", Caps{ContextWindow: 1048576, MaxOutput: 8192}},
	// Ollama and other local models.
	{"", "qwen3", Caps{ContextWindow: 40960, MaxOutput: 8192, Thinking: ThinkingOptional}},
	{"", "gpt-oss", Caps{ContextWindow: 131072, MaxOutput: 16384, Thinking: ThinkingAlways}},
	{"", "deepseek", Caps{ContextWindow: 131072, MaxOutput: 8192, Thinking: ThinkingOptional}},
	{"", "", Caps{ContextWindow: 32768, MaxOutput: 4096}},
}

// LookupCaps returns the built-in capabilities of a model, identified by
// the wire API, the producer provider and the model name. The table is
// pure data; unknown models get conservative defaults. Anthropic targets
// always get the Anthropic ID rule and OpenAI Chat targets at least the
// Chat Completions ID rule, whatever the row says.
func LookupCaps(api API, provider, model string) Caps {
	var c Caps
	for _, e := range capTable {
		if (e.provider == "" || e.provider == provider) && strings.HasPrefix(model, e.prefix) {
			c = e.caps
			break
		}
	}
	switch {
	case api == Anthropic:
		c.IDRule = IDAnthropic
	case api == OpenAIChat && c.IDRule == IDAny:
		c.IDRule = IDOpenAI
	case api != OpenAIChat && c.IDRule == IDMistral:
		c.IDRule = IDAny
	}
	if api != Anthropic {
		c.MidSystem = false
	}
	return c
}
