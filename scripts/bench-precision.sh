#!/usr/bin/env bash
# What --target-precision costs and saves (issue 24 §6): the wall time of the query phase with
# --target-precision against fixed counts AT EQUAL PRECISION, measured in one run on one
# machine against the GreptimeDB emulator with the stand-in TSBS tools.
#
#   scripts/bench-precision.sh   (BENCH_DIR, default /tmp/tsbsctl-bench-precision; TARGET,
#                                 default 2%; FIRST, each type's count = its first batch,
#                                 default 10; FIXED, a count one picks without knowing the
#                                 spread, default 1000; DELAY_MS and JITTER_MS, the emulator's
#                                 latency per query, default 20 + 0..20 ms; SLOW_MS, added to
#                                 lastpoint's queries, default 100; ROUNDS, default 3; BIN,
#                                 default the release build)
#
# Two query types of different spread: single-groupby-1-1-1 answers in DELAY_MS + 0..JITTER_MS
# ms (noisy: it needs many queries to reach TARGET), lastpoint SLOW_MS later (the same jitter on
# a longer latency: a few queries do). A fixed count is one count for every type, so to give
# every type the target precision it must be the largest count any type needs.
# Per round, in alternating order (ABBA, so a drift of the machine falls on both sides):
#   adaptive: --queries FIRST --target-precision TARGET: batches per type until the 95%
#             interval of its mean is within TARGET; each type's queries and interval, and the
#             wall time (the first type's start to the last type's end);
#   equal:    --queries MAX, MAX the largest count adaptive took for a type: the smallest fixed
#             count that gives every type the precision adaptive reached (generous to fixed
#             counts: it assumes one knew MAX beforehand); each type's interval is printed, so
#             that the precision is seen to be equal or better;
#   fixed:    --queries FIXED: a safe fixed count; its intervals and wall time.
# Prints each run and the geometric means of adaptive/equal (the time saved at equal
# precision) and adaptive/fixed over the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${BENCH_DIR:-/tmp/tsbsctl-bench-precision}
TARGET=${TARGET:-2%}
FIRST=${FIRST:-10}
FIXED=${FIXED:-1000}
DELAY_MS=${DELAY_MS:-20}
JITTER_MS=${JITTER_MS:-20}
SLOW_MS=${SLOW_MS:-100}
ROUNDS=${ROUNDS:-3}
TYPES=(--query-type single-groupby-1-1-1 --query-type lastpoint)
rm -rf "$DIR" && mkdir -p "$DIR"

# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh

$T env prepare --managed-go >/dev/null
greptime_workspace perf
echo "emulator latency per query: ${DELAY_MS} ms + 0..${JITTER_MS} ms (lastpoint ${SLOW_MS} ms more); target ±${TARGET}"

# lastpoint's SQL is the one with last_value(.
cat >"$DIR/knobs.json" <<JSON
{"query_base_delay_ms": $DELAY_MS, "query_jitter_ms": $JITTER_MS,
 "query_delay_ms": $SLOW_MS, "query_delay_contains": "last_value("}
JSON
TESTBED_KNOBS=$DIR/knobs.json $BIN/tsbsctl greptimedb serve --database-id perf \
  >"$DIR/serve.out" 2>"$DIR/serve.err" &
SERVER=$!
for _ in $(seq 600); do curl -sf "$URL/health" >/dev/null && break; sleep 0.1; done
$T bench greptimedb load --url "$URL" --database-mode reset --confirm-reset benchmark \
  --dataset-id perf >/dev/null

# One query run of both types; prints
# "wall_seconds largest_count count1 half_width1_percent count2 half_width2_percent".
query() {
  $T bench greptimedb query --url "$URL" --dataset-id perf "${TYPES[@]}" "$@" \
    --json >"$DIR/q.json"
  python3 - "$DIR/q.json" <<'PY'
import datetime, json, math, sys
d = json.load(open(sys.argv[1]))["data"]
run = d["run_dir"]
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
# Student's t at 0.975 (normal beyond 30 degrees of freedom is close enough for a print).
tq = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 9: 2.26, 19: 2.09, 29: 2.05}
out = []
for q in d["summary"]["queries"]:
    n, mean, sd = q["query_count"], q["mean_ms"], q["stddev_ms"]
    df = n - 1
    tv = tq.get(df) or (1.96 + 2.4 / df)
    out.append((n, round(100 * tv * sd / math.sqrt(n) / mean, 2)))
print(round(end - start, 2), max(n for n, _ in out), *[x for p in out for x in p])
PY
}

: >"$DIR/results"
for r in $(seq "$ROUNDS"); do
  read -r wa ma na1 ha1 na2 ha2 <<<"$(query --queries "$FIRST" --target-precision "$TARGET" --precision-budget 30m)"
  if [ $((r % 2)) -eq 1 ]; then
    read -r we _ ne1 he1 ne2 he2 <<<"$(query --queries "$ma")"
    read -r wf _ nf1 hf1 nf2 hf2 <<<"$(query --queries "$FIXED")"
  else
    read -r wf _ nf1 hf1 nf2 hf2 <<<"$(query --queries "$FIXED")"
    read -r we _ ne1 he1 ne2 he2 <<<"$(query --queries "$ma")"
  fi
  printf 'round %s: adaptive %s+%s queries ±%s%%/±%s%% %ss | equal %s+%s ±%s%%/±%s%% %ss | fixed %s+%s ±%s%%/±%s%% %ss\n' \
    "$r" "$na1" "$na2" "$ha1" "$ha2" "$wa" "$ne1" "$ne2" "$he1" "$he2" "$we" \
    "$nf1" "$nf2" "$hf1" "$hf2" "$wf"
  echo "$wa $we $wf" >>"$DIR/results"
done
python3 - "$DIR/results" "$FIXED" <<'PY'
import math, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print(f"adaptive / the fixed count of equal precision (time saved): {g([a / e for a, e, f in rows]):.3f}")
print(f"adaptive / a fixed count of {sys.argv[2]} (time saved or spent): {g([a / f for a, e, f in rows]):.3f}")
PY
