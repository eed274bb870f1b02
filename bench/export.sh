#!/usr/bin/env bash
# Export and import of a capsule against GNU tar (docs/FORMAT.md §8, §9),
# with peak RSS, at several file counts.
#
# For each SCALES item N:SIZE, builds a real capsule of N workspace files of
# SIZE bytes of incompressible data (stored as blobs; bench/exportdata
# -direct), then runs, on the same data, RUNS interleaved rounds with a warm
# page cache, and prints the median time and peak RSS of each:
#   export:  tar -cf            vs  capsule export --no-verify   (target: ratio >= 0.8)
#            capsule export (verifies first: reads everything twice)
#   import:  tar -xf + sha256sum -c  vs  capsule import (verifies everything, syncs)
#                                                                  (target: ratio >= 0.8)
# Peak RSS target of every capsule command: < 100 MiB at any N.
# With BASE_BIN set to another capsule binary (e.g. one built from main), it
# runs beside this tree's in every round, so before and after come from one
# run: ratios are printed for both.
#
#   bench/export.sh                                   # SCALES=10000:102400 RUNS=3
#   SCALES="10000:10240 100000:10240" RUNS=5 bench/export.sh
#   SCALES="1000000:1024" RUNS=3 bench/export.sh      # a million 1 KiB files (~10 GB of disk)
#   BASE_BIN=/tmp/capsule-main SCALES=100000:10240 bench/export.sh
#   ZSTD=1 bench/export.sh                            # also export and import .zst
#
# Needs GNU tar, sha256sum and GNU time (/usr/bin/time; Debian package
# "time": apt-get install time). Everything lives under a temporary
# directory in ${TMPDIR:-/tmp}, removed at the end; check its free space
# (df) before a 1,000,000-file run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

SCALES=${SCALES:-10000:102400}
RUNS=${RUNS:-3}
BASE_BIN=${BASE_BIN:-}
ZSTD=${ZSTD:-0}

if [ ! -x /usr/bin/time ]; then
  echo "bench/export.sh: /usr/bin/time is missing: apt-get install time" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/capsule-export-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

go build -o "$work/capsule" ./cmd/capsule
go build -o "$work/exportdata" ./bench/exportdata
bins=("new:$work/capsule")
if [ -n "$BASE_BIN" ]; then
  bins+=("base:$BASE_BIN")
fi
echo "$(nproc) CPUs; Go $(go env GOVERSION); $(tar --version | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"

# run LABEL PREP CMD...: runs PREP (untimed, a shell snippet), then CMD under
# GNU time; appends "seconds KiB" to $work/m.LABEL.
run() {
  local label=$1 prep=$2
  shift 2
  eval "$prep"
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null
  cat "$work/time" >>"$work/m.$label"
}
# median LABEL COLUMN: the median of column 1 (seconds) or 2 (KiB) of LABEL's runs.
median() { sort -n -k"$2" "$work/m.$1" | awk -v c="$2" '{v[NR]=$c} END{print v[int((NR+1)/2)]}'; }
show() {
  local s k
  s=$(median "$1" 1)
  k=$(median "$1" 2)
  printf "  %-46s %8.2f s %8.1f MiB/s  peak RSS %7.1f MiB\n" "$1" "$s" \
    "$(awk "BEGIN{print $bytes/1048576/($s>0?$s:0.01)}")" "$(awk "BEGIN{print $k/1024}")"
}
ratio() { awk "BEGIN{printf \"%.2f\", $(median "$1" 1)/($(median "$2" 1)>0?$(median "$2" 1):0.01)}"; }

for scale in $SCALES; do
  n=${scale%%:*}
  size=${scale##*:}
  rm -rf "$work/agent" "$work"/m.* "$work"/*.tar "$work"/*.zst
  echo
  echo "== $n files x $size bytes: building the capsule ..."
  "$work/exportdata" -direct -dir "$work/agent" -n "$n" -size "$size" -sums "$work/SUMS"
  bytes=$(du -sb "$work/agent" | cut -f1)
  find "$work/agent" -type f -exec cat {} + >/dev/null # warm the page cache
  for _ in $(seq "$RUNS"); do
    run "tar -cf" "rm -f '$work/t.tar'" tar -cf "$work/t.tar" -C "$work/agent" .
    for b in "${bins[@]}"; do
      name=${b%%:*} bin=${b#*:}
      run "$name: capsule export --no-verify" "rm -f '$work/$name.tar'" "$bin" export "$work/agent" -o "$work/$name.tar" -q --no-verify
      run "$name: capsule export (verifies first)" "rm -f '$work/$name-v.tar'" "$bin" export "$work/agent" -o "$work/$name-v.tar" -q
      if [ "$ZSTD" = 1 ]; then
        run "$name: capsule export .zst --no-verify" "rm -f '$work/$name.tar.zst'" "$bin" export "$work/agent" -o "$work/$name.tar.zst" -q --no-verify
      fi
    done
    run "tar -xf + sha256sum -c" "rm -rf '$work/x' && mkdir '$work/x'" \
      sh -c "tar -xf '$work/t.tar' -C '$work/x' && cd '$work/x' && sha256sum -c --quiet '$work/SUMS'"
    rm -rf "$work/x"
    for b in "${bins[@]}"; do
      name=${b%%:*} bin=${b#*:}
      run "$name: capsule import (verifies, syncs)" "rm -rf '$work/dst'" "$bin" import "$work/new.tar" -o "$work/dst" -q --max-entries $((n + 1000))
      if [ "$ZSTD" = 1 ]; then
        run "$name: capsule import .zst" "rm -rf '$work/dst'" "$bin" import "$work/$name.tar.zst" -o "$work/dst" -q --max-entries $((n + 1000))
      fi
      rm -rf "$work/dst"
    done
  done
  echo "-- export: $(awk "BEGIN{printf \"%.0f\", $bytes/1048576}") MiB in $n files, median of $RUNS interleaved runs"
  show "tar -cf"
  for b in "${bins[@]}"; do
    name=${b%%:*}
    show "$name: capsule export --no-verify"
    show "$name: capsule export (verifies first)"
    [ "$ZSTD" = 1 ] && show "$name: capsule export .zst --no-verify"
  done
  cmp -s "$work/new.tar" "$work/new-v.tar" && echo "  export --no-verify and export wrote identical bytes"
  [ -n "$BASE_BIN" ] && cmp -s "$work/new.tar" "$work/base.tar" && echo "  new and base wrote identical bytes"
  echo "-- import"
  show "tar -xf + sha256sum -c"
  for b in "${bins[@]}"; do
    name=${b%%:*}
    show "$name: capsule import (verifies, syncs)"
    [ "$ZSTD" = 1 ] && show "$name: capsule import .zst"
  done
  for b in "${bins[@]}"; do
    name=${b%%:*}
    echo "  $name: ratio export --no-verify / tar -cf: $(ratio "tar -cf" "$name: capsule export --no-verify")x (target >= 0.8);" \
      "import / (tar -xf + sha256sum -c): $(ratio "tar -xf + sha256sum -c" "$name: capsule import (verifies, syncs)")x (target >= 0.8)"
  done
done
