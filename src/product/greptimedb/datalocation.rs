//! Where a GreptimeDB query run's data was when its queries started (`data_location` of a
//! run summary): SST files, memtables (unflushed WAL replayed into memory at start), or both.
//! Reading memtables and reading SST files are different work, so `runs report` and
//! `runs compare` state a difference in it next to any latency they put side by side: they
//! reach it through the product's [`DataLocation`] ([`DATA_LOCATION`]).

use serde_json::Value;

use crate::product::ext::{DataLocation, StepData};

/// What `runs report` and `runs compare` read of a GreptimeDB run's `data_location`.
pub static DATA_LOCATION: DataLocation = DataLocation {
    record,
    place: |loc| place_of(loc).map(|p| (p as u8, p.name())),
    describe: describe_of,
    report_why: "a latency difference between them mixes the flush state (memtables replayed from the WAL vs SST files) with what differs in the data state (e.g. compaction); for a like-for-like baseline, run the queries with `bench ... query|all --flush-before-queries`",
    compare_why: "reading memtables replayed from the WAL is other work than reading SST files (for a like-for-like baseline, run the queries with `bench ... query|all --flush-before-queries`)",
    orphan_files,
};

/// The `data-location` step's data (where the data was when the queries started), with the
/// wait for the compaction a flush started (`automatic-compaction`), when there was a flush.
fn record(step: &StepData) -> Option<Value> {
    let mut d = step("data-location")?;
    if let (Some(a), Value::Object(o)) = (step("automatic-compaction"), &mut d) {
        o.insert("compaction_after_flush".into(), a);
    }
    Some(d)
}

/// SST files on disk the table's manifest does not hold (compactions a stop threw away). The
/// server's own count, taken when the queries started, when the run has it; else files on
/// disk (`storage`, the footprint) against the manifest's count. The footprint is taken after
/// the load, so with a flush (and its compaction) before the queries the two moments differ
/// and no count is derived from them.
fn orphan_files(loc: &Value, storage: &Value) -> Option<u64> {
    let counted = loc["orphan_files"].as_u64();
    let flushed = loc["flushed_before_queries"] == true;
    match (
        counted,
        storage["data_files"].as_u64(),
        loc["sst_num"].as_u64(),
    ) {
        (Some(n), _, _) if n > 0 => Some(n),
        (None, Some(on_disk), Some(live))
            if !flushed && storage["layout"] == "greptimedb" && on_disk > live =>
        {
            Some(on_disk - live)
        }
        _ => None,
    }
}

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
        // The hook says the same: ordered as the places, named as they are.
        let hook = |v: &Value| (DATA_LOCATION.place)(&v["data_location"]);
        assert_eq!(hook(&loc(0, 5)), Some((0, "memtables only")));
        assert_eq!(hook(&loc(3, 5)), Some((1, "SST files and memtables")));
        assert_eq!(hook(&loc(3, 0)), Some((2, "SST files only")));
        assert_eq!(hook(&loc(0, 0)), None);
        assert_eq!(
            (DATA_LOCATION.describe)(&loc(1, 0)["data_location"]),
            describe(&loc(1, 0))
        );
    }

    #[test]
    fn the_record_is_the_data_location_step_with_the_compaction_after_a_flush() {
        let steps = |with_compaction: bool| {
            move |name: &str| match name {
                "data-location" => Some(json!({"sst_num": 1})),
                "automatic-compaction" if with_compaction => Some(json!({"waited": true})),
                _ => None,
            }
        };
        assert_eq!(record(&steps(false)), Some(json!({"sst_num": 1})));
        assert_eq!(
            record(&steps(true)),
            Some(json!({"sst_num": 1, "compaction_after_flush": {"waited": true}}))
        );
        assert_eq!(record(&|_: &str| None), None);
    }

    #[test]
    fn orphans_are_the_servers_count_else_disk_against_the_manifest() {
        let st = json!({"layout": "greptimedb", "data_files": 9});
        assert_eq!(
            orphan_files(&json!({"orphan_files": 2, "sst_num": 3}), &st),
            Some(2)
        );
        assert_eq!(
            orphan_files(&json!({"orphan_files": 0, "sst_num": 3}), &st),
            None
        );
        assert_eq!(orphan_files(&json!({"sst_num": 3}), &st), Some(6));
        // After a flush the footprint is of another moment: nothing derived.
        let flushed = json!({"sst_num": 3, "flushed_before_queries": true});
        assert_eq!(orphan_files(&flushed, &st), None);
        assert_eq!(orphan_files(&json!({"sst_num": 9}), &st), None);
        assert_eq!(orphan_files(&Value::Null, &st), None);
        let other = json!({"layout": "other", "data_files": 9});
        assert_eq!(orphan_files(&json!({"sst_num": 3}), &other), None);
    }
}
