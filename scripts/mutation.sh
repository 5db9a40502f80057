#!/usr/bin/env bash
# Mutation testing of the security- and correctness-critical code: each
# mutation below changes one line (a flipped comparison, a dropped check, a
# removed bubblewrap flag) and must be killed by the tests of the package it
# lives in. Not part of the timed suite (scripts/test.sh); run it before
# resolving an issue that touches these packages and quote its result.
#
#   bash scripts/mutation.sh            every mutation
#   bash scripts/mutation.sh ledger/    only those whose name contains it
#   MUTATION_TIMEOUT=5m                 go test's -timeout for one mutant
#   MUTATION_LIST=1                     list the mutations and exit
#   MUTATION_SITES=1                    locate and build every mutant, and exit
#   PABLO_NPM_PREFIX=DIR                the npm peers, as for scripts/test.sh
#
# A mutation finds its site by its text, never by a line number: the text
# must occur exactly once among the non-test Go files of the directories
# it names (so a site that moves between files or packages, such as the
# engine's from the root package into internal/engine, is still found),
# and the tests run are those of the directory where it was found. A site
# that is not found, or found more than once, fails the script: the list is
# kept in step with the code.
#
# Each mutant is applied alone to a temporary copy of the working tree
# (never to the checkout itself), built, and its package's tests run with
# -failfast; a test failure or a timeout kills it, a pass is a survivor.
# The closing line: "N killed, N survived of N (P% killed); N equivalent".
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$PATH:/usr/local/go/bin"
# The real-peer tests (mcp's npm servers) find their peers where the test
# command installs them.
export PABLO_NPM_PREFIX="${PABLO_NPM_PREFIX:-$src/.npm-peers}"
filter="${1:-}"
timeout="${MUTATION_TIMEOUT:-5m}"

names=() scopes=() olds=() news=()
# mutant NAME "DIR [DIR...]" OLD NEW: replace the one occurrence of OLD.
mutant() { names+=("$1") scopes+=("$2") olds+=("$3") news+=("$4"); }
eq_names=() eq_whys=()
# equivalent NAME WHY: a mutation no test can kill because it changes no
# behaviour; listed so that it is not tried again.
equivalent() { eq_names+=("$1") eq_whys+=("$2"); }

# ---- the mutations -------------------------------------------------------
# authority: narrowing, deciding, rules, contracts, credentials.
mutant authority/narrow-child-layer-not-appended authority \
	'out.layers = append(out.layers, child)' '_ = child'
mutant authority/narrow-root-the-parent-lacks-admitted authority \
	'errs = append(errs, fmt.Errorf("%s %q: %w (%s)", dim, textx.Shorten(root, 80), ErrWiden, d.Reason))' '_ = d'
mutant authority/narrow-tool-the-parent-lacks-admitted authority \
	'errs = append(errs, fmt.Errorf("tool %q: %w (%s)", textx.Shorten(string(t), 80), ErrWiden, d.Reason))' '_ = d'
mutant authority/narrow-mcp-tool-subset-dropped authority \
	'child.Dimensions[DimMCPTools] = &Rules{Default: Deny, Allow: mcpTools}' '_ = mcpTools'
mutant authority/narrow-server-the-parent-lacks-admitted authority \
	'errs = append(errs, fmt.Errorf("MCP server %q: %w (not configured for the parent)", textx.Shorten(name, 40), ErrWiden))' '_ = name'
mutant authority/narrow-skill-the-parent-lacks-admitted authority \
	'errs = append(errs, fmt.Errorf("skill %q: %w", textx.Shorten(string(sk), 80), ErrWiden))' '_ = sk'
mutant authority/decide-only-the-first-layer authority \
	$'\tfor _, l := range s.layers {\n\t\tfor _, c := range checks {' $'\tfor _, l := range s.layers[:min(1, len(s.layers))] {\n\t\tfor _, c := range checks {'
mutant authority/decide-only-tool-names-deny authority \
	'if !v.Allowed {' 'if !v.Allowed && c.dim == DimToolNames {'
