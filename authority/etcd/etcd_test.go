package etcd_test

import (
	"testing"

	"github.com/agentcapsule/capsule/authority"
	"github.com/agentcapsule/capsule/authority/authoritytest"
)

// TestConformance runs the authority suite against the embedded etcd:
// the races where exactly one of activate and burn wins, the stale node
// refused by the transaction, and the porcupine check (PROTOCOL "Fleet
// mode").
func TestConformance(t *testing.T) {
	a := newAuthority(t, server.addr)
	authoritytest.Run(t, func(t *testing.T) authority.Authority { return a })
}
