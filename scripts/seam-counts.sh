#!/usr/bin/env bash
# Counts of issue 14's "How we will know", printed one per line (non-test code only: each
# file is read up to its first `#[cfg(test)]`):
#
# * product branches outside src/product/: lines that match or compare on a product name or
#   edition, or name a product's concrete type or variant (the review's §1.3 grep);
# * module-graph cycles: strongly connected components of more than one top-level module,
#   from the `crate::<module>` paths each module names;
# * JSON string look-ups (`["key"]`, `.get("key")`) in the run model: run.rs, summary.rs,
#   compare.rs, report.rs, rerun.rs, runlist.rs and bench/.
#
#   scripts/seam-counts.sh           (VERBOSE=1 also lists every hit)
set -euo pipefail
cd "$(dirname "$0")/.."

# The non-test part of a Rust file.
nontest() { awk '/^#\[cfg\(test\)\]/ { exit } { print FILENAME ":" FNR ":" $0 }' "$1"; }

# Product knowledge: product and format names as literals, the concrete product types and the
# per-product enums' variants (`LoadTarget::Greptime`, `QueryFormat::Influx3`, `Edition::Core`).
BRANCH_RE='"(greptimedb|influxdb3|greptime|influx3|core|enterprise)"|\bproduct::[a-z][a-z0-9_]*::|\b(GreptimeDb|InfluxDb3|ProductKind)\b|\b(LoadTarget|QueryTarget|QueryFormat)::[A-Z]|\bEdition::[A-Z]'

# A product's own CLI module (`src/cli/<name>.rs` beside `src/product/<name>.rs`) may name
# its product: it is counted on its own line.
own_cli() { local b; b=$(basename "$1" .rs); [ "$(dirname "$1")" = src/cli ] && [ -e "src/product/$b.rs" ]; }
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

lookups=$(
    { ls src/run.rs src/summary.rs src/compare.rs src/report.rs src/rerun.rs src/runlist.rs 2>/dev/null
      find src/bench -name '*.rs'; } | sort | while read -r f; do
        nontest "$f"
    done | grep -E '\["[a-z_0-9]+"\]|\.get\("[a-z_0-9]+"\)' || true
)
n_lookups=$(printf '%s' "$lookups" | grep -oE '\["[a-z_0-9]+"\]|\.get\("[a-z_0-9]+"\)' | grep -c . || true)

# Edges `module -> module` of the top-level modules (a file's module is its first path part).
edges=$(
    find src -name '*.rs' | sort | while read -r f; do
        rel=${f#src/}
        m=${rel%%/*}
        m=${m%.rs}
        case $m in main | lib) continue ;; esac
        nontest "$f" | { grep -oE 'crate::[a-z_0-9]+' || true; } | sed 's/crate:://' | sort -u |
            while read -r d; do if [ "$d" != "$m" ] && [ -e "src/$d.rs" -o -d "src/$d" ]; then echo "$m $d"; fi; done
    done | sort -u
)
# Tarjan's strongly connected components, in awk.
cycles=$(printf '%s\n' "$edges" | awk '
    NF == 2 { adj[$1] = adj[$1] " " $2; node[$1]; node[$2] }
    function visit(v,   ws, n, i, w, comp, size) {
        idx[v] = low[v] = counter++; stack[++sp] = v; on[v] = 1
        n = split(adj[v], ws, " ")
        for (i = 1; i <= n; i++) {
            w = ws[i]
            if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
            else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
        }
        if (low[v] == idx[v]) {
            comp = ""; size = 0
            do { w = stack[sp--]; on[w] = 0; comp = comp " " w; size++ } while (w != v)
            if (size > 1) print size ":" comp
        }
    }
    END { counter = 0; sp = 0; for (v in node) if (!(v in idx)) visit(v) }
')
n_cycles=$(printf '%s' "$cycles" | grep -c . || true)

echo "product branches outside src/product/: $n_branches"
echo "  (in the products' own CLI modules, src/cli/<product>.rs, not counted above: $n_cli_branches)"
echo "module-graph cycles: $n_cycles"
echo "JSON string look-ups in the run model: $n_lookups"
if [ "${VERBOSE:-0}" = 1 ]; then
    echo "--- product branches"; printf '%s\n' "$branches"
    echo "--- in the products' own CLI modules"; printf '%s\n' "$cli_branches"
    echo "--- cycles (size: modules)"; printf '%s\n' "$cycles"
    echo "--- look-ups per file"
    printf '%s\n' "$lookups" | cut -d: -f1 | sort | uniq -c
fi
