#!/usr/bin/env python3
"""check-doc-numbers.py SPEC [--root DIR] — every number a doc quotes from the main job must be
what the main job's JSON says (issue 29: a doc number the program no longer produces fails).

SPEC: one check a line, fields separated by " | ":
    DOC | JSON | PATHS | TEXT
DOC and JSON are paths under --root (the source tree); PATHS are one or more JSON paths
separated by ',' (keys and list indices separated by '.', a list element chosen by its "name"
with name=VALUE, or by the start of its name with name^PREFIX for names that hold '.' or ',';
a path ending in '*K' is the value times K, e.g. '*100' for a fraction the doc
prints in %; a path to a list of per-run values followed by ':mean' or ':ci95' is their mean or
their 95 % CI half-width, Student's t as src/learn/metrics.c, for 2 values or more; null values
are left out); TEXT is the text the doc must contain, with {0:FORMAT}, {1:FORMAT}, ... where
the paths' numbers go (Python format, e.g. {0:.4f}), so that one check can hold a whole table
row. The doc must hold TEXT with a number in each place, and each must be the JSON's value to
0.6 units of its last printed digit (the JSON keeps a digit or two more, so a number rounded
twice may differ by one in the last digit of the doc; a changed digit does not pass).
Lines starting with '#' and blank lines are skipped.
Prints one line per failed check and exits 1 when any failed, 0 otherwise."""
import json
import os
import re
import sys

PLACE = re.compile(r"\{(\d+):\.(\d+)f\}")


def pattern(text):
    """TEXT as a regex: each {i:.Nf} a captured number, the rest literal."""
    out, pos = "", 0
    for m in PLACE.finditer(text):
        out += re.escape(text[pos:m.start()]) + r"(-?\d+(?:\.\d+)?)"
        pos = m.end()
    return re.compile(out + re.escape(text[pos:]))


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "scripts"))
from t975 import half_width  # noqa: E402  (mcl_t975's values, shared with the scripts)


def stat(values, what):
    x = [v for v in values if v is not None]
    m = sum(x) / len(x)
    if what == "mean":
        return m
    if len(x) < 2:
        raise ValueError("ci95 of %d values (2 or more)" % len(x))
    return half_width(x)


def walk(obj, path):
    if "*" in path:
        path, k = path.rsplit("*", 1)
        return walk(obj, path) * float(k)
    if ":" in path:
        path, what = path.rsplit(":", 1)
        if what not in ("mean", "ci95"):
            raise KeyError("unknown statistic %r" % what)
        return stat(walk(obj, path), what)
    for part in path.split("."):
        if isinstance(obj, list):
            if part.startswith("name=") or part.startswith("name^"):
                exact = part[4] == "="
                hits = [o for o in obj if isinstance(o, dict) and isinstance(o.get("name"), str)
                        and (o["name"] == part[5:] if exact else o["name"].startswith(part[5:]))]
                if not hits:
                    raise KeyError("no element named %r" % part[5:])
                obj = hits[0]
            else:
                obj = obj[int(part)]
        else:
            obj = obj[part]
    return obj


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: check-doc-numbers.py SPEC [--root DIR]")
    root = argv[argv.index("--root") + 1] if "--root" in argv else "."
    bad = n = 0
    for ln, line in enumerate(open(argv[1], encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        f = [x.strip() for x in line.split(" | ", 3)]
        if len(f) != 4 or "{0" not in f[3]:
            print("%s:%d: not DOC | JSON | PATHS | TEXT with {0:FMT}" % (argv[1], ln))
            bad += 1
            continue
        doc, js, path, text = f
        n += 1
        try:
            data = json.load(open("%s/%s" % (root, js), encoding="utf-8"))
            value = [walk(data, p.strip()) for p in path.split(",")]
            want = text.format(*value)
        except (OSError, KeyError, IndexError, ValueError, TypeError) as e:
            print("%s:%d: %s %s: %s" % (argv[1], ln, js, path, e))
            bad += 1
            continue
        places = [(int(i), int(nd)) for i, nd in PLACE.findall(text)]
        hit = None
        for m in pattern(text).finditer(open("%s/%s" % (root, doc), encoding="utf-8").read()):
            if all(abs(float(m.group(k + 1)) - value[i]) <= 0.6 * 10 ** -nd for k, (i, nd) in enumerate(places)):
                hit = m
                break
        if not hit:
            print("%s:%d: %s does not say '%s' (%s %s = %r)" % (argv[1], ln, doc, want, js, path, value))
            bad += 1
    print("check-doc-numbers: %d checks, %d failed" % (n, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
