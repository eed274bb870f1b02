// Package render turns a provider-neutral journal into the request of one
// model API. It is pure: the result is a function of the events and the
// Target only (no clock, randomness, I/O or map-order effects), so the same
// journal renders to the same bytes on every machine, and a history can
// move between providers and back without loss.
//
// The package decides; the provider packages (render/openai,
// render/anthropic, render/gemini, render/ollama) only translate a Plan
// into the official SDK's request type, and render/wire marshals it. Any
// package may import render; render imports only journal and the
// tokenizer. Tests live in render (acceptance cases, golden files,
// properties, fuzzing) with helpers in render/rendertest.
//
// # How a journal becomes a request
//
// NewPlan takes the events in total order (clock, machine, seq; IDs and
// hash chains are not used) and:
//
//  1. Segments them in one pass that reads only a few header fields of
//     each body: user turns, instructions, and steps (one assistant
//     generation: its reasoning, text and calls, grouped by producer and
//     journal step) with the results of their calls. A result pairs with a
//     call of the open step only; a step closes at the next user turn or
//     step. Parallel calls and all their results are one unit.
//  2. Fits the window from the newest unit backwards, decoding only what
//     it keeps, and keeps whole units: a call is never separated from its
//     result. Instructions are always kept (those of the dropped part move
//     to the front). The dropped part is replaced by a digest, a user
//     message of fixed form: how many events, which tools, the last user
//     request (shortened). The newest unit is always kept; if it alone is
//     too large its tool results are cut to a common size, then a user
//     text, each with a marker. A conversation that would open with the
//     assistant gets StartText first on Anthropic and Gemini. The
//     target's working memory (Target.WorkingMemory), when not blank, is
//     pinned as one more instruction right after the leading ones
//     (WorkingMemoryHeader, then the text; FORMAT §6.4), so every API
//     carries it in its system slot; its tokens are reserved like the
//     instructions'.
//  3. Replays private reasoning only to the model that produced it (same
//     provider, API and model) and only in a form the API takes back:
//     Anthropic thinking with its signature or redacted data, Responses
//     reasoning items with encrypted content (store:false), Gemini thought
//     parts, Ollama thinking, DeepSeek-style reasoning_content. Other
//     models get no reasoning at all, not as text either; signatures and
//     provider item IDs follow the same rule.
//  4. Applies the provider rules that depend on neighbours: Anthropic
//     thinking must lead its message and, with thinking on, the message
//     before the last tool results and the first assistant message of the
//     open turn (tool results do not end a turn, user text does); when
//     the open turn cannot meet that, thinking is turned off for the
//     request where the model allows it (the model's earlier thinking is
//     still replayed, except in a final assistant message), else the
//     failing steps of that tool loop are sent as user-side text
//     (reasoning never included). With thinking off for the target
//     (NoThinking, or a model without it) no reasoning is sent. Responses reasoning needs its following
//     item, and item IDs are kept only beside replayed reasoning.
//  5. Maps call IDs into the target's syntax (IDRule): IDs that fit are
//     kept, others and repeats become a prefix plus base62 of sha256, the
//     same for calls and results, stable for a journal. Tool names the
//     API refuses (ValidToolName) likewise become the name with its other
//     bytes as "_", cut, plus "_" and base62 of sha256, in declarations,
//     calls and results (Report.ToolNames; JournalToolName and
//     JournalCallID map the model's calls back).
//  6. Declares, for Anthropic, a stub for every tool the kept history used
//     that the target no longer offers.
//
// # Fallbacks for input the renderer cannot place
//
// A render never panics on a journal; these are its documented choices:
//
//   - An event of a kind this release does not know is skipped
//     (Report.UnknownKinds). Lifecycle, model change and usage events are
//     not part of the conversation.
//   - An event whose body cannot be read is skipped (Report.Malformed),
//     except a tool call whose ID and name are readable: it is kept with
//     no arguments, so its result still pairs.
//   - Arguments that are not a JSON object (RawArguments text, an array, a
//     scalar) go as {"_raw": "<text>"} to every API: as that object where
//     the API takes an object (Anthropic, Gemini, Ollama), as its JSON
//     text where it takes a string (OpenAI Chat and Responses, whose
//     strict servers refuse a string that is not a JSON-encoded object);
//     absent arguments are {}.
//   - A call without a result gets an error result with the text
//     SyntheticResult, in its step, before the next user turn or step.
//   - A result with no call in the open step (an orphan, a result before
//     its call, a late result after the next turn) is not sent
//     (Report.Orphans); a second result for one call is not sent
//     (Report.Duplicates).
//   - A step whose stop_reason is "error" or "aborted" sends only its
//     calls, each with its result or the synthetic one.
//   - Empty user or instruction texts, and steps left with nothing to
//     send, are skipped; a journal with nothing to send is ErrEmpty.
//   - For Anthropic, which refuses text blocks of whitespace only, such
//     user, instruction and assistant texts are skipped too, a tool
//     result of whitespace only keeps its tool_result block without
//     content, and a final assistant message has its trailing whitespace
//     trimmed (Report.Whitespace).
//   - A Gemini thought signature is replayed as journaled, also on an
//     empty final text part of the model's own ({"text":"",
//     "thoughtSignature":...}); a first call of a Gemini 3 model turn
//     without one gets the documented placeholder. Other models' calls
//     carry no ID in a Gemini body, so only the model's own call IDs are
//     mapped (Report.Remapped).
//   - Attachments are sent as a text note naming the blob, its type and
//     size: rendering never loads blobs.
//
// # Tokens
//
// Text is counted with the model's tokenizer for OpenAI models
// (o200k_base or cl100k_base, exact for the text; the library's embedded
// tables, no network) and with o200k_base times a safety factor k for the
// others; message framing is a fixed estimate. k defaults to 1.25
// (Anthropic) or 1.15 (Gemini, Ollama, other servers) and is calibrated
// from the journal's usage events of the target's provider (reported
// input tokens over the Report.Tokens.Base recorded as EstimatedTokens,
// newest 32, plus 5%, clamped to [1, 2]). The fitter guarantees
// ceil(k * base) <= window unless even the instructions, tools and the
// newest unit cut to its minimum (with the stub declarations its calls
// need, and in the larger of its forms where a step may go as text) do
// not fit (Report.Tokens.OverBudget).
// Counting memoizes pre-token pieces for the length of one render only.
//
// # Journals longer than memory
//
// NewPlan takes the events in memory. An Index is the same journal read
// once as it streams by (journal.EachWith with ReadHeader on the parsing
// goroutines, then Index.AddHeader in order): it keeps the segmentation,
// which holds no body text, and where each body sits in the file, and
// Index.Plan reads back only the bodies of what the window keeps (and of
// the instructions, the last dropped user request and the newest usage
// records). Its plan is NewPlan's for the same events, byte for byte;
// capsule render uses it, so rendering a journal of any length holds the
// window and about forty bytes per event.
//
// # Journals that grow between renders
//
// The agent loop renders its journal at every model step, and the journal
// only grows. An Incremental keeps what an Index keeps, the segmentation
// of the events seen so far, with the open step and the instructions
// deferred behind it left open, and segments only the new events of the
// next call; it also remembers the token counts of the texts the previous
// plan counted and the closed units (user messages, steps other than the
// open one) it built, with the report entries their build made, so the
// fit decodes only units it did not build before. Stub declarations are
// taken again in the new plan's order, and the units are forgotten when
// the tools' request names change. It also keeps the pre-token piece
// counts, the user requests a digest quotes, and the digest's summary of
// the stable units before the cut (extended as the cut moves forward,
// started afresh when it moves back). The fit, the digest, the ID and
// tool-name maps, stubs and calibration depend on the whole journal and
// are computed afresh from that state at every call, exactly as NewPlan
// computes them, so the plan
// is NewPlan's (a property test compares bytes and reports over random
// growing prefixes). A call whose events do not extend the previous
// call's (fewer events, or another event at its last index, as after a
// merge), or with another target, starts afresh. The fit tokenizes a
// digest's bound only where a byte-length bound does not settle whether
// a unit fits. What a step still costs is a walk of the kept window;
// wire.Incremental splices the request body from the bytes of the runs
// of items it encoded before (bench/loopstep.sh).
package render
