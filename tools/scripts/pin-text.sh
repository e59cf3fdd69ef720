#!/bin/sh
# pin-text.sh [CORPUS_DIR] — pin the text corpus the docs are measured on (doc/lm.md, "The
# pinned corpus"). From a corpus prepared by `metacl data prepare text` (default: data/cache/text)
# it writes, in the source tree:
#   data/text-manifest.txt  the exact Debian package versions of every domain and the SHA-256 of
#                           every file of the corpus; `metacl data prepare text` and `metacl data
#                           info text` compare a corpus against it and name the domains that
#                           drifted (from which version to which);
#   data/text-eval/         the excerpts the main job and tools/scripts/lm-experiments.sh eval read: per
#                           domain the first EXCERPT bytes (default 20 000, extended to the end of
#                           the line) of its valid and of its test part, an empty train part, the
#                           copyright files of its packages and the licence texts they point to
#                           (copyright/license-GPL-2, ...), as a corpus of the same layout (meta.txt, SHA256SUMS), so that
#                           `metacl eval lm --data-dir data/text-eval` reads the same first
#                           EXCERPT bytes of every part as on the full corpus, whatever Debian
#                           ships later.
# Run it only when the docs' LM numbers are re-measured on a new corpus (then re-measure them:
# tools/scripts/lm-experiments.sh eval and tools/scripts/reproduce.sh). Plain POSIX tools and sha256sum.
set -eu
SRC=${1:-data/cache/text}
EXCERPT=${EXCERPT:-20000}
MAN=data/text-manifest.txt
EV=data/text-eval
[ -r "$SRC/meta.txt" ] && [ -r "$SRC/SHA256SUMS" ] ||
    { echo "pin-text: $SRC is not a prepared text corpus (metacl data prepare text)" >&2; exit 1; }
(cd "$SRC" && sha256sum -c --quiet SHA256SUMS) ||
    { echo "pin-text: $SRC does not match its SHA256SUMS; prepare it again" >&2; exit 1; }
meta() { sed -n "s/^$1 = //p" "$SRC/meta.txt"; }
domains=$(meta domains)
[ -n "$domains" ] || { echo "pin-text: $SRC/meta.txt has no domains" >&2; exit 1; }

# 1. the manifest, key = value lines (mcl_kv_parse)
tmp=$(mktemp "$MAN.XXXXXX")
{
    echo "# The text corpus the docs' LM numbers were measured on: \`metacl data prepare text\`,"
    echo "# $(date -u +%Y-%m-%d), written by tools/scripts/pin-text.sh. Per domain the Debian packages and"
    echo "# versions; per file of the corpus its SHA-256 (sha256.FILE = HEX). Compared by"
    echo "# \`metacl data prepare text\` and \`metacl data info text\` (doc/data.md)."
    echo "format = 1"
    echo "kind = text-manifest"
    echo "domains = $domains"
    echo "cap_bytes = $(meta cap_bytes)"
    for d in $(echo "$domains" | tr ',' ' '); do
        echo "$d.packages = $(meta "$d.packages")"
    done
    awk '{ print "sha256." $2 " = " $1 }' "$SRC/SHA256SUMS"
} >"$tmp"
mv "$tmp" "$MAN"

# 2. the excerpts, written next to data/text-eval and swapped in whole
new=$(mktemp -d "$EV.new.XXXXXX")
trap 'rm -rf "$new"' EXIT
mkdir "$new/copyright"
# first_lines FILE: the first EXCERPT bytes of FILE, up to the end of the line that crosses them
first_lines() { LC_ALL=C awk -v want="$EXCERPT" '{ print; n += length($0) + 1; if (n >= want) exit }' "$1"; }
{
    echo "format = 1"
    echo "kind = text"
    echo "name = text-eval"
    echo "source = excerpts of the pinned corpus (data/text-manifest.txt): the first $EXCERPT bytes, to the end of the line, of each domain's valid and test parts; no train text (tools/scripts/pin-text.sh)"
    echo "domains = $domains"
} >"$new/meta.txt"
for d in $(echo "$domains" | tr ',' ' '); do
    : >"$new/$d.train"
    first_lines "$SRC/$d.valid" >"$new/$d.valid"
    first_lines "$SRC/$d.test" >"$new/$d.test"
    {
        echo "$d.train = 0"
        echo "$d.valid = $(wc -c <"$new/$d.valid" | tr -d ' ')"
        echo "$d.test = $(wc -c <"$new/$d.test" | tr -d ' ')"
        echo "$d.packages = $(meta "$d.packages")"
        echo "$d.about = $(meta "$d.about")"
    } >>"$new/meta.txt"
    for pv in $(meta "$d.packages" | sed 's/, /\n/g' | awk '{ print $1 }'); do
        cp "$SRC/copyright/$pv" "$new/copyright/$pv"
    done
done
# the licence texts the copyright files refer to (/usr/share/common-licenses on Debian)
for l in $(grep -oh 'common-licenses/[A-Za-z0-9.+-]*[A-Za-z0-9]' "$new"/copyright/* | sed 's#.*/##' | sort -u); do
    [ "$l" = GFDL ] && l=GFDL-1.3 # GFDL is a link to the current version there
    if [ -r "/usr/share/common-licenses/$l" ]; then
        cp "/usr/share/common-licenses/$l" "$new/copyright/license-$l"
    else
        echo "pin-text: /usr/share/common-licenses/$l is missing (a copyright file refers to it)" >&2
        exit 1
    fi
done
(cd "$new" && find . -type f ! -name SHA256SUMS | sed 's#^\./##' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
rm -rf "$EV.old"
[ -d "$EV" ] && mv "$EV" "$EV.old"
mv "$new" "$EV"
trap - EXIT
rm -rf "$EV.old"
echo "pin-text: $MAN ($(grep -c '^sha256\.' "$MAN") files) and $EV/ ($(du -sk "$EV" | cut -f1) KiB) written from $SRC"
