package sim

import (
	"fmt"
	"net/http"

	"github.com/agentcapsule/capsule/render"
)

// writeError answers v in api's own error body (reference §2 for the
// messages; the shapes are each API's documented error object).
func writeError(w http.ResponseWriter, api render.API, v Violation, requestID string) {
	writeJSON(w, v.Status, errorBody(api, v, requestID))
}

func errorBody(api render.API, v Violation, requestID string) any {
	switch api {
	case render.Anthropic:
		typ := "invalid_request_error"
		if v.Status == http.StatusNotFound {
			typ = "not_found_error"
		}
		return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": v.Message}, "request_id": requestID}
	case render.Gemini:
		status := "INVALID_ARGUMENT"
		if v.Status == http.StatusNotFound {
			status = "NOT_FOUND"
		}
		return map[string]any{"error": map[string]any{"code": v.Status, "message": v.Message, "status": status}}
	case render.Ollama:
		return map[string]any{"error": v.Message}
	}
	var code any
	if v.Code != "" {
		code = v.Code
	}
	return map[string]any{"error": map[string]any{"message": v.Message, "type": "invalid_request_error", "param": nil, "code": code}}
}

// unknownModel is each API's answer to a model it does not serve.
func unknownModel(api render.API, model string) Violation {
	v := Violation{Status: http.StatusNotFound}
	switch api {
	case render.Anthropic:
		v.Message = "model: " + model
	case render.Gemini:
		v.Message = fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. (capsule-sim serves %v)", model, Models)
	case render.Ollama:
		v.Message = fmt.Sprintf("model %q not found, try pulling it first", model)
	default:
		v.Message, v.Code = fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), "model_not_found"
	}
	return v
}
