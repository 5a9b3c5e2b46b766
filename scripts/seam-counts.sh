#!/usr/bin/env bash
# Counts of issue 14's "How we will know", printed one per line (non-test code only: each
# file is read up to its first `#[cfg(test)]`):
#
# * product branches outside src/product/: lines that match or compare on a product name or
#   edition, or name a product's concrete type or variant (the review's §1.3 grep);
# * module-graph cycles: strongly connected components of more than one top-level module,
#   as the layering unit test (src/layering.rs) finds them;
# * JSON string look-ups (`["key"]`, `.get("key")`) in the run model: run.rs, summary.rs,
#   compare.rs, report.rs, rerun.rs, runlist.rs and bench/;
# * product concepts outside src/product/ and src/cli/ (issue 23's "How we will know",
#   design-2 §5): lines (comments aside) that name a product or one product's concept (an
#   edition, a licence, a compaction) in any form, field, function and type names as well as
#   literals (`#[serde(rename = "edition")]`, which keeps a record's key, counts too), per
#   file; and the files there whose own name carries one; and the lines of the core's
#   templates (templates/*.j2, not the products' templates/<product>/) that do.
#
#   scripts/seam-counts.sh           (VERBOSE=1 also lists every hit)
set -euo pipefail
cd "$(dirname "$0")/.."

# The non-test part of a Rust file.
nontest() { awk '/^#\[cfg\(test\)\]/ { exit } { print FILENAME ":" FNR ":" $0 }' "$1"; }

# Product knowledge: product and format names as literals, the concrete product types and the
# per-product enums' variants (`LoadTarget::Greptime`, `QueryFormat::Influx3`, `Edition::Core`).
# The extension's own modules (`product::ext`, `op`, `phase`, `ws_op`, `variants`) are the seam
# the core is meant to use, not a product's knowledge: a path into a product's module counts.
BRANCH_RE='"(greptimedb|influxdb3|greptime|influx3|core|enterprise)"|\bproduct::(greptimedb|influxdb3|influxdb2|timescaledb|exampledb)::|\b(GreptimeDb|InfluxDb3|ProductKind)\b|\b(LoadTarget|QueryTarget|QueryFormat)::[A-Z]|\bEdition::[A-Z]'

# A product's own CLI module (`src/cli/<name>.rs` beside `src/product/<name>.rs`) may name
# its product: it is counted on its own line. (InfluxDB 3's licence activation lives in its
# product, `src/product/influxdb3/activation.rs`.)
own_cli() {
    local b; b=$(basename "$1" .rs)
    [ "$(dirname "$1")" = src/cli ] && { [ -e "src/product/$b.rs" ] || [ -d "src/product/$b" ]; }
}
hits_in() {
    while read -r f; do nontest "$f"; done | grep -E "$BRANCH_RE" |
        grep -vE '^[^:]+:[0-9]+:\s*(//|///|//!)' || true
}
branches=$(find src -name '*.rs' -not -path 'src/product/*' | sort |
    while read -r f; do if ! own_cli "$f"; then echo "$f"; fi; done | hits_in)
cli_branches=$(find src/cli -name '*.rs' | sort |
    while read -r f; do if own_cli "$f"; then echo "$f"; fi; done | hits_in)
n_branches=$(printf '%s' "$branches" | grep -c . || true)
n_cli_branches=$(printf '%s' "$cli_branches" | grep -c . || true)

# Product concepts: any mention, not only literals.
CONCEPT_RE='greptime|influx|timescale|postgres|licen[cs]e|edition|compaction'
core_files=$(find src -name '*.rs' -not -path 'src/product/*' -not -path 'src/cli/*' \
    -not -name tests.rs | sort)
concepts=$(for f in $core_files; do nontest "$f"; done | grep -iE "$CONCEPT_RE" |
    grep -vE '^[^:]+:[0-9]+:\s*(//|///|//!)' || true)
n_concepts=$(printf '%s' "$concepts" | grep -c . || true)
concept_files=$(printf '%s\n' $core_files | grep -iE "$CONCEPT_RE" || true)
n_concept_files=$(printf '%s' "$concept_files" | grep -c . || true)

# The core's templates (the products' own are under templates/<product>/).
template_concepts=$(grep -inE "$CONCEPT_RE" templates/*.j2 || true)
n_template_concepts=$(printf '%s' "$template_concepts" | grep -c . || true)

lookups=$(
    { ls src/run.rs src/summary.rs src/compare.rs src/report.rs src/rerun.rs src/runlist.rs 2>/dev/null
      find src/bench -name '*.rs'; } | sort | while read -r f; do
        nontest "$f"
    done | grep -E '\["[a-z_0-9]+"\]|\.get\("[a-z_0-9]+"\)' || true
)
n_lookups=$(printf '%s' "$lookups" | grep -oE '\["[a-z_0-9]+"\]|\.get\("[a-z_0-9]+"\)' | grep -c . || true)

# Module-graph cycles: the layering unit test (src/layering.rs) builds the graph from the
# sources with comments, strings and test items removed, and prints its cycles.
layering=$(cargo test -q -p tsbsctl --lib layering::module_graph -- --nocapture 2>&1 || true)
cycles=$(printf '%s\n' "$layering" | sed -n 's/^  cycle: //p')
n_cycles=$(printf '%s\n' "$layering" | sed -n 's/^top-level import cycles: //p')
n_cycles=${n_cycles:-unknown}

echo "product branches outside src/product/: $n_branches"
echo "  (in the products' own modules outside src/product/ -- src/cli/<product>.rs -- not counted above: $n_cli_branches)"
echo "module-graph cycles: $n_cycles"
echo "JSON string look-ups in the run model: $n_lookups"
echo "product concepts outside src/product/ and src/cli/: $n_concepts lines, $n_concept_files file names"
echo "product concepts in the core's templates (templates/*.j2): $n_template_concepts lines"
if [ "${VERBOSE:-0}" = 1 ]; then
    echo "--- product branches"; printf '%s\n' "$branches"
    echo "--- in the products' own CLI modules"; printf '%s\n' "$cli_branches"
    echo "--- cycles (size: modules)"; printf '%s\n' "$cycles"
    echo "--- look-ups per file"
    printf '%s\n' "$lookups" | cut -d: -f1 | sort | uniq -c
    echo "--- product concepts per file"
    printf '%s\n' "$concepts" | cut -d: -f1 | sort | uniq -c | sort -rn
    echo "--- file names carrying a product concept"
    printf '%s\n' "$concept_files"
    echo "--- product concepts per core template"
    printf '%s\n' "$template_concepts" | cut -d: -f1 | sort | uniq -c | sort -rn
fi
