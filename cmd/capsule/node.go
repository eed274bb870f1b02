package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/spf13/cobra"
)

func init() { addCommand(newNodeCmd) }

// dataFlag adds --data (default $CAPSULE_DATA) to c.
func dataFlag(c *cobra.Command, dir *string) {
	c.Flags().StringVar(dir, "data", os.Getenv("CAPSULE_DATA"), "the node's data folder (default $CAPSULE_DATA)")
}

func needData(dir string) error {
	if dir == "" {
		return usageError{errors.New("--data is required (or set CAPSULE_DATA)")}
	}
	return nil
}

// errNoNode is returned by the commands that need the node on --data when
// none answers there.
var errNoNode = errors.New("no node is running")

// localClient returns a client for the node running on dir, or says that no
// node runs there and how to start one.
func localClient(dir string) (*api.LocalClient, error) {
	if err := needData(dir); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, node.SocketFile)
	if err := probeSocket(sock); err != nil {
		return nil, fmt.Errorf("%w at data folder %s (%s: %v); start it with: capsule node --data %s", errNoNode, dir, sock, err, dir)
	}
	return api.NewLocalClient(sock), nil
}

// probeSocket connects to the node's socket once, to tell "no node" from
// an error of the request itself.
func probeSocket(sock string) error {
	conn, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ENOENT):
			return errors.New("no socket")
		case errors.Is(err, syscall.ECONNREFUSED):
			return errors.New("the socket is left from a node that is gone")
		}
		return err
	}
	return conn.Close()
}

