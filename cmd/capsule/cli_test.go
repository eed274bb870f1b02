package main

import (
	"bytes"
	"testing"
)

// capsuleCLI runs the capsule command in-process and returns its output
// and exit code.
func capsuleCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		errb.WriteString(err.Error())
		return out.String(), errb.String(), exitCode(err)
	}
	return out.String(), errb.String(), exitOK
}
