// Package authority owns the fleet's record of who holds each agent: per
// agent one value {holder node, epoch, state} that changes only by
// compare-and-swap, and the directory of nodes (PROTOCOL "Fleet mode").
//
// The package defines the small interfaces the node consumes (Authority,
// Directory), the versioned records stored behind them, the move's
// transactions built on compare-and-swap alone (Create, Activate, Burn,
// Settle), and Mem, the in-memory twin (optionally kept in one file) that
// has the shape of a node's own records. Package authority/etcd is the
// implementation on etcd; package authority/authoritytest is the
// conformance suite both run.
//
// Safety never rests on a lease, an election or a clock: a write succeeds
// only if the value it replaces is exactly the one the writer read. The
// epoch is Capsule's own integer, never an etcd revision.
//
// Any package may import it; it imports only the standard library and
// schema.
package authority
