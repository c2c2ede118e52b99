#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
# json-validate.py SCHEMA FILE...   each FILE one JSON document
# json-validate.py SCHEMA -         one JSON document per line of stdin
# Holds documents to a JSON Schema (draft 7) with Debian's python3-jsonschema:
# prints one line per document that does not match (what the best-fitting
# branch missed, and where) and exits 1; prints "ok N" and exits 0 when all
# N match.  No document at all is a failure.  Used by
# tests/cli/test-json-schema.sh and tests/e2e/lib.sh (e2e_check_schema).
import json
import sys

import jsonschema


def docs(args):
    if args == ["-"]:
        for n, line in enumerate(sys.stdin, 1):
            yield "document %d" % n, line
    else:
        for f in args:
            with open(f) as fh:
                yield f, fh.read()


def main():
    if len(sys.argv) < 3:
        print("usage: json-validate.py SCHEMA FILE... | -", file=sys.stderr)
        return 2
    schema = json.load(open(sys.argv[1]))
    jsonschema.Draft7Validator.check_schema(schema)
    v = jsonschema.Draft7Validator(schema)
    n = bad = 0
    for name, text in docs(sys.argv[2:]):
        n += 1
        try:
            doc = json.loads(text)
        except ValueError as e:
            print("%s: not JSON: %s" % (name, e))
            bad += 1
            continue
        e = jsonschema.exceptions.best_match(v.iter_errors(doc))
        if e is None:
            continue
        bad += 1
        # oneOf: say what the branch that fits best missed
        while e.context:
            e = jsonschema.exceptions.best_match(e.context)
        print("%s: %s at /%s" % (name, e.message[:300], "/".join(map(str, e.absolute_path))))
    if n == 0:
        print("no document to check")
        return 1
    if bad:
        return 1
    print("ok %d" % n)
    return 0


sys.exit(main())
