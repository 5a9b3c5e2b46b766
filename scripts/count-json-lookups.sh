#!/usr/bin/env bash
# JSON look-ups by string key (`v["key"]`) left in the run model, per file, outside tests.
#
#   scripts/count-json-lookups.sh
#
# The run manifest, workspace binding and data state, summaries, comparisons, reports and the
# run list are typed structs; what is left is free-form data on purpose (step event data,
# product-specific `extra`/`server_settings`, the recorded flags, the report's own tables).
set -euo pipefail
cd "$(dirname "$0")/.."
total=0
for f in src/run.rs src/workspace/manifest.rs src/workspace/mod.rs src/summary.rs src/compare.rs \
    src/report.rs src/rerun.rs src/runlist.rs src/bench/target.rs src/bench/mod.rs; do
    # Only the code before the unit tests.
    n=$(awk '/^#\[cfg\(test\)\]/{exit} {print}' "$f" | { grep -o '\["[A-Za-z_0-9]*"\]' || true; } | wc -l)
    printf '%5d  %s\n' "$n" "$f"
    total=$((total + n))
done
printf '%5d  total\n' "$total"
