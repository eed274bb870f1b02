#!/usr/bin/env bash
# Move benchmarks (docs/PROTOCOL.md; reference move-protocol.md §(b) 1, 3, 4),
# each against a comparator measured in the same run on the same data:
#   1. first move of an agent with a FILES x SIZE workspace (default 1024 x
#      1 MiB = 1 GiB) and EVENTS journal events (default 10,000):
#        bytes on the wire / capsule size          (target <= 1.02)
#        move time / `rsync -a` of the capsule folder to an rsync daemon on
#        loopback                                  (target <= 1.00)
#   2. move back after PCT % (default 1) of the workspace files changed:
#        wire <= changed blobs + journal tail + 1 %, and <= rsync --stats
#   3. the same with PART bytes (default 4096) rewritten inside each of those
#      files (whole-file blobs against rsync's rolling checksum)
#   4. frozen window (freeze to running on the target) over MOVES moves
#      (default 5), each with HOT bytes (default 1 MiB) changed after
#      pre-copy began: median (target < 50 ms; QEMU's default max downtime
#      300 ms, Xen 60-210 ms) and round trips while frozen (target <= 3),
#      with the time of each phase as the progress stream reports it.
#
# Two real `capsule node` processes on 127.0.0.1 and 127.0.0.2 (127.0.0.1
# twice where .2 cannot be bound), each reaching the other through a TCP
# proxy (e2e/faultproxy) that counts the bytes on the wire, TLS included;
# rsync reaches its daemon through the same kind of proxy, so both pay its copy.
#
# Usage: bench/move.sh [DIR]   (DIR: an empty folder on the disk to measure,
# about 5 x the workspace size free; default a fresh folder under /var/tmp,
# removed at the end). FILES, SIZE, EVENTS, PCT, PART, MOVES, HOT as above:
#   FILES=64 EVENTS=1000 MOVES=3 bench/move.sh      # a quick look
#
# Needs rsync (Debian package "rsync"; installed with apt-get when missing
# and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

if ! command -v rsync >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "bench/move.sh: installing rsync" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsync
  else
    echo "bench/move.sh: rsync is missing: apt-get install rsync" >&2
    exit 1
  fi
fi

if [ $# -ge 1 ]; then dir="$1"; made=""; else dir="$(mktemp -d -p /var/tmp movebench.XXXXXX)"; made="$dir"; fi
bin="$(mktemp -d "${TMPDIR:-/tmp}/movebench-bin.XXXXXX")"
trap 'rm -rf "$bin"; [ -z "$made" ] || rm -rf "$made"' EXIT

go build -o "$bin/capsule" ./cmd/capsule
go build -o "$bin/movebench" ./bench/movebench
echo "disk: $(df -h "$dir" | awk 'NR==2 {print $1, $6}')  cpus: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)  $(rsync --version | head -1)"

"$bin/movebench" -capsule "$bin/capsule" -dir "$dir" \
  -files "${FILES:-1024}" -size "${SIZE:-1048576}" -events "${EVENTS:-10000}" \
  -pct "${PCT:-1}" -part "${PART:-4096}" -moves "${MOVES:-5}" -hot "${HOT:-1048576}"
