#!/usr/bin/env bash
# Cost of hashing the dataset on its way to the loader (#7): ratios measured in one run on
# one machine, against the testbed (stand-in TSBS loader, GreptimeDB emulator).
#
#   scripts/bench-pipeline.sh   (BENCH_DIR, default /tmp/tsbsctl-bench-pipeline; SCALE, default
#                                50 hosts x one day at 10 s; ROUNDS, default 3)
#
# Three loads of the same dataset into the same server with the same loader command line
# (2 workers x 5000 rows, --do-create-db=true so each one starts from an empty database):
#   hashed: `tsbsctl bench greptimedb load` (tsbsctl streams the dataset into the loader's
#           stdin and SHA-256 hashes it on the way; what every run now does);
#   pipe:   `cat data | loader` (the same stdin path without tsbsctl and without hashing);
#   file:   `loader --file=data` (the loader reads the file itself: no pipe at all).
# The loader's own rows/s ("mean rate") is compared; rounds alternate the three and the
# median of each is kept. Target: hashed within 1 % of pipe (the hashing cost) and of file.
# CPU: tsbsctl's own CPU seconds during the hashed load (getrusage SELF, recorded in the load
# step's usage) beside the loader's (RUSAGE_CHILDREN).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${BENCH_DIR:-/tmp/tsbsctl-bench-pipeline}
SCALE=${SCALE:-50}
ROUNDS=${ROUNDS:-3}
rm -rf "$DIR" && mkdir -p "$DIR"

cargo build -q --release -p tsbsctl --bin tsbsctl
cargo build -q --release -p testbed --bin testbed
BIN=$PWD/target/release
export TESTBED_BIN=$BIN/testbed

"$BIN/testbed" serve --dir "$DIR/serve" >"$DIR/mirror.env" 2>"$DIR/mirror.err" &
MIRROR=$!
SERVER=
cleanup() {
  [ -n "$SERVER" ] && { kill -INT "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
  kill "$MIRROR" 2>/dev/null || true
  wait "$MIRROR" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q TSBSCTL_GO_VERSION "$DIR/mirror.env" 2>/dev/null && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$DIR/mirror.env"
export TSBSCTL_ROOT=$DIR/root
T="$BIN/tsbsctl --quiet"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT

$T env prepare --managed-go >/dev/null
$T greptimedb prepare --database-id perf --http-port "$PORT" >/dev/null
$T data generate --format influx --profile smoke --scale "$SCALE" --dataset-id perf >/dev/null
DATA=$(find "$TSBSCTL_ROOT/datasets" -path '*/perf/formats/influx/data' | head -1)
echo "dataset: $DATA ($(du -h "$DATA" | cut -f1), scale $SCALE)"

$BIN/tsbsctl greptimedb serve --database-id perf --stop-timeout 30 >"$DIR/serve.out" 2>"$DIR/serve.err" &
SERVER=$!
for _ in $(seq 200); do curl -sf "$URL/health" >/dev/null && break; sleep 0.1; done

# The hashed load; prints "rows_per_s tsbsctl_cpu loader_cpu wall" and leaves the command line.
hashed() {
  $T bench greptimedb load --url "$URL" --database-mode reset --confirm-reset benchmark \
    --dataset-id perf --load-workers 2 --batch-size 5000 --json >"$DIR/hashed.json"
  python3 - "$DIR/hashed.json" "$DIR/cmd" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))["data"]
run = d["run_dir"]
ing = d["summary"]["ingestion"]
for line in open(f"{run}/events.jsonl"):
    e = json.loads(line)
    if e["step"] == "load" and e["status"] == "completed":
        u = e["data"]["usage"]
log = open(f"{run}/{ing['log']}").readline()[2:].strip()
# The same command line for the baselines, with a results file of their own.
import shlex
args = [a for a in shlex.split(log) if not a.startswith("--results-file=")]
open(sys.argv[2], "w").write(shlex.join(args))
print(ing["rows_per_second"], u["tsbsctl_cpu_seconds"], u["tool_cpu_seconds"], u["wall_seconds"])
EOF
}

# A baseline: "pipe" or "file"; prints "rows_per_s loader_cpu wall".
baseline() {
  local cmd
  cmd=$(cat "$DIR/cmd")
  local t0 t1
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

H=(); P=(); F=(); HC=(); LC=()
for r in $(seq "$ROUNDS"); do
  read -r rate self tool wall <<<"$(hashed)"
  H+=("$rate"); HC+=("$self"); LC+=("$tool")
  printf 'round %d  hashed: %12.0f rows/s  (tsbsctl %.3f s CPU, loader %.3f s CPU, %.1f s)\n' "$r" "$rate" "$self" "$tool" "$wall"
  read -r rate cpu wall <<<"$(baseline pipe)"
  P+=("$rate")
  printf 'round %d  pipe:   %12.0f rows/s  (cat + loader %.3f s CPU, %.1f s)\n' "$r" "$rate" "$cpu" "$wall"
  read -r rate cpu wall <<<"$(baseline file)"
  F+=("$rate")
  printf 'round %d  file:   %12.0f rows/s  (loader %.3f s CPU, %.1f s)\n' "$r" "$rate" "$cpu" "$wall"
done

python3 - "${H[*]}" "${P[*]}" "${F[*]}" "${HC[*]}" "${LC[*]}" <<'EOF'
import statistics as st, sys
h, p, f, hc, lc = ([float(x) for x in a.split()] for a in sys.argv[1:6])
mh, mp, mf = st.median(h), st.median(p), st.median(f)
print(f"median rows/s: hashed {mh:,.0f}, pipe {mp:,.0f}, file {mf:,.0f}")
print(f"hashed / pipe = {mh / mp:.3f}   hashed / file = {mh / mf:.3f}   (target >= 0.99)")
print(f"tsbsctl CPU during the hashed load: median {st.median(hc):.3f} s, "
      f"{100 * st.median(hc) / st.median(lc):.1f} % of the loader's {st.median(lc):.3f} s")
EOF
