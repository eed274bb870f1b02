package envspec

import (
	"errors"
	"fmt"
	"slices"
)

// DefaultWorkingMaxBytes is the working memory's size cap when the spec
// sets none (FORMAT §6.4).
const DefaultWorkingMaxBytes = 64 << 10

// The embedder providers a spec may name (FORMAT §11.7.1).
const (
	EmbedderBuiltin = "builtin" // offline and deterministic; no url, no secret
	EmbedderOpenAI  = "openai"
	EmbedderGemini  = "gemini"
	EmbedderOllama  = "ollama"
)

// Memory is the spec's OPTIONAL memory member: the working memory's size
// cap and the embedder of the semantic index. A spec without it uses the
// release's defaults, and it marshals without it.
type Memory struct {
	// WorkingMaxBytes bounds memory/working_memory.md as the memory tool
	// writes it; 0 means DefaultWorkingMaxBytes.
	WorkingMaxBytes int `json:"working_max_bytes,omitempty"`
	// Embedder chooses the semantic index's embedder; nil means the
	// built-in one.
	Embedder *Embedder `json:"embedder,omitempty"`
}

// Embedder names the embedder of the semantic index. Secret is the NAME
// of a secret the spec declares, never a value; the host resolves it at
// the moment of use.
type Embedder struct {
	// Provider is EmbedderBuiltin, EmbedderOpenAI, EmbedderGemini or
	// EmbedderOllama.
	Provider string `json:"provider"`
	// Model is the provider's model name; required but for builtin.
	Model string `json:"model,omitempty"`
	// URL is where the provider's API is served; empty means its default.
	URL string `json:"url,omitempty"`
	// Secret names the secret that holds the API key, if one is needed.
	Secret string `json:"secret,omitempty"`
	// Dims asks for vectors of this many dimensions (0: the model's own).
	Dims int `json:"dims,omitempty"`
}

// WorkingMaxBytes returns the working memory's size cap the spec sets, or
// DefaultWorkingMaxBytes.
func (s *Spec) WorkingMaxBytes() int {
	if s.Memory == nil || s.Memory.WorkingMaxBytes <= 0 {
		return DefaultWorkingMaxBytes
	}
	return s.Memory.WorkingMaxBytes
}

// checkMemory applies the rules of the memory member the schema does not
// express: a remote embedder names its model, the builtin one takes no
// url or secret, the embedder's secret is one the spec declares, and its
// url carries no credential.
func (s *Spec) checkMemory(add func(string, error)) {
	if s.Memory == nil || s.Memory.Embedder == nil {
		return
	}
	e := s.Memory.Embedder
	const where = "/memory/embedder"
	if e.Provider == EmbedderBuiltin {
		if e.URL != "" || e.Secret != "" {
			add(where, errors.New("the builtin embedder runs offline: it takes no url and no secret"))
		}
	} else if e.Model == "" {
		add(where+"/model", fmt.Errorf("embedder provider %s needs a model", e.Provider))
	}
	switch r := CredentialReason(e.Secret); {
	case e.Secret == "":
	case r != "": // a value where the name belongs: never repeat it
		add(where+"/secret", &SecretValueError{Name: "embedder secret (give the NAME of a secret, never its value)", Reason: r})
	case !slices.Contains(s.Secrets, e.Secret):
		add(where+"/secret", fmt.Errorf("the embedder's secret %s is not declared in secrets; declare it (capsule env secret add DIR %s)", e.Secret, e.Secret))
	}
	if r := CredentialReason(e.URL); e.URL != "" && r != "" {
		add(where+"/url", &SecretValueError{Name: "embedder url", Reason: r})
	}
}
