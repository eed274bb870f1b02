#!/usr/bin/env bash
# 1,000 idle agents on one node (issue 13, Performance): a real `capsule
# node` process with N agents of the agent loop (model capsule-sim/echo on
# the embedded model endpoint, task "hi": each answers once and goes idle)
# must use < 1 % of one core and < 200 MiB in total.
#
# Each round runs, on a fresh data folder and a fresh node each, interleaved:
#   base     the node with 0 agents (the comparator: the node's own baseline)
#   idle     N agent-loop agents, every one idle (status "activity")
#   stopped  N counter agents created --stopped (no runner), if STOPPED=1
#   idle-before  as idle, with the node built from BEFORE (a git revision)
#            or BEFORE_BIN (a binary), when one is given: main's code
# Once the agents are settled the script leaves the node alone (no API call)
# and samples over WINDOW seconds its CPU time (/proc/PID/stat utime+stime)
# and its RSS (/proc/PID/status VmRSS every second; VmHWM, the peak, at the
# end). It prints each run, then the medians over the rounds: CPU % of one
# core, RSS MiB (median of the samples), peak RSS MiB, and per-agent KiB
# ((RSS - base RSS) / N, against the same round's base).
#
# Usage: bench/idle.sh   N=1000 ROUNDS=3 WINDOW=60 PAR=4 STOPPED=1
#        BIN=path (a prebuilt capsule binary; default: build this tree)
#        BEFORE=rev or BEFORE_BIN=path (the comparator's code; default none)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

n="${N:-1000}"
rounds="${ROUNDS:-3}"
window="${WINDOW:-60}"
par="${PAR:-4}"
stopped="${STOPPED:-1}"
tmp="$(mktemp -d -p /var/tmp idle.XXXXXX)"
pids=()

cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bin="${BIN:-}"
if [ -z "$bin" ]; then
  bin="$tmp/capsule"
  go build -o "$bin" ./cmd/capsule
fi
before_bin="${BEFORE_BIN:-}"
if [ -z "$before_bin" ] && [ -n "${BEFORE:-}" ]; then
  mkdir "$tmp/src"
  git archive "$BEFORE" | tar -x -C "$tmp/src"
  (cd "$tmp/src" && go build -o "$tmp/capsule-before" ./cmd/capsule)
  before_bin="$tmp/capsule-before"
fi
tck="$(getconf CLK_TCK)"

# The embedded model endpoint, shared by every run; its first line is the URL.
"$bin" model serve --listen 127.0.0.1:0 --json >"$tmp/model.out" 2>"$tmp/model.err" &
pids+=("$!")
for _ in $(seq 100); do [ -s "$tmp/model.out" ] && break; sleep 0.1; done
url="$(head -1 "$tmp/model.out" | jq -r .url)"

# create_one DATA KIND: one agent, through the CLI. An agent-loop agent
# needs `agent create --provider/--model/--task`; with a CLI that lacks
# them yet, the same request goes to the node's local API socket.
create_one() {
  if [ "$2" = stopped ]; then
    "$bin" agent create --stopped --data "$1" >/dev/null
  elif [ -n "$cli_model" ]; then
    "$bin" agent create --provider openai --model capsule-sim/echo --task hi --data "$1" >/dev/null
  else
    curl -sf --unix-socket "$1/node.sock" -X POST http://node/v1/agents \
      -d '{"model":{"provider":"openai","model":"capsule-sim/echo"},"task":"hi"}' >/dev/null
  fi
}
cli_model=""
"$bin" agent create --help 2>/dev/null | grep -q -- '--provider' && cli_model=1
export -f create_one
export bin cli_model

