package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentcapsule/capsule/digest"
)

// ErrBody marks a body that does not follow its kind's schema.
var ErrBody = errors.New("journal: invalid body")

// BodyError says what is wrong with a body of a known kind.
type BodyError struct {
	Kind Kind
	Msg  string
}

// Error says which kind and what is wrong.
func (e *BodyError) Error() string { return fmt.Sprintf("%v of kind %s: %s", ErrBody, e.Kind, e.Msg) }

// Unwrap returns ErrBody.
func (e *BodyError) Unwrap() error { return ErrBody }

// ValidateBody checks a body against its kind's schema (docs/FORMAT.md
// §7.5): a JSON object with only the documented members, of their types,
// with the required ones present. Bodies of kinds this release does not know
// are only checked to be JSON; a reader must keep them as they are.
func ValidateBody(kind Kind, body []byte) error {
	if !kind.Known() {
		if !json.Valid(body) {
			return &BodyError{Kind: kind, Msg: "not JSON"}
		}
		return nil
	}
	if err := bodyValidators[kind].fromJSON(body); err != nil {
		return &BodyError{Kind: kind, Msg: err.Error()}
	}
	return nil
}

// MarshalBody turns a body into the canonical JSON an event carries, checking
// it against its kind's schema. Body is a body struct of this package (or a
// pointer to one), json.RawMessage or []byte holding JSON, nil for {}, or
// any other value to marshal as JSON. A body struct of the event's kind is
// checked directly, without decoding it again.
func MarshalBody(kind Kind, body any) ([]byte, error) {
	var raw []byte
	switch b := body.(type) {
	case nil:
		raw = []byte("{}")
	case json.RawMessage:
		raw = b
	case []byte:
		raw = b
	default:
		var handled bool
		if s, ok := bodyValidators[kind]; ok {
			var err error
			if handled, err = s.value(body); err != nil {
				return nil, &BodyError{Kind: kind, Msg: err.Error()}
			}
		}
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("marshal %s body: %w", kind, err)
		}
		if handled {
			return canonical(raw)
		}
	}
	if err := ValidateBody(kind, raw); err != nil {
		return nil, err
	}
	return canonical(raw)
}

func canonical(b []byte) ([]byte, error) {
	if isCanonical(b) {
		return b, nil
	}
	return Canonicalize(b)
}

// strict decodes body into v, refusing unknown members and trailing data.
func strict(body []byte, v any) error {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errors.New("must be a JSON object")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("text after the object")
	}
	return nil
}

// schema checks the bodies of one kind, given as JSON or as a Go value.
type schema struct {
	fromJSON func([]byte) error
	value    func(any) (handled bool, err error) // handled: body had the kind's type
}

// validator builds the schema of a kind whose body type is T.
func validator[T any](rules func(*T) error) schema {
	return schema{
		fromJSON: func(body []byte) error {
			var v T
			if err := strict(body, &v); err != nil {
				return err
			}
			return rules(&v)
		},
		value: func(x any) (bool, error) {
			switch v := x.(type) {
			case T:
				return true, rules(&v)
			case *T:
				return true, rules(v)
			}
			return false, nil
		},
	}
}

var bodyValidators = map[Kind]schema{
	KindInstruction: validator(func(b *Instruction) error {
		if b.Role != "system" && b.Role != "developer" {
			return fmt.Errorf("role must be \"system\" or \"developer\", got %q", clip(b.Role))
		}
		return nonEmpty("text", b.Text)
	}),
	KindUser: validator(func(b *UserMessage) error {
		if b.Text == "" && len(b.Attachments) == 0 {
			return errors.New("needs text or attachments")
		}
		return checkAttachments(b.Attachments)
	}),
	KindAssistant: validator(func(b *AssistantMessage) error { return checkProducer(b.Producer) }),
	KindReasoning: validator(func(b *Reasoning) error {
		if b.Text == "" && b.Encrypted == "" && len(b.Summary) == 0 && !b.Redacted {
			return errors.New("needs text, encrypted content or a summary")
		}
		return checkProducer(b.Producer)
	}),
	KindToolCall: validator(checkToolCall),
	KindToolResult: validator(func(b *ToolResult) error {
		return firstError(nonEmpty("call_id", b.CallID), checkAttachments(b.Attachments), checkOutcome(b))
	}),
	KindModelChange: validator(func(b *ModelChange) error { return checkProducer(Producer(*b)) }),
	KindUsage: validator(func(b *Usage) error {
		if b.InputTokens < 0 || b.OutputTokens < 0 || b.EstimatedTokens < 0 {
			return errors.New("token counts must not be negative")
		}
		return checkProducer(b.Producer)
	}),
	KindFrozen:  validator(func(b *Frozen) error { return nonEmpty("reason", b.Reason) }),
	KindResumed: validator(func(*Resumed) error { return nil }),
	KindMoved: validator(func(b *Moved) error {
		return firstError(nonEmpty("from", b.From), nonEmpty("to", b.To), positive("epoch", b.Epoch))
	}),
	KindEpoch: validator(func(b *EpochStart) error { return firstError(nonEmpty("holder", b.Holder), positive("epoch", b.Epoch)) }),
}

func checkToolCall(b *ToolCall) error {
	if err := firstError(nonEmpty("call_id", b.CallID), nonEmpty("name", b.Name)); err != nil {
		return err
	}
	if len(b.Arguments) > 0 && b.RawArguments != "" {
		return errors.New("arguments and raw_arguments are exclusive")
	}
	return checkProducer(b.Producer)
}

func checkProducer(p Producer) error {
	return firstError(nonEmpty("producer.provider", p.Provider), nonEmpty("producer.api", p.API), nonEmpty("producer.model", p.Model))
}

func checkAttachments(as []Attachment) error {
	for i, a := range as {
		if err := digest.Digest(a.Blob).Validate(); err != nil {
			return fmt.Errorf("attachments[%d].blob: %w", i, err)
		}
		if a.MediaType == "" || a.Size < 0 {
			return fmt.Errorf("attachments[%d] needs a media_type and a size of at least 0", i)
		}
	}
	return nil
}

func nonEmpty(name, v string) error {
	if v == "" {
		return fmt.Errorf("%s is required", name)
	}
	return nil
}

func positive(name string, v uint64) error {
	if v == 0 {
		return fmt.Errorf("%s must be at least 1", name)
	}
	return nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
