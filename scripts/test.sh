#!/usr/bin/env bash
# The project's whole check: formatting, vet, staticcheck, the race-enabled
# test suite and a short run of every fuzz target. FUZZTIME sets the fuzz
# budget per target (default 5s).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:$(go env GOPATH)/bin"
fuzztime="${FUZZTIME:-5s}"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
if ! command -v staticcheck >/dev/null; then
	echo "staticcheck is not installed: go install honnef.co/go/tools/cmd/staticcheck@v0.8.2"; exit 1
fi
staticcheck ./...

echo "== go test -race"
go test -race -count=1 -timeout 15m ./...

echo "== fuzz targets ($fuzztime each)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fuzz() { go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" "$1" >"$log" 2>&1; }
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "-- $pkg $target"
		if ! fuzz "$pkg" "$target"; then
			# A finding always writes its failing input. Without one, the
			# failure is the fuzz engine's own (for example its coordinator
			# missing the fuzztime deadline): run the target once more.
			if grep -q "Failing input written" "$log"; then
				cat "$log"; exit 1
			fi
			echo "   the fuzz engine stopped without a finding; running $target again"
			fuzz "$pkg" "$target" || { cat "$log"; exit 1; }
		fi
	done
done
echo "all checks passed"
