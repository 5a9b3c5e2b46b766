//! A product's own bench flags and operations (issue 23 §1, design-2 §5): what `bench
//! <product>` offers beyond the flags every product shares, declared by the product and
//! served by the generic CLI and bench code, so a product flag or operation needs no core
//! edit.
//!
//! * Flags: each [`BenchFlag`] is added to `bench <product>` (name, help, value type,
//!   default). [`BenchExt::resolve`] turns what was given into the resolved values (checks and
//!   defaults applied; a bad value is exit 2 with the product's message), the one step both a
//!   command line and a recorded run (`runs rerun`) go through. The resolved values are
//!   recorded under the product's key of the run's `flags` and in its workload, become tool
//!   arguments ([`BenchExt::load_args`]) and the lines a summary shows
//!   ([`BenchExt::summary_lines`]).
//! * Operations: each [`Operation`] is a `bench <product> <name>` subcommand that runs in a
//!   run of its own through [`super::op::OpCtx`] (steps, server start and stop, SQL, the
//!   maintenance record).

use serde_json::{Map, Value};

use super::op::OpCtx;
use crate::error::{Error, Result};
use crate::tsbs::ToolArg;

/// Resolved (or given) product flag values, by key (the flag's name in snake case).
pub type Values = Map<String, Value>;

/// What a product flag takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// A whole number (given as text on the command line, a number in a record).
    Number,
    /// Free text.
    Text,
    /// Present or not.
    Switch,
}

/// One product bench flag.
#[derive(Debug, Clone, Copy)]
pub struct BenchFlag {
    /// `--<long>` (e.g. `example-batch-bytes`); its key is the same in snake case.
    pub long: &'static str,
    pub help: &'static str,
    pub value_name: &'static str,
    pub kind: FlagKind,
    /// Shown in `--help` (the value [`BenchExt::resolve`] applies when the flag is absent).
    pub default: Option<&'static str>,
}

impl BenchFlag {
    /// The flag's key in the values and the records.
    pub fn key(&self) -> String {
        self.long.replace('-', "_")
    }
}

/// A product operation: `bench <product> <name>`.
pub struct Operation {
    /// The subcommand (also the run's phase).
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// Runs it in a run of its own, on the managed workspace's stopped server, with the
    /// product's resolved flag values.
    pub run: fn(ctx: &mut dyn OpCtx, values: &Values) -> Result<()>,
}

/// Everything a product adds to `bench <product>`.
pub struct BenchExt {
    pub flags: &'static [BenchFlag],
    /// Given values (only the flags given; text from a command line, typed from a record)
    /// to resolved ones, for `phase`: checks (exit 2 with the product's message) and defaults.
    pub resolve: fn(phase: &str, given: &Values) -> Result<Values>,
    /// The loader's arguments from the resolved values (after the product's own).
    pub load_args: fn(values: &Values) -> Vec<ToolArg>,
    /// The lines `summary.md` shows of the resolved values (empty: none).
    pub summary_lines: fn(values: &Values) -> Vec<String>,
    pub operations: &'static [Operation],
    /// How `runs report` and `runs compare` read the `data_location` its query runs record
    /// (`None`: it records none).
    pub data_location: Option<&'static DataLocation>,
    /// Its `analyze` phase (`None`: it has none).
    pub analyze: Option<&'static super::phase::QueryPhase>,
}

/// The data of a run's last step named so (`None`: no such step).
pub type StepData<'a> = dyn Fn(&str) -> Option<Value> + 'a;

/// Where a product's query run found its data when the queries started (a run summary's
/// `data_location`, recorded by the product's before-queries step), as `runs report` and
/// `runs compare` tell runs apart by it.
pub struct DataLocation {
    /// The summary's `data_location` from the run's steps (`step(name)`: the data of the last
    /// step of that name); `None`: the run has none.
    pub record: fn(step: &StepData) -> Option<Value>,
    /// The place a `data_location` record names: its rank (places differ when ranks do; the
    /// order in which they are listed) and its name. `None`: the record cannot tell (never
    /// guessed).
    pub place: fn(loc: &Value) -> Option<(u8, &'static str)>,
    /// The record in words (files, bytes, rows).
    pub describe: fn(loc: &Value) -> String,
    /// Why runs whose places differ are not like for like: `runs report`'s caveat, after the
    /// runs and their places.
    pub report_why: &'static str,
    /// The same for `runs compare`, after the two places.
    pub compare_why: &'static str,
    /// Data files on disk the product's own bookkeeping does not hold (files left behind), by
    /// the `data_location` record and the run's footprint (`storage` of its summary); `None`:
    /// none, or it cannot tell.
    pub orphan_files: fn(loc: &Value, storage: &Value) -> Option<u64>,
}

/// The [`DataLocation`] of the product named `product`, if it has one.
pub fn data_location(product: &str) -> Option<&'static DataLocation> {
    (super::entry(product).ok()?.make)(None)
        .ok()?
        .bench_ext()?
        .data_location
}

impl BenchExt {
    /// The operation named `name`, if the product has one.
    pub fn operation(&self, name: &str) -> Option<&'static Operation> {
        self.operations.iter().find(|o| o.name == name)
    }
}

/// A whole number given for `--<long>` (text or a number), checked to lie in `range`.
pub fn number(
    given: &Values,
    flag: &BenchFlag,
    range: std::ops::RangeInclusive<u64>,
) -> Result<Option<u64>> {
    let Some(v) = given.get(&flag.key()) else {
        return Ok(None);
    };
    let n = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if range.contains(&n) => Ok(Some(n)),
        _ => Err(Error::invalid(format!(
            "--{} {} must be a whole number from {} to {}",
            flag.long,
            match v {
                Value::String(s) => format!("{s:?}"),
                other => other.to_string(),
            },
            range.start(),
            range.end()
        ))
        .with_hint(format!(
            "e.g. --{} {}",
            flag.long,
            flag.default.unwrap_or("1")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: BenchFlag = BenchFlag {
        long: "some-bytes",
        help: "",
        value_name: "N",
        kind: FlagKind::Number,
        default: Some("10"),
    };

    #[test]
    fn a_number_reads_from_text_or_a_record_and_is_checked() {
        let mut v = Values::new();
        assert_eq!(number(&v, &F, 1..=100).unwrap(), None);
        v.insert(F.key(), "42".into());
        assert_eq!(number(&v, &F, 1..=100).unwrap(), Some(42));
        v.insert(F.key(), 42.into());
        assert_eq!(number(&v, &F, 1..=100).unwrap(), Some(42));
        for bad in [Value::from("0"), "x".into(), (-1).into(), 101.into()] {
            v.insert(F.key(), bad.clone());
            let e = number(&v, &F, 1..=100).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.message.contains("--some-bytes"), "{}", e.message);
        }
    }
}
