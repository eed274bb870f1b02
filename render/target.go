package render

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentcapsule/capsule/journal"
)

// API names the wire format a request is rendered into.
type API string

// The wire formats this release renders.
const (
	OpenAIChat      API = "openai-chat"      // POST /v1/chat/completions (and OpenAI-compatible servers)
	OpenAIResponses API = "openai-responses" // POST /v1/responses, stateless (store:false)
	Anthropic       API = "anthropic"        // POST /v1/messages
	Gemini          API = "gemini"           // models/*:generateContent
	Ollama          API = "ollama"           // Ollama's native POST /api/chat
)

// APIs lists the wire formats in a fixed order.
var APIs = []API{OpenAIChat, OpenAIResponses, Anthropic, Gemini, Ollama}

// ErrTarget is returned for a target that names no known API or no model.
var ErrTarget = errors.New("render: invalid target")

// producerAPI is the journal's Producer.API spelling of each wire format.
var producerAPI = map[API]string{
	OpenAIChat: "chat", OpenAIResponses: "responses", Anthropic: "messages",
	Gemini: "generateContent", Ollama: "chat",
}

// defaultProvider is the journal's Producer.Provider used when a Target
// leaves Provider empty.
var defaultProvider = map[API]string{
	OpenAIChat: "openai", OpenAIResponses: "openai", Anthropic: "anthropic",
	Gemini: "google", Ollama: "ollama",
}

// Tool is one tool the agent offers the model: a name, a description and
// the JSON Schema of its arguments (an object schema).
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Target is everything a render depends on besides the journal: the wire
// format, the model, its capabilities, the token window and the tool set.
// The zero values of the optional fields mean "from the capability table".
type Target struct {
	// API is the wire format.
	API API
	// Provider is the producer provider this target stands for, compared
	// with journal.Producer.Provider to decide what is the target's own
	// output ("openai", "anthropic", "google", "ollama", or e.g. "deepseek"
	// for an OpenAI-compatible server). Empty means the API's default.
	Provider string
	// Model is the provider's model name.
	Model string
	// Window is the input token budget. Zero means the model's context
	// window minus its maximum output.
	Window int
	// Tools is the tool set offered with this request, in order.
	Tools []Tool
	// Caps overrides the built-in capability table when non-nil.
	Caps *Caps
	// NoThinking asks for a request without extended thinking on models
	// where thinking is optional.
	NoThinking bool
	// WorkingMemory is the agent's working memory (the capsule's
	// memory/working_memory.md), pinned into every request as an
	// instruction right after the leading instructions (WorkingMemoryHeader,
	// FORMAT §6.4); empty or whitespace-only, there is no block.
	WorkingMemory string
}

// Producer returns the journal producer that is this target's own model:
// reasoning, signatures and provider item IDs are replayed only to it.
func (t Target) Producer() journal.Producer {
	p := t.Provider
	if p == "" {
		p = defaultProvider[t.API]
	}
	return journal.Producer{Provider: p, API: producerAPI[t.API], Model: t.Model}
}

// Capabilities returns t.Caps if set, else the built-in entry for the
// target's provider and model.
func (t Target) Capabilities() Caps {
	if t.Caps != nil {
		return *t.Caps
	}
	return LookupCaps(t.API, t.Producer().Provider, t.Model)
}

// Validate reports whether t names a known API and a model.
func (t Target) Validate() error {
	if _, ok := producerAPI[t.API]; !ok {
		return fmt.Errorf("%w: unknown API %q (want one of openai-chat, openai-responses, anthropic, gemini, ollama)", ErrTarget, t.API)
	}
	if t.Model == "" {
		return fmt.Errorf("%w: no model", ErrTarget)
	}
	for i, tool := range t.Tools {
		if tool.Name == "" {
			return fmt.Errorf("%w: tool %d has no name", ErrTarget, i)
		}
		if len(tool.Parameters) > 0 && !isJSONObject(tool.Parameters) {
			return fmt.Errorf("%w: tool %q: parameters is not a JSON object", ErrTarget, tool.Name)
		}
	}
	return nil
}

// isJSONObject reports whether b is a valid JSON object.
func isJSONObject(b []byte) bool {
	i := skipSpace(b, 0)
	return i < len(b) && b[i] == '{' && json.Valid(b)
}
