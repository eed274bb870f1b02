//go:build !linux

package main

import (
	"fmt"
	"io"

	"golang.org/x/term"
)

// promptNoEcho prints the prompt and reads one line without echo.
func promptNoEcho(w io.Writer, fd int, prompt string) ([]byte, error) {
	fmt.Fprint(w, prompt)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(w)
	return b, err
}
