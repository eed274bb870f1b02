// Command counter is an MCP server for mcp's tests: its tool bump appends
// a line to the file named by $COUNTER_FILE, or by its first argument
// when it has one (an effect outside the
// workspace that crash tests count) and echo returns its text. It lists
// one tool per page, so a client must paginate to see both.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bumpIn struct {
	Note string `json:"note,omitempty" jsonschema:"a note written on the counter line"`
	// Linger keeps the call open this many milliseconds after the line is
	// written: crash tests kill the node while it lingers.
	Linger int `json:"linger_ms,omitempty" jsonschema:"milliseconds to wait after writing the line, before answering"`
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "counter", Version: "v1"}, &mcp.ServerOptions{PageSize: 1})
	yes := true
	mcp.AddTool(s, &mcp.Tool{Name: "bump", Description: "Append one line to the counter file and return the count.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}}, bump)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the text.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: yes}}, echo)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func bump(_ context.Context, _ *mcp.CallToolRequest, in bumpIn) (*mcp.CallToolResult, any, error) {
	path := os.Getenv("COUNTER_FILE")
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if path == "" {
		return nil, nil, fmt.Errorf("COUNTER_FILE is not set")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if _, err := fmt.Fprintf(f, "bump %s\n", in.Note); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := f.Close(); err != nil {
		return nil, nil, err
	}
	time.Sleep(time.Duration(in.Linger) * time.Millisecond)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	n := strings.Count(string(b), "\n")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("count %d", n)}}}, nil, nil
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	if in.Text == "fail" {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "echo refuses fail"}}}, nil, nil
	}
	content := []mcp.Content{&mcp.TextContent{Text: in.Text}}
	if in.Text == "image" {
		content = append(content, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG")})
	}
	if v := os.Getenv("ECHO_ENV"); v != "" && in.Text == "env" {
		content = []mcp.Content{&mcp.TextContent{Text: os.Getenv(v)}}
	}
	return &mcp.CallToolResult{Content: content}, nil, nil
}
