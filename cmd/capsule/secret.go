package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentcapsule/capsule/secret"
)

func init() { addCommand(newSecretCmd) }

// maxSecretValue is the longest value "secret set" takes: the kernel's
// limit for a "user" key's payload, so every store can hold it.
const maxSecretValue = 32767

// storeFlags are the flags every "secret" verb takes.
type storeFlags struct {
	store, data string
}

func (f *storeFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.store, "store", "", "keyring, pass or file (default $CAPSULE_SECRET_STORE, else file if DATA/secrets.json exists, else keyring)")
	dataFlag(c, &f.data)
	_ = c.RegisterFlagCompletionFunc("store", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{secret.KindKeyring, secret.KindPass, secret.KindFile}, cobra.ShellCompDirectiveNoFileComp
	})
}

// open opens the chosen store; a bad choice is a usage error.
func (f *storeFlags) open() (secret.Store, error) {
	s, err := secret.Open(f.store, f.data)
	if err != nil && !errors.Is(err, secret.ErrUnavailable) {
		return nil, usageError{err}
	}
	return s, err
}

// checkSecretName refuses a name outside the environment spec's rule. A
// NAME=VALUE argument is refused without quoting it: it holds a value.
func checkSecretName(name string) error {
	if n, _, ok := strings.Cut(name, "="); ok {
		return usageError{fmt.Errorf("%w: %.40s=...: a value is never an argument (the shell's history would keep it); pipe it on stdin or type it at the prompt", secret.ErrInvalidName, n)}
	}
	if err := secret.CheckName(name); err != nil {
		return usageError{err}
	}
	return nil
}

func newSecretCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "secret",
		Short: "Keep the values of an agent's secrets (API keys) in the host's secret store",
		Long: `The secret verbs keep secret values, such as a provider's API key, on this
host, outside every capsule. A capsule's environment spec names the secrets
its agent needs ("capsule env secret add"); the node looks each name up at
the moment of use, in its store and then in the environment variable
CAPSULE_SECRET_<NAME>, and passes the value only to the client or process
that needs it. Values never enter a capsule, the journal or a log; model
and tool output are scrubbed of them ([secret NAME]) before journaling.

Stores (--store, or $CAPSULE_SECRET_STORE):
  keyring  the Linux kernel user keyring (default on Linux): kernel memory,
           nothing on disk, gone at reboot; readable by your own processes,
           the node among them. Containers often block it (seccomp).
  pass     the pass password manager: entries capsule/NAME, GPG-encrypted.
  file     DATA/secrets.json, mode 0600, values in clear on disk: the weakest
           choice, for CI and containers. A node whose data folder has this
           file uses it by default.
Start the node with the same store: capsule node --secret-store S.

Names follow the environment spec: [A-Za-z_][A-Za-z0-9_]*, at most 256 bytes.`,
		Example: `  capsule secret set OPENAI_API_KEY                      # prompts, without echo
  printf %s "$KEY" | capsule secret set ANTHROPIC_API_KEY  # from stdin
  capsule secret set GITHUB_TOKEN --store pass
  capsule secret set OPENAI_API_KEY --store file --data ~/capsule-a < key.txt
  capsule secret ls
  capsule secret rm GITHUB_TOKEN --store pass`,
	}
	c.AddCommand(newSecretSetCmd(), newSecretLsCmd(), newSecretRmCmd())
	return c
}

