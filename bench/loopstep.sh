#!/usr/bin/env bash
# The agent loop's own cost per step (issue 13, Performance): everything
# except the model's and the tool's time, at 10k and 100k events, with the
# full render of main (wire.Render at every model step) and with the
# node's per-run wire.Incremental, against the cost of one fsync on the
# same disk. Target: <= 5 ms median at 10k events, <= 10 ms at 100k.
#
#   bench/loopstep.sh                 # 5 interleaved rounds
#   ROUNDS=3 SIZES=10k bench/loopstep.sh
#   BEFORE=576a651 bench/loopstep.sh  # also "before-full" and
#                                     # "before-incremental": both renders
#                                     # of an older commit (one that has
#                                     # BenchmarkStep), in the same rounds
#
# Each case runs in its own process (agent.BenchmarkStep/<size>/<mode>,
# BENCHTIME operations of one model step and one tool step each), so peak
# RSS is per case; the cases are interleaved round by round and the
# medians over rounds are printed. The fsync is bench/fsyncbench: a 512-
# byte append and fsync in DIR (default: the disk the node's data sits on,
# /var/tmp), median of 200.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
rounds="${ROUNDS:-5}"
sizes="${SIZES:-10k 100k}"
modes="full incremental"
dir="${DIR:-/var/tmp}"
tmp="$(mktemp -d -p /var/tmp loopstep.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
echo "# $(go version); $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)"
go test -c -o "$tmp/agent.test" ./agent
if [ -n "${BEFORE:-}" ]; then
  mkdir "$tmp/before"
  git archive "$BEFORE" | tar -x -C "$tmp/before"
  (cd "$tmp/before" && go test -c -o "$tmp/before.test" ./agent)
  modes="before-full before-incremental full incremental"
fi
go build -o "$tmp/fsyncbench" ./bench/fsyncbench
benchtime() { if [ "$1" = 100k ]; then echo "${BENCHTIME100K:-20x}"; else echo "${BENCHTIME:-40x}"; fi; }
for r in $(seq "$rounds"); do
  "$tmp/fsyncbench" -dir "$dir" -n 200 | awk '{print $2}' >>"$tmp/fsync"
  for n in $sizes; do
    for m in $modes; do
      bin="$tmp/agent.test" case="$m"
      case "$m" in before-*) bin="$tmp/before.test" case="${m#before-}" ;; esac
      /usr/bin/time -f '%M' -o "$tmp/rss" "$bin" -test.run '^$' \
        -test.bench "BenchmarkStep/$n/$case\$" -test.benchtime "$(benchtime "$n")" >"$tmp/out"
      line="$(grep "^BenchmarkStep/$n/$case" "$tmp/out")" || { cat "$tmp/out"; exit 1; }
      model="$(awk '{for (i = 1; i < NF; i++) if ($(i+1) == "model-ns/step") print $i}' <<<"$line")"
      tool="$(awk '{for (i = 1; i < NF; i++) if ($(i+1) == "tool-ns/step") print $i}' <<<"$line")"
      cpu="$(awk '{for (i = 1; i < NF; i++) if ($(i+1) == "model-cpu-ns/step") print $i}' <<<"$line")"
      echo "$model $tool $(cat "$tmp/rss") $cpu" >>"$tmp/$n-$m"
      echo "  round $r $n $m: model $model ns (cpu $cpu ns), tool $tool ns, peak RSS $(cat "$tmp/rss") KiB"
    done
  done
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
fsync="$(median <"$tmp/fsync")"
printf '== medians of %s interleaved rounds; one fsync (512 B append) in %s: %.3f ms\n' "$rounds" "$dir" "$(awk -v f="$fsync" 'BEGIN {print f / 1e6}')"
for n in $sizes; do
  for m in $modes; do
    mod="$(cut -d' ' -f1 <"$tmp/$n-$m" | median)"
    tool="$(cut -d' ' -f2 <"$tmp/$n-$m" | median)"
    rss="$(cut -d' ' -f3 <"$tmp/$n-$m" | sort -n | tail -1)"
    cpu="$(cut -d' ' -f4 <"$tmp/$n-$m" | median)"
    echo "$mod" >"$tmp/med-$n-$m"
    awk -v n="$n" -v m="$m" -v mod="$mod" -v tool="$tool" -v f="$fsync" -v rss="$rss" -v cpu="$cpu" 'BEGIN {
      printf "%-5s %-18s model step %8.2f ms wall, %8.2f ms cpu (= %6.1f fsyncs)  tool step %6.2f ms (= %5.1f fsyncs)  peak RSS %4d MiB\n",
        n, m, mod / 1e6, cpu / 1e6, mod / f, tool / 1e6, tool / f, rss / 1024 }'
  done
  for m in $modes; do
    [ "$m" = incremental ] && continue
    awk -v a="$(cat "$tmp/med-$n-$m")" -v b="$(cat "$tmp/med-$n-incremental")" -v n="$n" -v m="$m" \
      'BEGIN {printf "%-5s RATIO %s / incremental, model step wall: %.2fx\n", n, m, a / b}'
  done
done
