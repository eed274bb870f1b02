// Package agent is the LLM agent loop, run by a node one step at a time.
//
// One step is exactly one of:
//
//   - a model step: render the journal for the model the newest
//     model_change names (read from the journal before every call, never
//     cached elsewhere), with the working memory the node passes in
//     Env.WorkingMemory pinned after the instructions (FORMAT §6.4; it is
//     never journaled), make one provider call, and journal the
//     reasoning, assistant text, tool calls and usage it produced, each
//     with its producer and step, in one durable write;
//   - a tool step: take the oldest call of the newest step that has no
//     result, run it, and journal its result;
//   - idle: nothing to do until a user event or a model change arrives.
//
// Tools have effects (docs/FORMAT.md §11.7.3). Every tool has an effect
// class and an approval rule (Describe; a tool the Toolbox cannot describe
// is external and needs approval). A call whose rule is required journals
// an approval_request and parks the agent (Step returns a *WaitingError)
// until an approval that binds to the call's id, arguments, tool and spec
// is journaled (CheckDecision gives the refusal codes); an external call,
// and any call that consumes an approval, runs only after its
// tool_dispatch is durable, and a dispatched call without a result is
// answered as interrupted, outcome unknown, never run again (Unresolved
// lists those until an effect_outcome records what happened).
//
// The journal is the only state. Decide reads what to do next from the
// events alone, so a restarted node, or the target of a move, continues
// where the journal stops: a model call whose output was never journaled
// is made again; a call whose tool a node was running when it died gets an
// explicit error result (the node marks a tool as running, durably, before
// it starts it; the tool is never silently run twice).
//
// The package does no I/O of its own: the node hands each step an Env with
// the journal, the durable append, the tools, the provider clients and the
// secrets. It imports render (the request), provider (the seam to the
// model clients) and journal.
package agent
