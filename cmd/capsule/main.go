// Command capsule is the Capsule CLI and node daemon. This package is wiring
// only: flags, output and exit codes; the logic lives in the packages below.
//
// Exit codes: 0 ok, 1 the capsule failed verification, 2 usage error,
// 3 any other error (a missing path among them). Each verb's --help says
// what 1 and 3 mean for it (exitdoc.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
)

// Exit codes, documented in the README and in `capsule --help`.
const (
	exitOK       = 0
	exitVerify   = 1
	exitUsage    = 2
	exitInternal = 3
)

// commands holds the constructors of the top-level verbs; each verb's file
// adds its own from an init function, so the verbs stay independent.
var commands []func() *cobra.Command

func addCommand(f func() *cobra.Command) { commands = append(commands, f) }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "capsule",
		Short: "Keep an LLM agent's state as a folder of plain files you can verify, move and upgrade",
		Long: `Capsule keeps an LLM agent's whole state as a folder of plain files (or the tar
of one) that anyone can open and verify offline, renders its history for any
model provider, and moves a running agent between machines without ever
running it twice.

Exit codes (each verb's --help says what 1 and 3 mean for it):
  0  ok
  1  the capsule failed verification
  2  usage error (bad flags or arguments, a malformed node ID)
  3  any other error (a missing path, an unreadable file, no node running)`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{err}
	})
	for _, f := range commands {
		root.AddCommand(f())
	}
	documentExits(root)
	addCompletions(root)
	return root
}

func main() {
	sandboxInit()
	if err := checkSchemas(); err != nil {
		fmt.Fprintln(os.Stderr, "capsule:", err)
		os.Exit(exitInternal)
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "capsule:", err)
	return exitCode(err)
}

// interruptible returns the command's context, canceled on SIGINT or
// SIGTERM, so a long command stops and removes what it was writing; the
// returned function restores the default handling of both signals.
func interruptible(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// usageError marks a mistake in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// verifyError marks a capsule that failed verification; its report has
// already been printed.
type verifyError struct{ err error }

func (e verifyError) Error() string { return e.err.Error() }
func (e verifyError) Unwrap() error { return e.err }

// exitCode maps an error to the exit code, once, for every verb: a failed
// verification is 1; a missing path is 3 even where it came from a flag; a
// request the node refused as malformed (HTTP 400) is a usage error.
func exitCode(err error) int {
	var ue usageError
	var ve verifyError
	var ae *api.Error
	switch {
	case errors.As(err, &ve), errors.Is(err, capsule.ErrRefused): // a version this release does not read
		return exitVerify
	case errors.Is(err, fs.ErrNotExist):
		return exitInternal
	case errors.As(err, &ue), isCobraUsage(err):
		return exitUsage
	case errors.As(err, &ae) && ae.Status == 400:
		return exitUsage
	default:
		return exitInternal
	}
}

// isCobraUsage recognises the argument errors cobra returns itself (unknown
// command, wrong number of arguments), which carry no type of their own.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand", "invalid argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
