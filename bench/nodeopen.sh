#!/usr/bin/env bash
# A node opening an agent with a long journal (issue 11 §2): peak RSS and
# time of `node.New` + `Start` on a data folder holding one stopped agent
# whose journal has EVENTS events (default 1,000,000), all committed by its
# manifest. The node checks the committed prefix against the manifest and
# opens the journal for appending (FORMAT §7.7); target: peak RSS under
# 100 MiB at 1M events.
#
# The comparator is the same program built from BEFORE (a git revision,
# default the commit HEAD forked from main at), run on the same data in the
# same rounds, interleaved; the script prints each run, then medians and
# the after/before ratios.
#
# Usage: bench/nodeopen.sh [DIR]   (DIR: an empty folder on the disk to
# measure, about 0.5 GB free per million events; default a fresh folder
# under /var/tmp, removed at the end). EVENTS=N, ROUNDS=5, BEFORE=rev.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

events="${EVENTS:-1000000}"
rounds="${ROUNDS:-5}"
before="${BEFORE:-$(git merge-base HEAD main)}"
if [ $# -ge 1 ]; then dir="$1"; made=""; else dir="$(mktemp -d -p /var/tmp nodeopen.XXXXXX)"; made="$dir"; fi
bin="$(mktemp -d "${TMPDIR:-/tmp}/nodeopen-bin.XXXXXX")"
trap 'rm -rf "$bin"; [ -z "$made" ] || rm -rf "$made"' EXIT

go build -o "$bin/after" ./bench/nodeopen
mkdir "$bin/src"
git archive "$before" | tar -x -C "$bin/src"
mkdir -p "$bin/src/bench/nodeopen"
cp bench/nodeopen/main.go "$bin/src/bench/nodeopen/"
(cd "$bin/src" && go build -o "$bin/before" ./bench/nodeopen)

echo "disk: $(df -h "$dir" | awk 'NR==2 {print $1, $6}')  cpus: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "before: $before ($(git rev-parse --short "$before"))  after: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo +dirty)"
"$bin/after" gen -dir "$dir/node" -events "$events"
echo "journal: $events events, $(du -h "$dir"/node/agents/*/capsule/memory/timeline_events.jsonl | cut -f1)"

for r in $(seq "$rounds"); do
  for v in before after; do
    line="$("$bin/$v" open -dir "$dir/node")"
    echo "round $r $v $line"
    echo "$v $line" >>"$bin/runs"
  done
done
awk '
  { t[$1] = t[$1] " " $3; m[$1] = m[$1] " " $5 }
  function med(s,   a, n, i, j, x) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    tb = med(t["before"]); ta = med(t["after"]); mb = med(m["before"]); ma = med(m["after"])
    printf "median open: before %.3f s, after %.3f s (after/before %.2fx)\n", tb, ta, ta / tb
    printf "median peak RSS: before %.1f MiB, after %.1f MiB (after/before %.2fx; target < 100 MiB)\n", mb, ma, ma / mb
  }' "$bin/runs"
