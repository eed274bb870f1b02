package sim_test

import (
	"errors"
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
)

// Start serves on loopback only and its log is the server's.
func TestStartLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "example.com:0"} {
		if _, err := sim.Start(addr, sim.Config{}); !errors.Is(err, sim.ErrNotLoopback) {
			t.Errorf("Start(%q) = %v, want ErrNotLoopback", addr, err)
		}
	}
	r, err := sim.Start("127.0.0.1:0", sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if status, _ := postRaw(t, r.URL, ollamaPath, `{"model":"capsule-sim/echo","stream":false,"messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Fatalf("status %d", status)
	}
	if got := r.Received("ollama", sim.Echo); len(got) != 1 {
		t.Fatalf("Received = %+v, want the one request", got)
	}
}
