package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// exitDoc says what exit codes 1 and 3 mean for one verb; 0 is always ok
// and 2 always a usage error. An empty verify means the verb never exits 1.
type exitDoc struct {
	verify string
	other  string
}

// Common meanings of exit code 3.
const (
	otherFile = "a missing path or any other error reading or writing it"
	otherNode = "the node is not running at --data, or any other error"
)

// exitDocs holds every runnable verb's exit codes, by command path without
// the leading "capsule ". The exit-code table test runs every verb listed
// here against them, and documentExits prints them in each --help.
var exitDocs = map[string]exitDoc{
	"init":           {other: otherFile + " (DIR not empty is 2)"},
	"snapshot":       {other: otherFile + "; a node holds the capsule"},
	"env set":        {other: otherFile + "; a node holds the capsule"},
	"env unset":      {other: otherFile + "; a node holds the capsule"},
	"env secret add": {other: otherFile + "; a node holds the capsule"},
	"env secret rm":  {other: otherFile + "; a node holds the capsule"},
	"env show":       {verify: "the capsule holds a schema version this release does not read", other: otherFile},
	"env load":       {other: otherFile + "; a node holds the capsule"},
	"verify":         {verify: "the capsule has problems (each printed)", other: otherFile + " (the path could not be read)"},
	"inspect":        {verify: "the capsule holds a schema version this release does not read (nothing read)", other: otherFile},
	"log":            {verify: "the journal has problems (not a journal, an archive, a broken chain, a committed prefix that does not match the manifest)", other: otherFile},
	"log verify":     {verify: "the journal has problems (each printed)", other: otherFile},
	"log append":     {verify: "the journal is damaged (nothing appended)", other: otherFile + "; a node holds the journal"},
	"log merge":      {verify: "an input does not verify, or the two copies fork", other: otherFile},
	"log apply":      {verify: "the merged journal does not verify or does not extend the capsule's journal", other: otherFile + "; a node holds the capsule"},
	"render":         {verify: "the journal does not decode, or the capsule holds a schema version this release does not read", other: otherFile},
	"export":         {verify: "the capsule failed verification (nothing written; --no-verify skips the check)", other: otherFile + "; a missing or unreadable signing key"},
	"import":         {verify: "the archive or the capsule in it was refused (every problem printed)", other: otherFile + "; a missing or unreadable allowed-signers file (a DIR in the way is 2)"},
	"checkout":       {verify: "a blob does not match its digest, or the capsule holds a schema version this release does not read (nothing left behind)", other: otherFile},
	"migrate":        {verify: "the capsule has problems, holds a version this release does not read, or a rollback an older version cannot express (nothing written)", other: otherFile + "; a node holds the capsule (an unknown release is 2)"},
	"gc":             {verify: "the snapshot or the journal does not match the manifest (nothing removed)", other: otherFile + "; a node holds the capsule"},
	"node":           {other: "the data folder is in use by another node, or any other error"},
	"node wait":      {other: "no node answered before --timeout"},
	"node id":        {other: otherFile},
	"node status":    {verify: "the node is not ready: its canary pass failed (the reason is printed)", other: otherNode},
	"node peer add":  {other: otherFile},
	"node peer list": {other: otherFile},
	"node peer rm":   {other: otherFile},
	"agent create":   {other: otherNode},
	"agent list":     {other: otherNode},
	"agent status":   {other: otherNode},
	"agent stop":     {other: otherNode},
	"agent start":    {other: otherNode},
	"agent rm":       {other: otherNode},
	"agent discard":  {other: "the discard was refused (each reason printed, naming its event), or the node does not hold the agent; " + otherNode},
	"agent say":      {other: "the node does not hold the agent (it moved: the holder is named; or a move keeps it frozen); " + otherNode},
	"agent model":    {other: "the node does not hold the agent (it moved: the holder is named; or a move keeps it frozen); " + otherNode},
	"agent log":      {other: otherNode},
	"agent chat":     {other: "the node ended the chat's watch (it shut down); " + otherNode},
	"agent wait":     {verify: "the agent is blocked (the reason is printed), waits for approval of a call (named), not running, or still busy at --timeout", other: otherNode},
	"agent approve":  {verify: "the decision was refused (its reason code is printed)", other: "the node does not hold the agent; " + otherNode},
	"agent deny":     {verify: "the decision was refused (its reason code is printed)", other: "the node does not hold the agent; " + otherNode},
	"agent effect":   {verify: "the record was refused: no unresolved effect of that call (unknown_call)", other: "the node does not hold the agent; " + otherNode},
	"memory show":    {verify: "DIR's working memory does not match its manifest", other: "a missing DIR or any other error reading it; the node is not running at --data (AGENT), or does not have the agent"},
	"move":           {other: "the move rolled back, found this node stale or waits for resolution; " + otherNode},
	"move status":    {other: otherNode},
	"move resolve":   {other: otherNode},
	"demo":           {verify: "the moved capsule did not verify on the new holder", other: "any other error"},
	"version":        {other: "any other error"},
	"ui open":        {other: "the node on --data has never served the web view (no token or address), xdg-open failed, or any other error"},
	"model serve":    {other: "a missing or malformed --replay cassette, an address in use, or any other error"},
	"secret set":     {other: "the store is unavailable here (keyring blocked, pass missing or not initialised), a secrets file open to others, or any other error"},
	"secret ls":      {other: "the store is unavailable here, a secrets file open to others or malformed, or any other error"},
	"secret rm":      {other: "the store holds no secret NAME, or is unavailable here, or any other error"},
}

// documentExits appends each runnable verb's exit codes to its --help.
func documentExits(root *cobra.Command) {
	walk(root, func(c *cobra.Command) {
		d, ok := exitDocs[verbPath(c)]
		if !ok || !c.Runnable() {
			return
		}
		c.Long = strings.TrimRight(c.Long, "\n") + "\n\n" + wrap(d.text(), 78)
	})
}

func (d exitDoc) text() string {
	s := "Exit status: 0 ok"
	if d.verify != "" {
		s += "; 1 " + d.verify
	}
	return s + fmt.Sprintf("; 2 usage error (bad flags or arguments, a malformed node ID); 3 %s.", d.other)
}

// wrap breaks s into lines of at most width columns, at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		switch {
		case i == 0:
		case n+1+len(w) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// verbPath is c's command path without the root's name.
func verbPath(c *cobra.Command) string {
	_, p, _ := strings.Cut(c.CommandPath(), " ")
	return p
}

func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, s := range c.Commands() {
		walk(s, f)
	}
}

// exitTable is the README's table of exit codes, one row per verb; the
// README test checks the README holds it as it is.
func exitTable() string {
	names := make([]string, 0, len(exitDocs))
	for n := range exitDocs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| verb | 1 means | 3 means |\n|---|---|---|\n")
	for _, n := range names {
		d := exitDocs[n]
		one := d.verify
		if one == "" {
			one = "(never)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", n, one, d.other)
	}
	return b.String()
}
