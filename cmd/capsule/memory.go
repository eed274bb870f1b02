package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/memory"
	"github.com/agentcapsule/capsule/vfs"
)

func init() {
	addCommand(newMemoryCmd)
	exitDocs["memory rebuild"] = exitDoc{verify: "the journal does not decode, or with --check the stored index is not a clean build's (nothing written)", other: otherFile + "; a node holds the capsule; the embedder failed (the stored index is kept)"}
	exitDocs["memory search"] = exitDoc{verify: "the journal does not decode", other: otherFile}
	exitDocs["memory stats"] = exitDoc{verify: "the journal does not decode", other: otherFile}
}

// newMemoryCmd is the parent of the memory verbs over a capsule folder.
func newMemoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Show an agent's working memory; search, rebuild and check its memory index",
		Long: `"memory show" prints an agent's working memory (its own notes). The memory
index (memory/vector_index/index.json, FORMAT §11.7.2) is derived
from the journal and the working memory and never trusted: it names the
embedder that built it by fingerprint and the source it reflects by watermark,
and whatever does not match is rebuilt. rebuild, search and stats work on a capsule folder
DIR with the built-in offline embedder (capsule-hash: BM25 over the
capsule-tok/1 tokens fused with a 256-dimension hashed-feature vector).`,
		Example: `  capsule memory show ./agent
  capsule memory rebuild ./agent
  capsule memory rebuild ./agent --check
  capsule memory search ./agent "which port does the gateway use" --k 5
  capsule memory stats ./agent --json`,
	}
	cmd.AddCommand(newMemoryShowCmd(), newMemoryRebuildCmd(), newMemorySearchCmd(), newMemoryStatsCmd())
	return cmd
}

// memoryEmbedder is the embedder the folder verbs use.
func memoryEmbedder() memory.Embedder { return memory.Hash{} }

// memoryError marks a journal that does not decode as a verification failure.
func memoryError(err error) error {
	var le *journal.LineError
	if errors.As(err, &le) {
		return verifyError{err}
	}
	return err
}

func newMemoryRebuildCmd() *cobra.Command {
	var check, asJSON bool
	cmd := &cobra.Command{
		Use:   "rebuild DIR [--check]",
		Short: "Bring a capsule folder's memory index up to date, or prove it is",
		Long: `Rebuild reads DIR's journal and working memory and brings the stored index up
to date: nothing when it already reflects them; only the new texts when the
journal only grew since its watermark (same embedder, every head of the
watermark still in the journal, every stored chunk matching its source's
text); every text otherwise (another embedder, a merged-over or replaced
journal, a truncated or tampered file, a 0.1.0 placeholder). The result is
committed through the manifest; a capsule written by 0.1.0 is migrated first.
If the embedder fails, the stored index is left as it was.

With --check it writes nothing: it builds the index from scratch and exits 1
unless the stored file is byte for byte that clean build.`,
		Example: `  capsule memory rebuild ./agent
  capsule memory rebuild ./agent --json
  capsule memory rebuild ./agent --check && echo "index is a clean build"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := interruptible(cmd)
			defer stop()
			if check {
				r, err := memory.Check(ctx, vfs.OS{}, args[0], memoryEmbedder())
				if err != nil {
					return memoryError(err)
				}
				return printCheck(cmd.OutOrStdout(), args[0], r, asJSON)
			}
			rep, wrote, err := memory.Rebuild(ctx, vfs.OS{}, args[0], writerConfig(), memoryEmbedder())
			if err != nil {
				if rep != nil {
					printFailures(cmd.ErrOrStderr(), rep)
				}
				return memoryError(fmt.Errorf("%w (the stored index is unchanged)", err))
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					*memory.Report
					Wrote bool `json:"wrote"`
				}{rep, wrote})
			}
			printRebuild(cmd.OutOrStdout(), rep, wrote)
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; exit 1 unless the stored index equals a clean build")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func printRebuild(w io.Writer, rep *memory.Report, wrote bool) {
	what := "unchanged"
	if wrote {
		what = "written"
	}
	fmt.Fprintf(w, "%s rebuild: %d chunks, %d embedded, %d reused; index %s\n", rep.Mode, rep.Chunks, rep.Embedded, rep.Reused, what)
	if rep.Reason != "" && rep.Mode == memory.ModeFull {
		fmt.Fprintf(w, "why: %s\n", rep.Reason)
	}
}

func printFailures(w io.Writer, rep *memory.Report) {
	for _, f := range rep.Failed {
		fmt.Fprintf(w, "not embedded: %s: %s\n", f.Source(), f.Error)
	}
}

func printCheck(w io.Writer, dir string, r *memory.CheckResult, asJSON bool) error {
	if asJSON {
		if err := printJSON(w, r); err != nil {
			return err
		}
	} else if r.Equal {
		fmt.Fprintf(w, "the stored index is a clean build (%d chunks, %s)\n", r.Chunks, humanBytes(int64(r.CleanBytes)))
	}
	if !r.Equal {
		return verifyError{fmt.Errorf("memory index of %s is not a clean build: %s (run capsule memory rebuild %s)", dir, r.Problem, dir)}
	}
	return nil
}

func newMemorySearchCmd() *cobra.Command {
	var k int
	var asJSON bool
	var data string
	cmd := &cobra.Command{
		Use:   "search AGENT|DIR QUERY [--k N]",
		Short: "Search everything the agent has seen by meaning",
		Long: `Search ranks the chunks of DIR's memory index (user, assistant and tool-result
text, and the working memory) for QUERY by reciprocal rank fusion of BM25 and
the hashed vectors, and prints each hit's score, source (an event id, or a
span of the working memory) and a snippet. A stored index that is stale is
brought up to date in memory first (nothing is written: run
"capsule memory rebuild DIR" to store it), so a search never mixes embedders
and always reflects the journal.

