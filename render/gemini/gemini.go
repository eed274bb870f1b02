// Package gemini renders a journal into the REST body of Gemini's
// generateContent: {contents, systemInstruction, tools,
// generationConfig}. The SDK's GenerateContentConfig is not the wire
// shape, so the body is a small wire struct built from genai.Part and
// genai.Tool (google.golang.org/genai), which marshal to the wire JSON in
// camelCase. One field differs: genai.Part holds thoughtSignature as bytes
// and re-encodes them, so Part here carries the journal's base64 text
// verbatim instead; the replayed signature stays byte-identical and the
// documented placeholder "skip_thought_signature_validator" goes out as
// written.
//
// Gemini's rules (reference §1.4): one functionResponse per call, in call
// order, in the user content right after the model content that made the
// calls; no model turn first; on Gemini 3 the first functionCall of each
// model turn carries a thought signature. Pure, like package render.
package gemini

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"google.golang.org/genai"
)

// PlaceholderSignature is the thought signature Gemini's documentation
// allows for a function call another model made.
const PlaceholderSignature = "skip_thought_signature_validator"

// InstructionPrefix starts the user-side text that carries an instruction
// from the middle of the journal (Gemini has one systemInstruction).
const InstructionPrefix = "[System instruction]\n"

// Request is the body of POST .../models/{model}:generateContent. The
// model is part of the URL, not of the body.
type Request struct {
	Contents          []*Content        `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []*genai.Tool     `json:"tools,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
}

// Content is a genai.Content whose parts carry signatures as text.
type Content struct {
	Role  string  `json:"role,omitempty"`
	Parts []*Part `json:"parts"`
}

// Part is a genai.Part with ThoughtSignature as the base64 text the
// journal holds; the outer field hides the embedded byte field in JSON.
type Part struct {
	genai.Part
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
	// EmptyText marks a text part whose text is empty (a model's final
	// part that only carries its signature): it is sent as "text":"",
	// since a part must have a data member and genai.Part omits an empty
	// text.
	EmptyText bool `json:"-"`
}

// MarshalJSON is the JSON of the part's fields, with "text":"" first
// for an EmptyText part.
func (p *Part) MarshalJSON() ([]byte, error) {
	type fields Part // the same fields, without this method
	b, err := json.Marshal((*fields)(p))
	if err != nil || !p.EmptyText {
		return b, err
	}
	if len(b) == 2 { // {}
		return []byte(`{"text":""}`), nil
	}
	return append([]byte(`{"text":"",`), b[1:]...), nil
}

// GenerationConfig holds the generation settings the renderer sets.
type GenerationConfig struct {
	MaxOutputTokens int `json:"maxOutputTokens,omitempty"`
}

// Render renders events for t into a generateContent body. t.API must be
// render.Gemini.
func Render(events []journal.Event, t render.Target) (*Request, *render.Report, error) {
	if t.API != render.Gemini {
		return nil, nil, fmt.Errorf("%w: gemini.Render needs API %s, not %q", render.ErrTarget, render.Gemini, t.API)
	}
	p, err := render.NewPlan(events, t)
	if err != nil {
		return nil, nil, err
	}
	req := FromPlan(p)
	return req, &p.Report, nil
}

// FromPlan turns a plan into a generateContent body. It counts the
// placeholder signatures it adds in p.Report.Placeholders.
func FromPlan(p *render.Plan) *Request {
	req := &Request{Contents: []*Content{}}
	if p.Caps.MaxOutput > 0 {
		req.GenerationConfig = &GenerationConfig{MaxOutputTokens: p.Caps.MaxOutput}
	}
	lead := p.Leading()
	if lead > 0 {
		req.SystemInstruction = &Content{}
		for _, it := range p.Items[:lead] {
			req.SystemInstruction.Parts = append(req.SystemInstruction.Parts, text(it.Text))
		}
	}
	var cs []*Content
	for _, it := range p.Items[lead:] {
		switch it.Kind {
		case render.ItemInstruction:
			cs = append(cs, &Content{Role: genai.RoleUser, Parts: []*Part{text(InstructionPrefix + it.Text)}})
		case render.ItemUser:
			cs = append(cs, &Content{Role: genai.RoleUser, Parts: []*Part{text(it.Text)}})
		case render.ItemStep:
			cs = append(cs, step(it.Step)...)
		}
	}
	req.Contents = merge(cs)
	if p.Caps.ThoughtSignatures {
		p.Report.Placeholders += signFirstCalls(req.Contents)
	}
	if len(p.Tools) > 0 {
		t := &genai.Tool{}
		for _, tool := range p.Tools {
			t.FunctionDeclarations = append(t.FunctionDeclarations, declaration(tool))
		}
		req.Tools = []*genai.Tool{t}
	}
	return req
}

func text(s string) *Part { return &Part{Part: genai.Part{Text: s}} }

// step is the model content of a step, then a user content with one
// functionResponse per call, in call order. IDs and signatures are sent
// only for the model's own calls (render clears others' signatures).
func step(st *render.Step) []*Content {
	model := &Content{Role: genai.RoleModel}
	for _, pt := range st.Parts {
		part := &Part{ThoughtSignature: pt.Signature}
		switch pt.Kind {
		case render.PartReasoning:
			part.Text, part.Thought = pt.Text, true
		case render.PartText:
			part.Text, part.EmptyText = pt.Text, pt.Text == ""
		case render.PartCall:
			part.FunctionCall = &genai.FunctionCall{Name: pt.Call.Name, Args: render.ObjectMap(pt.Call.Arguments)}
			if st.Own {
				part.FunctionCall.ID = pt.Call.ID
			}
		}
		model.Parts = append(model.Parts, part)
	}
	out := []*Content{model}
	if len(st.Results) == 0 {
		return out
	}
	user := &Content{Role: genai.RoleUser}
	for _, r := range st.Results {
		key := "output"
		if r.IsError {
			key = "error"
		}
		fr := &genai.FunctionResponse{Name: r.Name, Response: map[string]any{key: r.Content}}
		if st.Own {
			fr.ID = r.CallID
		}
		user.Parts = append(user.Parts, &Part{Part: genai.Part{FunctionResponse: fr}})
	}
	return append(out, user)
}

// merge joins neighbouring contents of one role; a user content after
// function responses is appended behind them.
func merge(cs []*Content) []*Content {
	out := []*Content{}
	for _, c := range cs {
		if n := len(out); n > 0 && out[n-1].Role == c.Role {
			out[n-1].Parts = append(out[n-1].Parts, c.Parts...)
			continue
		}
		out = append(out, c)
	}
	return out
}

// signFirstCalls puts the placeholder signature on the first functionCall
// part of each model turn that has none, and returns how many it put.
func signFirstCalls(cs []*Content) int {
	n := 0
	for _, c := range cs {
		if c.Role != genai.RoleModel {
			continue
		}
		for _, part := range c.Parts {
			if part.FunctionCall == nil {
				continue
			}
			if part.ThoughtSignature == "" {
				part.ThoughtSignature = PlaceholderSignature
				n++
			}
			break
		}
	}
	return n
}

func declaration(t render.Tool) *genai.FunctionDeclaration {
	d := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
	if len(t.Parameters) > 0 {
		d.ParametersJsonSchema = t.Parameters
	}
	return d
}
