#!/bin/sh
# test-text-cli.sh — `metacl data prepare text|txt:` and `metacl data info` of a text corpus:
# usage errors (exit 2), a failing apt-get (a stub first in PATH that exits 100: a clear
# message naming the command to run, exit 1), the whole Debian path on a fake package
# (built here with dpkg-deb, fetched by a stub apt-get and by --debs; no network), corpora
# from the user's files, and SHA-256 verification catching one changed byte.
# Works in a temporary directory under the current one, removed at the end.
METACL=${METACL:-./metacl}
case $METACL in /*) ;; *) METACL=$(pwd)/$METACL ;; esac
TMP=$(pwd)/test-text-cli.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"

rm -rf "$TMP" && mkdir -p "$TMP/bin" "$TMP/fail-bin" || { echo "cannot create $TMP"; exit 1; }
echo "test-text-cli: binary $METACL, in $TMP"

# ---- usage errors: exit 2 ----
check "--cap-mb below 0" 2 "$METACL" data prepare text --cap-mb -1 --data-dir "$TMP/d"
check "--cap-mb too large" 2 "$METACL" data prepare text --cap-mb 100000 --data-dir "$TMP/d"
expect_text "names the option" "cap-mb"
check "--cap-mb not a number" 2 "$METACL" data prepare text --cap-mb lots --data-dir "$TMP/d"
check "an unknown domain" 2 "$METACL" data prepare text --domains dictionary,klingon --data-dir "$TMP/d"
expect_text "names the domain and lists them" "unknown text domain 'klingon' (dictionary, lore"
check "--per-file with text" 2 "$METACL" data prepare text --per-file --data-dir "$TMP/d"
check "--domains with txt:" 2 "$METACL" data prepare txt:x.txt --domains kjv --data-dir "$TMP/d"
check "txt: without files" 2 "$METACL" data prepare txt: --data-dir "$TMP/d"
check "txt: with an empty name" 2 "$METACL" data prepare txt:a.txt,,b.txt --data-dir "$TMP/d"
check "a text option for an image set" 2 "$METACL" data prepare hershey --cap-mb 3 --data-dir "$TMP/d"
check "a bad corpus name" 2 "$METACL" data prepare text --name ../up --data-dir "$TMP/d"
check "an unknown option" 2 "$METACL" data prepare text --bogus
[ -e "$TMP/d" ] && { fail=$((fail + 1)); echo "FAIL: a usage error wrote $TMP/d"; }

# ---- apt-get fails: exit 1 and say what to run ----
cat >"$TMP/fail-bin/apt-get" <<'EOF'
#!/bin/sh
echo "E: Unable to locate package ${4:-$3}" >&2
exit 100
EOF
chmod +x "$TMP/fail-bin/apt-get"
PATH="$TMP/fail-bin:$PATH" check "apt-get exits 100" 1 "$METACL" data prepare text --domains dictionary --data-dir "$TMP/d"
expect_text "names the command" "apt-get download dict-gcide failed (exit status 100"
expect_text "passes apt's message on" "Unable to locate package dict-gcide"
expect_text "says to run apt-get update" "run 'apt-get update'"
[ -e "$TMP/d/text" ] && { fail=$((fail + 1)); echo "FAIL: a failed prepare left $TMP/d/text"; }
left=$(find "$TMP/d" -name '.text-prepare.*' 2>/dev/null | wc -l)
[ "$left" -eq 0 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: the temporary directory was left"; }

# ---- the Debian path on a fake dict-gcide (needs dpkg-deb) ----
if command -v dpkg-deb >/dev/null 2>&1; then
    pk=$TMP/pkg
    mkdir -p "$pk/DEBIAN" "$pk/usr/share/dictd" "$pk/usr/share/doc/dict-gcide" "$TMP/debs"
    printf 'Package: dict-gcide\nVersion: 9.9-fake1\nArchitecture: all\nMaintainer: test <t@example.org>\nDescription: fake\n fake\n' >"$pk/DEBIAN/control"
    # a cp1252 apostrophe (0x92) in otherwise valid UTF-8, CR LF line ends
    printf 'Apple\r\n   A fruit \342\200\224 the world\222s favourite.\r\nZebra\r\n' | gzip -9 >"$pk/usr/share/dictd/gcide.dict.dz"
    printf 'Fake copyright: GPL\n' >"$pk/usr/share/doc/dict-gcide/copyright"
    if dpkg-deb --root-owner-group --build "$pk" "$TMP/debs/dict-gcide_9.9-fake1_all.deb" >/dev/null 2>&1 ||
       dpkg-deb --build "$pk" "$TMP/debs/dict-gcide_9.9-fake1_all.deb" >/dev/null 2>&1; then
        cat >"$TMP/bin/apt-get" <<EOF
#!/bin/sh
# stub: apt-get download -q PKG copies the fake package into the current directory
[ "\$1" = download ] || exit 100
for a; do p=\$a; done
cp "$TMP/debs/\${p}_"*.deb . || { echo "E: Unable to locate package \$p" >&2; exit 100; }
EOF
        chmod +x "$TMP/bin/apt-get"
        PATH="$TMP/bin:$PATH" check "prepare text with a stub apt-get" 0 "$METACL" data prepare text --domains dictionary --data-dir "$TMP/d"
        expect_text "reports the domain" "dictionary"
        want=$(printf 'Apple\n   A fruit \342\200\224 the world\342\200\231s favourite.\nZebra\n')
        got=$(cat "$TMP/d/text/dictionary.train" "$TMP/d/text/dictionary.valid" "$TMP/d/text/dictionary.test")
        if [ "$got" = "$want" ]; then pass=$((pass + 1)); else
            fail=$((fail + 1)); echo "FAIL: dictionary text: got '$got'"; fi
        grep -q '^dictionary.packages = dict-gcide 9.9-fake1$' "$TMP/d/text/meta.txt" && pass=$((pass + 1)) ||
            { fail=$((fail + 1)); echo "FAIL: meta.txt lacks the package version"; }
        grep -q '^dictionary.repaired_bytes = 1$' "$TMP/d/text/meta.txt" && pass=$((pass + 1)) ||
            { fail=$((fail + 1)); echo "FAIL: meta.txt does not count the repaired byte"; }
        cmp -s "$TMP/d/text/copyright/dict-gcide" "$pk/usr/share/doc/dict-gcide/copyright" && pass=$((pass + 1)) ||
            { fail=$((fail + 1)); echo "FAIL: the copyright file did not travel"; }
        (cd "$TMP/d/text" && sha256sum -c SHA256SUMS >/dev/null 2>&1) && pass=$((pass + 1)) ||
            { fail=$((fail + 1)); echo "FAIL: sha256sum -c SHA256SUMS"; }
        check "info text" 0 "$METACL" data info text --data-dir "$TMP/d"
        expect_text "domain row" "dictionary"
        expect_text "verified" "all ok"
        # the pinned manifest: the same corpus is "pinned"; another version and another digest are
        # named as drift (pinned -> here), exit 0 (drift is not damage)
        { echo "kind = text-manifest"; echo "format = 1"; echo "domains = dictionary"
          echo "dictionary.packages = dict-gcide 9.9-fake1"
          awk '{ print "sha256." $2 " = " $1 }' "$TMP/d/text/SHA256SUMS"; } >"$TMP/pin-same.txt"
        check "info text, pinned manifest" 0 "$METACL" data info text --data-dir "$TMP/d" --manifest "$TMP/pin-same.txt"
        expect_text "all domains as pinned" "1 of 1 domains as pinned"
        sed 's/^dictionary.packages = .*/dictionary.packages = dict-gcide 9.8-fake0/; s/^\(sha256.dictionary.test = \)./\1x/' \
            "$TMP/pin-same.txt" >"$TMP/pin-old.txt"
        check "info text, drifted manifest" 0 "$METACL" data info text --data-dir "$TMP/d" --manifest "$TMP/pin-old.txt"
        expect_text "counts the drift" "0 of 1 domains as pinned"
        expect_text "names the version change" "dictionary     DRIFTED: packages dict-gcide 9.8-fake0 -> 9.9-fake1 (pinned -> here)"
        expect_text "names the file" "files differ: dictionary.test"
        check "info text --json, drifted manifest" 0 "$METACL" data info text --data-dir "$TMP/d" --manifest "$TMP/pin-old.txt" --json
        expect_text "JSON drift state" '"state":"drifted"'
        printf 'kind = text\n' >"$TMP/pin-bad.txt"
        check "info text, not a manifest" 0 "$METACL" data info text --data-dir "$TMP/d" --manifest "$TMP/pin-bad.txt"
        expect_text "says it is not a manifest" "not a text manifest"
        PATH="$TMP/fail-bin:$PATH" check "prepare text --manifest" 0 "$METACL" data prepare text --domains dictionary --debs "$TMP/debs" --name text3 --manifest "$TMP/pin-old.txt" --data-dir "$TMP/d"
        expect_text "prepare names the drift" "dict-gcide 9.8-fake0 -> 9.9-fake1"
        # --debs: no apt-get at all (the failing stub first in PATH)
        PATH="$TMP/fail-bin:$PATH" check "prepare text --debs" 0 "$METACL" data prepare text --domains dictionary --debs "$TMP/debs" --name text2 --data-dir "$TMP/d"
        cmp -s "$TMP/d/text/dictionary.train" "$TMP/d/text2/dictionary.train" && pass=$((pass + 1)) ||
            { fail=$((fail + 1)); echo "FAIL: --debs gives other bytes"; }
    else
        echo "note: dpkg-deb cannot build packages here; the fake-package checks are skipped"
    fi
