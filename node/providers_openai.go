package node

import (
	"net/http"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/openai"
	"github.com/agentcapsule/capsule/render"
)

// addOpenAI adds the OpenAI clients (Chat Completions, also for any
// OpenAI-compatible server, and Responses).
func addOpenAI(m map[render.API]provider.Client, hc *http.Client) {
	for _, api := range []render.API{render.OpenAIChat, render.OpenAIResponses} {
		if c, err := openai.New(api, hc); err == nil {
			m[api] = c
		}
	}
}
