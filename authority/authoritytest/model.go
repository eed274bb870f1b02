package authoritytest

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/agentcapsule/capsule/authority"
)

// Key is the state of one agent's key in the register model: what it
// holds and the revision of its last write. The stored bytes are left
// out: equal holdings written by one release are equal bytes. A Floating
// key is the result of a swap whose outcome was unknown: its revision is
// some value above Revision, learnt from the next read or conflict.
type Key struct {
	authority.Holding
	Revision int64
	Floating bool
}

// KeyOf returns the model's view of e.
func KeyOf(e authority.Entry) Key { return Key{Holding: e.Holding, Revision: e.Revision} }

// matches reports whether k, as a reply reported it, can be the key's
// exact value when the model's state is s.
func (s Key) matches(k Key) bool {
	if s.Floating {
		return !k.Floating && k.Holding == s.Holding && k.Revision > s.Revision
	}
	return k == s
}

// Input is one call on the key: a Get, or a CompareAndSwap of Expect for
// Next.
type Input struct {
	CAS    bool
	Expect Key
	Next   authority.Holding
}

// Output is what the call returned: for a Get, the key (OK); for a swap,
// OK and the new key, or not OK and the key the conflict carried, or
// Unknown when its reply was lost.
type Output struct {
	OK      bool
	Unknown bool
	Now     Key
}

// step is the sequential specification of an agent's key: a register with
// compare-and-swap on (value, revision), whose revisions only grow. A
// swap takes any revision above the one it replaced (the store assigns
// it); a swap of unknown outcome may or may not have happened.
func step(state, input, output any) []any {
	s, in, out := state.(Key), input.(Input), output.(Output)
	switch {
	case !in.CAS:
		if out.OK && s.matches(out.Now) {
			return []any{out.Now}
		}
	case out.Unknown:
		states := []any{s}
		if s.matches(in.Expect) {
			states = append(states, Key{Holding: in.Next, Revision: in.Expect.Revision, Floating: true})
		}
		return states
	case out.OK:
		if s.matches(in.Expect) && out.Now.Holding == in.Next && out.Now.Revision > in.Expect.Revision {
			return []any{out.Now}
		}
	default: // a conflict carries the key as it was, which is not what was expected
		if s.matches(out.Now) && out.Now != in.Expect {
			return []any{out.Now}
		}
	}
	return nil
}

func describe(input, output any) string {
	in, out := input.(Input), output.(Output)
	if !in.CAS {
		return fmt.Sprintf("get → %s r%d", out.Now.Holding, out.Now.Revision)
	}
	res := fmt.Sprintf("ok=%v now %s r%d", out.OK, out.Now.Holding, out.Now.Revision)
	if out.Unknown {
		res = "unknown"
	}
	return fmt.Sprintf("cas %s r%d → %s: %s", in.Expect.Holding, in.Expect.Revision, in.Next, res)
}

// InitModel returns the model of a key that holds k when the history
// begins (created before it).
func InitModel(k Key) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init:              func() []any { return []any{k} },
		Step:              step,
		DescribeOperation: describe,
	}
	return nm.ToModel()
}
