#!/usr/bin/env bash
# The project's mutation check (issue 18, "Keep it that way"): applies each
# safety mutation of bench/mutations.txt, one at a time, to a temporary copy
# of the tree (never the working tree), runs the packages that should catch
# it (go test -count=1, bounded by -timeout) and prints killed / survived /
# not applicable per mutation and a summary. Every survivor must be pinned
# by a new test or explained in the list (equivalent: or expected:).
#
#   bench/mutate.sh                                   # every mutation (an hour or more)
#   bench/mutate.sh -only R4-activate-unprepared      # one or a few, comma-separated
#   bench/mutate.sh -skip-e2e                         # leave out the chaos test
#   bench/mutate.sh -e2e.rounds=8 -logs /tmp/mut-logs # shorter chaos runs, keep outputs
#   bench/mutate.sh -check                            # only check that the snippets are found
#
# Exit status: 0 when every survivor is explained, 1 otherwise, 2 on error.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
exec go run ./bench/mutate -list bench/mutations.txt "$@"
