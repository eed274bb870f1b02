package authoritytest_test

import (
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/agentcapsule/capsule/authority"
	"github.com/agentcapsule/capsule/authority/authoritytest"
)

var (
	k1 = authoritytest.Key{Holding: authority.Holding{Node: "n0", Epoch: 1, State: authority.Held}, Revision: 1}
	a2 = authority.Holding{Node: "n1", Epoch: 2, State: authority.Held}
	b2 = authority.Holding{Node: "n0", Epoch: 2, State: authority.Held}
	k2 = authoritytest.Key{Holding: a2, Revision: 2}
	b3 = authority.Holding{Node: "n2", Epoch: 3, State: authority.Held}
)

func op(client int, call, ret int64, in authoritytest.Input, out authoritytest.Output) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

// TestModelRefusesBadHistories shows the checker can fail: two swaps of
// the same expectation that both succeed, and a read that goes back in
// time, are not linearizable; their legal counterparts are.
func TestModelRefusesBadHistories(t *testing.T) {
	cas := func(next authority.Holding) authoritytest.Input {
		return authoritytest.Input{CAS: true, Expect: k1, Next: next}
	}
	get := authoritytest.Input{}
	for _, c := range []struct {
		name string
		ops  []porcupine.Operation
		want bool
	}{
		{"two winners", []porcupine.Operation{
			op(0, 1, 4, cas(a2), authoritytest.Output{OK: true, Now: k2}),
			op(1, 2, 3, cas(b2), authoritytest.Output{OK: true, Now: authoritytest.Key{Holding: b2, Revision: 3}}),
		}, false},
		{"one winner", []porcupine.Operation{
			op(0, 1, 4, cas(a2), authoritytest.Output{OK: true, Now: k2}),
			op(1, 2, 3, cas(b2), authoritytest.Output{Now: k2}),
		}, true},
		{"stale read after swap", []porcupine.Operation{
			op(0, 1, 2, cas(a2), authoritytest.Output{OK: true, Now: k2}),
			op(1, 3, 4, get, authoritytest.Output{OK: true, Now: k1}),
		}, false},
		{"concurrent read", []porcupine.Operation{
			op(0, 1, 4, cas(a2), authoritytest.Output{OK: true, Now: k2}),
			op(1, 2, 3, get, authoritytest.Output{OK: true, Now: k1}),
		}, true},
		{"unknown swap that landed", []porcupine.Operation{
			op(0, 1, 1<<62, cas(a2), authoritytest.Output{Unknown: true}),
			op(1, 3, 4, get, authoritytest.Output{OK: true, Now: authoritytest.Key{Holding: a2, Revision: 7}}),
			op(1, 5, 6, authoritytest.Input{CAS: true, Expect: authoritytest.Key{Holding: a2, Revision: 7}, Next: b3}, authoritytest.Output{OK: true, Now: authoritytest.Key{Holding: b3, Revision: 8}}),
		}, true},
		{"unknown swap that did not land", []porcupine.Operation{
			op(0, 1, 1<<62, cas(a2), authoritytest.Output{Unknown: true}),
			op(1, 3, 4, get, authoritytest.Output{OK: true, Now: k1}),
		}, true},
		{"unknown swap of a stale expectation cannot land", []porcupine.Operation{
			op(0, 1, 2, cas(b2), authoritytest.Output{OK: true, Now: authoritytest.Key{Holding: b2, Revision: 2}}),
			op(1, 3, 1<<62, cas(a2), authoritytest.Output{Unknown: true}),
			op(2, 5, 6, get, authoritytest.Output{OK: true, Now: authoritytest.Key{Holding: a2, Revision: 3}}),
		}, false},
	} {
		if got := porcupine.CheckOperations(authoritytest.InitModel(k1), c.ops); got != c.want {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestMem(t *testing.T) {
	authoritytest.Run(t, func(t *testing.T) authority.Authority { return authority.NewMem() })
}

func TestMemDirectory(t *testing.T) {
	authoritytest.RunDirectory(t, func(t *testing.T) authority.Directory { return authority.NewMemDirectory() })
}
