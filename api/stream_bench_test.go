package api

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/digest"
)

// BenchmarkStreamReceive reads a push stream of 1 MiB blob frames (1 GiB
// by default; CAPSULE_BENCH_STREAM_MB sets another size) the way a
// target's Push does: each frame's bytes into a 1 MiB buffer, to its end.
// "memory" reads the stream from memory, so it measures the reader's own
// work (copying and hashing); "tls" reads it from a TLS 1.3 connection on
// loopback, whose writer runs on another goroutine, as a node receives a
// push. "inline" hashes every frame on the reading goroutine (as the
// reader did before it pipelined hashing), "pipelined" as the reader does. Metrics: MB/s, and cpu_s, the user and system CPU time of the
// whole process (both ends of the connection) per stream.
//
//	go test ./api -run '^$' -bench StreamReceive -benchtime 3x
func BenchmarkStreamReceive(b *testing.B) {
	mb := 1024
	if s := os.Getenv("CAPSULE_BENCH_STREAM_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil {
			b.Fatalf("CAPSULE_BENCH_STREAM_MB=%q: %v", s, err)
		}
	}
	blob := bytes.Repeat([]byte("capsule stream benchmark "), 1<<20/25+1)[:1<<20]
	sources := []struct {
		name string
		open func(b *testing.B) io.Reader
	}{
		{"memory", func(*testing.B) io.Reader { return newFrameRepeater(blob, mb) }},
		{"tls", func(b *testing.B) io.Reader { return tlsLoopback(b, newFrameRepeater(blob, mb)) }},
	}
	for _, src := range sources {
		for _, pipe := range []bool{false, true} {
			name := src.name + "/inline"
			if pipe {
				name = src.name + "/pipelined"
			}
			b.Run(name, func(b *testing.B) {
				benchReceive(b, mb, pipe, func() io.Reader { return src.open(b) })
			})
		}
	}
}

func benchReceive(b *testing.B, frames int, pipe bool, open func() io.Reader) {
	b.SetBytes(int64(frames) << 20)
	buf := make([]byte, 1<<20)
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		r := open()
		cpu0 := cpuTime()
		b.StartTimer()
		s := NewStreamReader(r, 0)
		if !pipe {
			s.piece = 0
		}
		got := 0
		for {
			_, fr, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if err := readFrame(fr, buf); err != nil {
				b.Fatal(err)
			}
			got++
		}
		b.StopTimer()
		cpu += cpuTime() - cpu0
		if got != frames {
			b.Fatalf("read %d frames, want %d", got, frames)
		}
		if c, ok := r.(io.Closer); ok {
			c.Close()
		}
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu_s")
}

// readFrame reads r to its end in reads of up to len(buf) bytes.
func readFrame(r io.Reader, buf []byte) error {
	for {
		_, err := r.Read(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// frameRepeater is a push stream of n blob frames of the same blob,
// produced as it is read.
type frameRepeater struct {
	frame []byte // header and blob
	left  int    // frames not yet started
	cur   []byte // the rest of the frame being read
}

func newFrameRepeater(blob []byte, n int) *frameRepeater {
	h := Frame{Kind: FrameBlob, Digest: digest.FromBytes(blob), Size: int64(len(blob))}.header()
	return &frameRepeater{frame: append([]byte(h), blob...), left: n, cur: []byte(StreamMagic)}
}

func (f *frameRepeater) Read(p []byte) (int, error) {
	if len(f.cur) == 0 {
		if f.left == 0 {
			return 0, io.EOF
		}
		f.left--
		f.cur = f.frame
	}
	n := copy(p, f.cur)
	f.cur = f.cur[n:]
	return n, nil
}

// tlsLoopback returns the client end of a TLS 1.3 connection on loopback
// whose server end writes r, 1 MiB at a time.
func tlsLoopback(b *testing.B, r io.Reader) io.ReadCloser {
	b.Helper()
	cert := benchCert(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		sc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
		defer sc.Close()
		_, _ = io.CopyBuffer(sc, r, make([]byte, 1<<20))
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func benchCert(b *testing.B) tls.Certificate {
	b.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		b.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// cpuTime returns the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
