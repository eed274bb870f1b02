package node

import (
	"github.com/agentcapsule/capsule/sandbox"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// SocketFile is the local API socket's name inside the data folder.
const SocketFile = "node.sock"

// Config configures a node. Only Dir is required.
type Config struct {
	// Dir is the data folder.
	Dir string
	// FS is the file system (default vfs.OS{}).
	FS vfs.FS
	// Clock paces runners and retries and measures frozen windows (default: real time).
	Clock Clock
	// Entropy feeds key generation (default crypto/rand).
	Entropy io.Reader
	// Logger receives structured logs (default: discard).
	Logger *slog.Logger
	// Listen is the peer API's TCP address (e.g. "127.0.0.1:0"); empty: no listener.
	Listen string
	// Socket is the local API's unix socket path; empty: DIR/node.sock; "-": none.
	Socket string
	// ReadJournalUpTo, if above 0, makes this node read journal versions
	// only up to it, as a node of release 0.2.0 reads version 1 only: it
	// states so in the version exchange of a move and refuses to prepare
	// a newer one (a test knob for rolling upgrades; 0: this release's).
	ReadJournalUpTo int
	// Canary is a folder of the operator's representative capsules (one
	// capsule folder per entry, on the host), read through the full read
	// path at start with the embedded fixtures before the node is ready
	// (canary.go); empty: the embedded fixtures only.
	Canary string
	// MetricsAddr serves /metrics, /healthz and /readyz; empty: none.
	MetricsAddr string
	// Runner, if set, runs every agent (tests). Unset, an agent whose
	// journal names a language model runs the agent loop (package agent)
	// and any other the built-in CounterRunner.
	Runner Runner
	// Providers returns the model client for an API (default: the clients
	// of provider/<name>).
	Providers func(api render.API) (provider.Client, error)
	// Endpoints maps a provider name of the journal ("openai",
	// "anthropic", "google", "ollama", or the name of an OpenAI-compatible
	// server) to the base URL this node calls it at. A host fact: it is not
	// part of the capsule.
	Endpoints map[string]string
	// ModelEndpoint, if set, serves every provider not in Endpoints: the
	// root URL of the embedded model endpoint (a simulator; see
	// docs/SIMULATOR.md).
	ModelEndpoint string
	// Tools opens the tools offered to an agent whose workspace is workdir
	// (default: the built-in workspace tools of package tool).
	Tools func(workdir string) (agent.Toolbox, io.Closer, error)
	// ModelTimeout bounds one model call of an agent, its retries
	// included (default 10m); a call that runs out is tried again later.
	ModelTimeout time.Duration
	// Sandbox runs the processes tools start; nil: the sandbox this
	// process probes on first use (package sandbox).
	Sandbox *sandbox.Sandbox
	// DiscardRefused is the node's policy at restore (--discard-refused):
	// an agent whose resume the checks of FORMAT §11.9 refuse is discarded
	// instead of blocked when FORMAT §11.9.4 allows its discard (an
	// ephemeral spec, no approval, usage within the bound, no external
	// effect); otherwise it is blocked as without the policy.
	DiscardRefused bool
	// AllowUnsandboxed lets an agent whose spec says sandbox: none run its
	// tools' processes without a sandbox (--allow-unsandboxed).
	AllowUnsandboxed bool
	// ToolWait bounds how long a freeze or a stop waits for a running tool
	// before it is refused (default 30s): a tool is never cut.
	ToolWait time.Duration
	// StepInterval is the pause between runner steps (default 50ms).
	StepInterval time.Duration
	// Policy drives pre-copy (default transfer.DefaultPolicy).
	Policy transfer.Policy
	// Retries is the attempts per request before the point of no return
	// (default transfer.DefaultRetries).
	Retries int
	// AbortRetries bounds the failed attempts at cleaning up a rolled-back
	// move's staging on its target (default transfer.DefaultAbortRetries;
	// negative: retry for ever). Until the target answers or the budget
	// runs out no new move of the agent may start; after that the target
	// discards the abandoned staging when a newer offer reaches it.
	AbortRetries int
	// RequestTimeout bounds one peer request (default 30s).
	RequestTimeout time.Duration
	// RetryInterval paces resolve and abort retries (default 200ms).
	RetryInterval time.Duration
	// WrapTransport, if set, wraps the transport to each peer (tests use it
	// to lose requests or replies of named calls).
	WrapTransport func(peer ID, rt http.RoundTripper) http.RoundTripper
	// Getenv reads the environment for secrets (default os.Getenv).
	Getenv func(string) string
	// SecretStore is the host's secret store: "keyring", "pass", "file" or
	// "" ($CAPSULE_SECRET_STORE, else the file store when DIR/secrets.json
	// exists, else the kernel keyring); see package secret.
	SecretStore string
	// Commit is the build's commit, recorded as the manifest's writer.
	Commit string
	// Authority is asked at a move's activate and its ambiguous moment
	// (node/authority.go; default LocalAuthority, the node's records alone).
	Authority Authority
}

func (c *Config) defaults() {
	if c.FS == nil {
		c.FS = vfs.OS{}
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.ModelTimeout <= 0 {
		c.ModelTimeout = 10 * time.Minute
	}
	if c.ToolWait <= 0 {
		c.ToolWait = 30 * time.Second
	}
	if c.StepInterval <= 0 {
		c.StepInterval = 50 * time.Millisecond
	}
	if c.Policy == (transfer.Policy{}) {
		c.Policy = transfer.DefaultPolicy
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.AbortRetries == 0 {
		c.AbortRetries = transfer.DefaultAbortRetries
	}
	if c.RetryInterval <= 0 {
		c.RetryInterval = 200 * time.Millisecond
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Socket == "" {
		c.Socket = filepath.Join(c.Dir, SocketFile)
	}
	if c.Authority == nil {
		c.Authority = LocalAuthority{}
	}
}
