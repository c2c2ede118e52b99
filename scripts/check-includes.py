#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The include rule of the layers below the programs (issue 41, point 6):

  include/     includes only include/ and the compiler's freestanding headers;
  src/shared/  (built into the freestanding stage too) only include/,
               src/shared/ and those headers;
  src/         (all of it, src/common/ and src/shared/ included) nothing
               under daemon/, fleetd/ or kexec/.

Every #include line counts, inside #if blocks too.  A quoted include is
looked up as the compiler does: the including file's folder first, then the
Makefile's -I folders of the hosted build (CPPFLAGS: include, src,
src/common, src/shared; the stage's are a subset).  One that resolves to no file
there is refused as well: it builds only with another -I (pesig.c once
found daemon/crypto_dl.h through -Idaemon).  An angle include is a system
header unless include/ has it.

usage: check-includes.py [TOP]   (TOP: the source tree, default this one's)
Prints one line per broken include, "FILE:LINE: ..."; exit 1 if any, 2 on a
bad TOP.
"""
import os
import re
import sys

FREESTANDING = {"stdint.h", "stddef.h", "stdbool.h", "stdarg.h", "limits.h", "float.h",
                "stdalign.h", "stdnoreturn.h", "iso646.h"}
ABOVE = ("daemon", "fleetd", "kexec")
INC = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_rules(rel):
    """(search path, allowed roots or None, freestanding only) for file rel."""
    hosted = ["include", "src", "src/common", "src/shared"]
    if rel.startswith("include/"):
        return hosted, ("include",), True
    if rel.startswith("src/shared/"):
        return hosted, ("include", "src/shared"), True
    return hosted, None, False


def under(path, root):
    return path == root or path.startswith(root + "/")


def check(top):
    bad = []
    files = []
    for base in ("include", "src"):
        for d, _, names in os.walk(os.path.join(top, base)):
            for n in names:
                if n.endswith((".c", ".h", ".S")):
                    files.append(os.path.relpath(os.path.join(d, n), top))
    for rel in sorted(files):
        search, allowed, freestanding = layer_rules(rel)
        with open(os.path.join(top, rel), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        for no, line in enumerate(lines, 1):
            m = INC.match(line)
            if not m:
                continue
            kind, name = m.groups()
            where = f"{rel}:{no}: #include {kind}{name}{'>' if kind == '<' else kind}"
            dirs = ([os.path.dirname(rel)] if kind == '"' else []) + search
            dirs = list(dict.fromkeys(dirs))
            found = None
            for d in dirs:
                cand = os.path.normpath(os.path.join(d, name))
                if os.path.isfile(os.path.join(top, cand)):
                    found = cand
                    break
            if found is None and kind == "<":
                if freestanding and name not in FREESTANDING:
                    bad.append(f"{where}: a system header in freestanding code "
                               f"(allowed: include/ and {', '.join(sorted(FREESTANDING))})")
                continue
            if found is None:
                elsewhere = [a for a in ABOVE
                             if any(os.path.isfile(os.path.join(top, a, sub, os.path.basename(name)))
                                    for sub in ("", "stage"))]
                bad.append(f"{where}: resolves to no file in {', '.join(dirs)}"
                           + (f" (one of that name is in {', '.join(a + '/' for a in elsewhere)}:"
                              " found only through another -I)" if elsewhere else ""))
                continue
            if any(under(found, a) for a in ABOVE):
                bad.append(f"{where}: reaches {found}, above src/ "
                           "(src/ includes nothing under daemon/, fleetd/ or kexec/)")
            elif allowed and not any(under(found, a) for a in allowed):
                bad.append(f"{where}: reaches {found}; {rel.split('/')[0]}"
                           f"{'/shared' if rel.startswith('src/shared/') else ''}/ includes only "
                           f"{' and '.join(a + '/' for a in allowed)}")
    return bad


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    if not os.path.isdir(os.path.join(top, "src")):
        print(f"check-includes: {top}: no src/ folder there", file=sys.stderr)
        return 2
    bad = check(top)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
