#!/usr/bin/env bash
# Fleet mode's authority (PROTOCOL §12): one compare-and-swap round trip of an
# agent's key on an embedded etcd 3.6 (mutual TLS, loopback, its WAL on this
# disk) beside the local comparator, authority.Mem kept in a fsynced file (the
# shape of a node's own record write), and the move's Activate without a cached
# entry (a read and a swap). ROUNDS (default 5) interleaved runs of
# BenchmarkCAS; prints the median of each run's p50 and p99, the ratio of
# etcd's p50 to the file's, and the test process's peak RSS (it hosts etcd).
#
# Usage: bench/authority.sh   (ROUNDS=N, N=swaps per run, default 400)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
rounds="${ROUNDS:-5}"
n="${N:-400}"
bin="$(mktemp -d)/etcd.test"
go test -c -o "$bin" ./authority/etcd/
out="$(mktemp)"
for _ in $(seq "$rounds"); do
	(cd authority/etcd && "$bin" -test.run '^$' -test.bench CAS -test.benchtime "${n}x") | grep '^BenchmarkCAS' >>"$out"
done
awk '
function median(list,   n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	name = $1; sub(/^BenchmarkCAS\//, "", name); sub(/-[0-9]+$/, "", name)
	for (i = 2; i < NF; i++) {
		if ($(i + 1) == "p50-µs") p50[name] = p50[name] " " $i
		if ($(i + 1) == "p99-µs") p99[name] = p99[name] " " $i
		if ($(i + 1) == "maxrss-MB" && $i + 0 > rss) rss = $i + 0
	}
}
END {
	for (k in p50) printf "%-14s p50 %6.0f µs   p99 %6.0f µs   (median of %d runs)\n", k, median(p50[k]), median(p99[k]), split(p50[k], x, " ")
	printf "ratio etcd/memfile (p50): %.2f\npeak RSS of the test process (etcd inside): %.1f MB\n", median(p50["etcd"]) / median(p50["memfile"]), rss
}' "$out"
rm -f "$out" "$bin"
