// Package e2e holds the end-to-end tests of Capsule: they build the real
// capsule binary once, run real `capsule node` processes on loopback
// addresses, connect them through fault proxies (package e2e/faultproxy),
// kill them with SIGKILL and cut their connections, and check the move
// protocol's invariant from the outside, by reading every node's journal
// files from disk and by asking each node over its local API.
//
// The package has no code outside its tests; nothing imports it. Run it
// with
//
//	go test ./e2e -v                              # a fresh seed
//	go test ./e2e -run TestChaosRing -e2e.seed=42 # replay a schedule
//	go test ./e2e -e2e.rounds=200 -timeout 30m    # a longer soak
//	go test ./e2e -run TestChaosRing -e2e.workload=agent -e2e.rounds=100 -timeout 60m
//	                                              # the soak with an LLM agent
//
// The agent tests (agent_*_test.go) run the agent loop of real nodes on
// the embedded model endpoint, `capsule model serve`, through a proxy in
// the test process that can hold a model call in flight, and kill or move
// the agent mid-loop: TestAgentCrashAndMove, and TestChaosRingAgent (the
// chaos ring with the agent instead of the counter, a few rounds).
//
// `go test -short` skips the process tests.
package e2e
