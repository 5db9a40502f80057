#!/usr/bin/env bash
# The project's whole check, on a fresh machine with only Go, Node.js/npm and
# apt: it installs what it needs (Go tools at pinned versions, the real MCP
# peers from npm, bubblewrap and postgresql from Debian), then runs formatting, vet, staticcheck, the race-enabled
# test suite with every real-peer test, the allocation budgets without -race,
# and a short run of every fuzz target.
#
#   FUZZTIME=60s          fuzz budget per target (default 5s)
#   PABLO_SKIP_PEERS=1    opt out of the real-peer tests (no npm needed); the
#                         closing line says how many tests skipped for it
#   PABLO_NPM_PREFIX=DIR  where the npm peers live (default .npm-peers/)
#
# Its last line, whether it passes or fails, is the count of the Go tests of
# the race-enabled suite: "N passed, N failed, N skipped" (all zero when it
# stopped before the suite ran), with one failure more for a fuzz target
# that failed after it.
set -euo pipefail
cd "$(dirname "$0")/.."

# The counts are read from the suite's -v log: each result line "--- PASS:",
# "--- FAIL:" or "--- SKIP:" at a line's start (after its indentation) is one
# test, so subtests, Examples and fuzz targets' seed runs count one each,
# as go test reports them. A package that fails with no failing test of its
# own (it does not build, or the binary panics or times out outside a test's
# report) counts one failure.
passed=0 failed=0 skipped=0
log=$(mktemp)
trap 'rm -f "$log"; echo "$passed passed, $failed failed, $skipped skipped"' EXIT
count_tests() {
	read -r passed failed skipped < <(awk '
		/^[[:space:]]*--- PASS: / { p++ }
		/^[[:space:]]*--- SKIP: / { s++ }
		/^[[:space:]]*--- FAIL: / { f++; mine++ }
		/^(ok|\?)[[:space:]]/ { mine = 0 }
		/^FAIL[[:space:]]+[^[:space:]]/ { if (mine == 0) f++; mine = 0 }
		END { print p + 0, f + 0, s + 0 }' "$log")
}
export PATH="$PATH:/usr/local/go/bin:$(go env GOPATH)/bin"
fuzztime="${FUZZTIME:-5s}"
staticcheck_version=v0.8.2

echo "== tools"
go version
go mod download
if ! staticcheck -version 2>/dev/null | grep -q "${staticcheck_version#v}"; then
	echo "installing staticcheck $staticcheck_version"
	go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi
if [ "${PABLO_SKIP_PEERS:-}" = "1" ]; then
	sh scripts/install-peers.sh debian
	echo "real-peer tests: skipped (PABLO_SKIP_PEERS=1)"
else
	command -v npm >/dev/null || { echo "npm is needed for the real MCP peers (apt install nodejs npm), or set PABLO_SKIP_PEERS=1"; exit 1; }
	export PABLO_NPM_PREFIX="${PABLO_NPM_PREFIX:-$PWD/.npm-peers}"
	sh scripts/install-peers.sh
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
staticcheck ./...

echo "== go test -race"
if ! go test -race -count=1 -timeout 15m -v ./... >"$log" 2>&1; then
	count_tests
	grep -vE '^(=== (RUN|PAUSE|CONT|NAME)|\s*--- (PASS|SKIP))' "$log" | tail -n 400
	echo "go test failed"; exit 1
fi
# The race detector allocates for its own bookkeeping, so the tests that
# count allocations (by convention "Allocat" in their name) skip under
# -race: they run here, without it, in the packages that hold them.
echo "== allocation budgets (without -race)"
alloc_pkgs=$(git grep -l -E '^func Test[A-Za-z0-9_]*Allocat' -- '*_test.go' | xargs -r -n1 dirname | sort -u | sed 's|^|./|')
if [ -n "$alloc_pkgs" ] && ! go test -count=1 -vet=off -v -run '^Test[A-Za-z0-9_]*Allocat' $alloc_pkgs >>"$log" 2>&1; then
	count_tests
	grep -vE '^(=== (RUN|PAUSE|CONT|NAME)|\s*--- (PASS|SKIP))' "$log" | tail -n 100
	echo "the allocation budgets failed"; exit 1
fi
count_tests
grep -E '^(ok|FAIL|\?)\s' "$log"
skipped_peers=$(grep -c 'PABLO_SKIP_PEERS=1' "$log" || true)

echo "== fuzz targets ($fuzztime each)"
fuzz() { go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" "$1" >"$log" 2>&1; }
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "-- $pkg $target"
		if ! fuzz "$pkg" "$target"; then
			# A finding always writes its failing input. Without one, the
			# failure is the fuzz engine's own (for example its coordinator
			# missing the fuzztime deadline): run the target once more.
			# Either way the target failed: it counts one failure.
			if grep -q "Failing input written" "$log"; then
				failed=$((failed + 1)); cat "$log"; exit 1
			fi
			echo "   the fuzz engine stopped without a finding; running $target again"
			fuzz "$pkg" "$target" || { failed=$((failed + 1)); cat "$log"; exit 1; }
		fi
	done
done
if [ "${PABLO_SKIP_PEERS:-}" = "1" ]; then
	echo "all checks passed; $skipped_peers real-peer tests skipped (PABLO_SKIP_PEERS=1)"
else
	echo "all checks passed, real-peer tests included"
fi
