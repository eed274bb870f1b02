#!/usr/bin/env bash
# Issue 11's closing figures: every figure of §2-§5, before and after,
# each beside its comparator, measured in one run on the same data.
#
# "before" is capsule built from BEFORE (default 592e81d, main just before
# the issue-11 work; built once from git history into
# ~/.cache/capsule-bench/capsule-<commit>), "after" is this tree. The data
# is made once per size by the existing makers (bench/mktree,
# bench/exportdata -direct, bench/journalbench); then each case runs its
# tools RUNS times, interleaved and rotated round by round so that load
# elsewhere on the machine hits them alike. Wall time comes from bash's
# clock, CPU time (user + system) and peak RSS from GNU time: the cells
# give the median wall and CPU seconds, the RSS the largest of the runs. At the end it
# prints one markdown table:
#   figure | comparator | before | after | ratio | peak RSS | target | met?
# where the ratio is capsule against the comparator (before -> after), and
# "met?" judges the after build against the issue's target.
#
#   §2  peak RSS of verify, snapshot, export, import, checkout at 10k files
#       of 1 KiB (and 1M with -million), and at 100k files from §3's runs on
#       100k x 10 KiB (the issue's 1 GB workspace; 100k x 1 KiB of their own
#       when §3 is not run), and of render, log, log verify, log merge at
#       100k and 1M events (target < 100 MiB). The file-count cases of their
#       own run -rssruns rounds (default 1: a peak RSS hardly varies).
#   §3  snapshot of 10k x 100 KiB (<= 1.5x) and 100k x 10 KiB (<= 2x)
#       against tar -cf + sync; export --no-verify of 100k x 10 KiB against
#       tar -cf, import against tar -xf and tar -xf + sha256sum -c (>= 0.8x)
#   §4  log verify against openssl dgst -sha256 of the same file (>= 0.6x at
#       1M), capsule log of 1M events to a pipe (<= 2 s), render of 100k
#       (<= 150 ms) and 1M events (<= 1.5 s), Anthropic, 128k window
#   §5  verify of one 1 GiB file (>= 1.0x) and of 10k x 100 KiB (>= 1.5x)
#       against xargs -0 openssl dgst -sha256 of the blobs, medians of at
#       least 5 rounds
#
#   bench/issue11.sh                    # §2-§5, RUNS=3, 1M events, no 1M files
#   bench/issue11.sh -quick             # small sizes, one round: a smoke run
#   bench/issue11.sh -million           # also 1M files in §2 (~18 GiB of disk and
#                                       # 5M inodes at once, checked first)
#   bench/issue11.sh -sections "3 5" -runs 5
#   bench/issue11.sh -million-before    # with -million, also before's 1M-file
#                                       # snapshot (an fsync per blob: many minutes)
#   bench/issue11.sh -before v0.1.0 -dir /var/tmp/b11 -o table.md
#
# Needs git, Go, GNU tar, openssl, sha256sum and GNU time at /usr/bin/time.
# Data lives under -dir (default a fresh folder under /var/tmp: a real disk,
# for the sync costs to mean anything), removed at the end. On a machine
# shared with other work the times swing: read the load averages printed
# with the table.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

before_ref=592e81d runs=3 rssruns=1 sections="2 3 4 5" quick="" million="" million_before="" dir="" out=""
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
  -quick) quick=1 ;;
  -million) million=1 ;;
  -million-before) million=1 million_before=1 ;;
  -runs) runs=$2; shift ;;
  -rssruns) rssruns=$2; shift ;;
  -sections) sections=$2; shift ;;
  -before) before_ref=$2; shift ;;
  -dir) dir=$2; shift ;;
  -o) out=$2; shift ;;
  -h | -help | --help) usage ;;
  *) echo "bench/issue11.sh: unknown flag $1" >&2; usage ;;
  esac
  shift
done
want() { [[ " $sections " == *" $1 "* ]]; }
for tool in git go tar openssl sha256sum /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench/issue11.sh: $tool is missing" >&2; exit 1; }
done