mutant authority/decide-native-tool-not-enabled-admitted authority \
	'if !slices.Contains(s.native, id) {' 'if false {'
mutant authority/decide-unconfigured-mcp-server-admitted authority \
	'srv, ok := s.servers[server]' 'srv, ok := s.servers[server], true'
mutant authority/decide-unscoped-resource-kind-admitted authority \
	'if !scoped {' 'if !scoped && false {'
mutant authority/decide-later-layers-approval-dropped authority \
	'if v.ApprovalRule != "" && approvalLayer == "" {' 'if v.ApprovalRule != "" && approvalLayer == "" && l.ID == s.layers[0].ID {'
mutant authority/rules-deny-rules-ignored authority \
	'return Verdict{Allowed: false, RuleID: rule.ID, Explicit: true}' 'continue'
mutant authority/rules-allowlist-miss-allowed authority \
	'return Verdict{Allowed: false, RuleID: builtinID(dim, "allowlist_miss")}' 'return Verdict{Allowed: true, RuleID: builtinID(dim, "allowlist_miss")}'
mutant authority/rules-roots-match-by-prefix authority \
	'return WithinRoot(rule, value)' 'return strings.HasPrefix(value, rule)'
mutant authority/approval-grant-ignores-arguments authority \
	'slices.Equal(g.Resources, h.Resources) && g.ArgumentsDigest == h.ArgumentsDigest' 'slices.Equal(g.Resources, h.Resources)'
mutant authority/approval-grant-ignores-effect authority \
	'g.Capability == h.Capability && g.CallEffect == h.CallEffect &&' 'g.Capability == h.Capability &&'
mutant authority/approval-grant-ignores-resources authority \
	'slices.Equal(g.Resources, h.Resources) && g.ArgumentsDigest == h.ArgumentsDigest' 'g.ArgumentsDigest == h.ArgumentsDigest'
mutant authority/approval-grant-never-binds-arguments authority \
	'g.ArgumentsDigest = digest' '_ = digest'
mutant authority/approval-effect-shell-never-network authority \
	$'\t\tif reachesNetwork(d.Sandbox) {' $'\t\tif false {'
mutant authority/credential-consumer-not-checked authority \
	'if c.Consumer != consumer {' 'if false {'
mutant authority/credential-destination-not-checked authority \
	'if !slices.Contains(c.Destinations, destination) {' 'if !slices.Contains(c.Destinations, destination) && false {'
mutant authority/contract-resources-not-decided authority \
	'if d = c.auth.Decide(Request{Capability: call.Tool, Resources: res}); !d.Allowed {' 'if d = c.auth.Decide(Request{Capability: call.Tool, Resources: res}); false {'
mutant authority/contract-schema-not-checked authority \
	'if res := k.schema.Validate(args); !res.Valid {' 'if res := k.schema.Validate(args); false && !res.Valid {'

# ledger: reservations before admission, ceilings, recovery, leases.
mutant ledger/calls-tool-reservations-not-counted ledger \
	'used := x.c.toolCalls + x.c.toolRes' 'used := x.c.toolCalls'
mutant ledger/calls-model-reservations-not-counted ledger \
	'c.modelCalls+c.modelRes' 'c.modelCalls'
mutant ledger/calls-token-reservations-not-counted ledger \
	'c.tokens+c.tokensRes' 'c.tokens'
mutant ledger/calls-cost-reservations-not-counted ledger \
	'c.cost+c.costRes' 'c.cost'
mutant ledger/calls-tool-ceiling-of-ancestors-not-checked ledger \
	$'for x := a; x != nil; x = x.parent {\n\t\tused := x.c.toolCalls' $'for x := a; x == a; x = x.parent {\n\t\tused := x.c.toolCalls'
mutant ledger/calls-tool-deadline-not-checked ledger \
	$'func (r *Root) checkTool(a *agent, inputBytes uint64) error {\n\tif err := checkDeadline(a, r.instant()); err != nil {' $'func (r *Root) checkTool(a *agent, inputBytes uint64) error {\n\tif err := checkDeadline(a, r.instant()); false && err != nil {'
