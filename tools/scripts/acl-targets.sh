#!/bin/sh
# shellcheck disable=SC2086 # the lists of runs are split into words on purpose
# acl-targets.sh DIR — the generalization targets of doc/acl.md ("The targets"), judged on the
# runs of the tables the main job (tools/scripts/reproduce.sh) just printed. DIR holds one section per
# eval: N.title (its heading) and N.json (`metacl eval acl --json-out`: per model the per-run
# values, run r reading the same episodes for every model). Each target gets its numbers (mean
# ± 95 % CI half-width over the runs, in %) and one word, by `metacl stats` (metrics.h):
#   - a threshold ("ACC >= 90 %"): met when the interval clears it, not met when it clears it
#     the other way, inconclusive otherwise (always with one run);
#   - a comparison of two models on the same runs ("ACL-gen's A alone >= SGD's"): the paired
#     test on the per-run differences: met / not met when it separates them, tie when not;
#     with a margin ("beats by >= 10 points"): met / not met, inconclusive when it cannot tell.
# Writes the Markdown table on stdout and DIR/targets.json (an array of {target, value,
# verdict, runs}). Exit 0 (a missed target is a result, not an error); exit 1 when a section,
# model or value it needs is missing.
set -eu
D=${1:?usage: acl-targets.sh DIR}
METACL=${METACL:-./metacl}
[ -d "$D" ] || { echo "acl-targets: no directory $D" >&2; exit 1; }

