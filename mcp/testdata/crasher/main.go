// Command crasher is an MCP server for mcp's tests: its tool crash appends
// a line to $COUNTER_FILE and exits in the middle of the call, before it
// answers; echo returns its text.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type crashIn struct{}

type echoIn struct {
	Text string `json:"text"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "crasher", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Count, then exit without answering."}, crash)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the text."}, echo)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func crash(context.Context, *mcp.CallToolRequest, crashIn) (*mcp.CallToolResult, any, error) {
	if path := os.Getenv("COUNTER_FILE"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, "crash")
			f.Close()
		}
	}
	fmt.Fprintln(os.Stderr, "crasher: exiting mid-call")
	os.Exit(3)
	return nil, nil, nil
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
}