mutant ledger/calls-unbounded-call-admitted-under-a-ceiling ledger \
	'if (step == checkTokens || step == checkCost) && !bound.IsFinite() {' 'if false {'
mutant ledger/recover-dispatched-call-retryable ledger \
	'case cr.State == CallAdmitted:' 'case cr.State == CallAdmitted || cr.State == CallDispatched:'
mutant ledger/recover-may-have-been-sent-completed ledger \
	'case cr.State == CallSettled && cr.Delivery != outcome.MayHaveBeenSent:' 'case cr.State == CallSettled:'
mutant ledger/recover-earlier-state-wins ledger \
	'if stateRank(c.State) > stateRank(cr.State) {' 'if stateRank(c.State) >= stateRank(cr.State) && cr.State == "" {'
mutant ledger/lease-live-lease-recovered ledger \
	$'if l.Live {\n\t\treturn &LeaseError{Lease: l}' $'if false {\n\t\treturn &LeaseError{Lease: l}'
mutant ledger/lease-error-kinds-confused ledger \
	'return (target == ErrLeaseLost && e.Lost) || (target == ErrLeaseLive && !e.Lost)' 'return target == ErrLeaseLost || target == ErrLeaseLive'
mutant ledger/postgres-commit-token-not-compared ledger/postgres \
	'if tok, ok := held[id]; !ok || (tw.token != 0 && tok != tw.token) {' 'if tok, ok := held[id]; !ok {'
mutant ledger/postgres-commit-expired-lease-fences-nothing ledger/postgres \
	'WHERE task_id = ANY($1::text[]) AND owner = $2 AND NOT released AND expires_at > $3' 'WHERE task_id = ANY($1::text[]) AND owner = $2 AND NOT released AND $3::timestamptz IS NOT NULL'

# internal/redact: detected secrets, pages and streams.
mutant internal/redact/window-look-around-zero internal/redact \
	'reach := MaxPatternBytes' 'reach := 0'
mutant internal/redact/window-known-value-reach-ignored internal/redact \
	"reach = max(reach, len(v))" "reach = max(reach, len(v)/1024)"
mutant internal/redact/window-edge-byte-released internal/redact \
	$'\t\tif ms < me {' $'\t\tif ms+1 < me {'
mutant internal/redact/aws-key-pattern-too-long internal/redact \
	'\b(?:AKIA|ASIA)[0-9A-Z]{16}\b' '\b(?:AKIA|ASIA)[0-9A-Z]{17}\b'
mutant internal/redact/stream-cut-releases-nothing-masked internal/redact \
	'return Mask, 1' 'return "", 0'
mutant internal/redact/stream-releases-its-held-tail internal/redact \
	'return chunk[:r.hold], 0' 'return chunk, 0'

# internal/schema: the keywords a tool contract relies on.
mutant internal/schema/required-ignored internal/schema \
	'!ok && f.fail("required/"' '!ok && false && f.fail("required/"'
mutant internal/schema/additional-properties-ignored internal/schema \
	's := n.additional' 's := (*node)(nil)'
mutant internal/schema/max-length-off-by-one internal/schema \
	'l > n.maxLength && f.fail("maxLength")' 'l > n.maxLength+1 && f.fail("maxLength")'
mutant internal/schema/maximum-exclusive internal/schema \
	'x.cmp(*n.maximum) > 0' 'x.cmp(*n.maximum) > 0 && x.cmp(*n.maximum) != 1'
mutant internal/schema/type-ignored internal/schema \
	'if n.types != 0 && !n.types.has(v) && f.fail("type") {' 'if false && n.types != 0 && !n.types.has(v) && f.fail("type") {'
mutant internal/schema/enum-ignored internal/schema \
	'if n.hasEnum && !inEnum(n.enum, v) && f.fail("enum") {' 'if false && n.hasEnum && !inEnum(n.enum, v) && f.fail("enum") {'

