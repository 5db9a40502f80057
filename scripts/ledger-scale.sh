#!/usr/bin/env bash
# ledger-scale.sh [RUNS] [SIZES...]: what a ledger store's size costs (a
# report, not a timed test; the README's "ledger at scale" rows). Run it
# from a clone on an otherwise idle machine:
#
#   bash scripts/ledger-scale.sh 7 10000 100000
#
# It builds examples/pablo and scripts/ledgerscale, then for a fresh bbolt
# store and one of each SIZE tasks (default 10000 and 100000; each filled
# through the ledger API with small finished tasks shaped like a trivial
# run, plus one task that ran through the binary) it measures RUNS times
# (default 7), through the real binary with a scripted model:
#
#   run          pablo run "hi" --json --script ONE-TURN --store STORE
#                (its first task reaps what a crashed host left: the
#                start-up the index keeps flat)
#   recover ID   pablo ledger recover --json --store STORE TASK_ID
#   recover all  pablo ledger recover --json --store STORE (peak RSS; its
#                time grows with the store, as it reads every task)
#
# and prints for each the median and range of the wall time and of the
# peak RSS of the child (getrusage), with the load average before and
# after. PG=1 does the same on a throw-away PostgreSQL cluster (Debian's
# server, as the tests start it) for a fresh database and 10000 tasks.
#
#   OUT=DIR   where the binaries, stores and ledger-scale.txt go (default:
#             a new temporary directory)
set -euo pipefail

runs=${1:-7}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
report=$out/ledger-scale${LEDGERSCALE_PG_URL:+-postgres}.txt

echo "# scripts/ledger-scale.sh $runs ${sizes[*]} (PG=${PG:-}): $(git rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'), $(go env GOVERSION), $(nproc) CPUs" | tee "$report"
go build -o "$out/pablo" ./examples/pablo
go build -o "$out/ledgerscale" ./scripts/ledgerscale
echo '{"turns":[{"text":["done"]}]}' >"$out/one-turn.json"
demo=examples/pablo/demo
run=("$out/pablo" run "hi" --json --script "$out/one-turn.json" --config "$demo/deployment.toml"
	--bind "workspace=$demo/work" --bind "skills=$demo/skills")

# measure_stores KIND STORE...: the three measurements, each command run
# round by round on every store (the first is the fresh one), so the load
# of a shared machine falls on all alike.
measure_stores() {
	local kind=$1 labels=() runs_=() recs=() alls=() store id
	shift
	for store in "$@"; do
		id=$("${run[@]}" --store "$store" | sed -n 's/.*"run_id":"\([^"]*\)".*/\1/p')
		labels+=("$kind, $(label "$store")")
		runs_+=(::: "${run[@]}" --store "$store")
		recs+=(::: "$out/pablo" ledger recover --json --store "$store" "$id")
		alls+=(::: "$out/pablo" ledger recover --json --store "$store")
	done
	local ls
	ls=$(IFS=";"; echo "${labels[*]}")
	echo "## run" | tee -a "$report"
	"$out/ledgerscale" measure -runs "$runs" -labels "$ls" -- "${runs_[@]:1}" | tee -a "$report"
	echo "## recover TASK_ID" | tee -a "$report"
	"$out/ledgerscale" measure -runs "$runs" -labels "$ls" -- "${recs[@]:1}" | tee -a "$report"
	echo "## recover (every task)" | tee -a "$report"
	"$out/ledgerscale" measure -runs "$(((runs + 1) / 2))" -labels "$ls" -- "${alls[@]:1}" | tee -a "$report"
}

# label STORE: what a store holds, for the report.
label() {
	case $1 in
	*fresh*) echo "fresh" ;;
	*) echo "$(basename "$1" .db | sed 's/^tasks-//') tasks" ;;
	esac
}

if [ "${PG:-}" = 1 ] && [ -z "${LEDGERSCALE_PG_URL:-}" ]; then
	# Again, inside a throw-away cluster (which sets LEDGERSCALE_PG_URL).
	OUT=$out "$out/ledgerscale" with-postgres -- bash "$0" "$runs" "${sizes[@]}"
	exit
fi
if [ -n "${LEDGERSCALE_PG_URL:-}" ]; then
	# Two databases of one cluster: a fresh one, and one of 10000 tasks.
	fresh="$LEDGERSCALE_PG_FRESH_URL"
	filled="$LEDGERSCALE_PG_URL"
	"$out/ledgerscale" fill -store "$filled" -tasks 10000
	label() { case $1 in "$fresh") echo "fresh" ;; *) echo "10000 tasks" ;; esac }
	measure_stores PostgreSQL "$fresh" "$filled"
else
	stores=("$out/fresh.db")
	for n in "${sizes[@]}"; do
		rm -f "$out/tasks-$n.db" "$out/tasks-$n.db.volatile"
		"$out/ledgerscale" fill -nosync -store "$out/tasks-$n.db" -tasks "$n"
		stores+=("$out/tasks-$n.db")
	done
	measure_stores bbolt "${stores[@]}"
	rm -f "$out"/tasks-*.db
fi
echo "report: $report"
