#!/usr/bin/env bash
# What tsbsctl costs the load it measures (issue 27): the loader's throughput with tsbsctl
# around it against the loader alone, as a ratio with a 95 % interval, measured in one run on
# one machine against the GreptimeDB emulator, with the stand-in TSBS tools or, with
# TSBS_DIR=<a GreptimeTeam/tsbs checkout>, the real ones built by `env prepare --tsbs-dir`.
#
#   scripts/bench-pipeline.sh   (BENCH_DIR, default /tmp/tsbsctl-bench-pipeline; SCALE hosts,
#                                default 900 x one day at 10 s = 7.8 M rows, about 30 s a load
#                                here; ROUNDS, default 6; VARIANTS, default "tsbsctl file",
#                                add "pipe" for `cat data | loader`; QUERIES, default 200 per
#                                type for the query-phase check; 0 skips it; BIN, default
#                                the release build)
#
# Variants, each the same loader command line (2 workers x 5000 rows, --do-create-db=true so
# each starts from an empty database):
#   tsbsctl: `tsbsctl bench greptimedb load`, what every run does (the loader reads an
#            uncompressed dataset itself with --file; tsbsctl watches the file, tails the log
#            and hashes the file after the load);
#   file:    `loader --file=data`: the loader alone;
#   pipe:    `cat data | loader`: what runs did before issue 27 without the hash.
# Rounds alternate the order (ABBA), so a drift of the machine falls on both sides. Per round
# the ratio tsbsctl / file of the loader's own rows/s ("mean rate"); the script prints their
# geometric mean with a 95 % t-interval over rounds, and tsbsctl's CPU while the loader ran
# (getrusage SELF, the load step's usage) as a share of the loader's (RUSAGE_CHILDREN).
# Then, unless QUERIES=0, one query phase: tsbsctl's CPU over the wall time of its query steps
# (progress parsing, the watch loop) as a share of one core.
#
# Exit 1 when the interval lies wholly below 0.99, when tsbsctl's CPU is 5 % of the loader's or
# more, or when it used 1 % of a core or more during the queries. Targets: README, Performance.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${BENCH_DIR:-/tmp/tsbsctl-bench-pipeline}
SCALE=${SCALE:-900}
ROUNDS=${ROUNDS:-6}
VARIANTS=${VARIANTS:-tsbsctl file}
QUERIES=${QUERIES:-200}
rm -rf "$DIR" && mkdir -p "$DIR"

# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh

if [ -n "${TSBS_DIR:-}" ]; then
  # The real TSBS tools, built from a checkout (GreptimeTeam/tsbs at the pinned commit).
  $T env prepare --tsbs-dir "$TSBS_DIR" >/dev/null
else
  $T env prepare --managed-go >/dev/null
fi
greptime_workspace perf --scale "$SCALE"
DATA=$(find "$TSBSCTL_ROOT/datasets" -path '*/perf/formats/influx/data' | head -1)
echo "dataset: $DATA ($(du -h "$DATA" | cut -f1), scale $SCALE)"

$BIN/tsbsctl greptimedb serve --database-id perf --stop-timeout 30 >"$DIR/serve.out" 2>"$DIR/serve.err" &
SERVER=$!
for _ in $(seq 600); do curl -sf "$URL/health" >/dev/null && break; sleep 0.1; done

# tsbsctl's load; prints "rows_per_s tsbsctl_cpu loader_cpu wall" and leaves the loader's
# command line (without --file and --results-file) for the baselines.
via_tsbsctl() {
  $T bench greptimedb load --url "$URL" --database-mode reset --confirm-reset benchmark \
    --dataset-id perf --load-workers 2 --batch-size 5000 --json >"$DIR/tsbsctl.json"
  python3 - "$DIR/tsbsctl.json" "$DIR/cmd" <<'EOF'
import json, shlex, sys
d = json.load(open(sys.argv[1]))["data"]
run = d["run_dir"]
ing = d["summary"]["ingestion"]
for line in open(f"{run}/events.jsonl"):
    e = json.loads(line)
    if "step" not in e:  # a recorded event or warning, not a step line
        continue
    if e["step"] == "load" and e["status"] == "completed":
        u = e["data"]["usage"]
        assert e["data"]["input"]["read_by"] == "file", e["data"]["input"]
log = open(f"{run}/{ing['log']}").readline()[2:].strip()
args = [a for a in shlex.split(log) if not a.startswith(("--results-file=", "--file="))]
open(sys.argv[2], "w").write(shlex.join(args))
print(ing["rows_per_second"], u["tsbsctl_cpu_seconds"], u["tool_cpu_seconds"], u["wall_seconds"])
EOF
}

