#!/usr/bin/env bash
# capsule verify against openssl dgst -sha256 and sha256sum (docs/FORMAT.md §3).
#
# Builds two real capsules under a temporary directory and, on the same
# bytes in one run, with a warm page cache, best of RUNS each, compares:
#   1. one file of BIG bytes (default 1 GiB):
#        capsule verify  vs  openssl dgst -sha256 (and sha256sum) of the blob
#        target: throughput ratio capsule/openssl >= 0.9
#   2. N files of SIZE bytes (default 10,000 x 100 KiB):
#        capsule verify  vs  openssl dgst -sha256 (and sha256sum) of the blobs
#        target: ratio >= 1.5 (capsule hashes on every core; the tools use one)
# Ratios are throughput ratios: the other tool's best time divided by
# capsule's best (> 1 means capsule is faster). The tools run interleaved,
# RUNS rounds; on a shared machine raise RUNS to damp others' load. Peak RSS of capsule verify comes from GNU
# time (target < 100 MiB).
#
#   bench/verify.sh                          # BIG=1GiB N=10000 SIZE=102400 RUNS=3
#   BIG=$((256<<20)) N=2000 RUNS=1 bench/verify.sh   # a quick look
#
# Needs openssl, sha256sum (coreutils) and GNU time at /usr/bin/time
# (Debian/Ubuntu package "time": apt-get install time). Data lives in a
# temporary directory under ${TMPDIR:-/tmp} (about 2.2 GiB at the defaults),
# removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

BIG=${BIG:-$((1 << 30))}
N=${N:-10000}
SIZE=${SIZE:-102400}
RUNS=${RUNS:-3}

if [ ! -x /usr/bin/time ]; then
  echo "bench/verify.sh: GNU time is missing at /usr/bin/time: apt-get install time" >&2
  exit 1
fi
for tool in openssl sha256sum; do
  command -v "$tool" >/dev/null || { echo "bench/verify.sh: $tool is missing" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/capsule-verify-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

go build -o "$work/capsule" ./cmd/capsule
go build -o "$work/mktree" ./bench/mktree
echo "$(nproc) CPUs; $(openssl version); Go $(go env GOVERSION)"

# setup NAME NFILES FILESIZE: a capsule $work/NAME whose snapshot holds
# NFILES files of FILESIZE random bytes; the workspace is deleted after.
setup() {
  "$work/mktree" -dir "$work/$1-ws" -n "$2" -size "$3"
  "$work/capsule" init "$work/$1" >/dev/null
  "$work/capsule" snapshot "$work/$1" --from "$work/$1-ws" -q >/dev/null
  rm -rf "$work/$1-ws"
  find "$work/$1" -type f -exec cat {} + >/dev/null # warm the page cache
}

# timed NAME CMD...: runs CMD once under GNU time; keeps, per NAME, the best
# wall time (seconds, from bash's microsecond clock) and that run's peak RSS
# (KiB).
declare -A best rss
timed() {
  local name=$1
  shift
  local t0=$EPOCHREALTIME
  /usr/bin/time -f "%M" -o "$work/rss" "$@" >/dev/null
  local t1=$EPOCHREALTIME
  local secs
  secs=$(awk "BEGIN{print $t1 - $t0}")
  if [ -z "${best[$name]:-}" ] || awk "BEGIN{exit !($secs < ${best[$name]})}"; then
    best[$name]=$secs
    rss[$name]=$(cat "$work/rss")
  fi
}
ratio() { awk "BEGIN{printf \"%.2f\", $1/$2}"; }
show() {
  printf "  %-24s %7.3f s %9.1f MiB/s  peak RSS %7.1f MiB\n" "$1" "${best[$1]}" \
    "$(awk "BEGIN{print $bytes/1048576/${best[$1]}}")" "$(awk "BEGIN{print ${rss[$1]}/1024}")"
}

# compare NAME TARGET: verify the capsule and hash its blobs with the tools,
# RUNS rounds, the tools interleaved within each round so that a burst of
# load elsewhere on the machine hits all of them alike; best run of each.
compare() {
  local dir=$work/$1 target=$2
  bytes=$(find "$dir/artifacts/blobs" -type f -printf '%s\n' | awk '{s+=$1} END{print s}')
  find "$dir/artifacts/blobs" -type f -print0 >"$work/list"
  best=()
  rss=()
  for _ in $(seq "$RUNS"); do
    timed "capsule verify" "$work/capsule" verify "$dir" -q
    timed "openssl dgst -sha256" sh -c "xargs -0 openssl dgst -sha256 <'$work/list'"
    timed "sha256sum" sh -c "xargs -0 sha256sum <'$work/list'"
  done
  show "capsule verify"
  show "openssl dgst -sha256"
  show "sha256sum"
  echo "  ratio vs openssl:   $(ratio "${best[openssl dgst -sha256]}" "${best[capsule verify]}")   (target >= $target)"
  echo "  ratio vs sha256sum: $(ratio "${best[sha256sum]}" "${best[capsule verify]}")"
  echo "  capsule verify peak RSS: $(awk "BEGIN{printf \"%.1f\", ${rss[capsule verify]}/1024}") MiB (target < 100)"
}

echo
echo "== 1. one file of $BIG bytes =="
setup big 1 "$BIG"
compare big 0.9

echo
echo "== 2. $N files of $SIZE bytes =="
setup many "$N" "$SIZE"
compare many 1.5