AGENT (an argument that is neither an existing directory nor holds a "/")
asks the node on --data, which searches the agent's index with the embedder
its spec names (memory.embedder) and writes nothing either.`,
		Example: `  capsule memory search ./agent "why was the billing deploy rolled back"
  capsule memory search ./agent "gateway port" --k 3 --json | jq '.hits[0].event'
  capsule memory search 01J... "the deploy key" --data ~/capsule-a`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if k < 1 {
				return usageError{fmt.Errorf("--k must be at least 1, not %d", k)}
			}
			ctx, stop := interruptible(cmd)
			defer stop()
			if !isFolderArg(args[0]) {
				return searchAgentMemory(ctx, cmd, data, args[0], args[1], k, asJSON)
			}
			e := memoryEmbedder()
			x, rep, _, err := memory.Open(ctx, vfs.OS{}, args[0], e)
			if err != nil {
				return memoryError(err)
			}
			hits, err := x.Search(ctx, e, args[1], k)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					Index string       `json:"index"`
					Hits  []memory.Hit `json:"hits"`
				}{rep.Mode, hits})
			}
			printHits(cmd.OutOrStdout(), cmd.ErrOrStderr(), rep, hits)
			return nil
		},
	}
	cmd.Flags().IntVar(&k, "k", 10, "how many hits to print")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {index, hits} as JSON")
	dataFlag(cmd, &data)
	return cmd
}

// searchAgentMemory asks the node on data to search agent id's memory.
func searchAgentMemory(ctx context.Context, cmd *cobra.Command, data, id, query string, k int, asJSON bool) error {
	cl, err := localClient(data)
	if err != nil {
		return err
	}
	res, err := cl.SearchMemory(ctx, id, query, k)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	hits := make([]memory.Hit, len(res.Hits))
	for i, h := range res.Hits {
		hits[i] = memory.Hit{Score: h.Score, Event: h.Event, Span: h.Span, Snippet: h.Snippet}
	}
	printHits(cmd.OutOrStdout(), cmd.ErrOrStderr(), &memory.Report{Mode: res.Index}, hits)
	return nil
}

func printHits(w, errw io.Writer, rep *memory.Report, hits []memory.Hit) {
	if rep.Mode != memory.ModeUnchanged {
		fmt.Fprintf(errw, "note: the stored index was stale (%s); searched an up-to-date copy in memory\n", strings.TrimSpace(rep.Mode+" "+rep.Reason))
	}
	if len(hits) == 0 {
		fmt.Fprintln(w, "no hits")
	}
	for i, h := range hits {
		src := h.Event
		if src == "" {
			src = "working memory"
		}
		if h.Span != nil {
			src += fmt.Sprintf(" [%d, %d)", h.Span[0], h.Span[1])
		}
		fmt.Fprintf(w, "%2d. %.4f  %s\n    %s\n", i+1, h.Score, src, h.Snippet)
	}
}

func newMemoryStatsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats DIR",
		Short: "Describe a capsule folder's stored memory index",
		Long: `Stats prints what DIR's stored memory index holds (embedder, fingerprint,
dimensions, data type, chunks by source, size) and whether it is current: built
by the built-in embedder and reflecting the journal and working memory as they
are. It writes nothing.`,
		Example: `  capsule memory stats ./agent
  capsule memory stats ./agent --json | jq .current`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := interruptible(cmd)
			defer stop()
			st, err := memory.StatsOf(ctx, vfs.OS{}, args[0], memoryEmbedder())
			if err != nil {
				return memoryError(err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			printStats(cmd.OutOrStdout(), st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the statistics as JSON")
	return cmd
}

func printStats(w io.Writer, st *memory.Stats) {
	fmt.Fprintf(w, "embedder:     %s\n", st.Embedder)
	if st.Fingerprint != "" {
		fmt.Fprintf(w, "fingerprint:  %s\nvectors:      %d × %s\n", st.Fingerprint, st.Dims, st.DType)
	}
	fmt.Fprintf(w, "chunks:       %d (%d of events, %d of the working memory)\n", st.Chunks, st.EventChunks, st.WMChunks)
	fmt.Fprintf(w, "size:         %s\n", humanBytes(int64(st.Bytes)))
	fmt.Fprintf(w, "events:       %d indexed of %d in the journal\n", st.Indexed, st.Events)
	if st.Current {
		fmt.Fprintln(w, "current:      yes")
	} else {
		fmt.Fprintf(w, "current:      no: %s (run capsule memory rebuild)\n", st.Stale)
	}
}
