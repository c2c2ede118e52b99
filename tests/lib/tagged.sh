# SPDX-License-Identifier: GPL-2.0-only
# Killing every process a test started, orphans and forked subshells
# included, however the test ends: each carries a tag of the run in its
# environment, which /proc/PID/environ shows (what a process was exec'ed
# with), so the test's shell itself is started again with the tag first
# (tagged_reexec).  rerandd passes its environment on to hooks and to the
# RebootCommand, an observer to its etcdctl: they carry the tag too.
# Sourced by the fleet tests that run many hosts (tests/fleet/test-fleet-
# daemon.sh, test-fleet-chaos.sh).

# tagged_reexec NAME "$@": the first thing the test does: unless this shell
# already carries the tag, exec the script again with RERAND_FLEETD_TEST
# (NAME-PID-TIME) in its environment
tagged_reexec() {
	local name=$1
	shift
	if [ "${RERAND_FLEETD_SELF:-}" != "$$" ]; then
		exec env RERAND_FLEETD_SELF=$$ RERAND_FLEETD_TEST="$name-$$-$(date +%s%N)" "$BASH" "$0" "$@"
	fi
	TAG=RERAND_FLEETD_TEST=$RERAND_FLEETD_TEST
}

# scan_ours: fills ours=() with the pids carrying the tag (this shell and
# its subshell aside); builtins only, no fork
ours=()
scan_ours() {
	local d p x e
	ours=()
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = "$$" ] || [ "$p" = "$BASHPID" ] && continue
		e=()
		mapfile -d '' e 2>/dev/null <"$d/environ" || continue
		for x in "${e[@]}"; do
			if [ "$x" = "$TAG" ]; then ours+=("$p"); break; fi
		done
	done
}

# kill_ours: SIGKILL them all, again until none is left (a runner may just
# have forked); stopped first, so that none can start anything or report a
# death meanwhile, and continued after, so that none is left stopped
kill_ours() {
	local i
	for ((i = 0; i < 50; i++)); do
		scan_ours
		[ ${#ours[@]} -eq 0 ] && return 0
		kill -STOP "${ours[@]}" 2>/dev/null
		kill -KILL "${ours[@]}" 2>/dev/null
		kill -CONT "${ours[@]}" 2>/dev/null
		sleep 0.1
	done
	return 1
}

# tagged_cleanup [SETTLE_S]: the EXIT trap: each host (a directory in
# $tmp/h) asked to stop, SETTLE_S seconds for them to, then every tagged
# process killed; $tmp removed unless KEEP=1 (the hosts' logs, state and
# etcd data stay for a look)
tagged_cleanup() {
	local f
	exec 2>/dev/null
	trap - INT TERM HUP
	for f in "$tmp"/h/*; do [ -d "$f" ] && touch "$f/stop"; done
	[ -z "${1:-}" ] || sleep "$1"
	kill_ours
	wait
	[ -n "${KEEP:-}" ] && { echo "# kept $tmp" >&2; return; }
	rm -rf "$tmp"
}
