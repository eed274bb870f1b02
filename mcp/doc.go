// Package mcp is the client side of the MCP servers an environment spec
// declares (docs/FORMAT.md §11.7.1, issue 14 requirement 3): it starts
// them (a stdio process through a Launcher, which the node makes the
// sandbox's; an http endpoint through the streamable client transport),
// lists their tools, offers them under the names "SERVER.TOOL" with the
// effect class and approval rule the spec gives them (a server's
// annotations never lower either), calls them with a timeout, restarts a
// server that died for the next call (a call is never retried), and stops
// every process it started, its process group included.
//
// It uses github.com/modelcontextprotocol/go-sdk and imports nothing of
// the node or the agent loop; the node imports it.
package mcp