# internal/fstools: confinement, authorization, reserved files.
mutant internal/fstools/reserved-file-opened internal/fstools \
	$'if c.t.reserved.Has(fi) {\n\t\tdir.Close()\n\t\treturn nil, c.reservedDenied(rel)' $'if false {\n\t\tdir.Close()\n\t\treturn nil, c.reservedDenied(rel)'
mutant internal/fstools/reserved-file-listed internal/fstools \
	'err == nil && c.t.reserved.Has(fi) {' 'err == nil && c.t.reserved.Has(fi) && false {'
mutant internal/fstools/symlink-followed internal/fstools \
	$'if fi.Mode()&fs.ModeSymlink != 0 {\n\t\tdir.Close()\n\t\treturn nil, c.symlinkDenied(rel)' $'if false {\n\t\tdir.Close()\n\t\treturn nil, c.symlinkDenied(rel)'
mutant internal/fstools/dotdot-admitted internal/fstools \
	$'case "..":\n\t\t\treturn "", nil, &pathError{' $'case "...":\n\t\t\treturn "", nil, &pathError{'
mutant internal/fstools/absolute-path-outside-admitted internal/fstools \
	'return "", nil, &pathError{denial: "absolute path is outside the workspace; use a workspace-relative path"}' 'rest = p[1:]'
mutant internal/fstools/path-policy-not-decided internal/fstools \
	$'if !d.Allowed {\n\t\t\treturn "", nil, allowed, &DeniedError{Tool: c.id, Path: rel, Decision: d}' $'if false {\n\t\t\treturn "", nil, allowed, &DeniedError{Tool: c.id, Path: rel, Decision: d}'
mutant internal/fstools/write-stale-revision-replaces internal/fstools \
	'if Revision(cur) != *expected {' 'if false && Revision(cur) != *expected {'
mutant internal/fstools/edit-stale-revision-applies internal/fstools \
	'if Revision(cur) != expected {' 'if false && Revision(cur) != expected {'

# children: capacity, narrowing, the artifact recheck.
mutant children/capacity-active-one-more children \
	'if t.active < t.capacity.Active && len(t.queue) == 0 {' 'if t.active <= t.capacity.Active && len(t.queue) == 0 {'
mutant children/capacity-fill-one-more children \
	'for !t.closed && len(t.queue) > 0 && t.active < t.capacity.Active {' 'for !t.closed && len(t.queue) > 0 && t.active <= t.capacity.Active {'
mutant children/capacity-fill-one-less children \
	'for !t.closed && len(t.queue) > 0 && t.active < t.capacity.Active {' 'for !t.closed && len(t.queue) > 0 && t.active < t.capacity.Active-1 {'
mutant children/capacity-total-one-more children \
	'case t.total >= t.capacity.Total:' 'case t.total > t.capacity.Total:'
mutant children/capacity-queue-one-more children \
	'case len(t.queue) >= t.capacity.Queued:' 'case len(t.queue) > t.capacity.Queued:'
mutant children/capacity-input-bytes-one-more children \
	'if n := spec.InputBytes(); n > t.capacity.InputBytes {' 'if n := spec.InputBytes(); n > t.capacity.InputBytes+1 {'
mutant children/capacity-wait-handles-one-more children \
	'case n > t.capacity.WaitHandles:' 'case n > t.capacity.WaitHandles+1:'
mutant children/capacity-result-bytes-one-more children \
	'case n > t.capacity.ResultBytes:' 'case n > t.capacity.ResultBytes+1:'
mutant children/artifact-revision-not-rechecked children \
	'if got := hex.EncodeToString(h.Sum(nil)); got != a.Revision {' 'if got := hex.EncodeToString(h.Sum(nil)); false && got != a.Revision {'
mutant children/artifact-recheck-skipped children \
	'if err := t.opts.Verifier.VerifyArtifact(ctx, c.spec, *h.Artifact); err != nil {' 'if err := t.opts.Verifier.VerifyArtifact(ctx, c.spec, *h.Artifact); false && err != nil {'
