#!/bin/sh
# Rendering benchmarks (brief H5): a journal of 10k, 100k and 1M events
# rendered into a 128k-token window for each API, and the linear pass
# alone. Target: under 100 ms for 100k events, linear in journal size.
#
#   bench/render.sh            # 5 iterations per case
#   COUNT=3 bench/render.sh    # repeat each case for benchstat
#
# ns/op is wall time; cpu-ms/op is the process's CPU time per render (all
# threads, garbage collection included), which stays meaningful on a busy
# machine. kept-events is how many events the window holds.
set -eu
cd "$(dirname "$0")/.."
echo "# $(go version); $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)"
go test ./render -run '^$' -bench 'BenchmarkRender|BenchmarkPlan' \
	-benchtime "${BENCHTIME:-5x}" -count "${COUNT:-1}" -benchmem -timeout 30m
