package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentcapsule/capsule/memory"
	"github.com/agentcapsule/capsule/provider"
)

// errEmpty is the reason an empty text is not embedded: OpenAI and
// Gemini refuse one and Ollama skips it, so it is never sent.
var errEmpty = errors.New("remote: empty text")

// Embed embeds texts in batches within the provider's limits, in order,
// retrying each request as Config.Retry allows.
//
// A batch the provider refuses as a request (400, 413 or 422) is split in
// halves until the texts it refuses are alone: those, and empty texts,
// are reported in an *memory.EmbedError (its Failed holds their indexes;
// the other vectors are returned), even when every text failed so. When
// the first two texts refused alone are refused the same way before any
// text was embedded, the request itself is at fault (a bad option, a bad
// key), and that refusal is returned as a whole-call error. Any other
// failure (an unknown model, a status that outlived its retries, a
// malformed answer, ctx ending) is returned as an error naming the
// provider, the model and the status, and no vectors.
func (e *embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	r := &run{e: e, texts: texts, out: make([][]float32, len(texts)), failed: map[int]error{}}
	var idx []int
	for i, t := range texts {
		if t == "" {
			r.failed[i] = errEmpty
			continue
		}
		idx = append(idx, i)
	}
	for _, b := range e.limits.batches(texts, idx) {
		if err := ctx.Err(); err != nil {
			return nil, e.fail(err, len(b))
		}
		if err := r.batch(ctx, b); err != nil {
			return nil, err
		}
	}
	if len(r.failed) > 0 {
		return r.out, &memory.EmbedError{Failed: r.failed}
	}
	return r.out, nil
}

// run is one Embed call's progress.
type run struct {
	e            *embedder
	texts        []string
	out          [][]float32
	failed       map[int]error
	ok           bool   // some text was embedded
	refusals     int    // texts refused alone
	firstRefusal string // the first of those refusals
}

// batch embeds the texts at idx, splitting it when the provider refuses it.
func (r *run) batch(ctx context.Context, idx []int) error {
	texts := make([]string, len(idx))
	for k, i := range idx {
		texts[k] = r.texts[i]
	}
	vecs, err := r.e.call(ctx, texts)
	if err == nil {
		for k, i := range idx {
			r.out[i] = vecs[k]
		}
		r.ok = true
		return nil
	}
	if !refusal(err) || ctx.Err() != nil {
		return r.e.fail(err, len(idx))
	}
	if len(idx) > 1 {
		mid := len(idx) / 2
		if err := r.batch(ctx, idx[:mid]); err != nil {
			return err
		}
		return r.batch(ctx, idx[mid:])
	}
	msg := err.Error()
	if !r.ok && r.refusals == 1 && msg == r.firstRefusal {
		return r.e.fail(err, 1)
	}
	if r.refusals == 0 {
		r.firstRefusal = msg
	}
	r.refusals++
	r.failed[idx[0]] = r.e.scrub(fmt.Errorf("remote: %s %s refused the text: %w", r.e.cfg.Provider, r.e.cfg.Model, err))
	return nil
}

// refusal reports whether err is the provider refusing the request's
// content: a status that a smaller request may not get.
func refusal(err error) bool {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// call makes one request with retries and checks its answer.
func (e *embedder) call(ctx context.Context, texts []string) ([][]float32, error) {
	var vecs [][]float32
	n, err := provider.Do(ctx, e.cfg.Retry, nil, func(int) error {
		v, err := e.be.embed(ctx, texts)
		vecs = v
		return err
	})
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil && !errors.Is(err, ctxErr) {
		return nil, fmt.Errorf("%w (after %v)", ctxErr, err)
	}
	if err != nil {
		var pe *provider.Error
		if errors.As(err, &pe) {
			pe.Attempts = n
		}
		return nil, err
	}
	return vecs, e.accept(vecs, len(texts))
}

// fail is the whole-call error for a failure on a request of n texts.
func (e *embedder) fail(err error, n int) error {
	return e.scrub(fmt.Errorf("remote: %s %s: embed %d texts: %w", e.cfg.Provider, e.cfg.Model, n, err))
}
