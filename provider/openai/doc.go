// Package openai is the model client for OpenAI's two wire formats, Chat
// Completions (POST {base}/chat/completions, also the API of
// OpenAI-compatible servers: vLLM, llama.cpp server, LM Studio,
// OpenRouter, DeepSeek) and the stateless Responses API (POST
// {base}/responses with store:false, as render/openai renders it). It
// implements provider.Client on the official SDK
// (github.com/openai/openai-go/v3).
//
// The base URL is Request.BaseURL, the part of the endpoint before
// "/chat/completions" or "/responses": "https://api.openai.com/v1" when
// empty, or any compatible server's base ending in /v1 (the embedded
// simulator of provider/sim at its URL + "/v1"). The key, when not empty,
// goes in "Authorization: Bearer"; the client reads no OPENAI_*
// environment variable, so the key of a call is Request.Key and nothing
// else.
//
// The body sent is Request.Body byte for byte: it goes to the SDK's raw
// request path (Client.Post with a []byte body, which the SDK writes as
// is), never through its param types. Streaming, the default, adds the
// streaming switch inside the body's outer object and nothing else:
// "stream":true, and for Chat also "stream_options":{"include_usage":true}
// so that the usage arrives in the stream.
//
// What comes back is parsed into journal bodies in generation order:
//
//   - Chat: the message's reasoning_content (or reasoning, as some
//     compatible servers spell it) as a journal.Reasoning, its content as
//     a journal.AssistantMessage with the finish_reason as StopReason, each
//     tool call (parallel calls included; streamed deltas joined by their
//     index) as a journal.ToolCall, and usage as a journal.Usage.
//   - Responses: each reasoning item as a journal.Reasoning with its rs_
//     ItemID, encrypted_content and summary parts (Text is the summary
//     parts joined, or the reasoning_text content when there is no
//     summary), each message item as a journal.AssistantMessage with its
//     msg_ ItemID, each function_call as a journal.ToolCall with its fc_
//     ItemID and call_id, then usage. The stop reason is the response's
//     status ("completed"), or the incomplete_details reason of an
//     incomplete response. Streamed, the items are those of
//     response.completed (or of the response.output_item.done events when
//     the final event lists none); response.output_text.delta feeds
//     Request.OnText.
//
// Arguments the model sent that are not valid JSON (as the journal's
// canonical form judges it) are kept verbatim in ToolCall.RawArguments; a
// call the server sent without an ID gets "call_<step>_<n>". Errors the
// provider answered carry its status, type, message and Retry-After in a
// *provider.Error; a generation the provider reported as failed in a 200
// answer (an error event, status "failed") is one with Status 0. Retries go through provider.Do with the SDK's own
// retries off; a stream that ends before its final event counts as a
// dropped connection and is retried, so a watcher may see the text of the
// first attempt again. Edge package: the agent runtime and tests import
// it.
package openai
