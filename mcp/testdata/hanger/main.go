// Command hanger is an MCP server for mcp's tests that is hard to stop:
// its tool hang never answers, it ignores SIGTERM, it does not exit when
// its stdin closes, and it starts a child process (itself with the
// argument "child", which sleeps) whose PID it writes to $HANGER_PIDFILE.
// Only SIGKILL of its whole process group ends both.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type hangIn struct{}

type echoIn struct {
	Text string `json:"text"`
}

func main() {
	signal.Ignore(syscall.SIGTERM)
	if len(os.Args) > 1 && os.Args[1] == "child" {
		select {}
	}
	child := exec.Command(os.Args[0], "child")
	if err := child.Start(); err != nil {
		log.Fatal(err)
	}
	if path := os.Getenv("HANGER_PIDFILE"); path != "" {
		line := fmt.Sprintf("%d %d\n", os.Getpid(), child.Process.Pid)
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			log.Fatal(err)
		}
		f.WriteString(line)
		f.Close()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "hanger", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer."}, hang)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the text."}, echo)
	s.Run(context.Background(), &mcp.StdioTransport{})
	select {} // stdin closed: stay anyway
}

func hang(context.Context, *mcp.CallToolRequest, hangIn) (*mcp.CallToolResult, any, error) {
	select {}
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
}