# The sizes of every case; -quick shrinks them all.
files="10000" events="100000 1000000"
snapsets="10000:102400 100000:10240" xfer=100000:10240
big=$((1 << 30)) many=10000:102400 hashruns=$((runs > 5 ? runs : 5))
if [ -n "$quick" ]; then
  runs=1 hashruns=1 files="500" events="10000"
  snapsets="500:102400 2000:10240" xfer=2000:10240 big=$((64 << 20)) many=500:102400
fi
want 3 || files="$files ${xfer%%:*}"
[ -n "$million" ] && files="$files 1000000"

if [ -n "$dir" ]; then mkdir -p "$dir"; work=$(mktemp -d "$dir/issue11.XXXXXX"); else work=$(mktemp -d -p /var/tmp issue11.XXXXXX); fi
trap 'rm -rf "$work"' EXIT
m=$work/m
mkdir -p "$m" "$work/bin"
tmp=$m # bench/clitime.sh keeps one file per label in $tmp
. bench/clitime.sh

# build: the before binary (cached by commit), the after binary and the
# data makers, all into $work/bin except the cached one.
build() {
  local full src cache
  full=$(git rev-parse "$before_ref^{commit}")
  before_commit=${full:0:7}
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/capsule-bench
  B=$cache/capsule-$full
  if [ ! -x "$B" ]; then
    echo "bench/issue11.sh: building before ($before_commit) into $cache" >&2
    mkdir -p "$cache"
    src=$(mktemp -d)
    git archive "$full" | tar -x -C "$src"
    (cd "$src" && go build -o "$B.tmp" ./cmd/capsule) && mv "$B.tmp" "$B"
    rm -rf "$src"
  fi
  A=$work/bin/after
  go build -o "$A" ./cmd/capsule
  local t
  for t in mktree exportdata journalbench; do go build -o "$work/bin/$t" "./bench/$t"; done
}

# bin TOOL: the capsule binary of before or after.
bin() { if [ "$1" = before ]; then echo "$B"; else echo "$A"; fi; }

# timed LABEL CMD...: one run of CMD (bench/clitime.sh's clirun), stdout
# discarded; appends "wall_seconds cpu_seconds peak_KiB" to $m/LABEL.
timed() {
  local label=$1
  shift
  clirun "$label" "$@" || { echo "bench/issue11.sh: $label: $*" >&2; return 1; }
}

# interleave ROUNDS STEP...: runs the STEPs (shell snippets) ROUNDS times,
# the order rotated by one each round; $round is the round number.
interleave() {
  local rounds=$1 k n
  shift
  n=$#
  local steps=("$@")
  for ((round = 0; round < rounds; round++)); do
    for ((k = 0; k < n; k++)); do eval "${steps[$(((k + round) % n))]}"; done
  done
}

# secs LABEL: median seconds; mib LABEL: the largest peak RSS in MiB.
secs() { median 1 "$1"; }
cpus() { median 2 "$1"; }
mib() { echo $(($(maxof 3 "$1") / 1024)); }
has() { [ -s "$m/$1" ]; }
fmt_s() { awk -v s="$1" 'BEGIN{printf (s < 10 ? "%.3f s" : "%.1f s"), s}'; }
cell() { if has "$1"; then echo "$(fmt_s "$(secs "$1")") (cpu $(fmt_s "$(cpus "$1")"), n=$(wc -l <"$m/$1"))"; else echo skipped; fi; }
rsscell() { if has "$1"; then mib "$1"; else echo -n "-"; fi; }
human() { awk -v n="$1" 'function p(v, u) { printf (v == int(v) ? "%d %s" : "%.1f %s"), v, u } BEGIN{if (n >= 2^30) p(n/2^30, "GiB"); else if (n >= 2^20) p(n/2^20, "MiB"); else if (n >= 1024) p(n/1024, "KiB"); else p(n, "B")}'; }
count() { awk -v n="$1" 'BEGIN{if (n >= 1e6 && n % 1e6 == 0) printf "%gM", n/1e6; else if (n >= 1e3 && n % 1e3 == 0) printf "%gk", n/1e3; else print n}'; }

