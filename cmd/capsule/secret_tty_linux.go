package main

import (
	"fmt"
	"io"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// promptNoEcho turns the terminal's echo off before it prints the prompt,
// keeping line mode, so that nothing typed after the prompt is ever shown
// (term.ReadPassword alone prints nothing itself and would leave a window
// between the prompt and its own switch), reads one line and restores the
// terminal.
func promptNoEcho(w io.Writer, fd int, prompt string) ([]byte, error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	quiet.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, err
	}
	defer func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old); fmt.Fprintln(w) }()
	fmt.Fprint(w, prompt)
	return term.ReadPassword(fd)
}
