#!/usr/bin/env bash
# The resource sampler's CPU (issue 24; target: under 1 % of one core while it samples).
#
#   scripts/bench-sampler.sh        (SECONDS_RUN, default 120; THREADS, default 64; FILES, default 5000)
#
# Samples, once a second as a bench run does, a stand-in server: a process with THREADS
# threads and one child process (GreptimeDB runs one process with dozens of threads), whose
# data directory holds FILES files (walked every 10 s). Prints tsbsctl's CPU per second of
# sampling. A second run at 20 ms intervals gives the cost of one sample precisely.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_RUN=${SECONDS_RUN:-120}
THREADS=${THREADS:-64}
FILES=${FILES:-5000}
DIR=$(mktemp -d)
CARGO_TARGET_DIR_OR=${CARGO_TARGET_DIR:-target}
trap '[ -n "${SRV:-}" ] && kill -- -"$SRV" 2>/dev/null || true; rm -rf "$DIR"' EXIT
cargo build -q --release --example bench_sampler
mkdir -p "$DIR/data/region"
for i in $(seq 1 "$FILES"); do : >"$DIR/data/region/f$i.parquet"; done
setsid python3 -c "
import subprocess, threading, time
subprocess.Popen(['sleep', '3600'])
for _ in range($THREADS - 1):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
time.sleep(3600)
" &
SRV=$!  # its own session: the trap stops it and its child together
sleep 1
echo "stand-in server pid $SRV: $(ls /proc/$SRV/task | wc -l) threads; $FILES files"
echo "1 s interval, ${SECONDS_RUN} s:"
"$CARGO_TARGET_DIR_OR"/release/examples/bench_sampler "$SRV" "$DIR/data" "$SECONDS_RUN" 1000
echo "20 ms interval, 20 s (cost per sample):"
"$CARGO_TARGET_DIR_OR"/release/examples/bench_sampler "$SRV" "$DIR/data" 20 20