# row KIND FIGURE CASE COMP_LABEL COMP_NAME TARGET: one line of the table
# for $m/CASE.before and $m/CASE.after. KIND says what the target bounds:
#   slower  capsule time / comparator time <= TARGET
#   faster  comparator time / capsule time >= TARGET
#   secs    after's median seconds <= TARGET (no comparator)
#   rss     after's peak RSS < TARGET MiB (no comparator)
# A TARGET of "-" is a figure the issue sets no target for at this size.
row() {
  local kind=$1 fig=$2 c=$3 comp=$4 cname=$5 target=$6
  local b=$c.before a=$c.after compcell="-" ratio="-" tcell met="-"
  if [ -n "$comp" ]; then compcell="$cname $(fmt_s "$(secs "$comp")") (cpu $(fmt_s "$(cpus "$comp")"))"; fi
  local r expr="" v=""
  case $kind in
  slower) expr='x / c'; tcell="<= ${target}x" ;;
  faster) expr='c / x'; tcell=">= ${target}x" ;;
  secs) expr='b / x'; tcell="<= $(fmt_s "$target")" ;;
  rss) expr='b / x'; tcell="< $target MiB" ;;
  esac
  local cs=0
  [ -n "$comp" ] && cs=$(secs "$comp")
  ratio_of() { has "$1" && awk -v x="$(secs "$1")" -v c="$cs" -v b="$(has "$b" && secs "$b" || echo 0)" "BEGIN{printf \"%.2f\", $expr}"; }
  case $kind in
  slower | faster) ratio="$(ratio_of "$b" || echo -) -> $(ratio_of "$a" || echo -)" ;;
  *) has "$b" && ratio="after $(ratio_of "$a")x faster than before" ;;
  esac
  if [ "$target" = - ]; then
    tcell="- (none at this size)"
  elif has "$a"; then
    case $kind in
    slower) v=$(ratio_of "$a"); met=$(awk -v v="$v" -v t="$target" 'BEGIN{print (v <= t) ? "yes" : "no"}') ;;
    faster) v=$(ratio_of "$a"); met=$(awk -v v="$v" -v t="$target" 'BEGIN{print (v >= t) ? "yes" : "no"}') ;;
    secs) met=$(awk -v v="$(secs "$a")" -v t="$target" 'BEGIN{print (v <= t) ? "yes" : "no"}') ;;
    rss) met=$(awk -v v="$(mib "$a")" -v t="$target" 'BEGIN{print (v < t) ? "yes" : "no"}') ;;
    esac
  fi
  echo "| $fig | $compcell | $(cell "$b") | $(cell "$a") | $ratio | $(rsscell "$b") / $(rsscell "$a") MiB | $tcell | $met |" | tee -a "$work/table" >&2
}

# need DIR GIB INODES: refuse to go on without that much room at DIR.
need() {
  local avail ifree
  avail=$(df -k --output=avail "$1" | tail -1)
  ifree=$(df --output=iavail "$1" | tail -1)
  if [ "$avail" -lt $(($2 << 20)) ] || [ "$ifree" -lt "$3" ]; then
    echo "bench/issue11.sh: needs $2 GiB and $3 inodes free at $1 (df -h, df -i)" >&2
    exit 1
  fi
}
warm() { find "$1" -type f -exec cat {} + >/dev/null; }
say() { echo "== $* ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))" >&2; }

# as_before DIR: rolls a capsule the data makers wrote (this tree's schema
# versions) down to the versions the before binary reads, with the after
# binary's own migrate: both sides then read the same bytes, before as its
# own format and after through its migration steps, as on an upgrade.
as_before() {
  "$A" migrate "$1" --to 0.1.0 >/dev/null
}