func newSecretSetCmd() *cobra.Command {
	var f storeFlags
	c := &cobra.Command{
		Use:   "set NAME",
		Short: "Store a secret's value (from a prompt without echo, or stdin)",
		Long: `Set stores the value of the secret NAME, replacing an earlier one. On a
terminal it prompts for the value without echoing it; otherwise it reads
stdin to the end and strips one trailing newline. It never takes the value
as an argument (the shell's history and ps would show it).

An empty value is refused, and so is one shorter than 4 bytes or made of
the text that replaces secrets: such a value cannot be scrubbed from model
and tool output without scrubbing ordinary text too. At most 32767 bytes
(the kernel keyring's limit).`,
		Example: `  capsule secret set OPENAI_API_KEY
  printf %s "$KEY" | capsule secret set OPENAI_API_KEY --store file --data ~/capsule-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := checkSecretName(name); err != nil {
				return err
			}
			st, err := f.open()
			if err != nil {
				return err
			}
			v, err := readSecretValue(cmd, name)
			if err != nil {
				return err
			}
			if err := st.Set(name, v); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "secret %s set in the %s store\n", name, st.Kind())
			return nil
		},
	}
	f.add(c)
	return c
}

// readSecretValue reads the value from the terminal without echo, or from
// stdin, and refuses one that could not be scrubbed. Errors never hold it.
func readSecretValue(cmd *cobra.Command, name string) (string, error) {
	var v string
	if fd, ok := terminalFd(cmd.InOrStdin()); ok {
		b, err := promptNoEcho(cmd.ErrOrStderr(), fd, fmt.Sprintf("value of %s (not echoed): ", name))
		if err != nil {
			return "", fmt.Errorf("secret set: read the terminal: %w", err)
		}
		v = string(b)
	} else {
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxSecretValue+2))
		if err != nil {
			return "", fmt.Errorf("secret set: read stdin: %w", err)
		}
		v = strings.TrimSuffix(string(b), "\n")
	}
	switch {
	case v == "":
		return "", usageError{fmt.Errorf("secret set: the value of %s is empty: refused", name)}
	case len(v) > maxSecretValue:
		return "", usageError{fmt.Errorf("secret set: the value of %s is longer than %d bytes: refused", name, maxSecretValue)}
	}
	if _, err := secret.NewScrubber(map[string]string{name: v}); err != nil {
		return "", usageError{err}
	}
	return v, nil
}

// terminalFd returns in's descriptor when in is a terminal.
func terminalFd(in io.Reader) (int, bool) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	return int(f.Fd()), true
}

// secretListing is what "secret ls --json" prints: names only.
type secretListing struct {
	Store   string        `json:"store"`
	Secrets []secretEntry `json:"secrets"`
}

type secretEntry struct {
	Name  string `json:"name"`
	Store string `json:"store"`
}

func newSecretLsCmd() *cobra.Command {
	var f storeFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "ls",
		Short: "List the names of the secrets in the store (never values)",
		Long: `Ls lists the names of the secrets in the store and, after them, those the
environment provides (CAPSULE_SECRET_<NAME>, store "env"), each with the
store it comes from. It never prints a value. A store's name shadows the same
name in the environment, as in the node's lookup.`,
		Example: `  capsule secret ls
  capsule secret ls --store file --data ~/capsule-a --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.open()
			if err != nil {
				return err
			}
			l, err := listSecrets(st)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), l)
			}
			if len(l.Secrets) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no secrets in the %s store or the environment\n", l.Store)
			}
			for _, e := range l.Secrets {
				fmt.Fprintf(cmd.OutOrStdout(), "%-32s %s\n", e.Name, e.Store)
			}
			return nil
		},
	}
	f.add(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print the listing as JSON")
	return c
}

func listSecrets(st secret.Store) (secretListing, error) {
	l := secretListing{Store: st.Kind(), Secrets: []secretEntry{}}
	names, err := st.Names()
	if err != nil {
		return l, err
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
		l.Secrets = append(l.Secrets, secretEntry{Name: n, Store: st.Kind()})
	}
	env, _ := secret.Env{}.Names()
	for _, n := range env {
		if !seen[n] {
			l.Secrets = append(l.Secrets, secretEntry{Name: n, Store: "env"})
		}
	}
	return l, nil
}

func newSecretRmCmd() *cobra.Command {
	var f storeFlags
	c := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a secret from the store",
		Long: `Rm removes the secret NAME from the store. A name the store does not hold is
an error (exit 3); the environment (CAPSULE_SECRET_<NAME>) is not changed.`,
		Example: `  capsule secret rm OPENAI_API_KEY
  capsule secret rm OPENAI_API_KEY --store file --data ~/capsule-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSecretName(args[0]); err != nil {
				return err
			}
			st, err := f.open()
			if err != nil {
				return err
			}
			if err := st.Remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "secret %s removed from the %s store\n", args[0], st.Kind())
			return nil
		},
	}
	f.add(c)
	return c
}
