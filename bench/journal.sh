#!/usr/bin/env bash
# Journal benchmarks (FORMAT §7.8, §7.9), each against a comparator measured
# in the same run on the same disk:
#   1. one appender: durable appends/s vs a raw write+fsync loop of the same
#      line size                                      (target >= 0.9x)
#   2. 16 concurrent appenders vs one (group commit)   (target >= 5x)
#   3. verify of a 1,000,000-event journal vs `openssl dgst -sha256` of the
#      same file                                       (target >= 0.5x)
#   4. merge of two journals sharing half their events: 10k, 100k, 1M
#      (100k must take under 1 s)
#   5. the commands, at 100k and 1M events, each with its peak RSS (target
#      under 100 MiB at 1M): `capsule log verify` beside `openssl dgst
#      -sha256` of the same file (target >= 0.6x), `capsule log` to a pipe
#      (target <= 2 s at 1M) and `capsule log merge` of two journals
#      sharing half their events. BEFORE=path/to/capsule runs an older
#      build in the same rounds, interleaved, for a before/after.
#
# Usage: bench/journal.sh [DIR]   (DIR: a directory on the disk to measure;
# default a fresh directory under /var/tmp). EVENTS=N changes the size of the
# verify journal; DURATION=1s the length of each append run, ROUNDS=5 their
# number (and of the command rounds). SIZES="100000 1000000" sets the
# command benchmark's journal sizes. PARTS="append verify merge cli" picks the benchmarks to run (e.g.
# PARTS=verify); JOURNALBENCH=path runs a prebuilt journalbench binary instead
# of building one, to compare two versions of the code on one machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