# files_rss N: §2, peak RSS of the file commands at N files of 1 KiB.
files_rss() {
  local n=$1 d=$work/files-$1 r=$rssruns t c steps=()
  need "$work" $((n * 16 / 1000 / 1000 + 2)) $((n * 5 + 100000))
  mkdir -p "$d"
  say "§2 $(count "$n") files of 1 KiB: making the data"
  "$work/bin/exportdata" -direct -dir "$d/cap" -n "$n" -size 1024
  as_before "$d/cap"
  "$work/bin/mktree" -dir "$d/ws" -n "$n" -size 1024
  "$A" export "$d/cap" -o "$d/in.tar" -q --no-verify >/dev/null
  for t in before after; do
    for c in verify export import checkout snapshot; do
      if [ "$c$t$n" = snapshotbefore1000000 ] && [ -z "$million_before" ]; then continue; fi
      steps+=("file_cmd $c $t $n $d")
    done
  done
  say "§2 $(count "$n") files: $r round(s)"
  interleave "$r" "${steps[@]}"
  files_rows "$(count "$n") files x 1 KiB" "f$n-"
  rm -rf "$d"
}

# files_rows WHAT PREFIX: the §2 rows of the file commands' runs
# PREFIX{verify,snapshot,export,import,checkout}.
files_rows() {
  local c
  for c in verify snapshot export import checkout; do
    if has "$2$c.after"; then row rss "§2 $c, $1: peak RSS" "$2$c" "" "" 100; fi
  done
}

# file_cmd CMD TOOL N DIR: one run of a file command (outputs removed after).
file_cmd() {
  local c=$1 t=$2 n=$3 d=$4 x
  x=$(bin "$t")
  case $c in
  verify) timed "f$n-verify.$t" "$x" verify "$d/cap" -q ;;
  export) timed "f$n-export.$t" "$x" export "$d/cap" -o "$d/x.tar" -q --no-verify; rm -f "$d/x.tar" ;;
  import) timed "f$n-import.$t" "$x" import "$d/in.tar" -o "$d/i" -q --max-entries $((2 * n + 1000)); rm -rf "$d/i" ;;
  checkout) timed "f$n-checkout.$t" "$x" checkout "$d/cap" --to "$d/co"; rm -rf "$d/co" ;;
  snapshot)
    "$x" init "$d/s" >/dev/null
    sync
    timed "f$n-snapshot.$t" "$x" snapshot "$d/s" --from "$d/ws" -q
    rm -rf "$d/s" ;;
  esac
  sync
}

# journal_cases N: §2 and §4 at N events (journalbench gen, genmerge,
# genrender), openssl over the same file as the comparator of log verify.
journal_cases() {
  local n=$1 d=$work/events-$1 t steps=()
  steps+=("timed e$n-openssl openssl dgst -sha256 $d/j.jsonl")
  mkdir -p "$d"
  say "§2/§4 $(count "$n") events: making the journals"
  "$work/bin/journalbench" gen -n "$n" -o "$d/j.jsonl"
  "$work/bin/journalbench" genmerge -n "$n" -a "$d/a.jsonl" -b "$d/b.jsonl"
  "$work/bin/journalbench" genrender -n "$n" -o "$d/r.jsonl"
  for t in before after; do
    local x
    x=$(bin "$t")
    steps+=("timed e$n-verify.$t $x log verify $d/j.jsonl"
      "timed e$n-log.$t sh -c '\"\$1\" log \"\$2\" | cat >/dev/null' sh $x $d/j.jsonl"
      "timed e$n-merge.$t $x log merge $d/a.jsonl $d/b.jsonl -o $d/m-$t.jsonl"
      "timed e$n-render.$t $x render $d/r.jsonl --provider anthropic --model claude-sonnet-4-6 --window 128000")
  done
  say "§2/§4 $(count "$n") events: $runs round(s)"
  interleave "$runs" "${steps[@]}"
  local e
  e="$(count "$n") events ($(human "$(stat -c %s "$d/j.jsonl")"))"
  if want 4; then
    row faster "§4 log verify, $e" "e$n-verify" "e$n-openssl" "openssl dgst -sha256" "$([ "$n" = 1000000 ] && echo 0.6 || echo -)"
    row secs "§4 capsule log to a pipe, $(count "$n") events" "e$n-log" "" "" "$([ "$n" = 1000000 ] && echo 2 || echo -)"
    local rt=-
    [ "$n" = 100000 ] && rt=0.15
    [ "$n" = 1000000 ] && rt=1.5
    row secs "§4 render, $(count "$n") events (anthropic, 128k window)" "e$n-render" "" "" "$rt"
  fi
  if want 2; then
    local name
    for t in render log verify merge; do
      case $t in render | log) name=$t ;; *) name="log $t" ;; esac
      row rss "§2 $name, $(count "$n") events: peak RSS" "e$n-$t" "" "" 100
    done
  fi
  rm -rf "$d"
}

