#!/usr/bin/env bash
# bench-compare.sh OLD_DIR NEW_DIR: a before/after report of the engine's
# hot paths, for two checkouts of this module (a report, not a timed test).
#
# It builds each tree's test binaries once, then runs them interleaved,
# round after round (old then new, new then old in the next round, so
# neither side always runs on a warmer machine), and hands both outputs to
# benchstat. What it measures:
#
#   BenchmarkEventLatency    event → sink latency, p50 and p99 per event
#                            (1,000 × 32-byte deltas, as the README runs it)
#   BenchmarkRun1000Events   a 1,000-event task (engine and ledger alone)
#   BenchmarkGovernancePath  what the engine adds around one native tool call
#   BenchmarkToolCallGovernance  the ledger's part of one tool call
#
# A benchmark is run by name from the directory that holds it in each tree,
# so it still runs when its package moved or the package's internal names
# changed: each entry below names the directory it lives in in the older
# tree; where the newer tree has moved it, the script finds the one test file
# that declares it.
#
#   COUNT=6          rounds (benchstat wants 6 or more for a confidence interval)
#   BENCHTIME=1s     -test.benchtime for each run (100x, 10ms, ... for a try)
#   OUT=DIR          where the outputs go (default: a new temporary directory)
#
# Example:
#   scripts/bench-compare.sh /path/to/old/checkout .
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 OLD_DIR NEW_DIR" >&2
	exit 2
fi
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
count=${COUNT:-6}
benchtime=${BENCHTIME:-1s}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"

# DIR:BENCHMARK, DIR relative to the module root ("." for package pablo).
benchmarks=(
	.:BenchmarkEventLatency
	.:BenchmarkRun1000Events
	.:BenchmarkGovernancePath
	ledger:BenchmarkRun1000Events
	ledger:BenchmarkToolCallGovernance
)

benchstat=$(command -v benchstat || echo "$(go env GOPATH)/bin/benchstat")
if [ ! -x "$benchstat" ]; then
	echo "benchstat is needed: go install golang.org/x/perf/cmd/benchstat@latest" >&2
	exit 1
fi

# locate TREE DIR NAME prints the directory of TREE that declares benchmark
# NAME: DIR itself when it does, else the one directory that does.
locate() {
	local tree=$1 dir=$2 name=$3
	if grep -qs "^func $name(" "$tree/$dir"/*_test.go; then
		echo "$dir"
		return
	fi
	local found
	found=$(cd "$tree" && grep -rls --include='*_test.go' "^func $name(" . | xargs -r -n1 dirname | sort -u)
	case $(printf '%s\n' "$found" | grep -c .) in
	1) echo "${found#./}" ;;
	0) echo "$tree: no test file declares $name" >&2; return 1 ;;
	*) echo "$tree: $name is declared in several directories ($(echo $found)); name the one in the benchmarks list" >&2; return 1 ;;
	esac
}

# For each side, group the benchmarks by the directory that holds them, keyed
# by the label (the older tree's directory) that both sides' output carries.
declare -A dirs
for side in old new; do
	tree=${!side}
	for entry in "${benchmarks[@]}"; do
		label=${entry%%:*}
		name=${entry#*:}
		d=$(locate "$tree" "$label" "$name")
		key="$side|$label|$d"
		dirs[$key]="${dirs[$key]:+${dirs[$key]}|}$name"
	done
done

echo "== building test binaries into $out"
for key in "${!dirs[@]}"; do
	IFS='|' read -r side label d <<<"$key"
	tree=${!side}
	bin="$out/$side-${label//\//_}.test"
	(cd "$tree/$d" && go test -c -o "$bin" .)
done

echo "== machine: $(nproc) cores, $(uptime)"
: >"$out/old.txt"
: >"$out/new.txt"
for round in $(seq 1 "$count"); do
	order="old new"
	if [ $((round % 2)) -eq 0 ]; then order="new old"; fi
	for side in $order; do
		for key in "${!dirs[@]}"; do
			IFS='|' read -r s label d <<<"$key"
			[ "$s" = "$side" ] || continue
			tree=${!side}
			bin="$out/$side-${label//\//_}.test"
			echo "round $round/$count: $side $label (${dirs[$key]//|/, })"
			# The pkg line names the label, so benchstat pairs a moved
			# benchmark with its old self.
			(cd "$tree/$d" && "$bin" -test.run '^$' -test.bench "^(${dirs[$key]})\$" \
				-test.benchmem -test.count 1 -test.benchtime "$benchtime") |
				sed "s|^pkg: .*|pkg: $label|" >>"$out/$side.txt"
		done
	done
done

echo "== benchstat old.txt new.txt (in $out; old: $old, new: $new)"
cd "$out" && "$benchstat" old.txt new.txt