mutant children/artifact-swap-not-detected children \
	'if err != nil || !os.SameFile(fi, st) || !st.Mode().IsRegular() {' 'if err != nil || !st.Mode().IsRegular() {'
mutant children/artifact-without-fs-read children \
	'if !slices.Contains(spec.Capabilities.Tools, "fs.read") {' 'if !slices.Contains(spec.Capabilities.Tools, "fs.read") && false {'
mutant children/narrow-subset-widens children \
	$'if !slices.Contains(parent, name) {\n\t\t\treturn nil, errorf(CodeNotInherited, field, "%q is not' $'if false {\n\t\t\treturn nil, errorf(CodeNotInherited, field, "%q is not'
mutant children/narrow-child-may-spawn children \
	'if slices.Contains(r.Tools, ToolID) {' 'if false {'

# internal/sandbox: bubblewrap's arguments.
mutant internal/sandbox/cap-drop-dropped internal/sandbox \
	'"--die-with-parent", "--cap-drop", "ALL",' '"--die-with-parent",'
mutant internal/sandbox/unshare-net-dropped internal/sandbox \
	'a = append(a, "--unshare-net")' 'a = append(a)'
mutant internal/sandbox/unshare-pid-dropped internal/sandbox \
	'"--unshare-user", "--unshare-ipc", "--unshare-pid",' '"--unshare-user", "--unshare-ipc",'
mutant internal/sandbox/read-only-workspace-writable internal/sandbox \
	'a = append(a, "--ro-bind", spec.Workspace, spec.Workspace)' 'a = append(a, "--bind", spec.Workspace, spec.Workspace)'
mutant internal/sandbox/no-fs-shows-the-workspace internal/sandbox \
	'a = append(a, "--dir", spec.Dir)' 'a = append(a, "--ro-bind", spec.Workspace, spec.Dir)'
mutant internal/sandbox/runs-as-root internal/sandbox \
	'"--uid", "65534", "--gid", "65534",' '"--uid", "0", "--gid", "0",'
mutant internal/sandbox/new-session-dropped internal/sandbox \
	'"--new-session")' ')'
mutant internal/sandbox/seccomp-dropped internal/sandbox \
	'a = append(a, "--seccomp", "4")' 'a = append(a)'
mutant internal/sandbox/missing-launcher-runs-unconfined internal/sandbox \
	'return nil, &UnavailableError{Reason: NotInstalled, Path: DefaultPath, Detail: "no launcher was given"}' 'return &Command{Profile: p, Cmd: &exec.Cmd{Path: spec.Path, Args: spec.Args, Env: spec.Env, Dir: spec.Dir}}, nil'

# internal/httpx: the bounded client.
mutant internal/httpx/body-one-byte-over-passes internal/httpx \
	'if int64(len(p)) > b.left {' 'if int64(len(p)) > b.left+1 {'
mutant internal/httpx/body-bound-never-probed internal/httpx \
	'return 0, b.tooLarge' 'return 0, io.EOF'
mutant internal/httpx/redirect-followed internal/httpx \
	'return http.ErrUseLastResponse' 'return nil'
mutant internal/httpx/ambient-proxy-honoured internal/httpx \
	'Proxy:                  nil,' 'Proxy:                  http.ProxyFromEnvironment,'
mutant internal/httpx/header-bound-default internal/httpx \
	'MaxResponseHeaderBytes: headers,' 'MaxResponseHeaderBytes: 0,'

# mcp: pins and the server's environment.
mutant mcp/pin-not-compared mcp \
	'if want, ok := srv.cfg.Pins[def.Name]; ok && want != def.digest {' 'if want, ok := srv.cfg.Pins[def.Name]; ok && false && want != def.digest {'
mutant mcp/environment-inherits-the-hosts mcp \
	'Env: env, Workspace: srv.Dir, Dir: dir})' 'Env: append(env, os.Environ()...), Workspace: srv.Dir, Dir: dir})'