# snapshot_case N SIZE: §3, snapshot against tar -cf + sync; every run's
# output kept until the case ends (ext4 delays reusing freed inodes, which
# would slow the next run's creations; a real snapshot pays that once).
snapshot_case() {
  local n=$1 size=$2 d=$work/snap-$1 t steps=()
  need "$work" $((n * (size + 4096) * (3 * runs + 1) / (1 << 30) + 2)) $((n * (3 * runs + 1) + 100000))
  mkdir -p "$d"
  say "§3 snapshot $(count "$n") x $(human "$size"): making the workspace"
  "$work/bin/mktree" -dir "$d/ws" -n "$n" -size "$size"
  warm "$d/ws"
  for t in tar before after; do steps+=("snap_run $t $n $d"); done
  interleave "$runs" "${steps[@]}"
  local target=-
  [ "$n:$size" = 10000:102400 ] && target=1.5
  [ "$n:$size" = 100000:10240 ] && target=2
  row slower "§3 snapshot, $(count "$n") x $(human "$size")" "s$n" "s$n.tar" "tar -cf + sync" "$target"
  rm -rf "$d"
}

snap_run() {
  local t=$1 n=$2 d=$3 o=$3/out-$1-$round
  sync
  if [ "$t" = tar ]; then
    timed "s$n.tar" sh -c 'tar -cf "$1" -C "$2" . && sync' sh "$o.tar" "$d/ws"
  else
    "$(bin "$t")" init "$o" >/dev/null
    sync
    timed "s$n.$t" "$(bin "$t")" snapshot "$o" --from "$d/ws" -q
  fi
}

# transfer_case N SIZE: §3, export --no-verify against tar -cf, import
# (verifies, syncs) against tar -xf and tar -xf + sha256sum -c.
transfer_case() {
  local n=$1 size=$2 d=$work/xfer-$1 t
  need "$work" $((n * (size + 4096) * 6 / (1 << 30) + 2)) $((n * 4 + 100000))
  mkdir -p "$d"
  say "§3 export/import $(count "$n") x $(human "$size"): making the capsule"
  "$work/bin/exportdata" -direct -dir "$d/cap" -n "$n" -size "$size"
  as_before "$d/cap"
  (cd "$d/cap" && find . -type f -printf '%P\0' | sort -z | xargs -0 sha256sum) >"$d/SUMS"
  "$A" export "$d/cap" -o "$d/in.tar" -q --no-verify >/dev/null
  tar -cf "$d/ref.tar" -C "$d/cap" .
  warm "$d/cap"
  local steps=("rm -f $d/t.tar; timed x$n-export.tar tar -cf $d/t.tar -C $d/cap ."
    "xfer_extract x$n-import.tar $d"
    "xfer_extract x$n-import.tarsum $d -c")
  for t in before after; do
    steps+=("rm -f $d/x.tar; timed x$n-export.$t $(bin "$t") export $d/cap -o $d/x.tar -q --no-verify"
      "timed x$n-import.$t $(bin "$t") import $d/in.tar -o $d/i -q --max-entries $((2 * n + 1000)); rm -rf $d/i; sync")
    if want 2; then
      steps+=("timed x$n-verify.$t $(bin "$t") verify $d/cap -q"
        "timed x$n-checkout.$t $(bin "$t") checkout $d/cap --to $d/co; rm -rf $d/co; sync")
    fi
  done
  say "§3 export/import $(count "$n"): $runs round(s)"
  interleave "$runs" "${steps[@]}"
  local f
  f="$(count "$n") x $(human "$size")"
  row faster "§3 export --no-verify, $f" "x$n-export" "x$n-export.tar" "tar -cf" "$([ "$n" = 100000 ] && echo 0.8 || echo -)"
  row faster "§3 import (verifies, syncs), $f" "x$n-import" "x$n-import.tar" "tar -xf" "$([ "$n" = 100000 ] && echo 0.8 || echo -)"
  row faster "§3 import (verifies, syncs), $f" "x$n-import" "x$n-import.tarsum" "tar -xf + sha256sum -c" "$([ "$n" = 100000 ] && echo 0.8 || echo -)"
  if want 2; then
    for t in before after; do
      if has "s$n.$t"; then cp "$m/s$n.$t" "$m/x$n-snapshot.$t"; fi
    done
    files_rows "$f (§3's runs)" "x$n-"
  fi
  rm -rf "$d"
}

