#!/usr/bin/env bash
# What --target-precision costs and saves (issue 24 §6): the wall time of one query type's
# query phase with --target-precision against fixed counts, measured in one run on one
# machine against the GreptimeDB emulator with the stand-in TSBS tools.
#
#   scripts/bench-precision.sh   (BENCH_DIR, default /tmp/tsbsctl-bench-precision; TARGET,
#                                 default 2%; FIRST, the type's count = the first batch,
#                                 default 10; FIXED, the count one picks without knowing the
#                                 spread, default 1000; DELAY_MS and JITTER_MS, the emulator's
#                                 latency per query, default 20 + 0..20 ms; ROUNDS, default 3;
#                                 BIN, default the release build)
#
# Per round, in alternating order (ABBA, so a drift of the machine falls on both sides):
#   adaptive: --queries FIRST --target-precision TARGET: batches until the 95% interval of the
#             mean is within TARGET; its queries N, interval and wall time (first batch start
#             to the last batch's end);
#   equal:    --queries N: the same number of queries as one fixed batch (what a user who
#             knew N beforehand would run): the cost of the batches (runner starts, generator);
#   fixed:    --queries FIXED: a safe fixed count; its interval and wall time.
# Prints each run and the geometric means of adaptive/equal and adaptive/fixed over rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${BENCH_DIR:-/tmp/tsbsctl-bench-precision}
TARGET=${TARGET:-2%}
FIRST=${FIRST:-10}
FIXED=${FIXED:-1000}
DELAY_MS=${DELAY_MS:-20}
JITTER_MS=${JITTER_MS:-20}
ROUNDS=${ROUNDS:-3}
TYPE=single-groupby-1-1-1
rm -rf "$DIR" && mkdir -p "$DIR"

# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh

$T env prepare --managed-go >/dev/null
greptime_workspace perf
echo "emulator latency per query: ${DELAY_MS} ms + 0..${JITTER_MS} ms; target ±${TARGET}"

echo "{\"query_delay_ms\": $DELAY_MS, \"query_jitter_ms\": $JITTER_MS}" >"$DIR/knobs.json"
TESTBED_KNOBS=$DIR/knobs.json $BIN/tsbsctl greptimedb serve --database-id perf \
  >"$DIR/serve.out" 2>"$DIR/serve.err" &
SERVER=$!
for _ in $(seq 600); do curl -sf "$URL/health" >/dev/null && break; sleep 0.1; done
$T bench greptimedb load --url "$URL" --database-mode reset --confirm-reset benchmark \
  --dataset-id perf >/dev/null

# One query run; prints "queries half_width_percent wall_seconds".
query() {
  $T bench greptimedb query --url "$URL" --dataset-id perf --query-type "$TYPE" "$@" \
    --json >"$DIR/q.json"
  python3 - "$DIR/q.json" <<'EOF'
import datetime, json, math, sys
d = json.load(open(sys.argv[1]))["data"]
run = d["run_dir"]
q = d["summary"]["queries"][0]
t = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
start = end = None
for line in open(f"{run}/events.jsonl"):
    e = json.loads(line)
    if "step" not in e:  # a recorded event or warning, not a step line
        continue
    if e["step"].startswith(("query:", "query-batch:")):
        if e["status"] == "running" and start is None:
            start = t(e["at"])
        elif e["status"] != "running":
            end = t(e["at"])
n, mean, sd = q["query_count"], q["mean_ms"], q["stddev_ms"]
# Student's t at 0.975 (normal beyond 30 degrees of freedom is close enough for a print).
tq = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 9: 2.26, 19: 2.09, 29: 2.05}
df = n - 1
tv = tq.get(df) or (1.96 + 2.4 / df)
print(n, round(100 * tv * sd / math.sqrt(n) / mean, 2), round(end - start, 2))
EOF
}

: >"$DIR/results"
for r in $(seq "$ROUNDS"); do
  read -r na ha wa <<<"$(query --queries "$FIRST" --target-precision "$TARGET" --precision-budget 30m)"
  if [ $((r % 2)) -eq 1 ]; then
    read -r ne he we <<<"$(query --queries "$na")"
    read -r nf hf wf <<<"$(query --queries "$FIXED")"
  else
    read -r nf hf wf <<<"$(query --queries "$FIXED")"
    read -r ne he we <<<"$(query --queries "$na")"
  fi
  printf 'round %s: adaptive %s queries ±%s%% %ss | equal %s queries ±%s%% %ss | fixed %s queries ±%s%% %ss\n' \
    "$r" "$na" "$ha" "$wa" "$ne" "$he" "$we" "$nf" "$hf" "$wf"
  echo "$wa $we $wf" >>"$DIR/results"
done
python3 - "$DIR/results" <<'EOF'
import math, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print(f"adaptive / equal fixed count (the batches' cost): {g([a / e for a, e, f in rows]):.3f}")
print(f"adaptive / fixed count (time saved or spent): {g([a / f for a, e, f in rows]):.3f}")
EOF
