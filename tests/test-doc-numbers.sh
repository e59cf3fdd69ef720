#!/bin/sh
# test-doc-numbers.sh — the numbers doc/*.md quotes from the main job (and from the GPU check's
# JSON in doc/gpu-runs/) are the ones the JSON holds: tests/check-doc-numbers.py over
# tests/doc-numbers.txt, against the JSON of the last main-job run committed in
# data/fixtures/main-job/ (tools/scripts/reproduce.sh writes it: refresh the fixture from
# results/ when the main job's numbers change, and the docs with it). Then the checker must
# fail on a doc with one number changed and on a JSON with one value changed (an LM value, and
# an ACL baseline's fraction shown in %): the test can fail. Skips (77) only without python3.
SRC=${METACL_SRCDIR:-$(dirname "$0")/..}
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
pass=0
fail=0
TMP=$(pwd)/test-doc-numbers.tmp.$$
rm -rf "$TMP" && mkdir -p "$TMP" || exit 1
if python3 "$SRC/tests/check-doc-numbers.py" "$SRC/tests/doc-numbers.txt" --root "$SRC"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: a doc number is not the main job's (above)"; fi
n=$(grep -c '^doc/' "$SRC/tests/doc-numbers.txt")
[ "$n" -ge 10 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: only $n checks in doc-numbers.txt"; }
# a copy of the tree's docs and fixtures with one number changed on each side
mkdir -p "$TMP/doc" "$TMP/data/fixtures"
cp "$SRC"/doc/*.md "$TMP/doc/" && cp -r "$SRC/data/fixtures/main-job" "$TMP/data/fixtures/" &&
    cp -r "$SRC/doc/gpu-runs" "$TMP/doc/"
first=$(grep '^doc/' "$SRC/tests/doc-numbers.txt" | head -1)
js=$(echo "$first" | cut -d'|' -f2 | tr -d ' ')
path=$(echo "$first" | cut -d'|' -f3 | tr -d ' ' | cut -d, -f1)
# the JSON: its first checked value plus 0.5
python3 - "$TMP/$js" "$path" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); o = d; parts = sys.argv[2].split(".")
for p in parts[:-1]:
    o = [x for x in o if x.get("name") == p[5:]][0] if isinstance(o, list) and p.startswith("name=") else (o[int(p)] if isinstance(o, list) else o[p])
o[parts[-1]] = o[parts[-1]] + 0.5
json.dump(d, open(sys.argv[1], "w"))
PY
if python3 "$SRC/tests/check-doc-numbers.py" "$SRC/tests/doc-numbers.txt" --root "$TMP" >"$TMP/out" 2>&1; then
    fail=$((fail + 1)); echo "FAIL: a changed JSON value was not caught"; else pass=$((pass + 1)); fi
grep -q "does not say" "$TMP/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: the message"; cat "$TMP/out"; }
# the JSON restored
cp "$SRC/$js" "$TMP/$js"
# an ACL row (a fraction shown in %, '*100'; a model picked by name^PREFIX): its SGD value moved
# by 0.01 (one point in the doc) must be caught too
acl=$(grep '^doc/acl.md' "$SRC/tests/doc-numbers.txt" | grep 'name^SGD' | head -1)
if [ -n "$acl" ]; then
    python3 - "$SRC" "$TMP" "$acl" <<'PY'
import importlib.util, json, sys
src, tmp, line = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("cdn", src + "/tests/check-doc-numbers.py")
cdn = importlib.util.module_from_spec(spec); spec.loader.exec_module(cdn)
doc, js, paths, text = [x.strip() for x in line.split(" | ", 3)]
path = paths.split(",")[0].strip().rsplit("*", 1)[0]
parent, key = path.rsplit(".", 1)
d = json.load(open(tmp + "/" + js))
o = cdn.walk(d, parent)
if isinstance(o, list): o[int(key)] += 0.01
else: o[key] += 0.01
json.dump(d, open(tmp + "/" + js, "w"))
PY
    if python3 "$SRC/tests/check-doc-numbers.py" "$SRC/tests/doc-numbers.txt" --root "$TMP" >"$TMP/out" 2>&1; then
        fail=$((fail + 1)); echo "FAIL: a changed ACL JSON value (name^SGD, *100) was not caught"; else pass=$((pass + 1)); fi
    js=$(echo "$acl" | cut -d'|' -f2 | tr -d ' ')
    cp "$SRC/$js" "$TMP/$js"
else
    fail=$((fail + 1)); echo "FAIL: no ACL row with name^SGD in doc-numbers.txt"
fi
# the doc: its first checked number moved by 0.01 (several units of its last digit)
python3 - "$SRC" "$TMP" "$first" <<'PY'
import importlib.util, sys
src, tmp, line = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("cdn", src + "/tests/check-doc-numbers.py")
cdn = importlib.util.module_from_spec(spec); spec.loader.exec_module(cdn)
doc, js, paths, text = [x.strip() for x in line.split(" | ", 3)]
t = open(tmp + "/" + doc).read()
m = cdn.pattern(text).search(t)
v = m.group(1); nd = len(v.split(".")[1]) if "." in v else 0
t = t[:m.start(1)] + "%.*f" % (nd, float(v) + 0.01) + t[m.end(1):]
open(tmp + "/" + doc, "w").write(t)
PY
if python3 "$SRC/tests/check-doc-numbers.py" "$SRC/tests/doc-numbers.txt" --root "$TMP" >"$TMP/out" 2>&1; then
    fail=$((fail + 1)); echo "FAIL: a changed doc number was not caught"; else pass=$((pass + 1)); fi
rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