# The loader alone: "pipe" or "file"; prints "rows_per_s loader_cpu wall".
alone() {
  local cmd t0 t1
  cmd=$(cat "$DIR/cmd")
  t0=$(date +%s.%N)
  if [ "$1" = pipe ]; then
    /usr/bin/time -o "$DIR/b.time" -f '%U %S' sh -c "cat '$DATA' | $cmd" >"$DIR/b.log" 2>&1
  else
    /usr/bin/time -o "$DIR/b.time" -f '%U %S' sh -c "$cmd --file='$DATA'" >"$DIR/b.log" 2>&1
  fi
  t1=$(date +%s.%N)
  python3 - "$DIR/b.log" "$DIR/b.time" "$t0" "$t1" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"loaded \d+ rows in \S+sec with \d+ workers \(mean rate ([0-9.]+) rows/sec\)", text)
if not m:
    sys.exit("no summary in the loader's output:\n" + text[-2000:])
u, s = open(sys.argv[2]).read().split()[-2:]
print(m.group(1), float(u) + float(s), float(sys.argv[4]) - float(sys.argv[3]))
EOF
}

# One load of a variant; appends "variant round rows_per_s tsbsctl_cpu loader_cpu wall".
one() {
  local v=$1 r=$2 rate self tool wall cpu
  if [ "$v" = tsbsctl ]; then
    read -r rate self tool wall <<<"$(via_tsbsctl)"
  else
    read -r rate cpu wall <<<"$(alone "$v")"
    self=0; tool=$cpu
  fi
  echo "$v $r $rate $self $tool $wall" >>"$DIR/results"
  printf 'round %d  %-8s %12.0f rows/s  (tsbsctl %.3f s CPU, loader %.3f s CPU, %.1f s)\n' \
    "$r" "$v" "$rate" "$self" "$tool" "$wall"
}

# tsbsctl's first load also writes the command line the others reuse (and warms the cache).
via_tsbsctl >/dev/null
read -r -a V <<<"$VARIANTS"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order=("${V[@]}"); else order=(); for ((i = ${#V[@]} - 1; i >= 0; i--)); do order+=("${V[$i]}"); done; fi
  for v in "${order[@]}"; do one "$v" "$r"; done
done

QCPU=
if [ "$QUERIES" != 0 ]; then
  $T bench greptimedb query --url "$URL" --dataset-id perf --queries "$QUERIES" --query-workers 2 \
    --json >"$DIR/query.json"
  QCPU=$(python3 - "$DIR/query.json" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))["data"]["run_dir"]
cpu = wall = 0.0
for line in open(f"{run}/events.jsonl"):
    e = json.loads(line)
    if "step" not in e:  # a recorded event or warning, not a step line
        continue
    if e["step"].startswith("query:") and e["status"] == "completed":
        cpu += e["data"]["usage"]["tsbsctl_cpu_seconds"]
        wall += e["data"]["usage"]["wall_seconds"]
print(cpu, wall)
EOF
)
fi

python3 - "$DIR/results" "$QCPU" <<'EOF'
import math, statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for v, r, rate, self_cpu, tool, wall in rows:
    by.setdefault(v, {})[int(r)] = (float(rate), float(self_cpu), float(tool))
# Two-sided 95 % t quantiles by degrees of freedom.
T = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
     9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}
def t95(df):
    return T.get(df) or T[max(k for k in T if k <= df)] if df >= 1 else float("nan")
def ratio(a, b):
    rs = sorted(set(by[a]) & set(by[b]))
    logs = [math.log(by[a][r][0] / by[b][r][0]) for r in rs]
    m = st.mean(logs)
    h = t95(len(logs) - 1) * st.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else float("nan")
    return math.exp(m), math.exp(m - h), math.exp(m + h), len(logs)
for v in by:
    print(f"{v:8} median {st.median(x[0] for x in by[v].values()):12,.0f} rows/s over {len(by[v])} rounds")
bad = []
for base in [v for v in by if v != "tsbsctl"]:
    r, lo, hi, n = ratio("tsbsctl", base)
    print(f"tsbsctl / {base} = {r:.4f}, 95 % interval [{lo:.4f}, {hi:.4f}] over {n} paired rounds (target >= 0.99)")
    if base == "file" and hi < 0.99:
        bad.append(f"tsbsctl / file: the interval lies below 0.99")
t = by["tsbsctl"].values()
share = sum(x[1] for x in t) / sum(x[2] for x in t)
print(f"tsbsctl CPU while the loader ran: {sum(x[1] for x in t):.3f} s against the loader's "
      f"{sum(x[2] for x in t):.3f} s = {100 * share:.2f} % (target < 5 %)")
if share >= 0.05:
    bad.append("tsbsctl's CPU is 5 % of the loader's or more")
if sys.argv[2]:
    cpu, wall = map(float, sys.argv[2].split())
    print(f"tsbsctl CPU during the query steps: {cpu:.3f} s over {wall:.1f} s = "
          f"{100 * cpu / wall:.3f} % of one core (target < 1 %)")
    if cpu / wall >= 0.01:
        bad.append("tsbsctl used 1 % of a core or more during the queries")
for b in bad:
    print("FAILED:", b)
sys.exit(1 if bad else 0)
EOF
