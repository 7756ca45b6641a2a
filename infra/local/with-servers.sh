#!/usr/bin/env bash
# with-servers.sh CMD [ARGS...] — run a command with the local AWS-compatible servers
# up: installs them if needed (infra/local/emu.sh install), starts them, exports
# their endpoints and test credentials (emu.sh env), runs CMD, and stops the servers
# it started whatever CMD's outcome. Exits with CMD's status.
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
"$HERE/emu.sh" install
"$HERE/emu.sh" start
trap '"$HERE/emu.sh" stop' EXIT
eval "$("$HERE/emu.sh" env)"
"$@"
