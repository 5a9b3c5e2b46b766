//! The short name of why a query type failed, as a published table says it ("OOM", "timed
//! out", "server crashed"): read by the run's conclusion and by the report, so it lives below
//! both.

/// `word` in `text` with no letter or digit on either side ("OOM" but not "room").
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric()) && !after.is_some_and(|c| c.is_alphanumeric())
    })
}

/// A short name for why a query type failed (what a reader of a published table expects).
pub fn failure_kind(reason: &str) -> &'static str {
    let r = reason.to_ascii_lowercase();
    // InfluxDB 3 Core's cap on Parquet files per query: not missing rows, not memory.
    if r.contains("exceeding the file limit") || r.contains("query file limit") {
        "query file limit"
    } else if r.contains("out of memory")
        || r.contains("resources exhausted")
        || has_word(&r, "oom")
        || r.contains("failed to allocate")
        || r.contains("memory limit")
    {
        // As the published tables say it.
        "OOM"
    } else if r.contains("timed out") || r.contains("timeout") || r.contains("deadline") {
        "timed out"
    } else if r.contains("interrupted") {
        "interrupted"
    } else if r.contains("server died") || r.contains("exited unexpectedly") {
        "server crashed"
    } else {
        "failed"
    }
}
