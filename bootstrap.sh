#!/bin/sh
# bootstrap.sh -- install missing build dependencies (Debian), generate the build
# system and configure.  Arguments are passed to ./configure.  Safe to rerun.
#
#   ./bootstrap.sh [configure options...]     e.g. ./bootstrap.sh --enable-werror
#
# On Debian, run as root it installs the packages below that are missing (and prints
# nothing about packages when none are).  Not root with packages missing, it prints
# the apt-get command to run and exits 1.  Elsewhere the package step is skipped.
set -eu

cd "$(dirname "$0")"

PACKAGES="build-essential autoconf automake libtool pkg-config libpng-dev zlib1g-dev libcairo2-dev fonts-dejavu-core
libcjson-dev ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd clinfo patchelf
dataset-fashion-mnist python3-kanjidraw hershey-fonts-data help2man libopenmpi-dev openmpi-bin oclgrind
python3-numpy python3-pytest python3-matplotlib"
# npm fetches the hanzi stroke data (`npm pack hanzi-writer-data@2.0.1`); Debian's npm only
# when no npm is on the PATH already.
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm"

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    missing=
    for pkg in $PACKAGES; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        case $status in
            *" installed") ;;
            *) missing="$missing $pkg" ;;
        esac
    done
    if [ -n "$missing" ]; then
        if [ "$(id -u)" -eq 0 ]; then
            echo "bootstrap.sh: installing missing packages:$missing"
            export DEBIAN_FRONTEND=noninteractive
            apt-get update
            # shellcheck disable=SC2086
            apt-get install -y --no-install-recommends $missing
        else
            echo "bootstrap.sh: missing Debian packages:$missing" >&2
            echo "bootstrap.sh: run as root, then rerun ./bootstrap.sh:" >&2
            echo "    apt-get update && apt-get install -y --no-install-recommends$missing" >&2
            exit 1
        fi
    fi
else
    echo "bootstrap.sh: not a Debian system; skipping the package check." >&2
    echo "bootstrap.sh: you need a C11 compiler with OpenMP, autoconf, automake, libtool," >&2
    echo "bootstrap.sh: pkg-config, libpng, zlib, cJSON (and for OpenCL: an ICD loader, headers, CLBlast)." >&2
fi

# Prepared data sets of a source-tree checkout live in data/cache (metacl uses it when it
# exists; an installed metacl uses $XDG_DATA_HOME/metacl instead).
mkdir -p data/cache
autoreconf -fi
./configure "$@"
