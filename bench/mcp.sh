#!/usr/bin/env bash
# An MCP tool call through the sandbox against the same call to an
# unsandboxed server (issue 14, Performance: adds <= 2 ms).
#
#   bench/mcp.sh                 # 5 interleaved rounds
#   RUNS=3 CALLS=1000 bench/mcp.sh
#   WRAP="bwrap ... --" bench/mcp.sh
#   WRAP=sandbox bench/mcp.sh    # the node's own sandbox (package sandbox), as a node starts a server
#
# Each round runs mcp's BenchmarkCall (counter.echo round trips on one
# running stdio server, CALLS of them) and BenchmarkStart (launch,
# initialize, list two pages, close; STARTS of them) twice, in an order
# that alternates round by round, and for calls also BenchmarkCallSDK (the
# same round trip with the SDK's own CommandTransport client and no Set:
# what mcp adds): "plain" starts the server with mcp.Exec,
# "sandboxed" with mcp.Exec of WRAP followed by the server's argv
# ($MCP_BENCH_WRAP; default: bubblewrap with every namespace unshared, the
# root read-only, a private /dev and /proc). Once the node's sandbox
# Launcher is wired in (it is: WRAP=sandbox), the benchmark uses it.
# Medians over rounds of ns/op, the difference and the ratio sandboxed /
# plain, and the peak RSS of the benchmark process (/usr/bin/time -v; the
# server is a child) are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
runs="${RUNS:-5}"
calls="${CALLS:-2000}"
starts="${STARTS:-50}"
wrap="${WRAP:-bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --}"
tmp="$(mktemp -d -p /var/tmp mcpbench.XXXXXX)" # not under /tmp: a sandbox may hide it
trap 'rm -rf "$tmp"' EXIT
echo "# $(go version); $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# sandboxed: $wrap"
go test -c -o "$tmp/mcp.test" ./mcp

# one VARIANT BENCH N: prints "ns_per_op max_rss_kb".
one() {
  local env=()
  if [ "$1" = sandboxed ]; then env=(MCP_BENCH_WRAP="$wrap"); fi
  (cd mcp && env TMPDIR="$tmp" "${env[@]}" /usr/bin/time -v "$tmp/mcp.test" -test.run '^$' \
    -test.bench "^Benchmark$2\$" -test.benchtime "${3}x" >"$tmp/out" 2>"$tmp/time")
  local ns rss
  ns="$(awk '/^Benchmark/ {print $3}' "$tmp/out")"
  rss="$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$tmp/time")"
  if [ -z "$ns" ]; then cat "$tmp/out" "$tmp/time" >&2; exit 1; fi
  echo "$ns $rss"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for bench in Call Start; do
  n="$calls"; [ "$bench" = Start ] && n="$starts"
  : >"$tmp/plain" && : >"$tmp/sandboxed" && : >"$tmp/sdk"
  for r in $(seq "$runs"); do
    order="plain sandboxed"; [ $((r % 2)) -eq 0 ] && order="sandboxed plain"
    for v in $order; do one "$v" "$bench" "$n" >>"$tmp/$v"; done
    if [ "$bench" = Call ]; then one plain CallSDK "$n" >>"$tmp/sdk"; fi
  done
  p="$(cut -d' ' -f1 "$tmp/plain" | median)"
  s="$(cut -d' ' -f1 "$tmp/sandboxed" | median)"
  prss="$(cut -d' ' -f2 "$tmp/plain" | median)"
  srss="$(cut -d' ' -f2 "$tmp/sandboxed" | median)"
  awk -v b="$bench" -v p="$p" -v s="$s" -v pr="$prss" -v sr="$srss" -v runs="$runs" 'BEGIN {
    printf "%-5s plain %.3f ms  sandboxed %.3f ms  adds %.3f ms  ratio %.2f  (median of %d; peak RSS %d / %d KiB)\n",
      b, p/1e6, s/1e6, (s-p)/1e6, s/p, runs, pr, sr }'
  if [ "$bench" = Call ]; then
    k="$(cut -d' ' -f1 "$tmp/sdk" | median)"
    krss="$(cut -d' ' -f2 "$tmp/sdk" | median)"
    awk -v p="$p" -v k="$k" -v kr="$krss" -v runs="$runs" 'BEGIN {
      printf "Call  sdk client alone %.3f ms  mcp.Set / sdk %.2f  (median of %d; peak RSS %d KiB)\n", k/1e6, p/k, runs, kr }'
  fi
done
