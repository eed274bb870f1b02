// Package transfer is the move protocol: a two-phase commit with a fencing
// epoch that moves a running agent from one node to another so that at most
// one node runs it, ever. The normative description is docs/PROTOCOL.md.
//
// The package is sans-IO (like etcd-io/raft's Ready): it never touches the
// disk, the network, the clock or randomness. A Source (one per move attempt,
// on the node that holds the agent) and a Target (one per agent per node)
// take Inputs — messages, lost requests, ticks, results of host actions —
// and return a Ready listing records to make durable, messages to send,
// actions for the host, and the source's outcome. The node daemon (package
// node) does the I/O; package sim drives the same machines in a
// deterministic simulation. Anyone may import this package.
//
// # How a node drives this package
//
// The one rule: make Ready.Records durable before sending any of its
// Messages or performing any of its Actions. Each Record carries the full
// state of its machine, so keeping the newest record per machine (written
// atomically: temp file, fsync, rename, fsync dir) is enough.
//
// The source side, on the node that holds the agent (serialize per agent):
//
//	if err := transfer.CheckStart(target, lastSource); err != nil { refuse }
//	var lastEpoch uint64 // Epoch of the newest source record kept for the agent
//	src, err := transfer.NewSource(transfer.SourceConfig{
//		Agent: agentID, Move: ulid, Self: myID, Peer: peerID,
//		Holder: target.Holder(),
//		Epoch:  transfer.NextEpoch(target.MaxEpoch(), lastEpoch),
//		Policy: transfer.DefaultPolicy,
//	})
//	rd := src.Step(transfer.Input{Kind: transfer.InStart, Inventory: &inv})
//	for {
//		if err := persist(rd.Records); err != nil {
//			rd = src.Step(transfer.Input{Kind: transfer.InPersistFailed})
//			continue
//		}
//		var next []transfer.Input
//		for _, m := range rd.Messages { // at most one request is outstanding
//			reply, err := peer.Send(m) // HTTP POST; the node streams m.Send
//			if err != nil {            // blobs and the journal tail with MsgPrepare
//				next = append(next, transfer.Input{Kind: transfer.InSendFailed})
//			} else {
//				next = append(next, transfer.Receive(reply))
//			}
//		}
//		for _, a := range rd.Actions {
//			next = append(next, do(a)) // ActFreeze -> InFrozen, ActPush -> InPushed,
//		} //                               ActInventory -> InInventory; ActResume/ActRetire: no result
//		if rd.Outcome != "" { report(rd.Outcome) }
//		if len(next) == 0 {
//			if src.Done() { break }
//			sleep(backoff)            // resolving or aborting: waiting for the peer
//			next = []transfer.Input{{Kind: transfer.InTick}}
//		}
//		rd = transfer.Ready{}
//		for _, in := range next { rd = merge(rd, src.Step(in)) } // or step one at a time
//	}
//
// ActResume at a new epoch (after InForce) means: feed InAdopt{Epoch} to
// this node's Target first. ActRetire means: stop hosting the agent and feed
// InRelease{Move, Epoch} to this node's Target. An operator's `capsule move
// resolve` feeds InResolve; `--force` feeds InForce{Operator, Epoch:
// target.MaxEpoch()+1}.
//
// The target side, in the HTTP handler for a request m (serialize per agent):
//
//	in := transfer.Receive(m)
//	if m.Type == transfer.MsgHave || m.Type == transfer.MsgOffer {
//		in.Missing = cas.Missing(m.Blobs) // digests absent from the CAS store
//		in.Journal = localJournalPos(m.Agent)
//	}
//	// for MsgPrepare: if target.Pending() is this move, store the streamed
//	// blobs and the journal tail durably in the move's staging first (they
//	// are verified by ActVerify, not trusted).
//	rd := target.Step(in)
//	for {
//		if err := persist(rd.Records); err != nil {
//			target.Step(transfer.Input{Kind: transfer.InPersistFailed})
//			return 503 // the source sees a lost request and retries
//		}
//		var results []transfer.Input
//		for _, a := range rd.Actions {
//			// ActVerify -> InVerified{OK, Problems}, ActPrepare -> InPrepared{...};
//			// ActStart (the HOLDER record is durable): promote staging, write the
//			// signed holder record, run the agent; ActDiscard: remove the staging.
//			if r, ok := do(a); ok { results = append(results, r) }
//		}
//		if len(rd.Messages) > 0 { reply = rd.Messages[0] }
//		if len(results) == 0 { break }
//		rd = target.Step(results[0]) // verify, then prepare: one at a time
//	}
//	if m.Type == transfer.MsgPrepare && (target.Pending() == nil || target.Pending().Move != m.Move) {
//		removeStaging(m.Move) // refused: nothing may stay staged for it
//	}
//	if reply == nil { return 503 } // e.g. a failed persist: the source retries
//	return reply
//
// A reply's Re, Move and Epoch name the request it answers; a source that
// does its own matching (not plain HTTP request/response) must use them.
//
// On restart, rebuild each machine from its records alone: RecoverTarget
// for every agent, RecoverSource for every agent with a source record (and
// execute the Ready it returns: a source that had sent activate resolves,
// never resumes). Run an agent only when MayRun(target, lastSource) says so.
// A new agent starts with target.Step(Input{Kind: InAdopt, Epoch: 1}).
package transfer