func newNodeCmd() *cobra.Command {
	var o struct {
		data, listen, metrics, logFormat, secretStore string
		step, toolWait, modelTimeout                  time.Duration
		modelEndpoint, canary                         string
		endpoints                                     []string
		allowUnsandboxed, discardRefused              bool
		ui                                            uiOptions
	}
	c := &cobra.Command{
		Use:   "node",
		Short: "Run the node daemon that hosts, runs and moves agents",
		Long: `Run the node daemon. It hosts agents under its data folder, runs them, and
moves them to other nodes over mutual TLS with pinned node IDs.

On first start it creates its key (DATA/node.key, mode 0600); its node ID is
derived from the public key. Once it serves, it prints one JSON line on
stdout with its ID, the address it listens on (the chosen port when you pass
port 0) and its local socket, for scripts:

  {"node":"n...","listen":"127.0.0.1:40123","socket":"DATA/node.sock"}

At start, before it resumes an agent or accepts an incoming move, it reads
every capsule fixture built into the binary and every capsule folder of
--canary DIR (on copies) as "capsule verify" and "capsule migrate --dry-run"
do, and counts the capsules it holds per (kind, schema version). If one
fails, the node stays not ready: /readyz answers 503 naming the capsule and
the problem, its agents stay stopped (blocked, with the reason) and incoming
moves are refused, until a restart passes. "capsule node status" shows it.

With --ui ADDR it also serves the web view on ADDR (loopback only unless
--ui-allow-remote; the JSON line then names it as "ui"), through the same
local API the CLI uses; "capsule ui open" prints its login address.

The CLI talks to it through DATA/node.sock (mode 0600). SIGINT or SIGTERM
freezes every running agent at a step boundary, commits its capsule and
exits; agents that were running start again on the next start.

An agent whose journal names a language model runs the agent loop: it
calls the model through the provider's API at the endpoint this node is
given for that provider (--endpoint, repeatable: PROVIDER=URL, with URL the
API's base, e.g. openai=https://api.openai.com/v1, ollama=http://127.0.0.1:11434,
or any OpenAI-compatible server under its own provider name), else at
--model-endpoint for every provider (the root URL of the embedded model
endpoint, a simulator: capsule model serve), else at the provider's public
endpoint. Keys are read from the host's secret store at each call, never
from the capsule. Endpoints are host facts: they are not in the capsule,
and a move's target uses its own.`,
		Example: `  capsule node --data ~/capsule-a --listen 127.0.0.1:7070
  capsule node --data /tmp/b --listen 127.0.0.1:0 --metrics 127.0.0.1:9090 --log-format json
  capsule node --data /tmp/b --model-endpoint http://127.0.0.1:8080
  capsule node --data /tmp/b --endpoint ollama=http://127.0.0.1:11434 --endpoint vllm=http://gpu1:8000/v1
  capsule node id --data ~/capsule-a
  capsule node peer add nabc... 10.0.0.2:7070 --data ~/capsule-a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needData(o.data); err != nil {
				return err
			}
			logger, err := newLogger(cmd.ErrOrStderr(), o.logFormat)
			if err != nil {
				return err
			}
			endpoints, err := parseEndpoints(o.endpoints)
			if err != nil {
				return err
			}
			if o.modelTimeout <= 0 {
				return usageError{fmt.Errorf("--model-timeout %s: want a duration above zero, e.g. 10m", o.modelTimeout)}
			}
			if o.modelEndpoint != "" {
				if err := checkEndpointURL("--model-endpoint", o.modelEndpoint); err != nil {
					return err
				}
			}
			if err := o.ui.check(); err != nil {
				return err
			}
			return runNode(cmd, o.ui, node.Config{Dir: o.data, Listen: o.listen, MetricsAddr: o.metrics, Logger: logger,
				StepInterval: o.step, Commit: buildCommit(), Endpoints: endpoints, ModelEndpoint: o.modelEndpoint, ToolWait: o.toolWait, ModelTimeout: o.modelTimeout, AllowUnsandboxed: o.allowUnsandboxed, DiscardRefused: o.discardRefused,
				SecretStore: o.secretStore, Canary: o.canary})
		},
	}
	dataFlag(c, &o.data)
	c.Flags().StringVar(&o.listen, "listen", "127.0.0.1:7070", "node-to-node (mTLS) address; port 0 picks one")
	c.Flags().StringVar(&o.metrics, "metrics", "", "serve /metrics, /healthz and /readyz on this address (off by default)")
	c.Flags().StringVar(&o.logFormat, "log-format", "text", "log format on stderr: text or json")
	c.Flags().DurationVar(&o.step, "step-interval", 50*time.Millisecond, "pause between steps of the built-in runner")
	c.Flags().StringVar(&o.modelEndpoint, "model-endpoint", "", "root URL that serves every provider not named by --endpoint (the embedded simulator)")
	c.Flags().StringArrayVar(&o.endpoints, "endpoint", nil, "PROVIDER=URL: the base URL this node calls a provider at (repeatable)")
	c.Flags().DurationVar(&o.toolWait, "tool-wait", 30*time.Second, "how long a move or a stop waits for a running tool before it is refused")
	c.Flags().BoolVar(&o.discardRefused, "discard-refused", false, "discard instead of block an agent whose resume the compatibility checks refuse, when its spec says ephemeral and nothing forbids it (FORMAT §11.9.4; its journal is kept as discarded-<time>.jsonl)")
	c.Flags().BoolVar(&o.allowUnsandboxed, "allow-unsandboxed", false, "let an agent whose environment spec says sandbox none run its tools' processes without a sandbox (agent status shows it)")
	c.Flags().DurationVar(&o.modelTimeout, "model-timeout", 10*time.Minute, "bound on one model call, retries included; when it runs out nothing is journaled and a later step calls again")
	c.Flags().StringVar(&o.secretStore, "secret-store", "", `where agents' secrets are looked up: keyring, pass or file (default $CAPSULE_SECRET_STORE, else file if DATA/secrets.json exists, else keyring); then CAPSULE_SECRET_<NAME> (see "capsule secret --help")`)
	uiFlags(c, &o.ui)
	c.Flags().StringVar(&o.canary, "canary", "", "a folder of representative capsules (one folder each) read through the full read path at start, with the fixtures built in, before the node is ready")
	c.AddCommand(newNodeIDCmd(), newNodeWaitCmd(), newNodeStatusCmd(), newPeerCmd())
	return c
}

func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want text or json", format)}
}

