#!/usr/bin/env bash
# Export and import of a capsule against GNU tar (docs/FORMAT.md §8, §9).
#
# Builds a real capsule of N workspace files of SIZE bytes (default 10,000 x
# 100 KiB of incompressible data, stored as blobs), then runs, on the same
# data in one run, best of RUNS each, with a warm page cache:
#   export:  tar -cf            vs  capsule export          (target: ratio >= 0.8)
#   import:  tar -xf + sha256sum -c  vs  capsule import (verifies everything)
# and prints peak RSS of each capsule command (target: < 100 MiB).
#
#   bench/export.sh                 # N=10000 SIZE=102400 RUNS=3
#   N=1000 RUNS=1 bench/export.sh   # a quick look
#
# Needs GNU tar, sha256sum and GNU time (/usr/bin/time; Debian package
# "time": apt-get install time). Everything lives under a temporary
# directory in ${TMPDIR:-/tmp}, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

N=${N:-10000}
SIZE=${SIZE:-102400}
RUNS=${RUNS:-3}

if [ ! -x /usr/bin/time ]; then
  echo "bench/export.sh: /usr/bin/time is missing: apt-get install time" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/capsule-export-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

go build -o "$work/capsule" ./cmd/capsule
go build -o "$work/exportdata" ./bench/exportdata
echo "building a capsule of $N files x $SIZE bytes in $work ..."
"$work/exportdata" -dir "$work/agent" -n "$N" -size "$SIZE" -sums "$work/SUMS"
bytes=$(du -sb "$work/agent" | cut -f1)
find "$work/agent" -type f -exec cat {} + >/dev/null # warm the page cache

# measure LABEL CMD...: runs CMD RUNS times (after the `prep` shell snippet
# in $PREP, untimed) and sets best (seconds) and rss (KiB of the best run).
measure() {
  local label=$1
  shift
  best=""
  rss=""
  for _ in $(seq "$RUNS"); do
    eval "${PREP:-true}"
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null
    read -r secs kib <"$work/time"
    if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then
      best=$secs
      rss=$kib
    fi
  done
  printf "%-44s %7.2f s %8.1f MiB/s  peak RSS %6.1f MiB\n" "$label" "$best" \
    "$(awk "BEGIN{print $bytes/1048576/($best>0?$best:0.01)}")" "$(awk "BEGIN{print $rss/1024}")"
}
ratio() { awk "BEGIN{printf \"%.2f\", $1/($2>0?$2:0.01)}"; }

echo
echo "== export: $(awk "BEGIN{printf \"%.0f\", $bytes/1048576}") MiB in $N files"
PREP="rm -f '$work/t.tar'" measure "tar -cf" tar -cf "$work/t.tar" -C "$work/agent" .
tar_c=$best
PREP="rm -f '$work/t.tar'" measure "tar -cf, then sync the file" sh -c "tar -cf '$work/t.tar' -C '$work/agent' . && sync '$work/t.tar'"
tar_cs=$best
PREP="rm -f '$work/c.capsule.tar'" measure "capsule export --no-verify (fsyncs its output)" "$work/capsule" export "$work/agent" -o "$work/c.capsule.tar" -q --no-verify
exp=$best
exp_rss=$rss
PREP="rm -f '$work/v.capsule.tar'" measure "capsule export (verifies: reads twice)" "$work/capsule" export "$work/agent" -o "$work/v.capsule.tar" -q
expv=$best
PREP="rm -f '$work/z.capsule.tar.zst'" measure "capsule export .zst --no-verify" "$work/capsule" export "$work/agent" -o "$work/z.capsule.tar.zst" -q --no-verify
echo "ratio export --no-verify / tar -cf: $(ratio "$tar_c" "$exp")x   (target >= 0.8)"
echo "ratio export --no-verify / + sync:  $(ratio "$tar_cs" "$exp")x"
echo "ratio export (verifying) / tar -cf: $(ratio "$tar_c" "$expv")x"
cmp -s "$work/c.capsule.tar" "$work/v.capsule.tar" && echo "export --no-verify and export wrote identical bytes"

echo
echo "== import"
PREP="rm -rf '$work/x' && mkdir '$work/x'" measure "tar -xf + sha256sum -c" \
  sh -c "tar -xf '$work/t.tar' -C '$work/x' && cd '$work/x' && sha256sum -c --quiet '$work/SUMS'"
tar_x=$best
PREP="rm -rf '$work/dst'" measure "capsule import (verifies, fsyncs)" "$work/capsule" import "$work/c.capsule.tar" -o "$work/dst" -q
imp=$best
imp_rss=$rss
PREP="rm -rf '$work/dstz'" measure "capsule import .zst" "$work/capsule" import "$work/z.capsule.tar.zst" -o "$work/dstz" -q
echo "ratio import / (tar -xf + sha256sum -c): $(ratio "$tar_x" "$imp")x   (target > 1)"
echo
echo "peak RSS: export $(awk "BEGIN{print $exp_rss/1024}") MiB, import $(awk "BEGIN{print $imp_rss/1024}") MiB (target < 100 MiB)"