else
    echo "note: no dpkg-deb; the fake-package checks are skipped"
fi

# ---- the pinned corpus shipped in the tree: data/text-manifest.txt and the excerpts the main
# job's LM evaluation reads (data/text-eval), which must verify and hold every pinned domain ----
SRC=${METACL_SRCDIR:-$(dirname "$0")/..}
check "the shipped excerpts verify" 0 "$METACL" data info text-eval --data-dir "$SRC/data"
expect_text "excerpts all ok" "all ok"
doms=$(sed -n 's/^domains = //p' "$SRC/data/text-manifest.txt")
[ -n "$doms" ] && [ "$doms" = "$(sed -n 's/^domains = //p' "$SRC/data/text-eval/meta.txt")" ] && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: data/text-eval's domains ($doms) are not the manifest's"; }
for d in $(echo "$doms" | tr ',' ' '); do
    want=$(sed -n "s/^$d.packages = //p" "$SRC/data/text-manifest.txt")
    got=$(sed -n "s/^$d.packages = //p" "$SRC/data/text-eval/meta.txt")
    [ -n "$want" ] && [ "$want" = "$got" ] && pass=$((pass + 1)) ||
        { fail=$((fail + 1)); echo "FAIL: $d: excerpt packages '$got', manifest '$want'"; }
    for p in $(echo "$want" | sed 's/, /\n/g' | awk '{ print $1 }'); do
        [ -s "$SRC/data/text-eval/copyright/$p" ] && pass=$((pass + 1)) ||
            { fail=$((fail + 1)); echo "FAIL: data/text-eval lacks copyright/$p"; }
    done
