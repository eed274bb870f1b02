package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newEnvCmd) }

func newEnvCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Show and change a capsule's environment spec (variables, secret names, sandbox)",
		Long: `The environment spec (environment/spec.json) says how to rebuild the agent's
sandbox: plain environment variables, the NAMES of the secrets it needs (their
values come from the host at run time and are never stored), the tools and
MCP servers to start, the working directory and what the sandbox provides.

A variable whose name contains TOKEN, KEY, SECRET, PASSWORD, PASSWD,
CREDENTIAL or PRIVATE is refused, and so is a value that looks like a
credential (a PEM private key, a known API-key prefix such as sk-, ghp_,
AKIA, or a long random-looking string): declare it as a secret instead. Each
change is a commit: the manifest's digest of spec.json is updated.`,
		Example: `  capsule env set ./agent LANG=C.UTF-8 LOG_LEVEL=debug
  capsule env secret add ./agent OPENAI_API_KEY
  capsule env unset ./agent LOG_LEVEL
  capsule env show ./agent
  capsule env load ./agent spec.json`,
	}
	cmd.AddCommand(newEnvSetCmd(), newEnvUnsetCmd(), newEnvSecretCmd(), newEnvShowCmd(), newEnvLoadCmd())
	return cmd
}

// editEnv opens the capsule, applies fn to its spec and commits the result.
func editEnv(dir string, fn func(s *envspec.Spec) error) error {
	c, err := capsule.Open(vfs.OS{}, dir, writerConfig())
	if err != nil {
		return err
	}
	s, err := c.Environment()
	if err != nil {
		return err
	}
	if err := fn(s); err != nil {
		return envUsage(err)
	}
	return c.Commit(func(tx *capsule.Tx) error { return tx.SetEnvironment(s) })
}

// envUsage marks the user's mistakes (a secret-looking variable, a bad
// name) as usage errors, exit status 2.
func envUsage(err error) error {
	for _, e := range []error{envspec.ErrSecretName, envspec.ErrSecretValue, envspec.ErrInvalid, envspec.ErrConflict} {
		if errors.Is(err, e) {
			return usageError{err}
		}
	}
	return err
}

func newEnvSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set DIR NAME=VALUE...",
		Short: "Set plain environment variables (never secrets)",
		Example: `  capsule env set ./agent LANG=C.UTF-8 TZ=UTC
  capsule env set ./agent GITHUB_TOKEN=...   # refused: use "capsule env secret add"`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editEnv(args[0], func(s *envspec.Spec) error {
				for i, kv := range args[1:] {
					name, value, ok := strings.Cut(kv, "=")
					if !ok { // not echoed: it may be a pasted secret
						return fmt.Errorf("%w: argument %d is not NAME=VALUE", envspec.ErrInvalid, i+2)
					}
					if err := s.SetEnv(name, value); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

func newEnvUnsetCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "unset DIR NAME...",
		Short:   "Remove plain environment variables",
		Example: `  capsule env unset ./agent LOG_LEVEL`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editEnv(args[0], func(s *envspec.Spec) error {
				for _, name := range args[1:] {
					if !s.UnsetEnv(name) {
						fmt.Fprintf(cmd.ErrOrStderr(), "capsule: %s was not set\n", name)
					}
				}
				return nil
			})
		},
	}
}

func newEnvSecretCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Declare or remove the names of secrets the agent needs (values are never stored)",
		Example: `  capsule env secret add ./agent OPENAI_API_KEY GITHUB_TOKEN
  capsule env secret rm ./agent GITHUB_TOKEN`,
	}
	add := &cobra.Command{
		Use:   "add DIR NAME...",
		Short: "Declare secret names; the host supplies their values at run time",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editEnv(args[0], func(s *envspec.Spec) error {
				for _, name := range args[1:] {
					if _, err := s.AddSecret(name); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	rm := &cobra.Command{
		Use:   "rm DIR NAME...",
		Short: "Remove secret names",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editEnv(args[0], func(s *envspec.Spec) error {
				for _, name := range args[1:] {
					if !s.RemoveSecret(name) {
						fmt.Fprintf(cmd.ErrOrStderr(), "capsule: secret %s was not declared\n", name)
					}
				}
				return nil
			})
		},
	}
	cmd.AddCommand(add, rm)
	return cmd
}

func newEnvLoadCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "load DIR FILE",
		Short: "Replace the whole environment spec with FILE (validated first; - for stdin)",
		Long: `Load replaces environment/spec.json with FILE after checking it against the
JSON Schema (envspec/spec.schema.json) and the secret rules. Use it to set
tools, MCP servers, the working directory and sandbox limits.`,
		Example: `  capsule env show ./agent --json > spec.json && $EDITOR spec.json && capsule env load ./agent spec.json`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r io.Reader = cmd.InOrStdin()
			if args[1] != "-" {
				f, err := os.Open(args[1])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			b, err := io.ReadAll(io.LimitReader(r, envspec.MaxSize+1))
			if err != nil {
				return err
			}
			loaded, err := envspec.Parse(b)
			if err != nil {
				return envUsage(fmt.Errorf("%s: %w", args[1], err))
			}
			return editEnv(args[0], func(s *envspec.Spec) error { *s = *loaded; return nil })
		},
	}
}

func newEnvShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show DIR",
		Short:   "Print the environment spec",
		Example: "  capsule env show ./agent\n  capsule env show ./agent --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := capsule.Open(vfs.OS{}, args[0], writerConfig())
			if err != nil {
				return err
			}
			s, err := c.Environment() // an older version is migrated in memory
			if err != nil {
				return err
			}
			if asJSON { // as stored, whatever its version
				b, err := c.ReadFile(manifest.EnvironmentPath, envspec.MaxSize)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			printEnv(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print spec.json as it is stored")
	return cmd
}

func printEnv(w io.Writer, s *envspec.Spec) {
	names := make([]string, 0, len(s.Env))
	for n := range s.Env {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "env     %s=%s\n", n, s.Env[n])
	}
	for _, n := range s.Secrets {
		fmt.Fprintf(w, "secret  %s (value supplied by the host)\n", n)
	}
	for _, t := range s.Tools {
		where := strings.TrimSpace(t.Command + " " + strings.Join(t.Args, " "))
		if t.Transport == "http" {
			where = t.URL
		}
		fmt.Fprintf(w, "tool    %s: %s (%s, approval %s)\n", t.Name, where, t.Effect, t.Approval)
	}
	if s.Workdir != "" {
		fmt.Fprintf(w, "workdir %s\n", s.Workdir)
	}
	fmt.Fprintf(w, "sandbox network %s", s.Sandbox.Network)
	if len(s.Sandbox.Hosts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(s.Sandbox.Hosts, " "))
	}
	if len(s.Sandbox.Packages) > 0 {
		fmt.Fprintf(w, ", packages %s", strings.Join(s.Sandbox.Packages, " "))
	}
	if s.Sandbox.CPUs > 0 {
		fmt.Fprintf(w, ", %g CPUs", s.Sandbox.CPUs)
	}
	if s.Sandbox.MemoryMB > 0 {
		fmt.Fprintf(w, ", %d MiB memory", s.Sandbox.MemoryMB)
	}
	fmt.Fprintln(w)
}