if [ $# -ge 1 ]; then dir="$1"; made=""; else dir="$(mktemp -d -p /var/tmp journalbench.XXXXXX)"; made="$dir"; fi
events="${EVENTS:-1000000}"
dur="${DURATION:-1s}"
rounds="${ROUNDS:-5}"
parts="${PARTS:-append verify merge cli}"
sizes="${SIZES:-100000 1000000}"
want() { [[ " $parts " == *" $1 "* ]]; }
bin="${JOURNALBENCH:-$dir/journalbench}"
built=""; [ -n "${JOURNALBENCH:-}" ] || built="$bin"
tmp="$dir/cli"
trap 'rm -rf "$dir/verify.jsonl" "$tmp" "$dir/capsule" ${built:+"$built"}; [ -z "$made" ] || rmdir "$made"' EXIT

[ -z "$built" ] || go build -o "$bin" ./bench/journalbench
echo "disk: $(df -h "$dir" | awk 'NR==2 {print $1, $6}')  cpus: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"

value() { awk '{print $2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

if want append; then
echo "== durable appends ($rounds alternating rounds of $dur each; the disk's speed drifts, so"
echo "   each comparison alternates its two sides and compares their means)"
sum() { awk '{ s += $1 } END { printf "%.1f", s / NR }'; }
raws=(); ones=(); sixteens=(); batches=()
for i in $(seq "$rounds"); do
  raws+=("$("$bin" fsync -dir "$dir" -for "$dur" | value)")
  ones+=("$("$bin" append -dir "$dir" -for "$dur" -workers 1 | value)")
  out=$("$bin" append -dir "$dir" -for "$dur" -workers 16)
  sixteens+=("$(echo "$out" | value)")
  batches+=("$(echo "$out" | sed 's/.*(\([0-9.]*\) events per fsync.*/\1/')")
done
raw=$(printf '%s\n' "${raws[@]}" | sum)
one=$(printf '%s\n' "${ones[@]}" | sum)
sixteen=$(printf '%s\n' "${sixteens[@]}" | sum)
batch=$(printf '%s\n' "${batches[@]}" | sum)
echo "raw write+fsync:   ${raws[*]}  mean $raw ops/s"
echo "1 appender:        ${ones[*]}  mean $one appends/s"
echo "16 appenders:      ${sixteens[*]}  mean $sixteen appends/s ($batch events per fsync)"
echo "RATIO 1 appender / raw fsync:   $(ratio "$one" "$raw")  (target >= 0.9)"
echo "RATIO 16 appenders / 1:         $(ratio "$sixteen" "$one")  (target >= 5)"
fi

if want verify; then
echo "== verify $events events"
"$bin" gen -n "$events" -o "$dir/verify.jsonl"
size=$(stat -c %s "$dir/verify.jsonl")
best_ssl=999999; best_ver=999999; cpu_ssl=999999; cpu_ver=999999
# Wall time of each run, and its CPU time (user+sys) from /usr/bin/time: on a
# shared machine the wall times swing with the load, the CPU times much less.
timed() { /usr/bin/time -f "%e %U %S" -o "$dir/time.txt" "$@" >/dev/null; awk '{ print $1, $2 + $3 }' "$dir/time.txt"; }
minof() { awk -v a="$1" -v b="$2" 'BEGIN { print (b < a) ? b : a }'; }
for i in 1 2 3; do
  read -r w c < <(timed openssl dgst -sha256 "$dir/verify.jsonl")
  best_ssl=$(minof "$best_ssl" "$w"); cpu_ssl=$(minof "$cpu_ssl" "$c")
  read -r w c < <(timed "$bin" verify "$dir/verify.jsonl")
  best_ver=$(minof "$best_ver" "$w"); cpu_ver=$(minof "$cpu_ver" "$c")
done
rm -f "$dir/time.txt"
ssl_mb=$(awk -v s="$size" -v t="$best_ssl" 'BEGIN { printf "%.1f", s / t / 1e6 }')
ver_mb=$(awk -v s="$size" -v t="$best_ver" 'BEGIN { printf "%.1f", s / t / 1e6 }')
echo "openssl dgst -sha256:   $ssl_mb MB/s (best of 3: $best_ssl s wall, $cpu_ssl s CPU; $size bytes)"
echo "capsule verify:         $ver_mb MB/s (best of 3: $best_ver s wall, $cpu_ver s CPU on $(nproc) cores)"
echo "RATIO verify / openssl:         $(ratio "$ver_mb" "$ssl_mb")  (target >= 0.5; wall clock, this run's load)"
echo "     by CPU time, each with its cores to itself: $(awk -v o="$cpu_ssl" -v v="$cpu_ver" -v n="$(nproc)" 'BEGIN { printf "%.2f", o / (v / n) }')"
fi

if want merge; then
echo "== merge (two journals sharing half their events)"
for n in 10000 100000 1000000; do
  "$bin" merge -n "$n"
done
fi

if want cli; then
echo "== commands ($rounds interleaved rounds; median wall and CPU, largest peak RSS)"
mkdir -p "$tmp"
go build -o "$dir/capsule" ./cmd/capsule
. bench/clitime.sh
sides="after"; [ -z "${BEFORE:-}" ] || sides="before after"
cap() { if [ "$1" = before ]; then echo "$BEFORE"; else echo "$dir/capsule"; fi; }
for n in $sizes; do
  "$bin" gen -n "$n" -o "$tmp/j.jsonl"
  "$bin" genmerge -n "$n" -a "$tmp/a.jsonl" -b "$tmp/b.jsonl"
  echo "-- $n events ($(stat -c %s "$tmp/j.jsonl") bytes)"
  for i in $(seq "$rounds"); do
    clirun "openssl-$n" openssl dgst -sha256 "$tmp/j.jsonl"
    for s in $sides; do
      clirun "verify-$s-$n" "$(cap "$s")" log verify "$tmp/j.jsonl"
      clirun "log-$s-$n" sh -c "\"$(cap "$s")\" log \"$tmp/j.jsonl\" | cat >/dev/null"
      clirun "merge-$s-$n" "$(cap "$s")" log merge "$tmp/a.jsonl" "$tmp/b.jsonl" -o "$tmp/m.jsonl"
    done
  done
  report "openssl-$n"
  for s in $sides; do
    for c in verify log merge; do report "$c-$s-$n"; done
    echo "  RATIO log verify / openssl ($s):   $(ratio "verify-$s-$n" "openssl-$n")  (target >= 0.6 at 1M)"
  done
done
fi
