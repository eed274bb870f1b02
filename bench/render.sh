#!/usr/bin/env bash
# Rendering benchmarks (brief H5, issue 11 §2 and §4).
#
#  1. In memory: a journal of 10k, 100k and 1M events rendered into a
#     128k-token window for each API, and the linear pass alone. Target:
#     under 100 ms for 100k events, linear in journal size.
#  2. End to end: `capsule render` of a journal file of 100k and 1M events
#     (journalbench genrender: user turns, reasoning, parallel calls, results
#     of a few kilobytes) for Anthropic, OpenAI Chat and Gemini, with its
#     peak RSS. Targets: 100k <= 150 ms, 1M <= 1.5 s, under 100 MiB at 1M.
#     BEFORE=path/to/capsule runs an older build in the same rounds,
#     interleaved, for a before/after; their outputs must be identical.
#
#   bench/render.sh                  # both parts
#   PARTS=cli ROUNDS=5 bench/render.sh
#   COUNT=3 PARTS=mem bench/render.sh  # repeat each case for benchstat
#
# ns/op is wall time; cpu-ms/op is the process's CPU time per render (all
# threads, garbage collection included), which stays meaningful on a busy
# machine. kept-events is how many events the window holds.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
parts="${PARTS:-mem cli}"
want() { [[ " $parts " == *" $1 "* ]]; }
echo "# $(go version); $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)"
if want mem; then
go test ./render -run '^$' -bench 'BenchmarkRender|BenchmarkPlan' \
	-benchtime "${BENCHTIME:-5x}" -count "${COUNT:-1}" -benchmem -timeout 30m
fi
if want cli; then
rounds="${ROUNDS:-5}"
tmp="$(mktemp -d -p /var/tmp renderbench.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/capsule" ./cmd/capsule
go build -o "$tmp/journalbench" ./bench/journalbench
. bench/clitime.sh
sides="after"; [ -z "${BEFORE:-}" ] || sides="before after"
cap() { if [ "$1" = before ]; then echo "$BEFORE"; else echo "$tmp/capsule"; fi; }
targets="anthropic:claude-sonnet-4-6 openai-chat:gpt-4.1 gemini:gemini-3-pro"
echo "== capsule render, end to end ($rounds interleaved rounds; median wall and CPU, largest peak RSS)"
for n in ${SIZES:-100000 1000000}; do
  "$tmp/journalbench" genrender -n "$n" -o "$tmp/j.jsonl"
  echo "-- $n events ($(stat -c %s "$tmp/j.jsonl") bytes)"
  for t in $targets; do
    args=(render "$tmp/j.jsonl" --provider "${t%%:*}" --model "${t##*:}" --window 128000)
    for i in $(seq "$rounds"); do
      for s in $sides; do clirun "$t-$s-$n" "$(cap "$s")" "${args[@]}"; done
    done
    for s in $sides; do "$(cap "$s")" "${args[@]}" >"$tmp/out-$s"; report "$t-$s-$n"; done
    if [ -n "${BEFORE:-}" ]; then
      cmp -s "$tmp/out-before" "$tmp/out-after" && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
      echo "  RATIO before / after wall: $(ratio "$t-after-$n" "$t-before-$n")"
    fi
  done
done
fi
