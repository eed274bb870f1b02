# Helpers for the benchmarks that time whole commands (sourced by
# bench/journal.sh and bench/render.sh). Each case runs its commands
# interleaved, ROUNDS times, and prints for each the median wall time,
# median CPU time (user+sys) and the largest peak RSS, from /usr/bin/time.

# clirun LABEL CMD... : run once, append "wall cpu rss_kb" to $tmp/LABEL.
clirun() {
  local label="$1"; shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time.txt" "$@" >/dev/null 2>"$tmp/err.txt" || { cat "$tmp/err.txt" >&2; return 1; }
  awk '{ print $1, $2 + $3, $4 }' "$tmp/time.txt" >>"$tmp/$label"
}

# median COLUMN LABEL: the median of a column of $tmp/LABEL.
median() { sort -n -k"$1" "$tmp/$2" | awk -v c="$1" '{ v[NR] = $c } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maxof() { sort -n -k"$1" "$tmp/$2" | tail -1 | awk -v c="$1" '{ print $c }'; }

# report LABEL: one line of medians for a label.
report() {
  printf "  %-34s %7.3f s wall  %7.3f s cpu  peak RSS %5d MiB  (median of %d)\n" "$1" "$(median 1 "$1")" "$(median 2 "$1")" "$(( $(maxof 3 "$1") / 1024 ))" "$(wc -l <"$tmp/$1")"
}

# ratio A B: median wall of B over median wall of A (how many times faster A is).
ratio() { awk -v a="$(median 1 "$1")" -v b="$(median 1 "$2")" 'BEGIN { printf "%.2f", b / a }'; }
