#!/usr/bin/env bash
# Hash throughput of capsule verify against openssl dgst -sha256, before
# and after a change, on the same bytes in one run (issue 11 §5).
#
# Builds capsule from BASE (a git ref, default main) and from the working
# tree, and two real capsules: one file of BIG bytes (default 1 GiB) and N
# files of SIZE bytes (default 10,000 x 100 KiB). Then, RUNS rounds
# (default 5), each round running every capsule build and openssl once in
# a rotated order, so that load elsewhere on the machine hits them alike.
# openssl runs as bench/verify.sh runs it: xargs -0 openssl dgst -sha256
# over the blob files. Per tool it prints the median wall time, the median
# CPU time (user + system) and the peak RSS; the ratio is openssl's median
# wall time over the tool's (> 1: faster than openssl), and beside it the
# median of the per-round ratios. Targets: >= 1.0 (one file), >= 1.5 (10k).
#
#   bench/hash.sh                                   # BIG=1GiB N=10000 SIZE=102400 RUNS=5
#   BIG=$((256<<20)) N=2000 RUNS=3 bench/hash.sh    # a quick look
#   EXTRA="pair=/tmp/capsule-pair" bench/hash.sh    # one more build to compare
#   DATA=/tmp/hashdata bench/hash.sh                # keep (and reuse) the capsules
#
# Needs openssl and GNU time at /usr/bin/time (apt-get install time). Data
# lives under ${TMPDIR:-/tmp} (about 2.2 GiB at the defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

BIG=${BIG:-$((1 << 30))}
N=${N:-10000}
SIZE=${SIZE:-102400}
RUNS=${RUNS:-5}
BASE=${BASE:-main}
EXTRA=${EXTRA:-}

[ -x /usr/bin/time ] || { echo "bench/hash.sh: GNU time is missing at /usr/bin/time" >&2; exit 1; }
command -v openssl >/dev/null || { echo "bench/hash.sh: openssl is missing" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/capsule-hash-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
data=${DATA:-$work/data}
mkdir -p "$data"

# The builds: name=binary, in the order they are listed.
mkdir -p "$work/base"
git archive "$BASE" | tar -x -C "$work/base"
(cd "$work/base" && go build -o "$work/capsule-before" ./cmd/capsule)
go build -o "$work/capsule-after" ./cmd/capsule
go build -o "$work/mktree" ./bench/mktree
tools=("before=$work/capsule-before" "after=$work/capsule-after")
for e in $EXTRA; do tools+=("$e"); done
tools+=("openssl=")
echo "$(nproc) CPUs; $(openssl version); Go $(go env GOVERSION); before = $BASE ($(git rev-parse --short "$BASE")), after = working tree ($(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty'))"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# setup NAME NFILES FILESIZE: a capsule $data/NAME holding NFILES files of
# FILESIZE random bytes, unless it is there already.
setup() {
  if [ ! -d "$data/$1" ]; then
    "$work/mktree" -dir "$data/$1-ws" -n "$2" -size "$3"
    "$work/capsule-after" init "$data/$1" >/dev/null
    "$work/capsule-after" snapshot "$data/$1" --from "$data/$1-ws" -q >/dev/null
    rm -rf "$data/$1-ws"
  fi
  find "$data/$1" -type f -exec cat {} + >/dev/null # warm the page cache
}

# run NAME BIN DIR: one timed run; appends "wall cpu rss" to $work/NAME.
run() {
  local name=$1 bin=$2 dir=$3 t0 t1
  t0=$EPOCHREALTIME
  if [ -z "$bin" ]; then
    /usr/bin/time -f "%U %S %M" -o "$work/t" sh -c "xargs -0 openssl dgst -sha256 <'$work/list' >/dev/null"
  else
    /usr/bin/time -f "%U %S %M" -o "$work/t" "$bin" verify "$dir" -q >/dev/null
  fi
  t1=$EPOCHREALTIME
  awk -v w="$(awk "BEGIN{print $t1 - $t0}")" '{print w, $1 + $2, $3}' "$work/t" >>"$work/$name"
}

median() { sort -g | awk '{a[NR]=$1} END{print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# compare NAME TARGET: RUNS rounds over every tool, rotated; then the table.
compare() {
  local dir=$data/$1 target=$2 bytes r k name
  bytes=$(find "$dir/artifacts/blobs" -type f -printf '%s\n' | awk '{s+=$1} END{print s}')
  find "$dir/artifacts/blobs" -type f -print0 >"$work/list"
  for t in "${tools[@]}"; do rm -f "$work/${t%%=*}"; done
  local nt=${#tools[@]}
  for r in $(seq 0 $((RUNS - 1))); do
    for k in $(seq 0 $((nt - 1))); do
      local t=${tools[$(((k + r) % nt))]}
      run "${t%%=*}" "${t#*=}" "$dir"
    done
  done
  local ow
  ow=$(cut -d' ' -f1 "$work/openssl" | median)
  printf "  %-10s %9s %9s %10s %9s %8s %12s\n" tool "wall s" "cpu s" "MiB/s" "RSS MiB" ratio "round ratio"
  for t in "${tools[@]}"; do
    name=${t%%=*}
    local w c m rr
    w=$(cut -d' ' -f1 "$work/$name" | median)
    c=$(cut -d' ' -f2 "$work/$name" | median)
    m=$(cut -d' ' -f3 "$work/$name" | sort -g | tail -1)
    rr=$(paste -d' ' "$work/openssl" "$work/$name" | awk '{print $1 / $4}' | median)
    printf "  %-10s %9.3f %9.3f %10.1f %9.1f %8.2f %12.2f\n" "$name" "$w" "$c" \
      "$(awk "BEGIN{print $bytes/1048576/$w}")" "$(awk "BEGIN{print $m/1024}")" \
      "$(awk "BEGIN{print $ow/$w}")" "$rr"
  done
  echo "  (medians of $RUNS interleaved rounds; ratio = openssl wall / tool wall; target >= $target)"
}

echo
echo "== 1. one file of $BIG bytes =="
setup big 1 "$BIG"
compare big 1.0

echo
echo "== 2. $N files of $SIZE bytes =="
setup many "$N" "$SIZE"
compare many 1.5
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
