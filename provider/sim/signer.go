package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/agentcapsule/capsule/render"
)

// defaultKey signs reasoning when Config.Key is empty. It is fixed, not
// secret: a signature only has to tell "issued by this simulator to this
// model" from everything else, and a fixed key keeps a restarted endpoint
// (or another process) accepting the signatures an earlier one issued.
var defaultKey = []byte("capsule-sim reasoning signature key v1")

// The kinds of signed reasoning, one per provider style.
const (
	sigThinking  = "anthropic-thinking"  // Anthropic thinking.signature, bound to the thinking text
	sigEncrypted = "responses-encrypted" // Responses encrypted_content, bound to the item ID
	sigThought   = "gemini-thought"      // Gemini thoughtSignature
)

// encryptedPrefix starts every Responses encrypted_content the simulator
// issues, as OpenAI's do.
const encryptedPrefix = "gAAAAB"

// Gemini's documented dummy signatures for calls another model made.
var geminiDummies = map[string]bool{"skip_thought_signature_validator": true, "context_engineering_is_the_way_to_go": true}

// signer issues and checks reasoning signatures: 8 bytes of nonce and 16
// of HMAC-SHA256 over the kind, the model, the nonce and the content.
type signer struct{ key []byte }

func (s signer) mac(kind, model string, nonce []byte, content string) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, part := range [][]byte{[]byte(kind), []byte(model), nonce, []byte(content)} {
		m.Write(part)
		m.Write([]byte{0})
	}
	return m.Sum(nil)[:16]
}

// issue returns the signature of content for model; seed makes the nonce
// (a function of the request, so answers stay deterministic).
func (s signer) issue(kind, model, seed, content string) string {
	n := sha256.Sum256([]byte(seed))
	tok := append(n[:8:8], s.mac(kind, model, n[:8], content)...)
	if kind == sigEncrypted {
		return encryptedPrefix + base64.RawURLEncoding.EncodeToString(tok)
	}
	return base64.StdEncoding.EncodeToString(tok)
}

// verify reports whether sig was issued by this simulator for model and
// content.
func (s signer) verify(kind, model, content, sig string) bool {
	var tok []byte
	var err error
	if kind == sigEncrypted {
		rest, ok := strings.CutPrefix(sig, encryptedPrefix)
		if !ok {
			return false
		}
		tok, err = base64.RawURLEncoding.DecodeString(rest)
	} else {
		tok, err = base64.StdEncoding.DecodeString(sig)
	}
	if err != nil || len(tok) != 24 {
		return false
	}
	return hmac.Equal(tok[8:], s.mac(kind, model, tok[:8], content))
}

// Sign returns the reasoning signature the server issues to model for
// api, as the endpoint would put it in an answer: for Anthropic the
// thinking block's signature over its text, for Responses the
// encrypted_content of the reasoning item whose ID is content, for Gemini
// a thoughtSignature (content unused). seed picks the nonce. Other APIs
// carry no signature and get "". Tests use it to build journals whose
// reasoning the endpoint accepts.
func (s *Server) Sign(api render.API, model, seed, content string) string {
	switch api {
	case render.Anthropic:
		return s.sign.issue(sigThinking, model, seed, content)
	case render.OpenAIResponses:
		return s.sign.issue(sigEncrypted, model, seed, content)
	case render.Gemini:
		return s.sign.issue(sigThought, model, seed, "")
	}
	return ""
}