mutant mcp/environment-credential-for-another-consumer mcp \
	'c.resolve(ctx, cfg.Env[v], authority.ConsumerMCPEnv,' 'c.resolve(ctx, cfg.Env[v], authority.ConsumerMCPHeaders,'
mutant mcp/environment-name-not-validated mcp \
	'if !authority.ValidEnvName(k) {' 'if false {'
mutant mcp/environment-one-variable-too-many mcp \
	'if len(s.Env) > MaxEnv {' 'if len(s.Env) > MaxEnv+1 {'

# The run engine (internal/engine; the root package before the move):
# what a task does with a decision, an admission and an approval grant.
mutant engine/tool-call-denial-runs ". internal/engine" \
	'return checkedCall{}, s.deny(rc.rec, d, d.RuleID)' '_ = d.RuleID'
mutant engine/tool-call-admission-refusal-dispatches ". internal/engine" \
	$'if err := s.t.root.AdmitToolCall(s.ctx, s.agent, rec); err != nil {\n\t\treturn admittedCall{}, s.ledgerOutcome(err)' $'if err := s.t.root.AdmitToolCall(s.ctx, s.agent, rec); err != nil && false {\n\t\treturn admittedCall{}, s.ledgerOutcome(err)'
mutant engine/task-grant-covers-the-whole-tool ". internal/engine" \
	'if have.Covers(x) {' 'if have.Covers(x) || have.Capability == x.Capability {'

# ---- equivalent mutations: not run -----------------------------------------
equivalent ledger/calls-unknown-charge-admits \
	"checkModel's refusal of a finite token or cost ceiling whose charge is already unknown: a charge is unknown only for a call reserved without a bound, which the NoBound check refuses wherever the agent or an ancestor has a finite ceiling of that kind, and an agent's ceilings never change once it started; so no agent under a finite ceiling ever holds an unknown charge. The check stays as defence in depth"
equivalent ledger/postgres-commit-records-sql-token-clause-dropped \
	"the token clause of sqlRecords ('AND (r.token = 0 OR l.token = r.token)') is a second fence behind the one the commit reads in the same transaction (sqlFence, rows locked FOR UPDATE): a stale token is refused before any insert is queued, so no test can reach the clause alone"
equivalent internal/fstools/reserved-file-searched \
	"search.file's reserved check (search.go): fs.search walks the listing, which already leaves every reserved file out by the same device and inode key, so the check meets a reserved file only if it is reserved between the listing and the open; it stays as defence in depth"
equivalent mcp/stdio-nil-environment-cleared \
	"startStdio's 'if env == nil { env = []string{} }': its only caller passes a non-nil slice, so the branch is a guard for future callers"

if [ -n "${MUTATION_LIST:-}" ]; then
	for i in "${!names[@]}"; do echo "${names[$i]}"; done
	for i in "${!eq_names[@]}"; do echo "${eq_names[$i]} (equivalent: ${eq_whys[$i]})"; done
	exit 0
fi

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp"' EXIT
# A signal ends the run through the EXIT trap, so the copy is removed.
trap 'exit 130' INT TERM
# The working tree's files (tracked and new, not ignored), uncommitted
# changes included: the mutants are of the code as it is.
(cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	tar --null -T - -cf -) | tar -xf - -C "$tmp"
cd "$tmp"

