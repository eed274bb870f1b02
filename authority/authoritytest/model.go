package authoritytest

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/agentcapsule/capsule/authority"
)

// Key is the state of one agent's key in the register model: what it
// holds and the revision of its last write. The stored bytes are left
// out: equal holdings written by one release are equal bytes.
type Key struct {
	authority.Holding
	Revision int64
}

// KeyOf returns the model's view of e.
func KeyOf(e authority.Entry) Key { return Key{Holding: e.Holding, Revision: e.Revision} }

// Input is one call on the key: a Get, or a CompareAndSwap of Expect for
// Next.
type Input struct {
	CAS    bool
	Expect Key
	Next   authority.Holding
}

// Output is what the call returned: for a Get, the key (OK); for a swap,
// OK and the new key, or not OK and the key the conflict carried.
type Output struct {
	OK  bool
	Now Key
}

// Model is the sequential specification of an agent's key: a register
// with compare-and-swap on (value, revision), whose revisions only grow.
// A successful swap takes any revision above the last one (the store
// assigns it); the model adopts the one the call returned.
var Model = porcupine.Model{
	Init: func() any { return Key{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(Key), input.(Input), output.(Output)
		if !in.CAS {
			return out.OK && out.Now == s, s
		}
		if in.Expect != s {
			return !out.OK && out.Now == s, s
		}
		ok := out.OK && out.Now.Holding == in.Next && out.Now.Revision > s.Revision
		return ok, out.Now
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		if !in.CAS {
			return fmt.Sprintf("get → %s r%d", out.Now.Holding, out.Now.Revision)
		}
		return fmt.Sprintf("cas %s r%d → %s: ok=%v now %s r%d", in.Expect.Holding, in.Expect.Revision, in.Next, out.OK, out.Now.Holding, out.Now.Revision)
	},
}

// InitModel returns Model starting from the key k (created before the
// history began).
func InitModel(k Key) porcupine.Model {
	m := Model
	m.Init = func() any { return k }
	return m
}
