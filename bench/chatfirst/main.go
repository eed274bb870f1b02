// Command chatfirst is the helper of bench/chatfirst.sh, which measures
// how soon `capsule agent chat` shows the first streamed token against the
// model endpoint's own time to first byte (issue 13, Performance).
//
//	chatfirst proxy -target SIMURL -delay 300ms   # a delaying proxy; prints its URL
//	chatfirst capture -sim SIMURL -out FILE       # the newest Chat Completions request
//	chatfirst endpoint -url PROXYURL -req FILE    # one timed streamed request
//	chatfirst chat -cap BIN -data DIR -agent ID   # one timed chat turn
//
// The proxy holds back the first byte of each model response by its
// delay (POST /chatfirst/delay?d=50ms changes it) and then streams as is,
// and logs one JSON line per model request with its arrival and the
// forwarding of its first byte, in Unix nanoseconds, so that a chat turn
// can be cut into its parts from outside the product.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chatfirst proxy|capture|endpoint|chat [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "proxy":
		err = runProxy(os.Args[2:])
	case "capture":
		err = runCapture(os.Args[2:])
	case "endpoint":
		err = runEndpoint(os.Args[2:])
	case "chat":
		err = runChat(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chatfirst: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
