#!/usr/bin/env python3
"""sweep-json.py RAW > JSON: the layout sweep's raw lines ("TAG_AT:BY ROUND {metacl bench --json}",
sweep.sh) as one JSON: for each layout AT+BY (the AT-th malloc of the process asked BY bytes
more, heap-bump.c) and each build tag, the per-round medians of smn_wcst_window (ms)."""
import gzip
import json
import sys

layouts, order = {}, []
raw = gzip.open(sys.argv[1], "rt") if sys.argv[1].endswith(".gz") else open(sys.argv[1])
for line in raw:
    tag, _round, js = line.split(" ", 2)
    build, layout = tag.split("_", 1)
    layout = layout.replace(":", "+")  # AT+BY: a name the doc-number paths can hold
    if layout not in layouts:
        layouts[layout] = {}
        order.append(layout)
    ms = json.loads(js)["workloads"][0]["ms_median"]
    layouts[layout].setdefault(build, []).append(ms)
out = {"workload": "smn_wcst_window", "threads": 2, "unit": "ms (median of 40 reps, one value per round)",
       "layouts": [dict(name=l, **layouts[l]) for l in order]}
json.dump(out, sys.stdout, indent=1)
print()
