#!/usr/bin/env bash
# capsule snapshot against tar -cf followed by sync (docs/FORMAT.md §5.2, §5.3).
#
# On the same workspace in one run, interleaved, RUNS rounds each, with a
# warm page cache for the workspace and a `sync` (not timed) before every
# run so that no run pays for another's dirty data:
#   tar      tar -cf OUT.tar -C WS . && sync       (durable, the comparator)
#   after    capsule snapshot (this tree's build) into a fresh capsule
#   before   capsule snapshot of BASE (default main) into a fresh capsule
# capsule snapshot is durable when it returns (its blobs are synced in
# batches, its commit fsyncs), so it is timed alone. The script prints
# each tool's median wall time and the peak RSS of that run (GNU time),
# and the ratios capsule/tar (lower is better; targets: <= 1.5 at
# 10,000 x 100 KiB, <= 2 at 100,000 x 10 KiB).
#
#   bench/snapshot.sh                    # SETS="10000:102400 100000:10240" RUNS=5
#   RUNS=3 SETS=10000:102400 bench/snapshot.sh
#   MILLION=1 bench/snapshot.sh          # also 1,000,000 x 1 KiB, one run of tar and after
#   MILLION=1 MILLION_BEFORE=1 ...       # and of before (its fsyncs per blob: very slow)
#   TMPDIR=/dev/shm MILLION=1 SETS=" " ... # 1M peak RSS only, much faster (on tmpfs the
#                                          # times say nothing about syncs; needs ~10 GiB RAM)
#   BASE= bench/snapshot.sh              # no "before" build
#
# Needs tar, git and GNU time at /usr/bin/time. Data lives under
# ${TMPDIR:-/tmp}, every run's output kept until the end (about 32 GiB and
# 1.7 million inodes at the defaults, 4 GiB and 4 million inodes more
# with MILLION=1; checked first), removed at the end. The file system
# must be a real disk (ext4, xfs) for the sync costs to mean anything.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

SETS=${SETS:-"10000:102400 100000:10240"}
RUNS=${RUNS:-5}
BASE=${BASE-main}
MILLION=${MILLION:-}
MILLION_BEFORE=${MILLION_BEFORE:-}

if [ ! -x /usr/bin/time ]; then
  echo "bench/snapshot.sh: GNU time is missing at /usr/bin/time: apt-get install time" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/capsule-snapshot-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

go build -o "$work/after" ./cmd/capsule
go build -o "$work/mktree" ./bench/mktree
tools="tar after"
if [ -n "$BASE" ]; then
  mkdir "$work/base-src"
  git archive "$BASE" | tar -x -C "$work/base-src"
  (cd "$work/base-src" && go build -o "$work/before" ./cmd/capsule)
  tools="tar after before"
fi
echo "$(nproc) CPUs; $(df -T "$work" | awk 'NR==2{print $2}') at $work; Go $(go env GOVERSION); before = ${BASE:-none} ($(git rev-parse --short "${BASE:-HEAD}")), after = $(git rev-parse --short HEAD)$(git diff --quiet || echo +dirty)"

# run TOOL WS OUT: one timed run of TOOL on workspace WS into a new target
# OUT; prints "SECONDS RSS_KIB". Targets are kept until the script ends:
# ext4 skips inodes freed in the last minute when it allocates new ones,
# so removing one run's 100,000 files would slow the next run's creations
# (tar's single file hardly notices), a cost no real snapshot pays twice.
run() {
  local tool=$1 ws=$2 out=$3
  if [ "$tool" != tar ]; then
    "$work/$tool" init "$out" >/dev/null
  fi
  sync
  local t0=$EPOCHREALTIME
  case $tool in
  tar) /usr/bin/time -f "%M" -o "$work/rss" sh -c 'tar -cf "$1" -C "$2" . && sync' sh "$out.tar" "$ws" ;;
  *) /usr/bin/time -f "%M" -o "$work/rss" "$work/$tool" snapshot "$out" --from "$ws" -q >/dev/null ;;
  esac
  local t1=$EPOCHREALTIME
  echo "$(awk "BEGIN{print $t1 - $t0}") $(cat "$work/rss")"
}

# median FILE: the median line of "SECONDS RSS" lines, by seconds.
median() { sort -n "$1" | awk '{l[NR]=$0} END{print l[int((NR+1)/2)]}'; }

# bench N SIZE ROUNDS
bench() {
  local n=$1 size=$2 rounds=$3 ws="$work/ws-$1"
  "$work/mktree" -dir "$ws" -n "$n" -size "$size"
  find "$ws" -type f -exec cat {} + >/dev/null # warm the page cache
  local t
  for t in $tools; do : >"$work/times-$t"; done
  for ((r = 1; r <= rounds; r++)); do
    for t in $tools; do
      run "$t" "$ws" "$work/out-$n-$t-$r" >>"$work/times-$t"
    done
  done
  echo "$n files x $size bytes ($(awk "BEGIN{printf \"%.0f\", $n*$size/1048576}") MiB), median of $rounds interleaved runs:"
  local tar_s
  tar_s=$(median "$work/times-tar" | cut -d' ' -f1)
  for t in $tools; do
    read -r secs kib < <(median "$work/times-$t")
    local label=$t
    [ "$t" = tar ] && label="tar -cf + sync"
    printf "  %-16s %8.3f s  %6.2fx tar  peak RSS %7.1f MiB   (all: %s)\n" "$label" "$secs" \
      "$(awk "BEGIN{print $secs/$tar_s}")" "$(awk "BEGIN{print $kib/1024}")" \
      "$(sort -n "$work/times-$t" | cut -d' ' -f1 | xargs printf '%.2f ')"
  done
}

# need GIB INODES: refuse to start without that much room at $work.
need() {
  local avail ifree
  avail=$(df -k --output=avail "$work" | tail -1)
  ifree=$(df --output=iavail "$work" | tail -1)
  if [ "$avail" -lt $(($1 << 20)) ] || [ "$ifree" -lt "$2" ]; then
    echo "bench/snapshot.sh: needs $1 GiB and $2 inodes free at $work (df -h, df -i)" >&2
    exit 1
  fi
}

ntools=$(echo $tools | wc -w)
for set in $SETS; do
  n=${set%%:*} size=${set##*:}
  need $((n * size * (RUNS * ntools + 1) / (1 << 30) + 2)) $((n * (RUNS * ntools + 1) + 100000))
  bench "$n" "$size" "$RUNS"
done
if [ -n "$MILLION" ]; then
  [ -z "$MILLION_BEFORE" ] && tools=${tools% before}
  ntools=$(echo $tools | wc -w)
  need 12 $((1000000 * (ntools + 1) + 100000))
  bench 1000000 1024 1
fi