# settled DATA KIND: how many agents are where KIND leaves them.
settled() {
  local sel='.activity == "idle"'
  [ "$2" = stopped ] && sel='.state == "stopped"'
  "$bin" agent list --json --data "$1" | jq "[.[] | select($sel)] | length"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# run KIND COUNT: writes "KIND count cpu% rss_mib hwm_mib fds" to $tmp/line.
run() {
  local kind="$1" count="$2" data="$tmp/data.$1" pid i t0 t1 got s nodebin="$bin"
  [ "$kind" = idle-before ] && nodebin="$before_bin"
  rm -rf "$data"
  "$nodebin" node --data "$data" --listen 127.0.0.1:0 --model-endpoint "$url" \
    >"$tmp/node.out" 2>"$tmp/node.$kind.err" &
  pid="$!"
  pids+=("$pid")
  for _ in $(seq 200); do [ -S "$data/node.sock" ] && [ -s "$tmp/node.out" ] && break; sleep 0.1; done
  if [ "$count" -gt 0 ]; then
    for ((i = 0; i < count; i += 100)); do
      seq "$((count - i < 100 ? count - i : 100))" | xargs -P "$par" -I{} bash -c 'create_one "$0" "$1"' "$data" "$kind"
      printf '\r  %s: %d/%d created' "$kind" "$((i + (count - i < 100 ? count - i : 100)))" "$count" >&2
    done
    echo >&2
    for i in $(seq 600); do
      got="$(settled "$data" "$kind")"
      printf '\r  %s: %d/%d settled' "$kind" "$got" "$count" >&2
      [ "$got" -ge "$count" ] && break
      sleep 1
    done
    echo >&2
    [ "$got" -ge "$count" ] || { echo "idle.sh: only $got of $count $kind agents settled" >&2; exit 1; }
  fi
  sleep 5 # let the last replies and log lines drain before measuring
  t0="$(cpu_ticks "$pid")"
  : >"$tmp/rss"
  for i in $(seq "$window"); do status_kib "$pid" VmRSS >>"$tmp/rss"; sleep 1; done
  t1="$(cpu_ticks "$pid")"
  s="$(sort -n "$tmp/rss" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')"
  echo >"$tmp/line" "$kind $count $(awk -v d="$((t1 - t0))" -v tck="$tck" -v w="$window" 'BEGIN {printf "%.3f", 100 * d / tck / w}') \
$(awk -v k="$s" 'BEGIN {printf "%.1f", k / 1024}') $(awk -v k="$(status_kib "$pid" VmHWM)" 'BEGIN {printf "%.1f", k / 1024}') \
$(ls /proc/"$pid"/fd | wc -l)"
  kill -KILL "$pid" # the data is thrown away: no freeze and commit of N agents
  wait "$pid" 2>/dev/null || true
  rm -rf "$data"
}

[ -z "$before_bin" ] || echo "before: ${BEFORE:-$before_bin}"
echo "cpus: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)  commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo +dirty)"
echo "N=$n rounds=$rounds window=${window}s; columns: kind agents cpu%-of-one-core rss-MiB peak-rss-MiB fds"
kinds="base"
[ -n "$before_bin" ] && kinds="$kinds idle-before"
kinds="$kinds idle"
[ "$stopped" = 1 ] && kinds="$kinds stopped"
for r in $(seq "$rounds"); do
  for k in $kinds; do
    c="$n"
    [ "$k" = base ] && c=0
    run "$k" "$c"
    line="$(cat "$tmp/line")"
    echo "round $r $line  (load $(cut -d' ' -f1 /proc/loadavg))"
    echo "$r $line" >>"$tmp/runs"
  done
done
awk -v n="$n" '
  { cpu[$2] = cpu[$2] " " $4; rss[$2] = rss[$2] " " $5; hwm[$2] = hwm[$2] " " $6; base[$1] = $2 == "base" ? $5 : base[$1]
    if ($2 != "base") per[$2] = per[$2] " " (($5 - base[$1]) * 1024 / n) }
  function med(s,   a, k, i, j, x) {
    k = split(s, a, " ")
    for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    for (k in cpu) {
      printf "median %-11s cpu %.3f %% of one core, rss %.1f MiB, peak %.1f MiB", k, med(cpu[k]), med(rss[k]), med(hwm[k])
      if (k != "base") printf ", %.1f KiB per agent over base", med(per[k])
      printf "\n"
    }
    print "targets (idle): cpu < 1 %, rss < 200 MiB in total"
  }' "$tmp/runs"
