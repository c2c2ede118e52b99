# SPDX-License-Identifier: GPL-2.0-only
# Fixtures that behave like procfs, sourced by the daemon's cli tests.
#
# Debian 12's 6.1 kernel reports size 0 in stat() for /proc/cmdline and
# /proc/stat, and a reader that trusted st_size read them empty.  A plain file
# with the same text has its true size and cannot catch that, so a fixture here
# is a real procfs file: /proc/PID/cmdline of a process (cat, blocked on a FIFO
# that never delivers) whose whole argument list is the text.  Its stat() size
# is 0 and reading it to EOF gives the text and a final NUL, which text readers
# take as the end of the string.  LINK is a symlink to it, replaced atomically
# when the text changes, so a configured path stays the same.

# procfs_fixture LINK TEXT
# Cheap on purpose (one fork for the process, builtins to wait, ln and mv):
# the fleet tests time their simulated reboots.
procfs_fixture() {
	local link=$1 text=$2 pid i got
	if [ -z "${procfs_fd:-}" ]; then
		# one FIFO nobody writes to: the processes' stdin, and a builtin nap
		[ -p "${link%/*}/.procfs-hold" ] || mkfifo "${link%/*}/.procfs-hold"
		exec {procfs_fd}<>"${link%/*}/.procfs-hold"
	fi
	( exec -a "$text" cat ) <&"$procfs_fd" >/dev/null 2>&1 &
	pid=$!
	procfs_fixture_pids+=("$pid")
	# until exec has set up cat's argument area, /proc/PID/cmdline is the
	# shell's or empty
	for ((i = 0; i < 1000; i++)); do
		got=
		IFS= read -r -d '' got <"/proc/$pid/cmdline" 2>/dev/null
		[ "$got" = "$text" ] && break
		read -r -t 0.005 -u "$procfs_fd" got 2>/dev/null
	done
	if [ -L "$link" ]; then
		# replaced atomically; the older process stays until the test ends,
		# a reader may still hold it open
		ln -sfn "/proc/$pid/cmdline" "$link.new" && mv -Tf "$link.new" "$link"
	else
		ln -s "/proc/$pid/cmdline" "$link"
	fi
}

# procfs_text LINK: the fixture's text without its NUL
procfs_text() { tr -d '\0' <"$1"; }

# procfs_size LINK: what stat() says (0 for procfs)
procfs_size() { stat -L -c %s "$1"; }

procfs_fixture_pids=()
