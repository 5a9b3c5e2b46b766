//! How runs of one product differ beyond their version: its editions (other server builds)
//! and the limits a run's server ran under (a licence), as `runs report` and `runs compare`
//! word them. The product declares both ([`super::Product::run_variants`]); the report and
//! the comparison only apply them, so no core file names an edition or a licence.

use serde_json::Value;

/// What a product says of runs of two of its editions, and of the limits its runs ran under.
pub struct RunVariants {
    /// What one variant of the product is called in messages ("edition").
    pub noun: &'static str,
    /// What two editions are, so that their latencies are not the version's alone, e.g.
    /// "they are different server builds (storage engine, licence and its limits)".
    pub editions_why: &'static str,
    /// The limits a run ran under, when the product's server has such limits.
    pub limits: Option<RunLimits>,
}

/// The noun of a variant of a product that does not word its variants.
const DEFAULT_NOUN: &str = "edition";
/// What two variants of such a product are.
const DEFAULT_WHY: &str = "they are different server builds";

/// What one variant of `product` is called in messages ("edition", from its
/// [`RunVariants`]).
pub fn noun(product: &dyn super::Product) -> &'static str {
    product.run_variants().map_or(DEFAULT_NOUN, |v| v.noun)
}

/// What one variant of the product named `name` is called in messages.
pub fn noun_of(name: &str) -> &'static str {
    super::resolve(name, None).map_or(DEFAULT_NOUN, |p| noun(p.as_ref()))
}

/// The caveat of two runs of different variants (`base`, `cand`: their names), in the words
/// of `variants` (the candidate's product, else the baseline's).
pub fn differ_caveat(variants: Option<&RunVariants>, base: &str, cand: &str) -> String {
    let (noun, why) = variants.map_or((DEFAULT_NOUN, DEFAULT_WHY), |v| (v.noun, v.editions_why));
    format!(
        "the {noun}s differ: baseline {base}, candidate {cand}; {why}, so the latencies show the {noun} as well as the version"
    )
}

/// Limits a run's server ran under that another run of the product may not share.
pub struct RunLimits {
    /// Whether the limits apply to runs of this edition (`None`: no edition recorded).
    pub applies: fn(edition: Option<&str>) -> bool,
    /// The limits a run ran under, read from its recorded `server_settings` (`None`: none
    /// recorded).
    pub label: fn(server_settings: &Value) -> Option<String>,
    /// The key of the report's note (its JSON `notes`), e.g. `licence`.
    pub note_key: &'static str,
    /// The report's note for runs whose labels differ (`groups`: the runs by label).
    pub report_note: fn(groups: &str) -> String,
    /// The comparison's caveat for two runs whose labels differ ("none" when absent).
    pub compare_note: fn(baseline: &str, candidate: &str) -> String,
}
