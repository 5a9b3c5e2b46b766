#!/usr/bin/env bash
# Performance of `tsbsctl bench`: ratios measured in one run on one machine, against the
# testbed (stand-in TSBS loader and runner, GreptimeDB emulator) served by `testbed serve`.
#
#   scripts/bench-bench.sh      (BENCH_DIR, default /tmp/tsbsctl-bench-bench; SCALE, default 200)
#
# * load overhead: tsbsctl's own CPU time during a load (getrusage SELF, recorded in the load
#   step's `usage`) over the loader's (RUSAGE_CHILDREN);                target ≤ 2 %
#   measured for an uncompressed dataset and a gzip one (tsbsctl decompresses it); both are
#   streamed to the loader's stdin and SHA-256 hashed on the way (see bench-pipeline.sh);
# * memory: tsbsctl's peak RSS after loads of SCALE and 4×SCALE hosts;  target: flat
# * reuse path: `bench greptimedb query` on a prepared, bound workspace with a generated
#   query set: from exec to the first query step's start event (the runner is spawned right
#   after it), best of 5;                                              target < 300 ms
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${BENCH_DIR:-/tmp/tsbsctl-bench-bench}
SCALE=${SCALE:-200}
rm -rf "$DIR" && mkdir -p "$DIR"

cargo build -q --release -p tsbsctl --bin tsbsctl
cargo build -q --release -p testbed --bin testbed
BIN=$PWD/target/release
export TESTBED_BIN=$BIN/testbed

"$BIN/testbed" serve --dir "$DIR/serve" >"$DIR/mirror.env" 2>"$DIR/mirror.err" &
MIRROR=$!
trap 'kill "$MIRROR" 2>/dev/null || true; wait "$MIRROR" 2>/dev/null || true; rm -rf "$DIR"' EXIT
for _ in $(seq 100); do grep -q TSBSCTL_GO_VERSION "$DIR/mirror.env" 2>/dev/null && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$DIR/mirror.env"
export TSBSCTL_ROOT=$DIR/root
T="$BIN/tsbsctl --quiet"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

$T env prepare >/dev/null
$T greptimedb prepare --database-id perf --http-port "$PORT" >/dev/null

# The load step's usage from the newest run: "tsbsctl_cpu tool_cpu rss_kib wall".
usage() {
  python3 - "$TSBSCTL_ROOT/greptimedb/runs" <<'EOF'
import json, os, sys
runs = sorted(os.listdir(sys.argv[1]))
for line in open(os.path.join(sys.argv[1], runs[-1], "events.jsonl")):
    e = json.loads(line)
    if "step" not in e:  # a recorded event or warning, not a step line
        continue
    if e["step"] == "load" and e["status"] == "completed":
        u = e["data"]["usage"]
        print(u["tsbsctl_cpu_seconds"], u["tool_cpu_seconds"], u["tsbsctl_max_rss_kib"], u["wall_seconds"])
EOF
}

load() { # $1 dataset id, $2 scale, $3 compression
  $T data generate --format influx --profile smoke --scale "$2" --dataset-id "$1" --compression "$3" >/dev/null
  $T bench greptimedb load --database-id perf --dataset-id "$1" --database-mode reset \
    --confirm-reset benchmark --load-workers 2 --batch-size 5000 --stop-timeout 30 >/dev/null
  usage
}

report_load() { # label, "self tool rss wall"
  read -r s t r w <<<"$2"
  pct=$(python3 -c "print(f'{100*$s/max($t,1e-9):.2f}')")
  printf '%-34s tsbsctl %6.3f s CPU, loader %7.3f s CPU -> %5s %%  (peak RSS %s KiB, %.1f s)\n' "$1" "$s" "$t" "$pct" "$r" "$w"
}

echo "== loads (scale $SCALE and $((SCALE * 4)), one day at 10 s)"
u1=$(load "perf-$SCALE" "$SCALE" none)
report_load "load ${SCALE} hosts, plain" "$u1"
u2=$(load "perf-$((SCALE * 4))" "$((SCALE * 4))" none)
report_load "load $((SCALE * 4)) hosts, plain" "$u2"
u3=$(load "perf-$((SCALE * 4))-gz" "$((SCALE * 4))" gzip)
report_load "load $((SCALE * 4)) hosts, gzip" "$u3"

echo "== reuse path: exec to the first query runner (best of 5)"
best=999999
for _ in 1 2 3 4 5; do
  t0=$(date +%s.%N)
  $T bench greptimedb query --database-id perf --query-type lastpoint --queries 10 --stop-timeout 30 >/dev/null
  ms=$(python3 - "$TSBSCTL_ROOT/greptimedb/runs" "$t0" <<'EOF'
import json, os, sys, datetime
runs = sorted(os.listdir(sys.argv[1]))
ready = 0
first = None
for line in open(os.path.join(sys.argv[1], runs[-1], "events.jsonl")):
    e = json.loads(line)
    if "step" not in e:  # a recorded event or warning, not a step line
        continue
    if e["step"].startswith("query:") and e["status"] == "running" and first is None:
        t = datetime.datetime.strptime(e["at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        first = (t.timestamp() - float(sys.argv[2])) * 1000
    if e["step"] == "server" and e.get("data", {}).get("events"):
        for ev in e["data"]["events"]:
            if ev["event"] == "ready":
                ready = ev["after_ms"]
# Total, and without the server's own start-up (spawn to ready), which is not tsbsctl's time.
print(f"{first:.0f} {first - ready:.0f}")
EOF
)
  read -r total own <<<"$ms"
  echo "  $total ms to the first runner, $own ms of it in tsbsctl (server start-up excluded)"
  best=$(( own < best ? own : best ))
done
echo "reuse path best: $best ms in tsbsctl before the first query runner (target < 300 ms)"
