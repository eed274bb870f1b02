package main

import (
	"os"

	"github.com/agentcapsule/capsule/sandbox"
)

// sandboxInit runs the sandbox's init when the node re-executed this binary
// as one (the hidden verb sandbox.Verb, which no user types); it does not
// return then. It runs before cobra, so that flags and commands play no part.
func sandboxInit() {
	if code := sandbox.Main(os.Args[1:]); code >= 0 {
		os.Exit(code)
	}
}