# section PREFIX: the N.json whose title starts with PREFIX
section() {
    for t in "$D"/*.title; do
        case $(cat "$t") in "$1"*) echo "${t%.title}.json"; return 0 ;; esac
    done
    echo "acl-targets: no section '$1' in $D" >&2
    exit 1
}
# runs JSON MODEL KEY: the per-run values (fractions; null -> nan), space-separated
runs() {
    v=$(awk -v m="$2" -v k="$3" '
        { s = s $0 }
        END {
            i = index(s, "{\"name\":\"" m "\","); if (!i) exit 1
            s = substr(s, i + 1); j = index(s, "{\"name\":\""); if (j) s = substr(s, 1, j - 1)
            i = index(s, "\"" k "\":["); if (!i) exit 1
            s = substr(s, i + length(k) + 4); s = substr(s, 1, index(s, "]") - 1)
            gsub(/null/, "nan", s); gsub(/,/, " ", s); print s
        }' "$1") || { echo "acl-targets: no '$3' of '$2' in $1" >&2; exit 1; }
    echo "$v"
}
# pct LIST: the values times 100
pct() { echo "$1" | awk '{ for (i = 1; i <= NF; i++) printf "%s%s", ($i == "nan" ? "nan" : $i * 100), (i < NF ? " " : "") }'; }
# fmt MEAN HALF: "m ± h" (or "m" without an interval)
fmt() { awk -v m="$1" -v h="$2" 'BEGIN { if (h == "nan") printf "%.1f", m; else printf "%.1f ± %.1f", m, h }'; }

JS="$D/targets.json.new"
printf '[' >"$JS"
nt=0
# row TARGET VALUE VERDICT RUNS
row() {
    echo "| $1 | $2 | $3 |"
    [ $nt -gt 0 ] && printf ',' >>"$JS"
    printf '{"target":"%s","value":"%s","verdict":"%s","runs":%s}' "$(echo "$1" | sed 's/"/\\"/g')" "$2" "$3" "$4" >>"$JS"
    nt=$((nt + 1))
}
# field N OUT: the N-th tab-separated field of a `metacl stats` line
field() { printf '%s\n' "$2" | cut -f"$1"; }
# threshold TARGET VALUES(%) MIN
threshold() {
    out=$("$METACL" stats target --min "$3" $2)
    row "$1" "$(fmt "$(field 2 "$out")" "$(field 3 "$out")") %" "$(field 1 "$out")" "$(field 4 "$out")"
}
# compare TARGET X(%) Y(%) MARGIN LABEL_X LABEL_Y: paired, X - Y against MARGIN
compare() {
    out=$("$METACL" stats paired --margin "$4" $2 -- $3)
    case $(field 1 "$out") in
    first) w=met ;;
    second) w="not met" ;;
    tie) if [ "$4" = 0 ]; then w=tie; else w=inconclusive; fi ;;
    *) w=inconclusive ;;
    esac
    cx=$("$METACL" stats ci $2); cy=$("$METACL" stats ci $3)
    row "$1" "$5 $(fmt "$(field 1 "$cx")" "$(field 2 "$cx")") vs $6 $(fmt "$(field 1 "$cy")" "$(field 2 "$cy")"); paired difference $(fmt "$(field 2 "$out")" "$(field 3 "$out")")" "$w" "$(field 4 "$out")"
}

T1=$(section "## 1. In-context")
T2=$(section "## 2. Unseen domain: Fashion-MNIST")
T2B=$(section "## 2b.")
T3=$(section "## 3a.")
T3B=$(section "## 3b.")
SGD="SGD (lr 0.1, 25 epochs)"

echo "## Targets (doc/acl.md, \"The targets\"), from the runs of the tables above"
echo
echo "Each value is the mean ± 95 % CI half-width over the runs (Student's t); a threshold is **met** only when the interval clears it, **not met** when it clears it the other way, **inconclusive** otherwise; two models are compared by the paired test on the same runs (**tie** when it cannot separate them)."
echo
echo "| target | value | verdict |"
echo "|---|---|---|"
for m in ACL ACL-gen ACL-gen-acl2; do
    a=$(runs "$T1" "$m" alone0_runs); f=$(runs "$T1" "$m" final0_runs)
    ratio=$(awk -v a="$a" -v f="$f" 'BEGIN { n = split(a, A, " "); split(f, F, " ")
        for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " " : ""), (A[i] == "nan" || F[i] == "nan" || A[i] == 0 ? "nan" : 100 * F[i] / A[i]) }')
    threshold "$m keeps >= 90 % of A alone after A->B (held-out hanzi -> hershey), per run" "$ratio" 90
done
for sec in "$T2" "$T2B"; do
    case $sec in "$T2") d="Fashion-MNIST 0-4";; *) d="kanji (never trained on)";; esac
    s=$(pct "$(runs "$sec" "$SGD" alone0_runs)")
    for m in ACL-gen ACL-gen-acl2; do
        a=$(pct "$(runs "$sec" "$m" alone0_runs)")
        compare "$m A alone >= same-shots SGD, $d" "$a" "$s" 0 "$m" SGD
    done
done
for p in "ACL no-ACL" "ACL-gen no-ACL-gen" "ACL-gen-acl2 no-ACL-gen"; do
    set -- $p
    x=$(pct "$(runs "$T2" "$1" final0_runs)"); y=$(pct "$(runs "$T2" "$2" final0_runs)")
    compare "Fashion-MNIST: $1 beats $2 on A after A->B by >= 10 points" "$x" "$y" 10 "$1" "$2"
done
acl=$(pct "$(runs "$T3" ACL-5task-gen acc_runs)")
threshold "Split-FashionMNIST DIL (15 shots) >= 90 %, ACL-5task-gen" "$acl" 90
# the strongest baseline of the section by its mean ACC (the names that do not start with ACL)
best=$(awk '{ s = s $0 } END {
        n = split(s, parts, "{\"name\":\""); b = -1
        for (i = 2; i <= n; i++) {
            name = substr(parts[i], 1, index(parts[i], "\"") - 1); if (name ~ /^ACL/) continue
            k = index(parts[i], "\"acc\":"); if (!k) continue
            v = substr(parts[i], k + 6) + 0; if (v > b) { b = v; bn = name }
        }
        print bn }' "$T3")
[ -n "$best" ] || { echo "acl-targets: no baseline in $T3" >&2; exit 1; }
compare "... and above the best same-shots baseline ($best)" "$acl" "$(pct "$(runs "$T3" "$best" acc_runs)")" 0 ACL-5task-gen "$best"
for m in ACL-2task-gen ACL-CIL10-gen ACL-CIL2-gen ACL-gen-acl2; do
    threshold "Split-FashionMNIST CIL 2 tasks >= 80 %, $m" "$(pct "$(runs "$T3B" "$m" acc_runs)")" 80
done
printf ']\n' >>"$JS"
mv "$JS" "$D/targets.json"
