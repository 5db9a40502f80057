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
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "-- $pkg $target"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/pablo-fuzz.log 2>&1 || {
			cat /tmp/pablo-fuzz.log; exit 1
		}
	done
done
echo "all checks passed"
