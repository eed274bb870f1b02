package node

// Watchers of an agent (agent log --follow, agent chat) see its journal
// events as they are appended and the assistant's text as it streams.
// This file is the seam the runner calls; the hub behind it is built in
// the watch work of issue 13.

// publishDelta shows watchers text the model is generating in step
// (never journaled until the generation completes).
func (a *tenant) publishDelta(step, text string) {}
