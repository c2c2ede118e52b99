#!/bin/bash
# Hook files run as root, so rerandd runs only what root alone can change
# (issue 39, point 9).  Against real build/rerandd instances, each due at
# once with a pre-reboot hook directory of its own:
#  - a hook writable by its group is refused, naming the file and its mode;
#  - a hook owned by another user (nobody) is refused, naming the owner;
#  - a hook directory writable by its group is refused, naming the directory;
#  - a symlinked hook whose target is writable by others is refused, naming
#    the symlink and its target;
# each refusal calls the reboot off as a failed hook does, the refused hook
# never runs and nothing reboots; and a root-owned 0755 hook still runs,
# finding the files next to it through $0 (as the example k8s hooks do),
# its failure calling the reboot off, and so does a symlink to a root-owned
# 0755 script.
# Nothing reboots: the RebootCommand only records a call, which fails the test.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test hooks
rerandd_need_bins
rerandd_need_builder "the hooks' owners are set with chown"
rerandd_pick_kernel
rerandd_prebuilt_image
umask 022

# inst NAME: an instance due at once (booted two hours ago, MaxLayoutAge=1h),
# its image in the cache, pre/ a root-owned 0755 directory
inst() {
	local hd=$tmp/$1
	rerandd_dirs "$hd" pre post sd
	chmod 0755 "$hd/pre" "$hd/post"
	rerandd_seed_cache "$hd"
	rerandd_procfs_fixtures "$hd" "console=ttyS0 root=/dev/vda1 ro" 7200
	rerandd_no_reboot "$hd/no-reboot"
	rerandd_conf_local "$hd" /bin/true "$hd/sd" <<EOF

[Stage]
Kernel=$KERNEL
Initrd=none
CommandLine=console=ttyS0 root=/dev/vda1 ro

$(rerandd_policy MaxLayoutAge=1h MinRebootInterval=0 RebootOutsideWindows=yes BackoffBase=30min)

$(rerandd_reboot_by "$hd/no-reboot $hd" HookTimeout=20s)

[Crash]
Mode=off
EOF
}
# hook FILE: a hook that records that it ran (FILE.ran) and fails, so that a
# hook that ran by mistake calls the reboot off all the same but is seen
hook() {
	printf '#!/bin/sh\necho ran >>"%s.ran"\nexit 1\n' "$1" >"$1"
	chmod 0755 "$1"
}

inst gw;    hook "$tmp/gw/pre/10-hook";    chmod 0775 "$tmp/gw/pre/10-hook"
inst owner; hook "$tmp/owner/pre/10-hook"; chown nobody "$tmp/owner/pre/10-hook"
inst dir;   hook "$tmp/dir/pre/10-hook";   chmod 0775 "$tmp/dir/pre"
inst link;  mkdir -m 0755 "$tmp/link/elsewhere"; hook "$tmp/link/elsewhere/hook"
chmod 0757 "$tmp/link/elsewhere/hook"; ln -s "$tmp/link/elsewhere/hook" "$tmp/link/pre/10-hook"
# the good one: sources its neighbour through $0, then fails on purpose
inst good
printf 'neighbour=found\n' >"$tmp/good/pre/lib.sh"
printf '#!/bin/sh\n. "$(dirname "$0")/lib.sh"\necho "ran $neighbour" >>"%s"\nexit 1\n' \
	"$tmp/good/pre/10-hook.ran" >"$tmp/good/pre/10-hook"
chmod 0755 "$tmp/good/pre/10-hook"

# a good symlinked one: runs through the fd of its checked target
inst goodlink; mkdir -m 0755 "$tmp/goodlink/elsewhere"; hook "$tmp/goodlink/elsewhere/hook"
ln -s "$tmp/goodlink/elsewhere/hook" "$tmp/goodlink/pre/10-hook"

rerandd_up "$tmp/gw" "$tmp/owner" "$tmp/dir" "$tmp/link" "$tmp/good" "$tmp/goodlink"
called_off() { grep -q "; not rebooting now" "$tmp/$1/log"; }
for i in gw owner dir link good goodlink; do    # (n is tap.sh's counter)
	wait_for 90 called_off "$i" || echo "# $i: no reboot called off within 90 s: $(tail -3 "$tmp/$i/log" | tr '\n' '|')"
	echo "# $i: $(grep -m1 "not rebooting now" "$tmp/$i/log")"
done
# refused N WHAT: the instance called the reboot off saying WHAT, the hook
# never ran, nothing rebooted
refused() {
	grep -qF "$2" "$tmp/$1/log" && called_off "$1" && [ ! -e "$tmp/$1/pre/10-hook.ran" ] &&
		[ ! -e "$tmp/$1/elsewhere/hook.ran" ] && [ ! -e "$tmp/$1/reboot-called" ]
}
check "a group-writable hook is refused, naming it and its mode; it did not run, no reboot" \
	refused gw "$tmp/gw/pre/10-hook: pre-reboot hook has mode 0775, writable by its group: refused"
check "a hook owned by nobody is refused, naming it and its owner; it did not run, no reboot" \
	refused owner "$tmp/owner/pre/10-hook: pre-reboot hook owned by uid $(id -u nobody), not root: refused"
check "a group-writable hook directory is refused, naming it; its hook did not run, no reboot" \
	refused dir "$tmp/dir/pre: the pre-reboot hook directory has mode 0775, writable by its group: refused"
check "a symlinked hook whose target everyone may write is refused, naming both; no reboot" \
	refused link "$tmp/link/pre/10-hook (a symlink to $tmp/link/elsewhere/hook): pre-reboot hook has mode 0757, writable by everyone: refused"
check "a root-owned 0755 hook runs and finds its neighbour through \$0" \
	eval 'grep -qx "ran found" "$tmp/good/pre/10-hook.ran"'
check "... and its failure calls the reboot off as before" \
	eval 'grep -q "10-hook: pre-reboot hook failed (status 1); not rebooting now" "$tmp/good/log" && [ ! -e "$tmp/good/reboot-called" ]'
check "a symlink to a root-owned 0755 script runs it (through the checked target's fd)" \
	eval 'grep -qx ran "$tmp/goodlink/elsewhere/hook.ran" &&
	      grep -q "10-hook: pre-reboot hook failed (status 1); not rebooting now" "$tmp/goodlink/log"'
done_
