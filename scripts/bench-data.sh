#!/usr/bin/env bash
# Performance of `tsbsctl data`: ratios measured in one run on one machine.
#
#   scripts/bench-data.sh            (BENCH_DIR, default /tmp/tsbsctl-bench-data; SCALE, default 1000)
#
# * generate: the library pipeline (examples/bench_data_generate.rs, the code `data generate`
#   runs) vs the stand-in generator writing to a file by itself;     target ≤ 1.10×
# * verify:   `tsbsctl data verify` vs `openssl dgst -sha256`, warm cache; target ≥ 0.95×
# * reuse:    `tsbsctl data generate` of a verified dataset;         target < 50 ms
# * memory:   peak RSS of generate and verify (/usr/bin/time -v);    target < 64 MiB
# Needs ~2 × 3 GB free in BENCH_DIR at SCALE=1000 (one day, 10 s: 8.64 M rows, ~2.99 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${BENCH_DIR:-/tmp/tsbsctl-bench-data}
SCALE=${SCALE:-1000}
END=2023-06-12T00:00:00Z
rm -rf "$DIR" && mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT

cargo build -q --release -p tsbsctl --bin tsbsctl --example bench_data_generate
cargo build -q --release -p testbed --bin testbed
BIN=$PWD/target/release
GEN=$DIR/tsbs_generate_data
printf '#!/bin/sh\nexec %s emulate tsbs_generate_data "$@"\n' "$BIN/testbed" >"$GEN"
chmod +x "$GEN"

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc -l; }
rss_kib() { grep 'Maximum resident set size' "$1" | awk '{print $NF}'; }

# Alternate the two, ROUNDS times each, and compare the best of each (the machine is shared).
ROUNDS=${ROUNDS:-3}
alone=999999; gen=999999
for r in $(seq "$ROUNDS"); do
  echo "== round $r: generator alone (scale $SCALE, one day) to a file, then sync"
  rm -rf "$DIR/alone.lp" "$DIR/datasets"; sync
  t0=$(now)
  /usr/bin/time -o "$DIR/alone.time" -f '%U %S' "$GEN" --use-case=cpu-only --seed=123 --scale="$SCALE" \
    --timestamp-start=2023-06-11T00:00:00Z --timestamp-end=$END --log-interval=10s --format=influx >"$DIR/alone.lp"
  sync
  t1=$(now)
  d=$(secs "$t0" "$t1"); alone=$(echo "if ($d < $alone) $d else $alone" | bc -l)
  alone_cpu=$(awk '{print $1 + $2}' "$DIR/alone.time")
  size=$(stat -c %s "$DIR/alone.lp")
  rm -f "$DIR/alone.lp"; sync
  echo "== round $r: data generate (one pass: count, sha256, write), then sync"
  t0=$(now)
  /usr/bin/time -v -o "$DIR/gen.time" "$BIN/examples/bench_data_generate" "$DIR/datasets" "$GEN" bench "$SCALE" "$END" none
  sync
  t1=$(now)
  d=$(secs "$t0" "$t1"); gen=$(echo "if ($d < $gen) $d else $gen" | bc -l)
  gen_cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$DIR/gen.time")
  gen_rss=$(rss_kib "$DIR/gen.time")
done
DATA=$DIR/datasets/bench/formats/influx/data

export TSBSCTL_ROOT=$DIR/root TSBS_DATASET_ROOT=$DIR/datasets
echo "== openssl dgst -sha256 (warm, best of 2)"
best_ssl=999999
for _ in 1 2; do
  t0=$(now); openssl dgst -sha256 "$DATA" >/dev/null; t1=$(now)
  d=$(secs "$t0" "$t1"); best_ssl=$(echo "if ($d < $best_ssl) $d else $best_ssl" | bc -l)
done
echo "== tsbsctl data verify (warm, best of 2)"
best_ver=999999
for _ in 1 2; do
  t0=$(now); /usr/bin/time -v -o "$DIR/verify.time" "$BIN/tsbsctl" --quiet data verify --dataset-id bench >/dev/null; t1=$(now)
  d=$(secs "$t0" "$t1"); best_ver=$(echo "if ($d < $best_ver) $d else $best_ver" | bc -l)
done
ver_rss=$(rss_kib "$DIR/verify.time")

echo "== reuse (tsbsctl data generate of the verified dataset, median of 5)"
reuse=()
for _ in 1 2 3 4 5; do
  t0=$(now); "$BIN/tsbsctl" --quiet data generate --format influx --dataset-id bench >/dev/null; t1=$(now)
  reuse+=("$(echo "($t1 - $t0) * 1000" | bc -l)")
done
reuse_ms=$(printf '%s\n' "${reuse[@]}" | sort -n | sed -n 3p)
/usr/bin/time -v -o "$DIR/reuse.time" "$BIN/tsbsctl" --quiet data generate --format influx --dataset-id bench >/dev/null
reuse_rss=$(rss_kib "$DIR/reuse.time")

printf '\nsize: %d bytes (%s rows)\n' "$size" "$(grep -o '"rows": [0-9]*' "$DIR/datasets/bench/formats/influx/manifest.json" | awk '{print $2}')"
printf 'generate: %.2f s vs generator alone %.2f s -> %.3f x (target <= 1.10); CPU %.2f s vs %.2f s (last round)\n' \
  "$gen" "$alone" "$(echo "$gen / $alone" | bc -l)" "$gen_cpu" "$alone_cpu"
printf 'verify:   %.2f s vs openssl %.2f s -> throughput %.3f x (target >= 0.95)\n' "$best_ver" "$best_ssl" "$(echo "$best_ssl / $best_ver" | bc -l)"
printf 'reuse:    %.1f ms median (target < 50)\n' "$reuse_ms"
printf 'load average at the end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'peak RSS: generate %d MiB, verify %d MiB, reuse %d MiB (target < 64)\n' \
  $((gen_rss / 1024)) $((ver_rss / 1024)) $((reuse_rss / 1024))