# count_in TEXT NEEDLE: how many times NEEDLE occurs in TEXT.
count_in() {
	local s=$1 n=0
	while [[ $s == *"$2"* ]]; do
		s=${s#*"$2"}
		n=$((n + 1))
	done
	echo "$n"
}

# locate I: the one file holding mutation I's text, or an error.
locate() {
	local i=$1 dir f hits=() n
	for dir in ${scopes[$i]}; do
		[ -d "$dir" ] || continue
		for f in "$dir"/*.go; do
			[[ $f == *_test.go ]] && continue
			[ -e "$f" ] || continue
			n=$(count_in "$(<"$f")" "${olds[$i]}")
			for ((; n > 0; n--)); do hits+=("$f"); done
		done
	done
	if [ "${#hits[@]}" -ne 1 ]; then
		echo "mutation ${names[$i]}: its text occurs ${#hits[@]} times in ${scopes[$i]} (want once): ${olds[$i]}" >&2
		return 1
	fi
	echo "${hits[0]}"
}

selected=()
for i in "${!names[@]}"; do
	[[ ${names[$i]} == *"$filter"* ]] && selected+=("$i")
done
[ "${#selected[@]}" -gt 0 ] || { echo "no mutation matches \"$filter\""; exit 1; }

# Every site first: a list out of step with the code fails before hours
# of testing.
files=()
for i in "${selected[@]}"; do
	files[$i]=$(locate "$i")
done

# apply I / restore I: mutation I in its file, and back.
apply() {
	orig=$(<"${files[$1]}")
	printf '%s\n' "${orig/"${olds[$1]}"/"${news[$1]}"}" >"${files[$1]}"
}
restore() { printf '%s\n' "$orig" >"${files[$1]}"; }

# Every mutant must build (a replacement that does not compile kills
# nothing): checked for the whole list before any test runs.
for i in "${selected[@]}"; do
	apply "$i"
	if ! go build -o /dev/null "./$(dirname "${files[$i]}")" 2>"$tmp/.build.log"; then
		restore "$i"
		cat "$tmp/.build.log"
		echo "mutation ${names[$i]} does not build in ${files[$i]}: fix its replacement"
		exit 1
	fi
	restore "$i"
	[ -n "${MUTATION_SITES:-}" ] && printf '%-56s %s\n' "${names[$i]}" "${files[$i]}"
done
[ -n "${MUTATION_SITES:-}" ] && exit 0

# The packages' tests must pass unmutated, or a kill means nothing.
pkgs=$(for i in "${selected[@]}"; do dirname "${files[$i]}"; done | sort -u)
echo "== baseline: $(echo "$pkgs" | wc -l) packages"
for p in $pkgs; do
	if ! go test -count=1 -failfast -vet=off -timeout "$timeout" "./$p" >"$tmp/.baseline.log" 2>&1; then
		tail -n 40 "$tmp/.baseline.log"
		echo "baseline: ./$p fails unmutated"
		exit 1
	fi
done

echo "== mutants"
killed=0 survived=0 survivors=()
for i in "${selected[@]}"; do
	pkg=$(dirname "${files[$i]}")
	apply "$i"
	start=$(date +%s)
	if go test -count=1 -failfast -vet=off -timeout "$timeout" "./$pkg" >"$tmp/.mutant.log" 2>&1; then
		survived=$((survived + 1))
		survivors+=("${names[$i]}")
		verdict=SURVIVED
	else
		killed=$((killed + 1))
		verdict=killed
		if grep -q '^panic: test timed out' "$tmp/.mutant.log"; then
			verdict="killed by the timeout ($timeout)"
		elif first=$(grep -m1 -E '^\s*--- FAIL: ' "$tmp/.mutant.log" | sed -E 's/^\s*--- FAIL: //; s/ \(.*//'); [ -n "$first" ]; then
			verdict="killed by $first"
		fi
	fi
	restore "$i"
	printf '%-56s %4ss  %s\n' "${names[$i]}" "$(($(date +%s) - start))" "$verdict"
done

echo "== equivalent mutations (not run)"
for i in "${!eq_names[@]}"; do
	printf '%s: %s\n' "${eq_names[$i]}" "${eq_whys[$i]}"
done
total=$((killed + survived))
if [ "${#survivors[@]}" -gt 0 ]; then
	echo "== survivors"
	printf '%s\n' "${survivors[@]}"
fi
echo "$killed killed, $survived survived of $total ($((killed * 100 / total))% killed); ${#eq_names[@]} equivalent"
[ $((killed * 100)) -ge $((total * 95)) ]
