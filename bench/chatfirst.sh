#!/usr/bin/env bash
# How soon `capsule agent chat` shows the first streamed token, against the
# model endpoint's own time to first byte (issue 13, Performance: within
# 1.1x).
#
#   bench/chatfirst.sh                  # 5 interleaved rounds, D = 50ms and 300ms
#   RUNS=3 DELAYS="300ms" bench/chatfirst.sh
#
# One `capsule model serve` (the simulator) sits behind a delaying proxy
# (bench/chatfirst proxy) that holds back the first byte of every model
# response until D after the request arrived, then streams as is. One
# `capsule node` calls the model through the proxy (--model-endpoint) and
# holds one agent (openai, Chat Completions, capsule-sim/echo, which
# streams its answer).
#
# Each round, for each D (the proxy's delay is switched between them), in
# an order that alternates round by round:
#   endpoint  the Chat Completions request the agent sent (captured from
#             the simulator's request log after a warm-up turn), posted
#             through the proxy: request written -> first response byte
#             (TTFB), and -> first chunk with text;
#   chat      `capsule agent chat AGENT` on a pipe: the line written ->
#             the first byte of "assistant: <text>" read from its stdout.
# The chat turn is also cut in parts from the outside: line written ->
# model request at the proxy ("to call": say, wake, render, connect), the
# proxy's first byte out (D and the simulator), -> text on chat's stdout
# ("to print": parse, delta, publish, watch, print).
# Medians over rounds, the ratio chat / endpoint TTFB, the node's peak
# RSS (VmHWM), and how many of the node's model calls dialled a new
# connection to the endpoint (the proxy numbers requests per connection)
# are printed. For a finer cut, strace -f -ttt the node and the chat
# (bench/chatfirst chat -cap takes a wrapper script) during one turn.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
runs="${RUNS:-5}"
delays="${DELAYS:-50ms 300ms}"
tmp="$(mktemp -d -p /var/tmp chatfirst.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
echo "# $(go version); $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
go build -o "$tmp/capsule" ./cmd/capsule
go build -o "$tmp/chatfirst" ./bench/chatfirst
cap="$tmp/capsule" helper="$tmp/chatfirst"

# waitline FILE: the first line of FILE once a process has written it.
waitline() {
  for _ in $(seq 200); do
    if [ -s "$1" ]; then head -1 "$1"; return; fi
    sleep 0.05
  done
  echo "chatfirst: no line in $1" >&2; exit 1
}

"$cap" model serve --listen 127.0.0.1:0 --json >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids+=($!)
sim="$(waitline "$tmp/sim.out" | sed 's/.*"url":"\([^"]*\)".*/\1/')"
"$helper" proxy -target "$sim" -delay 0s -log "$tmp/proxy.log" >"$tmp/proxy.out" 2>"$tmp/proxy.err" &
pids+=($!)
proxy="$(waitline "$tmp/proxy.out")"
mkdir "$tmp/data"
"$cap" node --data "$tmp/data" --listen 127.0.0.1:0 --model-endpoint "$proxy" --log-format json \
  >"$tmp/node.out" 2>"$tmp/node.log" &
node=$!
pids+=($node)
"$cap" node wait --data "$tmp/data" >/dev/null
agent="$("$cap" agent create --provider openai --api chat --model capsule-sim/echo --data "$tmp/data")"
echo "# simulator $sim, proxy $proxy, node pid $node, agent $agent"

# A warm-up turn: the agent's first call (and its connection) is not
# measured, and its request is the endpoint's.
"$helper" chat -cap "$cap" -data "$tmp/data" -agent "$agent" -line "warm up" >/dev/null
"$helper" capture -sim "$sim" -out "$tmp/request.json"

setdelay() { curl -fsS -X POST "$proxy/chatfirst/delay?d=$1" >/dev/null; }
endpoint_run() { # D ROUND
  setdelay "$1"
  read -r ttfb content < <("$helper" endpoint -url "$proxy" -req "$tmp/request.json")
  echo "$ttfb $content" >>"$tmp/endpoint-$1"
  printf '  round %d D=%-6s endpoint: TTFB %7.2f ms, first text %7.2f ms\n' "$2" "$1" \
    "$(awk -v v="$ttfb" 'BEGIN {print v / 1e6}')" "$(awk -v v="$content" 'BEGIN {print v / 1e6}')"
}
chat_run() { # D ROUND
  setdelay "$1"
  read -r wrote first < <("$helper" chat -cap "$cap" -data "$tmp/data" -agent "$agent" -line "round $2 at $1")
  # The proxy's line for this turn: the newest model request.
  read -r arrived fb conn < <(tail -1 "$tmp/proxy.log" |
    sed 's/.*"arrived":\([0-9]*\).*"firstbyte":\([0-9]*\).*"conn_req":\([0-9]*\).*/\1 \2 \3/')
  [ "$conn" != 1 ] || echo "$1" >>"$tmp/dials"
  echo "$((first - wrote)) $((arrived - wrote)) $((fb - arrived)) $((first - fb))" >>"$tmp/chat-$1"
  awk -v r="$2" -v d="$1" -v t="$((first - wrote))" -v a="$((arrived - wrote))" -v m="$((fb - arrived))" -v p="$((first - fb))" -v c="$conn" \
    'BEGIN {printf "  round %d D=%-6s chat:     first token %7.2f ms (to call %6.2f, endpoint+D %7.2f, to print %6.2f; request %d on its connection)\n", r, d, t / 1e6, a / 1e6, m / 1e6, p / 1e6, c}'
}
for r in $(seq "$runs"); do
  for d in $delays; do
    if [ $((r % 2)) -eq 1 ]; then endpoint_run "$d" "$r"; chat_run "$d" "$r"
    else chat_run "$d" "$r"; endpoint_run "$d" "$r"; fi
  done
done

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
hwm="$(awk '/^VmHWM/ {print $2}' "/proc/$node/status")"
echo "== medians of $runs interleaved runs; load: $(cut -d' ' -f1-3 /proc/loadavg); node peak RSS (VmHWM) $((hwm / 1024)) MiB"
printf '%-7s %14s %16s %17s %8s   %s\n' D "endpoint TTFB" "endpoint text" "chat first token" ratio "chat parts: to call / endpoint+D / to print"
for d in $delays; do
  ttfb="$(cut -d' ' -f1 <"$tmp/endpoint-$d" | median)"
  text="$(cut -d' ' -f2 <"$tmp/endpoint-$d" | median)"
  chat="$(cut -d' ' -f1 <"$tmp/chat-$d" | median)"
  call="$(cut -d' ' -f2 <"$tmp/chat-$d" | median)"
  mid="$(cut -d' ' -f3 <"$tmp/chat-$d" | median)"
  prt="$(cut -d' ' -f4 <"$tmp/chat-$d" | median)"
  awk -v d="$d" -v t="$ttfb" -v x="$text" -v c="$chat" -v a="$call" -v m="$mid" -v p="$prt" 'BEGIN {
    printf "%-7s %11.2f ms %13.2f ms %14.2f ms %7.3fx   %.2f / %.2f / %.2f ms\n", d, t / 1e6, x / 1e6, c / 1e6, c / t, a / 1e6, m / 1e6, p / 1e6 }'
done
echo "node -> endpoint: $(if [ -f "$tmp/dials" ]; then wc -l <"$tmp/dials"; else echo 0; fi) of $((runs * $(wc -w <<<"$delays"))) measured model calls opened a new connection (1 = the call was the first request on its connection)"
