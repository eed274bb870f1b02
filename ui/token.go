package ui

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// Files of the web view in the node's data folder.
const (
	// TokenFile holds the login token (mode 0600), made on first use.
	TokenFile = "ui.token"
	// AddrFile holds the address the web view serves on (host:port),
	// written each time the node starts it.
	AddrFile = "ui.addr"
)

// ErrRemote refuses a web view address that is not a loopback one
// without the operator's leave.
var ErrRemote = errors.New("ui: address is not loopback")

// LoadOrCreateToken returns the login token of the data folder dir,
// creating it (32 random bytes, mode 0600) when there is none. A token
// file others may read is refused: anyone who reads it can log in.
func LoadOrCreateToken(dir string) (string, error) {
	path := filepath.Join(dir, TokenFile)
	if tok, err := ReadToken(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("ui: token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("ui: token: %w", err)
	}
	_, err = f.WriteString(tok + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("ui: token: %w", err)
	}
	return tok, nil
}

// ReadToken reads the login token of the data folder dir.
func ReadToken(dir string) (string, error) {
	path := filepath.Join(dir, TokenFile)
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("ui: token: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("ui: token: %s has mode %v: others may read it (want 0600)", path, info.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("ui: token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 32 {
		return "", fmt.Errorf("ui: token: %s holds no token", path)
	}
	return tok, nil
}

// WriteAddr records the address the web view serves on in dir.
func WriteAddr(dir, addr string) error {
	if err := os.WriteFile(filepath.Join(dir, AddrFile), []byte(addr+"\n"), 0o600); err != nil {
		return fmt.Errorf("ui: address: %w", err)
	}
	return nil
}

// ReadAddr returns the address recorded in dir.
func ReadAddr(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, AddrFile))
	if err != nil {
		return "", fmt.Errorf("ui: address: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// LoginURL is the address that logs a browser in to the web view at addr.
func LoginURL(addr, token string) string {
	return "http://" + addr + "/login?token=" + token
}

// CheckAddr accepts a host:port whose host is a loopback address or
// "localhost"; any other is ErrRemote unless allowRemote.
func CheckAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("ui: address %q: %w", addr, err)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %s (serve on 127.0.0.1, or allow it with --ui-allow-remote)", ErrRemote, addr)
}
