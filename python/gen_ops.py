#!/usr/bin/env python3
"""gen_ops.py — write the Python package's op table from the C sources (run by `make`).

    python3 python/gen_ops.py SRCDIR OUT.py

Reads SRCDIR/src/common/ops.def (the op list: name, inputs, outputs, the contract comment),
SRCDIR/src/common/ops.h (the public op functions: their argument names and types) and
SRCDIR/src/common/backend.h (the sizes of the op-call record) and writes a plain data module:

  OPS        one entry per row of ops.def, in order: name, n_in, n_out, n_diff_out, family, the
             contract comment, and `functions`, the public C functions that run it (mcl_<op>
             and its variants such as mcl_dropout_keyed); an op without one (the optimizer
             updates) is reached through mcl_op_run with its raw parameters f/i/u.
  FUNCTIONS  every such C function: its return kind and its arguments (kind, name, count).
  MAX_IN, MAX_OUT   the record sizes of mcl_op_args (backend.h).

The runtime (metacl/ops.py) builds one Python function per entry. A C argument of a kind this
script does not know stops the build with a message, so a new op signature cannot be skipped
silently.
"""

import os
import pprint
import re
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def read_ops_def(path):
    """Rows of ops.def with the comment block above each and the comment on its line."""
    rows, pending = [], []
    row_re = re.compile(r"^MCL_OP\(\s*(\w+),\s*(\w+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\w+),\s*([01]),\s*([01])\)"
                        r"\s*(?:/\*(.*?)\*/)?")
    in_comment = False
    for line in open(path, encoding="utf-8"):
        s = line.strip()
        m = row_re.match(s)
        if m:
            doc = " ".join(x.strip(" */") for x in pending if x.strip(" */"))
            if m.group(9):
                doc = (doc + " " + m.group(9).strip()).strip()
            rows.append({"id": m.group(1), "name": m.group(2), "n_in": int(m.group(3)),
                         "n_out": int(m.group(4)), "n_diff_out": int(m.group(5)),
                         "family": m.group(6), "doc": re.sub(r"\s+", " ", doc)})
            pending = []
            continue
        if s.startswith("/*"):
            in_comment = not s.endswith("*/")
            body = s[2:-2] if s.endswith("*/") else s[2:]
            # a section header ("---- shape ----") is not part of an op's contract
            pending = [] if body.strip().startswith("----") else [body]
            continue
        if in_comment:
            in_comment = not s.endswith("*/")
            pending.append(s[:-2] if s.endswith("*/") else s)
            continue
        if s:
            pending = []
    return rows


ARG_PATTERNS = [
    (re.compile(r"^mcl_ctx \*ctx$"), lambda m: ("ctx", "ctx", 0)),
    (re.compile(r"^mcl_tensor \*(\w+)$"), lambda m: ("tensor", m.group(1), 0)),
    (re.compile(r"^mcl_tensor \*const (\w+)\[(\d+)\]$"), lambda m: ("tensors", m.group(1), int(m.group(2)))),
    (re.compile(r"^mcl_tensor \*\*(\w+)$"), lambda m: ("out", m.group(1), 0)),
    (re.compile(r"^mcl_tensor \*(\w+)\[(\d+)\]$"), lambda m: ("outs", m.group(1), int(m.group(2)))),
    (re.compile(r"^float (\w+)$"), lambda m: ("float", m.group(1), 0)),
    (re.compile(r"^int (\w+)$"), lambda m: ("int", m.group(1), 0)),
    (re.compile(r"^int64_t (\w+)$"), lambda m: ("int64", m.group(1), 0)),
    (re.compile(r"^uint64_t (\w+)$"), lambda m: ("uint64", m.group(1), 0)),
    (re.compile(r"^const int (\w+)\[(\d+)\]$"), lambda m: ("ints", m.group(1), int(m.group(2)))),
    (re.compile(r"^const int64_t \*(\w+)$"), lambda m: ("shape", m.group(1), 0)),
    (re.compile(r"^const mcl_attn_opts \*(\w+)$"), lambda m: ("attn_opts", m.group(1), 0)),
]


def parse_args(fn, text):
    args = []
    for raw in text.split(","):
        a = re.sub(r"\s+", " ", raw.strip())
        for pat, make in ARG_PATTERNS:
            m = pat.match(a)
            if m:
                args.append(make(m))
                break
        else:
            sys.exit("gen_ops.py: %s: argument '%s' has a kind this generator does not know; "
                     "teach it (ARG_PATTERNS) and metacl/ops.py" % (fn, a))
    if not args or args[0][0] != "ctx":
        sys.exit("gen_ops.py: %s: the first argument must be mcl_ctx *ctx" % fn)
    args = args[1:]
    # "int ndim, const int64_t *shape": one Python argument, the shape
    out = []
    for i, a in enumerate(args):
        if a[0] == "shape":
            if not out or out[-1][0] != "int":
                sys.exit("gen_ops.py: %s: a shape pointer must follow its int count" % fn)
            out.pop()
        out.append(a)
    return out


def read_functions(path, op_names):
    text = strip_comments(open(path, encoding="utf-8").read())
    fns = {}
    for m in re.finditer(r"(mcl_tensor\s*\*|mcl_status)\s*(mcl_\w+)\s*\(([^)]*)\)\s*;", text):
        ret = "tensor" if m.group(1).startswith("mcl_tensor") else "status"
        name = m.group(2)
        base = name[4:]
        # op functions: mcl_<op> or mcl_<op>_<variant>; autograd helpers are not ops
        op = None
        for cand in sorted(op_names, key=len, reverse=True):
            if base == cand or base.startswith(cand + "_"):
                op = cand
                break
        if op is None:
            continue
        fns[name] = {"op": op, "ret": ret, "args": parse_args(name, m.group(3))}
    return fns


def read_record_sizes(path):
    text = open(path, encoding="utf-8").read()
    sizes = {}
    for key in ("MCL_MAX_IN", "MCL_MAX_OUT"):
        m = re.search(r"#define %s (\d+)" % key, text)
        if not m:
            sys.exit("gen_ops.py: %s not found in %s" % (key, path))
        sizes[key] = int(m.group(1))
    return sizes


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: gen_ops.py SRCDIR OUT.py")
    src, out = argv[1], argv[2]
    rows = read_ops_def(os.path.join(src, "src/common/ops.def"))
    names = [r["name"] for r in rows]
    fns = read_functions(os.path.join(src, "src/common/ops.h"), names)
    sizes = read_record_sizes(os.path.join(src, "src/common/backend.h"))
    for r in rows:
        r["functions"] = sorted(f for f, v in fns.items() if v["op"] == r["name"])
    body = ("# Generated by python/gen_ops.py from src/common/ops.def, ops.h and backend.h.\n"
            "# Do not edit: edit the C sources and rebuild.\n\n"
            "MAX_IN = %d\nMAX_OUT = %d\n\nOPS = %s\n\nFUNCTIONS = %s\n"
            % (sizes["MCL_MAX_IN"], sizes["MCL_MAX_OUT"], pprint.pformat(rows, width=100),
               pprint.pformat(fns, width=100)))
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(body)
    os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv)