func runNode(cmd *cobra.Command, uo uiOptions, cfg node.Config) error {
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The web view listens before the node serves its socket, so that
	// once capsule node wait returns, capsule ui open finds its address.
	stopUI, uiAddr := func() {}, ""
	if uo.addr != "" {
		if uiAddr, stopUI, err = startUI(uo, cfg.Dir, cfg.Logger); err != nil {
			_ = n.Close(context.Background())
			return err
		}
	}
	if err := n.Start(); err != nil {
		stopUI()
		_ = n.Close(context.Background())
		return err
	}
	line := map[string]string{"node": string(n.ID()), "listen": n.Addr(), "socket": filepath.Join(cfg.Dir, node.SocketFile)}
	if m := n.MetricsAddr(); m != "" {
		line["metrics"] = m
	}
	if uiAddr != "" {
		line["ui"] = uiAddr
	}
	b, _ := json.Marshal(line)
	fmt.Fprintln(cmd.OutOrStdout(), string(b))
	<-ctx.Done()
	stopUI()
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.Close(cctx)
}

func newNodeIDCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "id",
		Short: "Print the node ID of a data folder (creating its key if needed)",
		Long: `Print the node ID: "n" and 26 lowercase base32 characters of the sha256 of
the node's ed25519 public key. Give it to the operators of other nodes, who
add this node as a peer with its address.`,
		Example: "  capsule node id --data ~/capsule-a\n  capsule node id --data ~/capsule-a --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needData(data); err != nil {
				return err
			}
			if err := vfs.MkdirAllDurable(vfs.OS{}, data, 0o700); err != nil {
				return err
			}
			k, err := node.LoadOrCreateKey(vfs.OS{}, data, nil)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]string{"node": string(k.ID()), "data": data})
			}
			fmt.Fprintln(cmd.OutOrStdout(), k.ID())
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, `print {"node": ID, "data": DIR}`)
	return c
}

