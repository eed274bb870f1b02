package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node"
	"github.com/agentcapsule/capsule/ui"
	"github.com/spf13/cobra"
)

func init() { addCommand(newUICmd) }

// uiOptions are the web view flags of capsule node.
type uiOptions struct {
	addr        string
	allowRemote bool
}

// uiFlags adds --ui and --ui-allow-remote to the node command.
func uiFlags(c *cobra.Command, o *uiOptions) {
	c.Flags().StringVar(&o.addr, "ui", "", `serve the web view on this address, e.g. 127.0.0.1:8080 (off by default; loopback only unless --ui-allow-remote; "capsule ui open" prints its login address)`)
	c.Flags().BoolVar(&o.allowRemote, "ui-allow-remote", false, "let --ui listen on an address that is not loopback (the view is plain HTTP: put TLS in front of it)")
}

// checkUI refuses a --ui address before the node starts.
func (o uiOptions) check() error {
	if o.addr == "" {
		return nil
	}
	if err := ui.CheckAddr(o.addr, o.allowRemote); err != nil {
		return usageError{fmt.Errorf("--ui: %w", err)}
	}
	return nil
}

// startUI serves the web view of the node on dir through its local
// socket, as the CLI reaches it, and records its address for capsule ui
// open. It returns the address and a function that stops it.
func startUI(o uiOptions, dir string, logger *slog.Logger) (string, func(), error) {
	tok, err := ui.LoadOrCreateToken(dir)
	if err != nil {
		return "", nil, err
	}
	h, err := ui.New(ui.Config{Service: api.NewLocalClient(filepath.Join(dir, node.SocketFile)), Token: tok,
		Logger: logger, Operator: decider("")})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return "", nil, fmt.Errorf("ui: listen: %w", err)
	}
	addr := ln.Addr().String()
	if err := ui.WriteAddr(dir, addr); err != nil {
		ln.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("ui: serve", "err", err)
		}
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close() // live timelines stay open until closed
		}
	}
	return addr, stop, nil
}

func newUICmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ui",
		Short: "The node's web view: log in to it from a browser",
		Long: `The web view is served by the node when it runs with --ui ADDR. It shows the
node, its peers and its agents, each agent's state and timeline (live), and
lets you say something to an agent, switch its model, approve or deny a
waiting call, stop or start it and move it to a peer, with the checks and
errors of the CLI's commands.`,
	}
	c.AddCommand(newUIOpenCmd())
	return c
}

func newUIOpenCmd() *cobra.Command {
	var data string
	var open bool
	c := &cobra.Command{
		Use:   "open",
		Short: "Print the web view's login address (or open it with xdg-open)",
		Long: `Print the address that logs a browser in to the web view of the node on
--data: http://ADDR/login?token=TOKEN. The token is in DATA/ui.token (mode
0600): whoever has the address can act on the node's agents, so do not share
it. --open passes it to xdg-open instead of printing it.`,
		Example: "  capsule ui open --data ~/capsule-a\n  capsule ui open --data ~/capsule-a --open",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needData(data); err != nil {
				return err
			}
			tok, err := ui.ReadToken(data)
			if err == nil {
				var addr string
				if addr, err = ui.ReadAddr(data); err == nil {
					return showLogin(cmd, ui.LoginURL(addr, tok), open)
				}
			}
			return fmt.Errorf("ui open: %w (start the node with --ui ADDR, e.g. capsule node --data %s --ui 127.0.0.1:8080)", err, data)
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&open, "open", false, "open the address with xdg-open instead of printing it")
	return c
}

func showLogin(cmd *cobra.Command, u string, open bool) error {
	if !open {
		fmt.Fprintln(cmd.OutOrStdout(), u)
		return nil
	}
	if err := exec.CommandContext(cmd.Context(), "xdg-open", u).Run(); err != nil {
		return fmt.Errorf("ui open: xdg-open: %w", err)
	}
	return nil
}
