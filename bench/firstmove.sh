#!/usr/bin/env bash
# The first move of a 1 GiB agent against rsync -a --fsync to an rsync
# daemon on loopback, both durable (issue 11 §3: move <= 1.0x rsync).
#
# The workspace is about 1 GiB of incompressible bytes in files of mixed
# sizes (bench/mktree, one folder per size):
#     4 x 64 MiB,  256 x 1 MiB,  2,621 x 100 KiB,  25,600 x 10 KiB
#   = 28,481 files, 1,018 MiB.
# Each of RUNS rounds starts two fresh `capsule node` processes (A on
# 127.0.0.1, B on 127.0.0.2, or 127.0.0.1 where .2 cannot be bound; new
# data folders, so B has never seen a byte of the agent), creates a running
# agent on A from the workspace, and then, in an order rotated round by
# round:
#   move     `capsule move` A -> B, end to end, with the time of each phase
#            as its progress stream reports it (pre-copy, freeze, ...), the
#            frozen window and the peak RSS of each node during the move
#            (VmHWM, reset just before it)
#   rsync    `rsync -a --fsync` of A's capsule folder (what the move carries:
#            blobs named by hash, the journal, the manifest) into a fresh
#            module folder of an `rsync --daemon` on 127.0.0.1
#   rsyncws  the same of the workspace folder itself
# Neither goes through a proxy. The capsule move is durable when it
# commits (FORMAT §4); rsync --fsync fsyncs every file it writes (where
# the installed rsync has no --fsync, it runs plain and then `sync`, and
# says so). Medians of the rounds and the ratios move / rsync are printed
# at the end.
#
#   bench/firstmove.sh                 # RUNS=3, data under a fresh /var/tmp folder
#   RUNS=1 bench/firstmove.sh /var/tmp/fm
#   PERF=1 RUNS=1 bench/firstmove.sh   # also perf record the target node during
#                                      # the move; prints its top functions
#   STRACE=1 RUNS=1 bench/firstmove.sh # also count the target's system calls
#                                      # during the move (strace -c; slows it)
#   SCALE=8 bench/firstmove.sh         # 1/8 of every file count: a quick look
#
# Needs rsync (installed with apt-get when missing and run as root), GNU
# time, python3 (to pick free ports) and, for PERF=1, perf. About 5 GiB
# free at DIR per round.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

runs=${RUNS:-3}
scale=${SCALE:-1}
perf=${PERF:-}
strace=${STRACE:-}

if ! command -v rsync >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "bench/firstmove.sh: installing rsync" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsync
  else
    echo "bench/firstmove.sh: rsync is missing: apt-get install rsync" >&2
    exit 1
  fi
fi
fsync_flag=--fsync
if [[ "$(rsync --help 2>&1)" != *--fsync* ]]; then
  fsync_flag=""
  echo "bench/firstmove.sh: this rsync has no --fsync: it runs plain, then sync (timed)" >&2
fi