func newNodeWaitCmd() *cobra.Command {
	var data string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "wait",
		Short: "Wait until the node on --data answers (for scripts that start one in the background)",
		Long: `Wait until a node serves on the data folder: its socket accepts a connection
and the node answers with its ID, which is printed. It gives up after
--timeout with the reason.`,
		Example: `  capsule node --data ~/capsule-a > node-a.log 2>&1 &
  capsule node wait --data ~/capsule-a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needData(data); err != nil {
				return err
			}
			info, err := waitNode(cmd.Context(), data, timeout)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), info.ID)
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait")
	return c
}

// waitNode polls the node on dir until it answers or timeout passes.
func waitNode(ctx context.Context, dir string, timeout time.Duration) (api.NodeInfo, error) {
	deadline := time.Now().Add(timeout)
	for {
		cl, err := localClient(dir)
		if err == nil {
			info, ierr := cl.Info(ctx)
			if ierr == nil {
				return info, nil
			}
			err = ierr
		}
		if time.Now().After(deadline) {
			return api.NodeInfo{}, fmt.Errorf("node wait: no answer after %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return api.NodeInfo{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func newNodeStatusCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show the running node: its ID, agents, readiness and canary pass",
		Long: `Show the node on --data: its ID, address, release and agent count, whether it
is ready, the capsules its canary pass read at start (each ok, or the
problem), and the capsules it holds per (kind, schema version). A node that
is not ready exits 1 after printing.`,
		Example: "  capsule node status --data ~/capsule-a\n  capsule node status --data ~/capsule-a --json | jq .readiness",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			info, err := cl.Info(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				err = printJSON(cmd.OutOrStdout(), info)
			} else {
				printNodeStatus(cmd.OutOrStdout(), info)
			}
			if err == nil && info.Readiness != nil && !info.Readiness.Ready {
				err = verifyError{fmt.Errorf("node status: not ready: %s", info.Readiness.Reason)}
			}
			return err
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, "print the node's info as JSON")
	return c
}

// printNodeStatus prints the node's info, readiness, canary checks and counts.
func printNodeStatus(w io.Writer, info api.NodeInfo) {
	fmt.Fprintf(w, "node %s (release %s) listen %s, %d agent(s)\n", info.ID, info.Release, info.Listen, info.Agents)
	rd := info.Readiness
	if rd == nil {
		return
	}
	if rd.Ready {
		fmt.Fprintln(w, "ready")
	} else {
		fmt.Fprintf(w, "not ready: %s\n", rd.Reason)
	}
	for _, c := range rd.Checked {
		status := "ok"
		if !c.OK {
			status = c.Problem
		}
		fmt.Fprintf(w, "  canary %s %s: %s\n", c.Source, c.Name, status)
	}
	for _, sc := range rd.Counts {
		fmt.Fprintf(w, "  %s v%d: %d capsule(s)\n", sc.Kind, sc.Version, sc.Capsules)
	}
}

func newPeerCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "peer",
		Short: "Manage the peers this node trusts (by node ID) and their addresses",
		Long: `Manage the node's peers. A peer is trusted by its node ID: the TLS handshake
refuses any node whose key does not derive an ID in this list. If the node
runs, the change goes through its socket; otherwise peers.json is edited.`,
		Example: `  capsule node peer add nq3x... 10.0.0.2:7070 --data ~/capsule-a
  capsule node peer list --data ~/capsule-a --json
  capsule node peer rm nq3x... --data ~/capsule-a`,
	}
	c.AddCommand(newPeerAddCmd(), newPeerListCmd(), newPeerRmCmd())
	return c
}

// withPeers runs f on the running node's API, or on peers.json when no
// node runs on dir.
func withPeers(dir string, online func(*api.LocalClient) error, offline func(*node.Peers) error) error {
	if err := needData(dir); err != nil {
		return err
	}
	if sock := filepath.Join(dir, node.SocketFile); probeSocket(sock) == nil {
		return online(api.NewLocalClient(sock))
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("data folder: %w (capsule node id --data %s creates it)", err, dir)
	}
	p, err := node.OpenPeers(vfs.OS{}, dir)
	if err != nil {
		return err
	}
	return offline(p)
}

func newPeerAddCmd() *cobra.Command {
	var data string
	c := &cobra.Command{
		Use:     "add ID ADDR",
		Short:   "Trust a node by its ID and record its address",
		Example: "  capsule node peer add nq3x... 10.0.0.2:7070 --data ~/capsule-a",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := node.ParseID(args[0]); err != nil {
				return usageError{err}
			}
			return withPeers(data,
				func(c *api.LocalClient) error { return c.AddPeer(cmd.Context(), api.Peer{ID: args[0], Addr: args[1]}) },
				func(p *node.Peers) error { return p.Add(node.Peer{ID: node.ID(args[0]), Addr: args[1]}) })
		},
	}
	dataFlag(c, &data)
	return c
}

func newPeerListCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:     "list",
		Short:   "List the trusted peers",
		Example: "  capsule node peer list --data ~/capsule-a",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var peers []api.Peer
			err := withPeers(data,
				func(c *api.LocalClient) (err error) { peers, err = c.Peers(cmd.Context()); return err },
				func(p *node.Peers) error {
					for _, x := range p.List() {
						peers = append(peers, api.Peer{ID: string(x.ID), Addr: x.Addr})
					}
					return nil
				})
			if err != nil {
				return err
			}
			if asJSON {
				if peers == nil {
					peers = []api.Peer{}
				}
				return printJSON(cmd.OutOrStdout(), peers)
			}
			for _, p := range peers {
				fmt.Fprintf(cmd.OutOrStdout(), "%s  %s\n", p.ID, p.Addr)
			}
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newPeerRmCmd() *cobra.Command {
	var data string
	c := &cobra.Command{
		Use:     "rm ID",
		Short:   "Stop trusting a node",
		Example: "  capsule node peer rm nq3x... --data ~/capsule-a",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := node.ParseID(args[0]); err != nil {
				return usageError{err}
			}
			return withPeers(data,
				func(c *api.LocalClient) error { return c.RemovePeer(cmd.Context(), args[0]) },
				func(p *node.Peers) error { return p.Remove(node.ID(args[0])) })
		},
	}
	dataFlag(c, &data)
	return c
}

// parseEndpoints reads --endpoint PROVIDER=URL flags.
func parseEndpoints(flags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range flags {
		name, u, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, usageError{fmt.Errorf("--endpoint %q: want PROVIDER=URL", f)}
		}
		if err := checkEndpointURL("--endpoint "+name, u); err != nil {
			return nil, err
		}
		if _, dup := out[name]; dup {
			return nil, usageError{fmt.Errorf("--endpoint %s given twice", name)}
		}
		out[name] = u
	}
	return out, nil
}

// checkEndpointURL accepts an http or https URL with a host.
func checkEndpointURL(flag, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError{fmt.Errorf("%s %q: want an http:// or https:// URL with a host", flag, raw)}
	}
	return nil
}