# xfer_extract LABEL DIR [-c]: tar -xf of the reference archive (and with
# -c its sha256sum -c), into a fresh folder removed after.
xfer_extract() {
  local label=$1 d=$2
  rm -rf "$d/x" && mkdir "$d/x"
  if [ "${3:-}" = -c ]; then
    timed "$label" sh -c 'tar -xf "$1" -C "$2" && cd "$2" && sha256sum -c --quiet "$3"' sh "$d/ref.tar" "$d/x" "$d/SUMS"
  else
    timed "$label" tar -xf "$d/ref.tar" -C "$d/x"
  fi
  rm -rf "$d/x"
  sync
}

# hash_case TITLE N SIZE TARGET: §5, verify against openssl over the blobs,
# $hashruns rounds, rotated.
hash_case() {
  local title=$1 n=$2 size=$3 target=$4 d=$work/hash-$2 t
  need "$work" $((n * size / (1 << 30) + 2)) $((n + 100000))
  say "§5 verify of $title: making the capsule"
  "$work/bin/exportdata" -direct -dir "$d" -n "$n" -size "$size"
  as_before "$d"
  find "$d/artifacts/blobs" -type f -print0 >"$work/list-$n"
  warm "$d"
  local steps=("timed h$n.openssl sh -c 'xargs -0 openssl dgst -sha256 <\"\$1\"' sh $work/list-$n")
  for t in before after; do steps+=("timed h$n.$t $(bin "$t") verify $d -q"); done
  interleave "$hashruns" "${steps[@]}"
  local std=-
  { [ "$n:$size" = "1:$((1 << 30))" ] || [ "$n:$size" = 10000:102400 ]; } && std=$target
  row faster "§5 verify, $title" "h$n" "h$n.openssl" "openssl dgst -sha256" "$std"
  rm -rf "$d"
}
build
echo "# $(nproc) CPUs, $(free -g | awk '/^Mem/{print $2}') GiB RAM; $(df -T "$work" | awk 'NR==2{print $2}') at $work; Go $(go env GOVERSION); $(openssl version | cut -d' ' -f1-2); $(tar --version | head -1)" | tee "$work/head"
echo "# before = $before_ref ($before_commit), after = $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo +dirty); RUNS=$runs (hash $hashruns); load at start $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$work/head"
: >"$work/table"

if want 2; then for n in $files; do files_rss "$n"; done; fi
if want 2 || want 4; then for n in $events; do journal_cases "$n"; done; fi
if want 3; then
  for s in $snapsets; do snapshot_case "${s%%:*}" "${s##*:}"; done
  transfer_case "${xfer%%:*}" "${xfer##*:}"
fi
if want 5; then
  hash_case "one file of $(human "$big")" 1 "$big" 1.0
  hash_case "$(count "${many%%:*}") x $(human "${many##*:}")" "${many%%:*}" "${many##*:}" 1.5
fi

{
  echo
  cat "$work/head"
  echo "# load at end $(cut -d' ' -f1-3 /proc/loadavg); a machine shared with other work: times are medians of interleaved rounds"
  echo
  echo "| figure | comparator | before | after | ratio (before -> after) | peak RSS before / after | target | met? |"
  echo "|---|---|---|---|---|---|---|---|"
  sort -s -k2,2 "$work/table"
} | tee ${out:+"$out"}
