#!/usr/bin/env bash
# measure.sh [SAMPLES]: the figures the README's Performance table sets
# beside the reference's, taken by the reference's method (a report, not a
# timed test). Run it from a clone on an otherwise idle machine:
#
#   PABLO_NPM_PREFIX=DIR bash scripts/measure.sh 30
#
# The method (internal/measure): a loopback HTTP server serves scripted SSE
# in the Chat Completions wire format; each sample is two model calls, the
# first a shell.run of one real printf, the second the final answer as 32
# deltas of 16 bytes; every sample checks the shell's output reached the
# model, the 512 bytes came out, exactly two requests were made and the
# task or process ended cleanly. 5 warm-ups are dropped, then SAMPLES
# (default 30) are measured; percentiles are nearest-rank. Every figure is
# taken twice: with the default sandbox (bubblewrap) and with the sandbox
# off under a literal command policy that allows the printf.
#
# What it reports, with the load average before and after each step:
#
#   binary                    the release executable (go build -trimpath)
#                             and a stripped copy (strip), bytes
#   BenchmarkReferenceCoreRun time inside Runtime.Run (core_run_ms)
#   BenchmarkReferenceCLI     pablo run: spawn → first provider request
#                             (cli_provider_ready_ms), spawn → exit
#                             (cli_total_ms); pablo --version (version_process_ms)
#   BenchmarkReferenceACP     pablo acp --stdio through the official
#                             TypeScript client SDK: initialize, a fresh
#                             process's prompt, a warm prompt (a new session
#                             each, up to 40 a process after 5 warm-up
#                             tasks), idle RSS by ps -o rss= 50 ms after
#                             initialize, one new process per sample
#
# The ACP figures need the Node peers (sh scripts/install-peers.sh);
# PABLO_NPM_PREFIX names where they are (default .npm-peers).
#
#   OUT=DIR   where the binaries and measure.txt go (default: a new
#             temporary directory)
#   ALL=1     also re-run the other rows whose figures were corrected with
#             theirs (issue 28), each with the README's command: allocations
#             per governed and per durable tool call, and the spawn_remote
#             ratio (10 rounds of 400 pairs; through benchstat when it is
#             installed)
set -euo pipefail

samples=${1:-30}
case $samples in
'' | *[!0-9]*)
	echo "usage: $0 [SAMPLES] (a positive number of samples, default 30)" >&2
	exit 2
	;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
export PABLO_NPM_PREFIX=${PABLO_NPM_PREFIX:-$root/.npm-peers}
report=$out/measure.txt
: >"$report"

say() { echo "$*" | tee -a "$report"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

say "# scripts/measure.sh $samples: $(git rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'), $(go env GOVERSION), $(nproc) CPUs, $(uname -sm)"

say "## binary (load $(load))"
go build -trimpath -o "$out/pablo" ./examples/pablo
cp "$out/pablo" "$out/pablo-stripped"
strip "$out/pablo-stripped"
for f in pablo pablo-stripped; do
	bytes=$(stat -c %s "$out/$f")
	say "$f $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.3f", b / 1048576 }') MiB)"
done

bench() { # bench DIR PATTERN
	say "## $2 in $1 (load before $(load))"
	PABLO_MEASURE_BINARY=$out/pablo go test -run '^$' -bench "$2" -benchtime "${samples}x" -count 1 -timeout 60m "$1" |
		grep -vE '^(goos|goarch|pkg|cpu|PASS)' | tee -a "$report"
	say "(load after $(load))"
}
bench . '^BenchmarkReferenceCoreRun$'
bench ./examples/pablo '^BenchmarkReferenceCLI$'
bench ./examples/pablo '^BenchmarkReferenceACP$'

if [ "${ALL:-0}" = 1 ]; then
	rounds() { # rounds DIR PATTERN BENCHTIME COUNT
		say "## $2 in $1, -benchtime $3 -count $4 (load before $(load))"
		go test -run '^$' -bench "$2" -benchtime "$3" -count "$4" "$1" | grep -vE '^(goos|goarch|pkg|cpu|PASS)' | tee -a "$report" | tee "$out/rounds.txt"
		say "(load after $(load))"
		benchstat=$(command -v benchstat || echo "$(go env GOPATH)/bin/benchstat")
		if [ -x "$benchstat" ]; then "$benchstat" "$out/rounds.txt" | tee -a "$report"; fi
	}
	rounds . '^BenchmarkGovernancePath$' 1s 3
	rounds . '^BenchmarkDurableToolCall$/^(nosync|one-turn-nosync)$' 1s 3
	rounds ./a2a '^BenchmarkSpawnRemoteVsA2AGo$' 400x 10
fi

say "# report: $report"
