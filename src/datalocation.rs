//! Where a GreptimeDB query run's data was when its queries started (`data_location` of a
//! run summary): SST files, memtables (unflushed WAL replayed into memory at start), or both.
//! Reading memtables and reading SST files are different work, so `runs report` and
//! `runs compare` state a difference in it next to any latency they put side by side.

use serde_json::Value;

/// Where the data was read from, as far as the region statistics tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// Nothing in SST files: every row came from memtables.
    Memtables,
    /// Part in SST files, part only in memtables.
    Both,
    /// Every row in SST files.
    Sst,
}

impl Place {
    pub fn name(self) -> &'static str {
        match self {
            Place::Memtables => "memtables only",
            Place::Both => "SST files and memtables",
            Place::Sst => "SST files only",
        }
    }
}

/// The place of a summary's `data_location`; `None` when the run did not record it or its
/// server could not tell (no region statistics): unknown is never guessed.
pub fn place(summary: &Value) -> Option<Place> {
    place_of(&summary["data_location"])
}

/// The place of a `data_location` record.
pub fn place_of(loc: &Value) -> Option<Place> {
    if loc["information_schema"] != true {
        return None;
    }
    let sst = loc["sst_num"].as_u64()?;
    // Rows when the version says them (memtable bytes are uncompressed and can stay above
    // zero with no row in them); bytes otherwise.
    let mem = loc["memtable_rows"]
        .as_u64()
        .or_else(|| loc["memtable_size"].as_u64())?;
    match (sst > 0, mem > 0) {
        (false, true) => Some(Place::Memtables),
        (true, true) => Some(Place::Both),
        (true, false) => Some(Place::Sst),
        // No data at all: nothing to say where it is.
        (false, false) => None,
    }
}

/// "6 SST files, 33.5 MiB, 3,537,000 rows; 1,647,000 rows only in memtables" (rows where the
/// version says them; "28.0 MiB in memtables (uncompressed)" otherwise).
pub fn describe(summary: &Value) -> String {
    describe_of(&summary["data_location"])
}

/// [`describe`] of a `data_location` record.
pub fn describe_of(loc: &Value) -> String {
    let bytes = |v: &Value| crate::render::bytes(minijinja::Value::from_serialize(v));
    let rows = |n: u64| crate::render::num(minijinja::Value::from(n), None);
    let ssts = crate::output::count_of(
        loc["sst_num"]
            .as_u64()
            .map_or("unknown".into(), |n| n.to_string()),
        "SST file",
    );
    match (loc["sst_rows"].as_u64(), loc["memtable_rows"].as_u64()) {
        (Some(s), Some(m)) => format!(
            "{ssts}, {}, {} rows; {} rows only in memtables",
            bytes(&loc["sst_size"]),
            rows(s),
            rows(m)
        ),
        _ => format!(
            "{ssts}, {}; {} in memtables (uncompressed)",
            bytes(&loc["sst_size"]),
            bytes(&loc["memtable_size"])
        ),
    }
}

/// A data state label that says the data may be anything (interrupted or failed maintenance).
pub fn state_unknown(label: &Value) -> bool {
    label.as_str().is_some_and(|l| l.contains("unknown"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn loc(sst: u64, mem: u64) -> Value {
        json!({"data_location": {"information_schema": true, "sst_num": sst, "sst_size": sst * 1000, "memtable_size": mem}})
    }

    #[test]
    fn places() {
        assert_eq!(place(&loc(0, 5)), Some(Place::Memtables));
        assert_eq!(place(&loc(3, 5)), Some(Place::Both));
        assert_eq!(place(&loc(3, 0)), Some(Place::Sst));
        assert_eq!(place(&loc(0, 0)), None);
        assert_eq!(place(&json!({})), None);
        assert_eq!(
            place(&json!({"data_location": {"information_schema": false}})),
            None
        );
        assert!(describe(&loc(1, 0)).starts_with("1 SST file,"));
        assert!(state_unknown(&json!(
            "maintenance interrupted: state unknown"
        )));
        assert!(!state_unknown(&json!("as loaded")));
    }
}
