package agent

import (
	"strings"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
)

// TargetOf maps a model_change to the wire format that serves it: an API
// already named as a wire format is taken as is; otherwise the provider's
// own API (Ollama's native chat, Anthropic messages, Gemini
// generateContent, OpenAI Responses) or, for any other "chat" provider, an
// OpenAI-compatible Chat Completions server.
func TargetOf(mc journal.ModelChange) render.Target {
	t := render.Target{Provider: mc.Provider, Model: mc.Model}
	for _, w := range render.APIs {
		if string(w) == mc.API {
			t.API = w
			return t
		}
	}
	switch {
	case mc.Provider == "ollama":
		t.API = render.Ollama
	case mc.Provider == "anthropic" || mc.API == "messages":
		t.API = render.Anthropic
	case mc.Provider == "google" || mc.Provider == "gemini" || mc.API == "generateContent":
		t.API = render.Gemini
	case mc.API == "responses":
		t.API = render.OpenAIResponses
	default:
		t.API = render.OpenAIChat
	}
	return t
}

// KeyName is the name of the secret that holds the API key of a provider:
// OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, and <NAME>_API_KEY for
// any other provider name (an OpenAI-compatible server), with the name's
// bytes outside [A-Za-z0-9] as "_". Ollama takes no key.
func KeyName(providerName string) string {
	switch providerName {
	case "ollama":
		return ""
	case "google", "gemini":
		return "GEMINI_API_KEY"
	}
	var b strings.Builder
	for _, r := range strings.ToUpper(providerName) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String() + "_API_KEY"
}
