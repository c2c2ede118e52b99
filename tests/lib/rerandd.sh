# SPDX-License-Identifier: GPL-2.0-only
# Helpers shared by the tests that run real build/rerandd instances against
# fixtures (tests/daemon/test-*.sh, tests/fleet/*.sh): what a test needs
# before it starts (binaries, root, a kernel, a prebuilt image), an
# instance's fixtures and the common parts of its rerand.conf, starting the
# instances and waiting for them, bounded, and stopping them.  Sourced (more
# than once is harmless); expects $R, $RERANDD, $top and $tmp where the
# functions using them are called, and bail, skip and done_ (tap.sh, or the
# test's own).

# wait_for TIMEOUT_S CMD...: poll CMD every 0.1 s until it succeeds.
wait_for() {
	local until=$(($(date +%s%3N) + $1 * 1000)); shift
	while [ "$(date +%s%3N)" -le "$until" ]; do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# rerandd_test NAME [TRAP]: the start of a test of rerandd instances, after
# `top=...` and sourcing this file: tmp (a fresh /tmp/rerand-NAME.XXXXXX), R
# (this tree's rerand), RERANDD (this tree's rerandd, unless the environment
# names another build: a test of the test), TAP (tests/lib/tap.sh), the
# procfs fixtures (tests/lib/procfs-fixture.sh), and TRAP (a function, by
# default rerandd_cleanup) on EXIT
rerandd_test() {
	tmp=$(mktemp -d "/tmp/rerand-$1.XXXXXX")
	R=$top/build/rerand
	RERANDD=${RERANDD:-$top/build/rerandd}
	. "$top/tests/lib/tap.sh"
	. "$top/tests/lib/procfs-fixture.sh"
	trap "${2:-rerandd_cleanup}" EXIT
}

# rerandd_need_bins [BIN...]: $R, $RERANDD and each BIN are built, or bail
rerandd_need_bins() {
	local b
	for b in "$R" "$RERANDD" "$@"; do [ -x "$b" ] || bail "$b is missing: make all"; done
}

# rerandd_need_builder [WHY]: root and a user nobody, as rerandd needs them
# to build images as ImageUser=nobody; else the test fails, saying WHY (a
# missing prerequisite is a not ok, never a skip: make check runs as root)
rerandd_need_builder() {
	[ "$(id -u)" = 0 ] || bail "not root: ${1:-rerandd builds as ImageUser=} (run the test as root, as make check does)"
	id nobody >/dev/null 2>&1 || bail "no user nobody to build as"
}

# rerandd_kernel [NAME]: KERNEL=NAME (default Debian 12's 6.1 cloud kernel)
# in $RERAND_KERNELS (../shared/kernels), readable, or bail
rerandd_kernel() {
	kdir=${RERAND_KERNELS:-$top/../shared/kernels}
	KERNEL=$kdir/${1:-vmlinuz-6.1.0-57-cloud-amd64}
	[ -r "$KERNEL" ] || bail "$KERNEL: a kernel to stage is needed"
}

# rerandd_pick_kernel: KERNEL=Debian 12's default cloud kernel, whatever its
# build (scripts/kernels.sh: ../shared/kernels, or the Debian package
# fetched once), or bail
rerandd_pick_kernel() {
	KERNEL=$("$top/scripts/kernels.sh" pick cloud61 2>"$tmp/kernels.err") ||
		bail "a 6.1 cloud kernel to stage is needed: $(tail -n1 "$tmp/kernels.err")"
}

# rerandd_prebuilt_image: $KERNEL's image built once into IMAGE=$tmp/KEY.img,
# KEY being rerandd's cache key as `rerand cache-key` prints it (KSHA.SSHA:
# the kernel's and the stage's SHA-256), for rerandd_seed_cache
rerandd_prebuilt_image() {
	KEY=$("$R" cache-key "$KERNEL" 2>"$tmp/image.err") || bail "rerand cache-key: $(cat "$tmp/image.err")"
	KSHA=${KEY%%.*} SSHA=${KEY#*.}
	IMAGE=$tmp/$KEY.img
	"$R" image "$KERNEL" -o "$IMAGE" >/dev/null 2>"$tmp/image.err" || bail "rerand image: $(cat "$tmp/image.err")"
}

# rerandd_seed_cache DIR: the prebuilt IMAGE in the instance's image cache,
# with its record, as rerandd or the kernel hook leaves an image it built
# (rerandd rebuilds an image without one): the instance stages at once
rerandd_seed_cache() {
	mkdir -p "$1/state/images"
	ln -f "$IMAGE" "$1/state/images/$KEY.img"
	printf '%s  %s\n' "$(sha256sum <"$IMAGE" | cut -d' ' -f1)" "$KEY.img" \
		>"$1/state/images/$KEY.img.sha256"
}

# rerandd_randomized_sd DIR: a setup_data tree (SetupData=DIR) of a boot the
# stage randomized: another entry first, then the stage's record (format as
# in tests/cli/test-cli.sh: seeded, 5 of 5 attempts, 480 slots)
rerandd_randomized_sd() {
	mkdir -p "$1/0" "$1/1"
	echo 0x1 >"$1/0/type"
	printf 'xxxx' >"$1/0/data"
	echo 0x52520001 >"$1/1/type"
	python3 -c "import struct,sys; sys.stdout.buffer.write(b'RERANDST'+struct.pack('<HHIIIIIIIQQQ',1,64,1,1,0x0d,0,3,5,1,480,470,123456))" >"$1/1/data"
}

# rerandd_dirs DIR [SUBDIR...]: an instance directory with what rerandd_conf
# names (state, 0700 as systemd makes it, run, boot, conf.d) and SUBDIR...
rerandd_dirs() {
	local hd=$1 d
	shift
	mkdir -p "$hd/state" "$hd/run" "$hd/boot" "$hd/conf.d"
	chmod 0700 "$hd/state"
	for d in "$@"; do mkdir -p "$hd/$d"; done
}

# rerandd_fixtures DIR CMDLINE [BOOT_AGE_S]: the instance's /proc stand-ins
# as plain files: a fresh boot_id, stat (a boot BOOT_AGE_S ago, default
# now), tainted 0, and cmdline
rerandd_fixtures() {
	cat /proc/sys/kernel/random/uuid >"$1/boot_id"
	echo "btime $(($(date +%s) - ${3:-0}))" >"$1/stat"
	echo 0 >"$1/tainted"
	echo "$2" >"$1/cmdline"
}

# rerandd_procfs_fixtures DIR CMDLINE [BOOT_AGE_S]: the same as procfs
# files (tests/lib/procfs-fixture.sh: size 0 in stat(), as on Debian 12)
rerandd_procfs_fixtures() {
	procfs_fixture "$1/boot_id" "$(cat /proc/sys/kernel/random/uuid)"$'\n'
	procfs_fixture "$1/stat" "btime $(($(date +%s) - ${3:-0}))"$'\n'
	procfs_fixture "$1/tainted" $'0\n'
	procfs_fixture "$1/cmdline" "$2"$'\n'
}

# rerandd_unlocked DIR: no lockdown, Secure Boot off (DIR/lockdown,
# DIR/SecureBoot, for [Paths] Lockdown= and SecureBoot=)
rerandd_unlocked() {
	printf '[none] integrity confidentiality\n' >"$1/lockdown"
	printf '\x06\x00\x00\x00\x00' >"$1/SecureBoot"
}

# rerandd_keeper_kexec FILE: a STAND-IN for kexec-tools that keeps a copy of
# each image it is handed (INSTANCE/loaded.N.img, FILE being
# INSTANCE/bin/kexec) and logs each call to INSTANCE/kexec.log; it loads
# nothing
rerandd_keeper_kexec() {
	cat >"$1" <<'EOF'
#!/bin/sh
# STAND-IN for kexec-tools (tests/lib/rerandd.sh): keeps a copy of what it
# is handed, loads nothing.
[ "$1" = --version ] && { echo "kexec-tools 2.0.25"; exit 0; }
d=$(dirname "$(dirname "$0")")
i=$(ls "$d" | grep -c '^loaded\.')
for a in "$@"; do
	case $a in /proc/self/fd/*) cat "$a" >"$d/loaded.$i.img" ;; esac
done
printf '%s\n' "$*" >>"$d/kexec.log"
exit 0
EOF
	chmod 0755 "$1"
}

# rerandd_conf DIR KEXEC SETUP_DATA <REST: DIR/rerand.conf for an instance
# whose files are all under DIR: [Daemon] (KexecBinary=KEXEC, a 1 s check)
# and the [Paths] fixtures every test has; REST continues [Paths] and gives
# the other sections.  Run as root, rerandd builds images as ImageUser=
# (nobody here: the tests create no system user; RERANDD_IMAGE_USER to vary).
rerandd_conf() {
	local hd=$1
	{
		cat <<EOF
[Daemon]
StateDirectory=$hd/state
RuntimeDirectory=$hd/run
MetricsFile=$hd/run/rerand.prom
RerandBinary=$R
KexecBinary=$2
ImageUser=${RERANDD_IMAGE_USER:-nobody}
CheckInterval=1s

[Paths]
Boot=$hd/boot
ProcCmdline=$hd/cmdline
SetupData=$3
Kmsg=$hd/no-kmsg
Tainted=$hd/tainted
BootId=$hd/boot_id
ProcStat=$hd/stat
# never the host's watchdog or pstore: a rerandd under test arms nothing
Watchdog=
WatchdogSysfs=$hd/no-watchdog
WatchdogStopOnReboot=
Pstore=$hd/no-pstore
# never the host's boot_params either (a test sets its own fixture)
BootParams=
# nor the host's kdump-tools or kdumpctl (another crash loader)
CrashLoaderWants=$hd/systemd-wants
KdumpToolsDefault=$hd/kdump-tools
# nor the host's boot loader: GRUB's files and systemd-boot's variables
# are the instance's (absent unless a test writes them)
GrubConfig=$hd/boot/grub/grub.cfg
GrubEnvironment=$hd/boot/grub/grubenv
LoaderEntrySelected=$hd/efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f
EOF
		cat
	} >"$hd/rerand.conf"
}

# rerandd_conf_local DIR KEXEC SETUP_DATA <REST: rerandd_conf, with [Paths]
# for an instance with no crash kernel and hook directories of its own
# (DIR/pre, DIR/post: rerandd_dirs DIR pre post)
rerandd_conf_local() {
	{
		cat <<EOF
PreRebootDirectory=$1/pre
PostBootDirectory=$1/post
KexecCrashSize=$1/no-crash-size
KexecCrashLoaded=$1/no-crash-loaded
ProcVmcore=$1/no-vmcore
EOF
		cat
	} | rerandd_conf "$@"
}

# rerandd_simple_inst DIR KERNEL [KEY=VALUE...]: an instance that stages
# KERNEL (Initrd=none) from its cache (rerandd_prebuilt_image first), with
# the keeper kexec stand-in, a RebootCommand= that only records (DIR/no-reboot),
# no crash kernel, NewKernelSettle=1s, and [Policy] MaxLayoutAge=30d KEY=VALUE...
rerandd_simple_inst() {
	local hd=$1 k=$2
	shift 2
	rerandd_dirs "$hd" bin pre post
	rerandd_keeper_kexec "$hd/bin/kexec"
	rerandd_no_reboot "$hd/no-reboot"
	rerandd_fixtures "$hd" "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro console=ttyS0"
	rerandd_unlocked "$hd"
	mkfifo "$hd/uevents"
	rerandd_seed_cache "$hd"
	rerandd_conf_local "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
Uevents=$hd/uevents
Lockdown=$hd/lockdown
SecureBoot=$hd/SecureBoot

[Stage]
Kernel=$k
Initrd=none
NewKernelSettle=1s

[Crash]
Mode=off

$(rerandd_policy MaxLayoutAge=30d "$@")

$(rerandd_reboot_by "$hd/no-reboot $hd")
EOF
}

# rerandd_policy [KEY=VALUE...]: a [Policy] section that leaves a test its
# own timing (no Jitter=, no waiting for inhibitors), with KEY=VALUE...
# first, for a rerandd_conf heredoc: $(rerandd_policy MaxLayoutAge=30d)
rerandd_policy() {
	printf '[Policy]\n'
	[ $# -eq 0 ] || printf '%s\n' "$@"
	printf 'Jitter=0\nHonorInhibitors=no\n'
}

# rerandd_reboot_by CMD [KEY=VALUE...]: a [Reboot] section running CMD (a
# recorder: nothing reboots) with KEY=VALUE..., for a rerandd_conf heredoc
rerandd_reboot_by() {
	printf '[Reboot]\nMethod=command\nRebootCommand=%s\n' "$1"
	shift
	[ $# -eq 0 ] || printf '%s\n' "$@"
}

# rerandd_no_reboot FILE: a RebootCommand for instances that must never
# reboot: "FILE DIR" records the call in DIR/reboot-called (which the tests
# check for) and fails.
rerandd_no_reboot() {
	printf '#!/bin/sh\necho REBOOT >>"$1/reboot-called"\nexit 1\n' >"$1"
	chmod +x "$1"
}

# rerandd_start DIR: rerandd on DIR/rerand.conf and DIR/conf.d in the
# background, its output appended to DIR/log, its pid in DIR/pid and in
# $rerandd_pids (stopped by rerandd_cleanup).
declare -p rerandd_pids >/dev/null 2>&1 || rerandd_pids=()
rerandd_start() {
	"$RERANDD" --config "$1/rerand.conf" --config-dir "$1/conf.d" >>"$1/log" 2>&1 &
	rerandd_pids+=($!)
	echo $! >"$1/pid"
}

# rerandd_wait_up DIR: its control socket appears within 30 s, or bail
rerandd_wait_up() {
	wait_for 30 test -S "$1/run/control" ||
		bail "${1##*/}: rerandd did not come up: $(tail -3 "$1/log")"
}

# rerandd_up DIR...: each instance started, then each up (its control
# socket within 30 s), or bail
rerandd_up() {
	local d
	for d in "$@"; do rerandd_start "$d"; done
	for d in "$@"; do rerandd_wait_up "$d"; done
}

# rerandd_status DIR [ARG...]: `rerand status ARG...` of the instance
rerandd_status() {
	local d=$1
	shift
	RERAND_CONTROL_SOCKET=$d/run/control "$R" status "$@"
}

# rerandd_staged DIR: the instance says it has staged an image
rerandd_staged() { rerandd_status "$1" 2>/dev/null | grep -q '^staged: *yes'; }

# rerandd_wait_staged TIMEOUT_S DIR: the instance stages within TIMEOUT_S,
# or bail with the end of its log
rerandd_wait_staged() {
	wait_for "$1" rerandd_staged "$2" ||
		bail "${2##*/}: nothing staged within $1 s: $(tail -3 "$2/log")"
}

# rerandd_cleanup: the EXIT trap: SIGTERM to every rerandd and procfs
# fixture, SIGKILL to what is left, $tmp removed (kept with KEEP=1).
rerandd_cleanup() {
	local p all=("${rerandd_pids[@]}" ${procfs_fixture_pids[@]+"${procfs_fixture_pids[@]}"})
	for p in "${all[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.2
	for p in "${all[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
