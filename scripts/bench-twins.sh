#!/usr/bin/env bash
# The run-to-run drift of this machine (issue 24 §6): how far two runs of the same binary on
# the same data fall apart, the number `runs compare` assumes (TSBSCTL_RUN_DRIFT_PERCENT,
# README "Comparing runs"). A dimensioning experiment in the sense of Kalibera and Jones
# ("Rigorous benchmarking in reasonable time", 2013): the top level of the hierarchy, runs,
# measured once per machine, because one run per side cannot measure it.
#
#   scripts/bench-twins.sh   (BENCH_DIR, default /tmp/tsbsctl-bench-twins; PAIRS, default 5;
#                             PASSES, default 3; QUERIES per type, default 40; DELAY_MS, the
#                             emulator's latency per query, default 0; BIN, default the
#                             release build)
#
# Loads the smoke dataset into the GreptimeDB emulator once, then runs PAIRS pairs of
# `bench greptimedb query --passes PASSES` and compares each pair with no drift assumed
# (TSBSCTL_RUN_DRIFT_PERCENT=0). Prints each pair's ratio per type, the largest, and the
# drift per run beyond what the passes measure: each squared log ratio estimates twice the
# drift's variance plus the variance the two runs' passes show, so the drift is the square
# root of half the mean of their differences. Run it as the machine is used for benchmarks
# (with or without neighbours), then export the printed value.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${BENCH_DIR:-/tmp/tsbsctl-bench-twins}
PAIRS=${PAIRS:-5}
PASSES=${PASSES:-3}
QUERIES=${QUERIES:-40}
DELAY_MS=${DELAY_MS:-0}
rm -rf "$DIR" && mkdir -p "$DIR"

# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh

$T env prepare --managed-go >/dev/null
greptime_workspace twins
echo "{\"query_delay_ms\": $DELAY_MS}" >"$DIR/knobs.json"
export TESTBED_KNOBS=$DIR/knobs.json
$T bench greptimedb load --database-id twins --dataset-id twins >/dev/null

run() {
  $T bench greptimedb query --database-id twins --dataset-id twins --passes "$PASSES" \
    --queries "$QUERIES" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["run_dir"])'
}
: >"$DIR/ratios"
for p in $(seq "$PAIRS"); do
  a=$(run)
  b=$(run)
  TSBSCTL_RUN_DRIFT_PERCENT=0 $T runs compare --baseline "$a" --candidate "$b" --json \
    | python3 -c '
import json, math, sys
c = json.load(sys.stdin)["data"]["summary"]["candidates"][0]
for q in c["queries"]:
    n = q["noise"]
    # The variance of the log ratio the passes measure (0 without passes on both sides).
    v = 0.0
    for side in n.get("pass_means_ms") or []:
        logs = [math.log(x) for x in side]
        m = sum(logs) / len(logs)
        v += sum((x - m) ** 2 for x in logs) / (len(logs) - 1) / len(logs)
    print(q["query_type"], n["ratio"], v)' | tee -a "$DIR/ratios" | sed "s/^/pair $p: /"
done
python3 - "$DIR/ratios" <<'PY'
import math, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
logs = [math.log(float(r[1])) for r in rows]
measured = [float(r[2]) for r in rows]
worst = max((float(r[1]) for r in rows), key=lambda x: abs(math.log(x)))
# Each log ratio's square estimates 2 drift^2 plus what its passes measured.
drift = math.sqrt(max(0.0, sum(l * l - v for l, v in zip(logs, measured)) / len(logs) / 2))
rms = math.sqrt(sum(l * l for l in logs) / len(logs))
print(f"{len(rows)} twin ratios; the largest {100 * (worst - 1):+.1f}%; "
      f"root mean square of the log ratios {100 * rms:.1f}%")
print(f"drift per run beyond what the passes measure: {100 * drift:.1f}% "
      f"(export TSBSCTL_RUN_DRIFT_PERCENT={100 * drift:.1f})")
PY
