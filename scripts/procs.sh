# shellcheck shell=bash
# Process supervision for scripts/run.sh and scripts/run-standalone.sh
# (sourced, bash ≥ 4.3, under set -euo pipefail, from the repository root).
#
# Contract:
#   - start NAME LOG CMD… runs CMD in the background with its output in LOG
#     (truncated first).
#   - ready NAME SECONDS CHECK… waits until CHECK succeeds while NAME runs.
#     When NAME exits first, or SECONDS pass, the run fails: the script names
#     NAME and why, shows the end of its log, stops every other process and
#     exits 1. Checks: logged NAME TEXT (NAME's own log says TEXT, so a
#     foreign process on the same port cannot pass for it), or any command.
#   - serve_until_signal waits after the banner; a process that ends on its
#     own fails the run as above.
#   - After procs_traps LABEL, SIGINT and SIGTERM stop every process and exit
#     0; any other exit stops them too and keeps its status; a failing
#     command is named on stderr.

PROCS_LABEL=weir
names=()        # started processes, in order
declare -A pid  # name → pid
declare -A logf # name → log file
why=""          # set by ended

say() { printf '%s\n' "$*"; }

# die MESSAGE… says what failed and exits 1 (processes are stopped by the
# EXIT trap).
die() {
	printf '%s: %s\n' "$PROCS_LABEL" "$*" >&2
	exit 1
}

start() {
	local name=$1 log=$2
	shift 2
	: >"$log"
	"$@" >"$log" 2>&1 &
	pid[$name]=$!
	logf[$name]=$log
	names+=("$name")
}

# stop_all stops every started process: SIGTERM, then SIGKILL after 15 s.
stop_all() {
	local n alive
	for n in "${names[@]}"; do kill -TERM "${pid[$n]}" 2>/dev/null || true; done
	for _ in $(seq 1 150); do
		alive=0
		for n in "${names[@]}"; do kill -0 "${pid[$n]}" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for n in "${names[@]}"; do
		if kill -0 "${pid[$n]}" 2>/dev/null; then
			say "$PROCS_LABEL: $n did not stop within 15s; killing it" >&2
			kill -KILL "${pid[$n]}" 2>/dev/null || true
		fi
	done
	wait 2>/dev/null || true
	names=()
}

# failed NAME WHY reports that a process failed, with the end of its log,
# stops the rest and exits 1.
failed() {
	local name=$1 reason=$2
	{
		printf '\n%s: %s %s. The end of %s:\n' "$PROCS_LABEL" "$name" "$reason" "${logf[$name]#"$PWD"/}"
		tail -n 15 "${logf[$name]}" | sed 's/^/  | /'
		printf '%s: stopping the others.\n' "$PROCS_LABEL"
	} >&2
	stop_all
	exit 1
}

# ended NAME is true when the process has ended, and sets why to how.
ended() {
	local rc=0
	kill -0 "${pid[$1]}" 2>/dev/null && return 1
	wait "${pid[$1]}" 2>/dev/null || rc=$?
	why="exited with status $rc"
}

ready() {
	local name=$1 secs=$2
	shift 2
	local deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if ended "$name"; then failed "$name" "$why"; fi
		if ((SECONDS >= deadline)); then failed "$name" "was not ready after ${secs}s"; fi
		sleep 0.1
	done
	if ended "$name"; then failed "$name" "$why"; fi
}

logged() { grep -q -- "$2" "${logf[$1]}"; }

# in_use HOST PORT is true when something accepts connections there.
in_use() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

procs_finish() {
	trap - EXIT INT TERM
	if ((${#names[@]})); then
		say "stopping…"
		stop_all
		say "stopped"
	fi
}

procs_traps() {
	PROCS_LABEL=$1
	trap 'procs_finish; exit 0' INT TERM
	trap 'rc=$?; procs_finish; exit $rc' EXIT
	trap 'say "$PROCS_LABEL: this failed (status $?): $BASH_COMMAND" >&2' ERR
}

serve_until_signal() {
	local n
	while :; do
		wait -n "${pid[@]}" || true
		for n in "${names[@]}"; do
			if ended "$n"; then failed "$n" "$why"; fi
		done
	done
}