done

# ---- the user's files ----
printf 'first line\nsecond line\n' >"$TMP/a.txt"
printf 'dritte Zeile \303\244\n' >"$TMP/b.txt"
printf 'latin-1 \344 here\n' >"$TMP/bad.txt"
check "txt: two files" 0 "$METACL" data prepare "txt:$TMP/a.txt,$TMP/b.txt" --name mine --data-dir "$TMP/d"
expect_text "one domain named after the corpus" "mine"
check "txt: --per-file" 0 "$METACL" data prepare "txt:$TMP/a.txt,$TMP/b.txt" --per-file --data-dir "$TMP/d"
check "info of the per-file corpus" 0 "$METACL" data info user --data-dir "$TMP/d"
expect_text "domain a" "  a  "
expect_text "domain b" "  b  "
check "txt: invalid UTF-8" 1 "$METACL" data prepare "txt:$TMP/a.txt,$TMP/bad.txt" --data-dir "$TMP/d"
expect_text "names the file and the place" "bad.txt: not valid UTF-8 at byte 8 (line 1, column 9"
check "txt: a missing file" 1 "$METACL" data prepare "txt:$TMP/nope.txt" --data-dir "$TMP/d"
expect_text "names it" "nope.txt"
check "info of a corpus not prepared" 1 "$METACL" data info text --data-dir "$TMP/empty"
expect_text "says what to run" "metacl data prepare text"
# one changed byte: info says which file and exits 1
check "info mine --json" 0 "$METACL" data info mine --data-dir "$TMP/d" --json
expect_text "json verified" '"verified":true'
printf 'X' | dd of="$TMP/d/mine/mine.train" bs=1 seek=3 conv=notrunc 2>/dev/null
check "info of a damaged corpus" 1 "$METACL" data info mine --data-dir "$TMP/d"
expect_text "marks the domain" "CORRUPT"
expect_text "names the file" "mine.train"

rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
