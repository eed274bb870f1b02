#!/usr/bin/env bash
# capsule verify against openssl dgst -sha256 and sha256sum (docs/FORMAT.md §3).
#
# Builds two real capsules under a temporary directory and, on the same
# bytes in one run, with a warm page cache, best of RUNS each, compares:
#   1. one file of BIG bytes (default 1 GiB):
#        capsule verify  vs  openssl dgst -sha256 (and sha256sum) of the blob
#        target: throughput ratio capsule/openssl >= 0.9
#   2. for each SCALES item N:SIZE, N files of SIZE bytes (default 10,000 x
#      100 KiB):
#        capsule verify  vs  openssl dgst -sha256 (and sha256sum) of the blobs
#        target: ratio >= 1.5 (capsule hashes on every core; the tools use one)
# Ratios are throughput ratios: the other tool's median time divided by
# capsule's median (> 1 means capsule is faster). The tools run interleaved,
# RUNS rounds; on a shared machine raise RUNS to damp others' load. Peak RSS
# (median) of capsule verify comes from GNU time (target < 100 MiB at any
# N). With BASE_BIN set to another capsule binary (e.g. one built from
# main), it runs beside this tree's in every round ("base: capsule verify").
#
#   bench/verify.sh                          # BIG=1GiB SCALES=10000:102400 RUNS=3
#   BIG=$((256<<20)) SCALES=2000:102400 RUNS=1 bench/verify.sh   # a quick look
#   BIG=0 SCALES="10000:1024 100000:1024 1000000:1024" bench/verify.sh   # peak RSS by file count
#   BASE_BIN=/tmp/capsule-main BIG=0 SCALES=100000:10240 bench/verify.sh
#
# Needs openssl, sha256sum (coreutils) and GNU time at /usr/bin/time
# (Debian/Ubuntu package "time": apt-get install time). Data lives in a
# temporary directory under ${TMPDIR:-/tmp} (about 2.2 GiB at the defaults),
# removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

BIG=${BIG:-$((1 << 30))}
SCALES=${SCALES:-${N:-10000}:${SIZE:-102400}}
RUNS=${RUNS:-3}
BASE_BIN=${BASE_BIN:-}

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
go build -o "$work/exportdata" ./bench/exportdata
echo "$(nproc) CPUs; $(openssl version); Go $(go env GOVERSION)"

# setup NAME NFILES FILESIZE: a capsule $work/NAME whose snapshot holds
# NFILES files of FILESIZE random bytes (bench/exportdata -direct).
setup() {
  rm -rf "${work:?}/$1"
  "$work/exportdata" -direct -dir "$work/$1" -n "$2" -size "$3"
  find "$work/$1" -type f -exec cat {} + >/dev/null # warm the page cache
}

# timed NAME CMD...: runs CMD once under GNU time; appends "seconds KiB" to
# $work/m.NAME (wall time from bash's microsecond clock).
timed() {
  local name=$1
  shift
  local t0=$EPOCHREALTIME
  /usr/bin/time -f "%M" -o "$work/rss" "$@" >/dev/null
  local t1=$EPOCHREALTIME
  echo "$(awk "BEGIN{print $t1 - $t0}") $(cat "$work/rss")" >>"$work/m.$name"
}
median() { sort -n -k"$2" "$work/m.$1" | awk -v c="$2" '{v[NR]=$c} END{print v[int((NR+1)/2)]}'; }
ratio() { awk "BEGIN{printf \"%.2f\", $(median "$1" 1)/$(median "$2" 1)}"; }
show() {
  local s k
  s=$(median "$1" 1)
  k=$(median "$1" 2)
  printf "  %-24s %7.3f s %9.1f MiB/s  peak RSS %7.1f MiB\n" "$1" "$s" \
    "$(awk "BEGIN{print $bytes/1048576/$s}")" "$(awk "BEGIN{print $k/1024}")"
}

# compare NAME TARGET: verify the capsule and hash its blobs with the tools,
# RUNS rounds, the tools interleaved within each round so that a burst of
# load elsewhere on the machine hits all of them alike; medians.
compare() {
  local dir=$work/$1 target=$2
  bytes=$(find "$dir/artifacts/blobs" -type f -printf '%s\n' | awk '{s+=$1} END{print s}')
  find "$dir/artifacts/blobs" -type f -print0 >"$work/list"
  rm -f "$work"/m.*
  for _ in $(seq "$RUNS"); do
    timed "capsule verify" "$work/capsule" verify "$dir" -q
    [ -n "$BASE_BIN" ] && timed "base: capsule verify" "$BASE_BIN" verify "$dir" -q
    timed "openssl dgst -sha256" sh -c "xargs -0 openssl dgst -sha256 <'$work/list'"
    timed "sha256sum" sh -c "xargs -0 sha256sum <'$work/list'"
  done
  show "capsule verify"
  [ -n "$BASE_BIN" ] && show "base: capsule verify"
  show "openssl dgst -sha256"
  show "sha256sum"
  echo "  ratio vs openssl:   $(ratio "openssl dgst -sha256" "capsule verify")   (target >= $target)"
  echo "  ratio vs sha256sum: $(ratio "sha256sum" "capsule verify")"
  [ -n "$BASE_BIN" ] && echo "  base: ratio vs openssl: $(ratio "openssl dgst -sha256" "base: capsule verify")"
  echo "  capsule verify peak RSS: $(awk "BEGIN{printf \"%.1f\", $(median "capsule verify" 2)/1024}") MiB (target < 100)"
  return 0
}

if [ "$BIG" -gt 0 ]; then
  echo
  echo "== 1. one file of $BIG bytes =="
  setup big 1 "$BIG"
  compare big 0.9
  rm -rf "${work:?}/big"
fi

for scale in $SCALES; do
  n=${scale%%:*}
  size=${scale##*:}
  echo
  echo "== 2. $n files of $size bytes =="
  setup many "$n" "$size"
  compare many 1.5
done
