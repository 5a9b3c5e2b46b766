#!/usr/bin/env bash
# Foundation benchmark (not part of the test suite): tsbsctl's downloader and SHA-256 against
# `curl -o` and `openssl dgst -sha256` on the same machine, in one run, as ratios.
#
#   scripts/bench-foundation.sh [--runs N] [--dir DIR]
#
# (a) downloads a 1 GiB file from the local testbed mirror with tsbsctl's Downloader
#     (verify + cache publish included) and with `curl -s -o`; target ratio >= 0.8.
# (b) hashes a 2 GiB file with tsbsctl::hash::sha256_file and `openssl dgst -sha256`;
#     target ratio >= 0.95.
# Each tool runs N times (default 3), interleaved; the best time of each counts, so that a
# busy machine's noise hurts both sides alike. Files live in DIR (default: a temp dir on
# /dev/shm when it has room, else $TMPDIR), removed at the end.
set -euo pipefail

RUNS=3
DIR=""
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS="$2"; shift 2 ;;
        --dir) DIR="$2"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

for tool in curl openssl cargo; do
    command -v "$tool" >/dev/null || { echo "bench-foundation: $tool is required" >&2; exit 2; }
done

cd "$(dirname "$0")/.."
echo "building (release)..." >&2
cargo build -q --release -p testbed --bin testbed
cargo build -q --release --example bench_foundation
TARGET="${CARGO_TARGET_DIR:-target}"
TESTBED="$TARGET/release/testbed"
BENCH="$TARGET/release/examples/bench_foundation"

if [ -z "$DIR" ]; then
    base="${TMPDIR:-/tmp}"
    if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR==2 {print $4}')" -gt $((4 * 1024 * 1024)) ]; then
        base=/dev/shm
    fi
    DIR="$(mktemp -d "$base/tsbsctl-bench.XXXXXX")"
    CLEAN_DIR=1
else
    mkdir -p "$DIR"
    CLEAN_DIR=0
fi
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    if [ "$CLEAN_DIR" = 1 ]; then rm -rf "$DIR"; else rm -rf "$DIR/dl" "$DIR/root" "$DIR/curl.out"; fi
}
trap cleanup EXIT


echo "writing test files in $DIR..." >&2
[ -f "$DIR/1g.bin" ] || head -c $((1 << 30)) /dev/urandom > "$DIR/1g.bin"
[ -f "$DIR/2g.bin" ] || head -c $((2 << 30)) /dev/urandom > "$DIR/2g.bin"
SHA1G="$(openssl dgst -sha256 -r "$DIR/1g.bin" | cut -d' ' -f1)"

"$TESTBED" serve --file "/bench/1g.bin=$DIR/1g.bin" > "$DIR/exports" 2>/dev/null &
SERVER_PID=$!
for _ in $(seq 1 100); do
    [ "$(wc -l < "$DIR/exports")" -ge 5 ] && break
    sleep 0.1
done
BASE="$(sed -n "s|^export TSBSCTL_GITHUB_URL='\(.*\)/github.com'$|\1|p" "$DIR/exports")"
[ -n "$BASE" ] || { echo "bench-foundation: the mirror did not start" >&2; exit 1; }
URL="$BASE/bench/1g.bin"

# Bash's `time` keyword: "<wall> <user> <sys>" seconds per command.
TIMEFORMAT='%R %U %S'
measure() { local out="$1"; shift; { time "$@" > /dev/null; } 2>> "$out"; }
: > "$DIR/t.curl"; : > "$DIR/t.dl"; : > "$DIR/t.openssl"; : > "$DIR/t.hash"
for i in $(seq 1 "$RUNS"); do
    echo "run $i/$RUNS..." >&2
    rm -f "$DIR/curl.out"
    measure "$DIR/t.curl" curl -sf -o "$DIR/curl.out" "$URL"
    rm -f "$DIR/curl.out"
    rm -rf "$DIR/root"
    measure "$DIR/t.dl" "$BENCH" download "$URL" "$SHA1G" "$DIR/root"
    rm -rf "$DIR/root"
    measure "$DIR/t.openssl" openssl dgst -sha256 "$DIR/2g.bin"
    measure "$DIR/t.hash" "$BENCH" hash "$DIR/2g.bin"
done

# Best wall time, and the least CPU time (user + sys) of any run.
wall() { awk '{print $1}' "$1" | sort -g | head -1; }
cpu() { awk '{print $2 + $3}' "$1" | sort -g | head -1; }
C=$(wall "$DIR/t.curl"); D=$(wall "$DIR/t.dl"); O=$(wall "$DIR/t.openssl"); H=$(wall "$DIR/t.hash")
mbs() { echo "scale=0; $1 / 1048576 / $2" | bc -l; }
printf '\n%-34s %10s %10s %7s %7s %16s\n' "best of $RUNS runs" "tsbsctl" "yardstick" "ratio" "target" "cpu s (ts / yd)"
printf '%-34s %5s MB/s %5s MB/s %7.2f %7s %7.2f / %6.2f\n' "download 1 GiB (vs curl -o)" \
    "$(mbs $((1 << 30)) "$D")" "$(mbs $((1 << 30)) "$C")" "$(echo "$C / $D" | bc -l)" ">= 0.80" \
    "$(cpu "$DIR/t.dl")" "$(cpu "$DIR/t.curl")"
printf '%-34s %5s MB/s %5s MB/s %7.2f %7s %7.2f / %6.2f\n' "sha-256 2 GiB (vs openssl dgst)" \
    "$(mbs $((2 << 30)) "$H")" "$(mbs $((2 << 30)) "$O")" "$(echo "$O / $H" | bc -l)" ">= 0.95" \
    "$(cpu "$DIR/t.hash")" "$(cpu "$DIR/t.openssl")"
echo
echo "files in $(df -P "$DIR" | awk 'NR==2 {print $6}') ($(stat -f -c %T "$DIR")); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); sha_ni: $(grep -qw sha_ni /proc/cpuinfo && echo yes || echo no)"
