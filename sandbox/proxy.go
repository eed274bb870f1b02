package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// Proxy is the node's egress proxy for sandboxed commands: an HTTP CONNECT
// proxy on a loopback TCP port and on a unix socket (bound into bwrap
// sandboxes) that opens a tunnel only to the "host:port" it allows. Every
// other request is refused with 403 and never reaches the network.
type Proxy struct {
	allowed []string
	tcp     net.Listener
	unix    net.Listener
	sock    string
	dialer  net.Dialer
}

// NewProxy starts a proxy allowing hosts ("host:port" each), listening on
// 127.0.0.1 and, when sock is not empty, on the unix socket sock.
func NewProxy(hosts []string, sock string) (*Proxy, error) {
	for _, h := range hosts {
		if _, err := splitHost(h); err != nil {
			return nil, fmt.Errorf("sandbox: proxy: %w", err)
		}
	}
	p := &Proxy{allowed: normalHosts(hosts), sock: sock, dialer: net.Dialer{Timeout: 30 * time.Second}}
	var err error
	if p.tcp, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("sandbox: proxy: %w", err)
	}
	p.serve(p.tcp)
	if sock != "" {
		os.Remove(sock)
		if p.unix, err = net.Listen("unix", sock); err != nil {
			p.tcp.Close()
			return nil, fmt.Errorf("sandbox: proxy: %w", err)
		}
		p.serve(p.unix)
	}
	return p, nil
}

// normalHosts lowercases and sorts hosts.
func normalHosts(hosts []string) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = strings.ToLower(h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Port returns the proxy's loopback TCP port.
func (p *Proxy) Port() int { return p.tcp.Addr().(*net.TCPAddr).Port }

// Socket returns the proxy's unix socket, or "".
func (p *Proxy) Socket() string { return p.sock }

// Allows reports whether the proxy opens tunnels to hostport.
func (p *Proxy) Allows(hostport string) bool {
	_, err := splitHost(hostport)
	return err == nil && slices.Contains(p.allowed, strings.ToLower(hostport))
}

// Close stops accepting; open tunnels end with their connections.
func (p *Proxy) Close() error {
	err := p.tcp.Close()
	if p.unix != nil {
		p.unix.Close()
		os.Remove(p.sock)
	}
	return err
}

func (p *Proxy) serve(ln net.Listener) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
}

// handle reads one CONNECT request and, when its target is allowed,
// tunnels the connection to it.
func (p *Proxy) handle(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		refuse(c, http.StatusMethodNotAllowed, "only CONNECT tunnels are proxied (use an https:// URL)")
		return
	}
	if !p.Allows(req.Host) {
		refuse(c, http.StatusForbidden, fmt.Sprintf("%q is not among the hosts the environment spec allows", req.Host))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	up, err := p.dialer.DialContext(ctx, "tcp", req.Host)
	cancel()
	if err != nil {
		refuse(c, http.StatusBadGateway, err.Error())
		return
	}
	defer up.Close()
	c.SetReadDeadline(time.Time{})
	fmt.Fprint(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	if n := br.Buffered(); n > 0 { // bytes the client sent after the request
		b, _ := br.Peek(n)
		up.Write(b)
	}
	pipe(c, up)
}

func refuse(c net.Conn, status int, msg string) {
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s\n",
		status, http.StatusText(status), len(msg)+1, msg)
}

// pipe copies a to b and b to a until both directions end.
func pipe(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		io.Copy(b, a)
		closeWrite(b)
		close(done)
	}()
	io.Copy(a, b)
	closeWrite(a)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}
