#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The README's commands (issue 40): every command in a code block of
# README.md is either run here, run by a named test, or listed as needing a
# real machine (tests/cli/readme-commands says which).  Run here, on the
# built tree, as a user would type them with the paths made local:
#  - the window drop-in (the README's own heredoc) checked by
#    `rerandd --check-config` beside the shipped etc/rerand.conf, and the
#    fleet snippet checked the same way;
#  - `rerand image` of a real kernel, then signed with a throwaway key and
#    `sbverify --cert` on the result.
# The sample `rerand status`/`rerand verify` output is held to the guest
# that printed it: its words must be ones rerandd and rerand print.
# RERAND_README= checks another README (the test of this test).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
R=$top/build/rerand
RERANDD=$top/build/rerandd
README=${RERAND_README:-$top/README.md}
LIST=$top/tests/cli/readme-commands
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/lib/tap.sh"

[ -x "$R" ] && [ -x "$RERANDD" ] || bail "build/rerand, build/rerandd missing: make all"
[ -r "$README" ] || bail "$README: cannot read"

# The code blocks: indented lines after a blank line.  A heredoc's body is
# the command's, not commands; a block whose first line is a section
# ([Fleet]) is a configuration snippet; a block that starts with "# "
# is a root shell's transcript: "# CMD" lines are commands, the rest output.
awk -v cmds="$tmp/cmds" -v snip="$tmp/snippets" -v out="$tmp/output" '
	BEGIN { inblk = 0; here = ""; kind = "" }
	/^    / {
		line = substr($0, 5)
		if (!inblk) {
			inblk = 1; nsnip++
			kind = (line ~ /^\[[A-Za-z]/) ? "snippet" : (line ~ /^# /) ? "transcript" : \
				(line ~ /──/) ? "diagram" : "cmd"
		}
		if (kind == "diagram") next
		if (kind == "snippet") { print nsnip "\t" line > snip; next }
		if (here != "") {
			if (line == here) { here = ""; next }
			print "heredoc" nsnip "\t" line > snip; next
		}
		if (kind == "transcript") {
			if (line ~ /^# /) print NR "\t" substr(line, 3) > cmds
			else print line > out
			next
		}
		if (line == "...") next
		if (match(line, /<<[A-Z]+$/)) here = substr(line, RSTART + 2)
		sub(/[ ]+#.*$/, "", line)
		print NR "\t" line > cmds
		next
	}
	/^$/ { next }
	{ inblk = 0; here = "" }
' "$README"
touch "$tmp/cmds" "$tmp/snippets" "$tmp/output"
ncmd=$(wc -l <"$tmp/cmds")
check "the README has commands in its code blocks ($ncmd)" [ "$ncmd" -ge 8 ]

# --- every command is listed -------------------------------------------------
# entry: the longest listed prefix of the command
entry() {
	local c=$1 best="" p
	while IFS=$'\t' read -r p rest; do
		case $p in ''|'#'*) continue ;; esac
		[ "${c#"$p"}" != "$c" ] && [ ${#p} -gt ${#best} ] && best=$p
	done <"$LIST"
	[ -n "$best" ] && grep -m1 -F "$best"$'\t' "$LIST"
}
unlisted=() herecmds=()
while IFS=$'\t' read -r lineno c; do
	e=$(entry "$c") || { unlisted+=("line $lineno: $c"); continue; }
	IFS=$'\t' read -r p how b <<<"$e"
	a=${how#* }; [ "$a" = "$how" ] && a=""
	how=${how%% *}
	[ "$how" = machine ] && a=$b
	case $how in
	here) herecmds+=("$p") ;;
	test)
		[ -f "$top/$a" ] && grep -qF -- "$b" "$top/$a" ||
			unlisted+=("line $lineno: $c: $a does not hold '$b'") ;;
	machine) [ -n "$a" ] || unlisted+=("line $lineno: $c: machine, but no reason given") ;;
	*) unlisted+=("line $lineno: $c: '$how' is not here, test or machine") ;;
	esac
done <"$tmp/cmds"
check "every README command is run here, by a named test, or needs a real machine${unlisted:+: ${unlisted[*]}}" \
	[ ${#unlisted[@]} -eq 0 ]

# --- run here ----------------------------------------------------------------
has_here() { local h; for h in "${herecmds[@]}"; do [ "$h" = "$1" ] && return 0; done; return 1; }
conf=$tmp/etc/rerand.conf
mkdir -p "$tmp/etc/rerand.conf.d"
cp "$top/etc/rerand.conf" "$conf"

# The window drop-in: the heredoc's body, written where the README says
# (under $tmp), then the README's check.
if has_here "cat >/etc/rerand/rerand.conf.d/50-window.conf"; then
	grep "^heredoc" "$tmp/snippets" | cut -f2- >"$tmp/etc/rerand.conf.d/50-window.conf"
	check "README's window drop-in: has a [Window ...] section" grep -q '^\[Window ' "$tmp/etc/rerand.conf.d/50-window.conf"
	"$RERANDD" --check-config --config "$conf" --config-dir "$tmp/etc/rerand.conf.d" >"$tmp/cc.out" 2>&1; rc=$?
	check "rerandd --check-config of the shipped rerand.conf and the README's drop-in: exit $rc$(
		[ $rc -eq 0 ] || echo ": $(tr '\n' ' ' <"$tmp/cc.out")")" [ $rc -eq 0 ]
	"$RERANDD" --dump-config --config "$conf" --config-dir "$tmp/etc/rerand.conf.d" >"$tmp/dump" 2>&1
	check "--dump-config shows the window from the drop-in" grep -q '50-window.conf' "$tmp/dump"
fi

# Each configuration snippet, checked the same way.
for s in $(cut -f1 "$tmp/snippets" | grep -v heredoc | sort -u); do
	rm -f "$tmp/etc/rerand.conf.d"/*
	awk -F'\t' -v s="$s" '$1 == s { print $2 }' "$tmp/snippets" >"$tmp/etc/rerand.conf.d/60-snippet.conf"
	# The fleet snippet names the TLS files it expects in /etc/rerand/fleet-tls/.
	if grep -q '^\[Fleet\]' "$tmp/etc/rerand.conf.d/60-snippet.conf"; then
		mkdir -p "$tmp/tls"
		for f in ca.pem client.pem client.key; do echo x >"$tmp/tls/$f"; done
		printf 'CACert=%s\nCert=%s\nKey=%s\n' "$tmp/tls/ca.pem" "$tmp/tls/client.pem" "$tmp/tls/client.key" \
			>>"$tmp/etc/rerand.conf.d/60-snippet.conf"
	fi
	"$RERANDD" --check-config --config "$conf" --config-dir "$tmp/etc/rerand.conf.d" >"$tmp/cc.out" 2>&1; rc=$?
	check "README snippet '$(head -n1 "$tmp/etc/rerand.conf.d/60-snippet.conf")' passes rerandd --check-config: exit $rc$(
		[ $rc -eq 0 ] || echo ": $(tr '\n' ' ' <"$tmp/cc.out")")" [ $rc -eq 0 ]
done

k=$("$top/scripts/kernels.sh" pick generic61 2>"$tmp/k.err") ||
	k=$("$top/scripts/kernels.sh" pick cloud61 2>"$tmp/k.err") ||
	bail "a Debian 6.1 kernel for rerand image: $(tail -n1 "$tmp/k.err")"
if has_here "rerand image /boot/vmlinuz"; then
	"$R" image "$k" -o "$tmp/next.img" >"$tmp/img.out" 2>&1; rc=$?
	check "rerand image $(basename "$k") -o next.img: exit $rc" [ $rc -eq 0 -a -s "$tmp/next.img" ]
fi
if has_here "rerand image vmlinuz-6.1.0-57-amd64 -o next.img --sign-key db.key --sign-cert db.pem"; then
	openssl req -new -x509 -newkey rsa:2048 -nodes -subj "/CN=rerand README db/" -days 1 \
		-keyout "$tmp/db.key" -out "$tmp/db.pem" >/dev/null 2>&1 || bail "openssl cannot make a throwaway key"
	"$R" image "$k" -o "$tmp/signed.img" --sign-key "$tmp/db.key" --sign-cert "$tmp/db.pem" >"$tmp/sign.out" 2>&1; rc=$?
	check "rerand image --sign-key db.key --sign-cert db.pem: exit $rc$([ $rc -eq 0 ] || echo ": $(tail -n1 "$tmp/sign.out")")" [ $rc -eq 0 ]
	if has_here "sbverify --cert db.pem next.img"; then
		sbverify --cert "$tmp/db.pem" "$tmp/signed.img" >"$tmp/sbv.out" 2>&1; rc=$?
		check "sbverify --cert db.pem next.img: exit $rc ($(tail -n1 "$tmp/sbv.out"))" [ $rc -eq 0 ]
	fi
fi

# --- the sample output -------------------------------------------------------
# Its field names are the ones rerandd's status and rerand verify print
# (daemon/status_text.c, kexec/cmd_verify.c), and it shows no address.
if [ -s "$tmp/output" ]; then
	bad=()
	while IFS= read -r l; do
		f=${l%%:*}
		[ "$f" = "$l" ] && continue
		grep -rqF "\"$f:" "$top/daemon/status_text.c" "$top/kexec/cmd_verify.c" "$top/src/status.c" || bad+=("$f")
	done <"$tmp/output"
	check "the README's sample output uses only field names the programs print${bad:+ (not printed: ${bad[*]})}" \
		[ ${#bad[@]} -eq 0 ]
	check "the README's sample output shows no kernel address (0xffffffff8...)" \
		bash -c "! grep -Eqi '0x?ffffffff[89a-f][0-9a-f]{7}|\\bffffffff[89a-f][0-9a-f]{7}\\b' '$tmp/output'"
else
	nok "the README has no sample rerand status/verify transcript (a block of '# rerand status' and its output)"
fi
done_
