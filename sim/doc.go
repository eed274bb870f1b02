// Package sim is the deterministic simulation of the move protocol: several
// nodes, each running the real transfer.Source and transfer.Target machines
// over a small host model whose durable state lives on a vfs.Mem (so a crash
// drops every unsynced write), a network that drops, duplicates, delays and
// reorders messages, and a seeded scheduler that also crashes and restarts
// nodes. Invariants are checked after every step (docs/PROTOCOL.md,
// "Invariants"), and a coverage check fails the run if a cell of the fault
// matrix was never reached.
//
// The package holds tests only (it may use math/rand with an explicit seed).
// Run: go test ./sim; one seed: go test ./sim -run TestSimulation -sim.seed=S -v;
// more seeds: -sim.seeds=N.
package sim
