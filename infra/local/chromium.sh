#!/usr/bin/env bash
# chromium.sh — find or install the headless Chromium that pkg/report's test uses to
# render `urlcheck report` output offline.
#
# Usage: infra/local/chromium.sh install|path
#
#   install  idempotent: if no Chromium binary is found and we are root, installs the
#            Debian package with `apt-get install -y --no-install-recommends chromium`
#            (running `apt-get update` first only if that install fails). Prints the
#            binary's absolute path on stdout; exits 1 if none could be found or
#            installed. apt-get's own output goes to stderr only on failure.
#   path     prints the binary's absolute path, or exits 1 (with a message on stderr).
#
# Lookup order: $URLCHECK_CHROMIUM if set and executable, then chromium,
# chromium-browser, google-chrome-stable, google-chrome on PATH.
# Use as: export URLCHECK_CHROMIUM="$(infra/local/chromium.sh install)"
set -euo pipefail

find_chromium() {
	if [[ -n "${URLCHECK_CHROMIUM:-}" && -x "${URLCHECK_CHROMIUM}" ]]; then
		printf '%s\n' "${URLCHECK_CHROMIUM}"
		return 0
	fi
	local name p
	for name in chromium chromium-browser google-chrome-stable google-chrome; do
		if p=$(command -v "$name" 2>/dev/null) && [[ -n "$p" ]]; then
			# command -v may print a bare name for aliases/functions; insist on a path.
			if [[ "$p" == /* && -x "$p" ]]; then
				printf '%s\n' "$p"
				return 0
			fi
		fi
	done
	return 1
}

apt_install() {
	local log
	log=$(mktemp)
	export DEBIAN_FRONTEND=noninteractive
	if apt-get install -y --no-install-recommends chromium >"$log" 2>&1; then
		rm -f "$log"
		return 0
	fi
	if apt-get update >>"$log" 2>&1 &&
		apt-get install -y --no-install-recommends chromium >>"$log" 2>&1; then
		rm -f "$log"
		return 0
	fi
	cat "$log" >&2
	rm -f "$log"
	return 1
}

cmd_install() {
	if find_chromium; then
		return 0
	fi
	if [[ "$(id -u)" != 0 ]]; then
		echo "chromium.sh: no chromium binary found and not root; install the 'chromium' package" >&2
		return 1
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "chromium.sh: no chromium binary found and no apt-get to install it" >&2
		return 1
	fi
	if ! apt_install; then
		echo "chromium.sh: apt-get install chromium failed" >&2
		return 1
	fi
	if ! find_chromium; then
		echo "chromium.sh: chromium installed but no binary found on PATH" >&2
		return 1
	fi
}

cmd_path() {
	if ! find_chromium; then
		echo "chromium.sh: no chromium binary found (run: infra/local/chromium.sh install)" >&2
		return 1
	fi
}

case "${1:-}" in
install) cmd_install ;;
path) cmd_path ;;
*)
	echo "usage: $0 install|path" >&2
	exit 2
	;;
esac