if [ $# -ge 1 ]; then mkdir -p "$1"; dir=$(mktemp -d "$1/firstmove.XXXXXX"); else dir=$(mktemp -d -p /var/tmp firstmove.XXXXXX); fi
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/bin" "$dir/m"
go build -o "$dir/bin/capsule" ./cmd/capsule
go build -o "$dir/bin/mktree" ./bench/mktree
cap=$dir/bin/capsule
ipB=127.0.0.2
python3 -c "import socket; socket.socket().bind(('$ipB', 0))" 2>/dev/null || ipB=127.0.0.1

freeport() { python3 -c "import socket; s=socket.socket(); s.bind(('$1', 0)); print(s.getsockname()[1])"; }
peak() { awk '/^VmHWM/{print int($2/1024)}' "/proc/$1/status"; }
# cpu PID: the process's user + system CPU seconds so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); print ($12 + $13) / hz}' "/proc/$1/stat"; }
median() { sort -g | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# workspace: the mixed-size tree, once.
ws=$dir/ws
mkdir -p "$ws"
"$dir/bin/mktree" -dir "$ws/big" -n $((4 / scale > 0 ? 4 / scale : 1)) -size $((64 << 20)) -seed 1
"$dir/bin/mktree" -dir "$ws/mid" -n $((256 / scale)) -size $((1 << 20)) -seed 2
"$dir/bin/mktree" -dir "$ws/small" -n $((2621 / scale)) -size 102400 -seed 3
"$dir/bin/mktree" -dir "$ws/tiny" -n $((25600 / scale)) -size 10240 -seed 4
wsbytes=$(du -sb "$ws" | cut -f1)
echo "# $(nproc) CPUs; $(df -T "$dir" | awk 'NR==2{print $2}') at $dir; $(rsync --version | head -1); after = $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo +dirty)"
echo "# workspace: $(find "$ws" -type f | wc -l) files, $((wsbytes >> 20)) MiB (4 x 64 MiB, 256 x 1 MiB, 2,621 x 100 KiB, 25,600 x 10 KiB, each count / $scale); load $(cut -d' ' -f1-3 /proc/loadavg)"

# rsync daemon on 127.0.0.1, one module whose folder each run replaces.
rport=$(freeport 127.0.0.1)
cat >"$dir/rsyncd.conf" <<EOF
use chroot = false
uid = $(id -u)
gid = $(id -g)
pid file = $dir/rsyncd.pid
log file = $dir/rsyncd.log
[recv]
  path = $dir/recv
  read only = false
EOF
mkdir -p "$dir/recv"
rsync --daemon --no-detach --config="$dir/rsyncd.conf" --address=127.0.0.1 --port="$rport" &
pids+=($!)
for _ in $(seq 100); do rsync "rsync://127.0.0.1:$rport/" >/dev/null 2>&1 && break; sleep 0.1; done

# startnode NAME IP: a fresh node (data folder $dir/NAME, its stderr in
# $dir/NAME.log); sets NAME_pid, NAME_id, NAME_addr.
startnode() {
  local name=$1 ip=$2 port id
  port=$(freeport "$ip")
  id=$("$cap" node id --data "$dir/$name")
  printf -v "${name}_id" %s "$id"
  printf -v "${name}_addr" %s "$ip:$port"
}
runnode() {
  local name=$1 addr=${1}_addr
  "$cap" node --data "$dir/$name" --listen "${!addr}" >"$dir/$name.ready" 2>>"$dir/$name.log" &
  printf -v "${name}_pid" %s $!
  pids+=($!)
  "$cap" node wait --data "$dir/$name" >/dev/null
}

# rsync_run LABEL SRC: one durable rsync into the emptied module folder.
rsync_run() {
  local t0 t1
  rm -rf "$dir/recv" && mkdir "$dir/recv" && sync
  t0=$EPOCHREALTIME
  if [ -n "$fsync_flag" ]; then
    rsync -a "$fsync_flag" "$2/" "rsync://127.0.0.1:$rport/recv/"
  else
    rsync -a "$2/" "rsync://127.0.0.1:$rport/recv/" && sync
  fi
  t1=$EPOCHREALTIME
  awk "BEGIN{print $t1 - $t0}" >>"$dir/m/$1"
  echo "  $1: $(tail -1 "$dir/m/$1") s" >&2
}

# move_run: the first move A -> B of the round's agent, its phases and the
# nodes' peak RSS while it ran.
move_run() {
  local t0 t1 perfpid=""
  echo 5 >"/proc/$A_pid/clear_refs"
  echo 5 >"/proc/$B_pid/clear_refs"
  sync
  if [ -n "$perf" ]; then
    perf record -F 199 -g -o "$dir/perf-$round.data" -p "$B_pid" 2>"$dir/perf.log" &
    perfpid=$!
  fi
  local ca cb
  ca=$(cpu "$A_pid") cb=$(cpu "$B_pid")
  if [ -n "$strace" ]; then
    strace -c -f -qq -o "$dir/strace-$round.txt" $(for t in /proc/"$B_pid"/task/*; do echo "-p ${t##*/}"; done) &
    perfpid=$!
    sleep 1 # attached to every thread
  fi
  t0=$EPOCHREALTIME
  "$cap" move "$agent" --to "$B_id" --data "$dir/A" >"$dir/move.out" 2> >(while read -r l; do echo "$EPOCHREALTIME $l"; done >"$dir/phases-$round")
  t1=$EPOCHREALTIME
  [ -z "$perfpid" ] || { kill -INT "$perfpid"; wait "$perfpid" || true; }
  awk "BEGIN{print $t1 - $t0}" >>"$dir/m/move"
  echo "$(cpu "$A_pid") $ca $(cpu "$B_pid") $cb" | awk '{printf "%.2f %.2f\n", $1 - $2, $3 - $4}' >>"$dir/m/cpu"
  peak "$A_pid" >>"$dir/m/rssA"
  peak "$B_pid" >>"$dir/m/rssB"
  sed -n 's/.*frozen \([0-9]*\) ms.*/\1/p' "$dir/move.out" | head -1 | awk '{print $1/1000}' >>"$dir/m/frozen"
  sleep 0.2 # the progress reader's last lines
  phases "$t0" "$t1" <"$dir/phases-$round" >>"$dir/m/phases"
  echo "  move: $(tail -1 "$dir/m/move") s, CPU s A B: $(tail -1 "$dir/m/cpu"); $(tail -1 "$dir/m/phases"); $(cat "$dir/move.out")" >&2
}

# phases T0 T1: "phase seconds ..." from the timestamped progress lines.
phases() {
  awk -v t0="$1" -v t1="$2" '{ if (NR > 1) d[p] += $1 - t; if (!(($2) in d)) o[++n] = $2; d[$2] += 0; p = $2; t = $1 }
    END { d[p] += t1 - t; for (i = 1; i <= n; i++) printf "%s %.3f ", o[i], d[o[i]]; print "" }'
}

# holder_capsule: the capsule folder of the node that holds the agent now
# (A before the move, B after it: a retired source keeps no capsule).
holder_capsule() {
  if [ -d "$dir/A/agents/$agent/capsule" ]; then echo "$dir/A/agents/$agent/capsule"; else echo "$dir/B/agents/$agent/capsule"; fi
}

round_run() {
  local r=$1 steps=("move_run" 'rsync_run rsync "$(holder_capsule)"' 'rsync_run rsyncws "$ws"') k
  rm -rf "$dir/A" "$dir/B" "$dir"/*.log
  startnode A 127.0.0.1
  startnode B "$ipB"
  "$cap" node peer add "$B_id" "$B_addr" --data "$dir/A" >/dev/null
  "$cap" node peer add "$A_id" "$A_addr" --data "$dir/B" >/dev/null
  runnode A
  runnode B
  agent=$("$cap" agent create --name firstmove --from "$ws" --data "$dir/A")
  sleep 1 # a few steps of the built-in runner
  echo "round $((r + 1)) of $runs: agent $agent on A ($A_id), target B ($B_id)" >&2
  for ((k = 0; k < 3; k++)); do eval "${steps[$(((k + r) % 3))]}"; done
  kill "$A_pid" "$B_pid"
  wait "$A_pid" "$B_pid" 2>/dev/null || true
}

for ((round = 0; round < runs; round++)); do round_run "$round"; done

mv_s=$(median <"$dir/m/move")
rs_s=$(median <"$dir/m/rsync")
rw_s=$(median <"$dir/m/rsyncws")
echo
echo "first move of a $((wsbytes >> 20)) MiB workspace, median of $runs interleaved rounds (machine shared with other work; load now $(cut -d' ' -f1-3 /proc/loadavg)):"
printf "  capsule move A -> B        %7.2f s   (all: %s)\n" "$mv_s" "$(xargs printf '%.2f ' <"$dir/m/move")"
printf "    phases (median s)        %s\n" "$(awk '{for (i = 1; i < NF; i += 2) print $i, $(i+1)}' "$dir/m/phases" | sort -k1,1 -s | awk '{v[$1] = v[$1] " " $2} END {for (p in v) print p, v[p]}' | while read -r p vs; do echo -n "$p $(echo "$vs" | tr ' ' '\n' | median)  "; done)"
printf "    frozen window (median)   %7.3f s\n" "$(median <"$dir/m/frozen")"
printf "    CPU during the move (median s): A (source) %s, B (target) %s\n" "$(cut -d' ' -f1 "$dir/m/cpu" | median)" "$(cut -d' ' -f2 "$dir/m/cpu" | median)"
printf "    peak RSS during the move A (source) %s MiB, B (target) %s MiB (largest of the rounds)\n" "$(sort -g "$dir/m/rssA" | tail -1)" "$(sort -g "$dir/m/rssB" | tail -1)"
printf "  rsync -a %-8s capsule   %7.2f s   (all: %s)\n" "${fsync_flag:-+ sync}" "$rs_s" "$(xargs printf '%.2f ' <"$dir/m/rsync")"
printf "  rsync -a %-8s workspace %7.2f s   (all: %s)\n" "${fsync_flag:-+ sync}" "$rw_s" "$(xargs printf '%.2f ' <"$dir/m/rsyncws")"
printf "  RATIO move / rsync of the capsule folder:   %.2f  (target <= 1.0)\n" "$(awk "BEGIN{print $mv_s / $rs_s}")"
printf "  RATIO move / rsync of the workspace folder: %.2f\n" "$(awk "BEGIN{print $mv_s / $rw_s}")"
if [ -n "$strace" ]; then
  echo "  target node's system calls during the move (strace -c -f, round 1):"
  head -20 "$dir/strace-0.txt" | sed 's/^/    /'
fi
if [ -n "$perf" ]; then
  echo "  target node during the move (perf, round 1, top 25 by self time):"
  perf report -i "$dir/perf-0.data" --no-children -g none --stdio --sort symbol 2>/dev/null | grep -v '^#' | grep '%' | head -25 | sed 's/^/    /'
fi
