#!/usr/bin/env bash
# Sandbox start-up per `run` call (issue 14, Performance: <= 20 ms median):
# `true` through sandbox.Command, per kind, against a bare fork/exec of the
# same command, with this tree's capsule binary as the sandbox's init.
#
# Each round runs every mode once, in order (interleaved), as its own
# process (bench/sandboxbench) making N calls; the script prints each run
# and then, per mode, the median over the rounds of the per-run medians,
# the ratio to bare, the overhead in ms, the CPU time per call (user+system
# of this process and every process it waited for: it does not grow with
# the machine's load, which the wall time does), and the peak RSS of one
# call's processes (wait4's rusage maxrss: the largest of bwrap, the
# capsule init and `true`; for bare, Go's vfork child before exec counts).
#
# Modes: bare; bwrap-cli (bwrap alone with the same namespaces and mounts:
# bwrap's own share); bwrap (the direct path a run call takes: bwrap, a shell
# joining the cgroups, prlimit); bwrap-init (bwrap through the capsule
# init, the path of an output limit or network hosts); landlock (the
# capsule init applying Landlock and seccomp).
#
# Usage: bench/sandbox.sh   ROUNDS=5 N=40 MODES="bare bwrap-cli bwrap bwrap-init landlock"
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

rounds="${ROUNDS:-5}"
n="${N:-40}"
modes="${MODES:-bare bwrap-cli bwrap bwrap-init landlock}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/capsule" ./cmd/capsule
go build -o "$tmp/sandboxbench" ./bench/sandboxbench
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; rounds $rounds x $n calls"

for r in $(seq "$rounds"); do
  for m in $modes; do
    line="$("$tmp/sandboxbench" -mode "$m" -init "$tmp/capsule" -n "$n")"
    echo "round $r: $line"
    echo "$line" >> "$tmp/runs"
  done
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
bare="$(awk '$1=="bare" {print $3}' "$tmp/runs" | median)"
printf '%-11s %10s %8s %12s %12s %12s\n' mode median_ms ratio overhead_ms cpu_ms/call peak_rss_MiB
for m in $modes; do
  med="$(awk -v m="$m" '$1==m {print $3}' "$tmp/runs" | median)"
  rss="$(awk -v m="$m" '$1==m {print $7}' "$tmp/runs" | sort -n | tail -1)"
  cpu="$(awk -v m="$m" '$1==m {print $9 + $11}' "$tmp/runs" | median)"
  awk -v m="$m" -v med="$med" -v bare="$bare" -v rss="$rss" -v cpu="$cpu" 'BEGIN {
    printf "%-11s %10.2f %8.1f %12.2f %12.2f %12.1f\n", m, med/1000, med/bare, (med-bare)/1000, cpu/1000, rss/1024 }'
done
