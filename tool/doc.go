// Package tool owns the agent's built-in workspace tools: read_file,
// write_file, edit_file, list_files, search and memory. It declares them to
// the model (render.Tool, each with a JSON Schema and a description that
// teaches its use) and runs them, confined to the agent's workspace through
// os.Root, so that neither ".." nor a symbolic link reaches a file outside.
//
// Run turns every problem into a Result with IsError set and a message the
// model can act on (an unknown tool, arguments that are not a JSON object or
// do not validate under the tool's schema, a path outside the workspace); it
// never panics. Output over Options.MaxOutput is cut with a note and kept
// whole in Result.Full, which the agent stores as a blob attachment.
//
// The agent loop imports this package; it does disk I/O and is not pure.
package tool
