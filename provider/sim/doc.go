// Package sim is the embedded model endpoint: one HTTP server (an
// http.Handler, served on loopback by `capsule model serve` and started
// in-process by tests and the demo) that speaks the wire protocols of
// OpenAI Chat Completions and Responses, Anthropic Messages, Gemini
// generateContent and streamGenerateContent, and Ollama /api/chat, each
// with its streaming form (SSE, or NDJSON for Ollama).
//
// It is a simulator, not a language model. Its models are deterministic
// programs named so that nobody mistakes them for one: capsule-sim/planner
// reads the newest user request, calls the tools it is offered with
// arguments valid under their JSON Schemas, reads their results and
// answers citing them, emitting reasoning in each provider's style
// (Anthropic thinking with a signature, Responses reasoning items with
// encrypted content, Gemini thought signatures, Ollama thinking);
// capsule-sim/echo repeats the newest user request. A replay mode answers
// from a recorded cassette keyed by request digest instead. The
// embeddings APIs (OpenAI /v1/embeddings, Gemini embedContent and
// batchEmbedContents, Ollama /api/embed) serve capsule-sim/embed, a
// deterministic feature-hashing model (embed*.go), with faults a test
// can inject (SetEmbedFaults).
//
// Every request is checked against its provider's documented rules
// (Check; reference §1 of provider-rendering.md) before it is answered: a
// violation gets that provider's own status code and error body, and a
// reasoning signature the simulator did not issue to the requested model
// is refused the way the provider refuses it. So a renderer regression
// fails a test offline. Server.Requests is the log of what the endpoint
// received, for tests. See docs/SIMULATOR.md.
//
// The package uses only net/http and encoding/json (and the JSON Schema
// validator); the official SDKs appear only in its tests. Any edge package
// and test may import it; no pure package may.
package sim
