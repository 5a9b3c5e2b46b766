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
pub use crate::workspace_manifest::MaintenanceWords;

/// Resolved (or given) product flag values, by key (the flag's name in snake case).
pub type Values = Map<String, Value>;

/// The write settings every benchmark run's workload records in this place, after its query
/// counts: `null`, but for the product whose resolved values have them (InfluxDB 3's
/// durability, GreptimeDB's flush), as records had them before the products owned their flags.
pub const WORKLOAD_KEYS: [&str; 3] = ["no_sync", "accept_partial", "flush_before_queries"];

/// What a product flag takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// A whole number (given as text on the command line, a number in a record).
    Number,
    /// Free text.
    Text,
    /// Present or not.
    Switch,
    /// A decimal number (seconds; given as text, a number in a record).
    Seconds,
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
    /// The phases (and operations) that take it, by name (`compact`, `query` ...); empty:
    /// every one. Another phase given it is refused (exit 2) before the product resolves
    /// anything ([`check_phases`]).
    pub phases: &'static [&'static str],
    /// The `--<long>` of a flag it goes with (both or neither; clap refuses one alone).
    pub requires: Option<&'static str>,
    /// [`Record::Flat`]: recorded when absent too (`null`, a switch `false`), as records
    /// always had the key; `false`: only when given.
    pub always_recorded: bool,
}

/// A text flag every phase takes, always recorded: the base the products' flag declarations
/// change with struct update (`BenchFlag { kind: FlagKind::Number, ..flag(...) }`).
pub const fn flag(long: &'static str, help: &'static str, value_name: &'static str) -> BenchFlag {
    BenchFlag {
        long,
        help,
        value_name,
        kind: FlagKind::Text,
        default: None,
        phases: &[],
        requires: None,
        always_recorded: true,
    }
}

impl BenchFlag {
    /// The flag's key in the values and the records.
    pub fn key(&self) -> String {
        self.long.replace('-', "_")
    }
}

/// A product operation: `bench <product> <name>`.
#[derive(Debug)]
pub struct Operation {
    /// The subcommand (also the run's phase).
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// Runs it in a run of its own, on the managed workspace's stopped server, with the
    /// product's resolved flag values.
    pub run: fn(ctx: &mut dyn OpCtx, values: &Values) -> Result<()>,
    /// What its runs are: the word their records carry as their kind (`run_kind`) and
    /// messages call a run of it ("compaction run ... in ..."), as runs recorded before the
    /// product declared it; `None`: kind `operation`, called by its name.
    pub kind: Option<&'static str>,
    /// Refuses (exit 2, before the run exists) what the managed workspace's installed
    /// `version` cannot run, by the resolved values.
    pub check: fn(version: &str, values: &Values) -> Result<()>,
    /// The table it works on, checked against the workspace's loaded dataset before the run
    /// exists (`None`: none).
    pub table: Option<&'static OpTable>,
    /// The run's `workload` record from the resolved values (`None`: `operation`, its name,
    /// then the values).
    pub workload: Option<fn(values: &Values) -> Values>,
    /// The steps that change the data: a run that leaves one of them unfinished leaves the
    /// data state unknown (empty: any step but the server's).
    pub changes_data: &'static [&'static str],
    /// Its own section of the run's summary (`None`: the generic `operation`, its steps).
    pub summary: Option<&'static OpSummary>,
}

/// The table an operation works on.
#[derive(Debug)]
pub struct OpTable {
    /// The flag that names it (the refusal's hint).
    pub flag: &'static BenchFlag,
    /// The table the resolved values name (the flag's default applied).
    pub of: fn(values: &Values) -> String,
}

/// The step of a run named so, last attempt: `{"status", "reason", "data"}` (`None`: no
/// such step).
pub type StepRecord<'a> = dyn Fn(&str) -> Option<Value> + 'a;

/// An operation's own section of its runs' summaries, and what `runs report` shows of it.
#[derive(Debug)]
pub struct OpSummary {
    /// The summary's key (every summary has it: `null` but in a run of this operation), as
    /// runs recorded before the product declared it.
    pub key: &'static str,
    /// The section from the run's workload record and steps.
    pub build: fn(workload: &Values, step: &StepRecord) -> Value,
    /// The storage cells `runs report` shows for a run whose data the last completed run of
    /// this operation left (its maintenance record's `operation` is [`Operation::noun`]),
    /// from that run's section: (key, value), in order.
    pub report_storage: fn(section: &Value) -> Vec<(&'static str, Value)>,
}

/// The run kind of a product operation that declares none.
pub const OPERATION_KIND: &str = "operation";

impl Operation {
    /// An operation that declares nothing but what every one must (its name, about and run,
    /// which a declaration sets): the base the products' declarations change with struct
    /// update (`Operation { name, about, run, ..Operation::NONE }`).
    pub const NONE: Operation = Operation {
        name: "",
        about: "",
        run: |_, _| Ok(()),
        kind: None,
        check: |_, _| Ok(()),
        table: None,
        workload: None,
        changes_data: &[],
        summary: None,
    };

    /// The kind its runs' records carry.
    pub fn run_kind(&self) -> &'static str {
        self.kind.unwrap_or(OPERATION_KIND)
    }
    /// What messages call a run of it.
    pub fn noun(&self) -> &'static str {
        self.kind.unwrap_or(self.name)
    }
}

/// Every product's operations (each product's default variant), in registry order.
fn all_operations() -> impl Iterator<Item = &'static Operation> {
    super::all()
        .iter()
        .filter_map(|e| (e.make)(None).ok()?.bench_ext())
        .flat_map(|x| x.operations.iter())
}

/// The operation `phase` of product `product` (a run's phase is its operation's name).
pub fn operation_of(product: &str, phase: &str) -> Option<&'static Operation> {
    super::resolve(product, None)
        .ok()?
        .bench_ext()?
        .operation(phase)
}

/// The run kind an operation declares as `word` (`None`: no product's operation does).
pub fn declared_run_kind(word: &str) -> Option<&'static str> {
    all_operations().find_map(|o| o.kind.filter(|k| *k == word))
}

/// The maintenance words of the product named `product` ([`BenchExt::maintenance`]; none for
/// a product this tsbsctl does not know).
pub fn maintenance_words(product: &str) -> &'static [MaintenanceWords] {
    super::resolve(product, None)
        .ok()
        .and_then(|p| p.bench_ext())
        .map_or(&[], |x| x.maintenance)
}

/// The keys of the operations' own summary sections, each once: every run summary has them.
pub fn summary_keys() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for k in all_operations().filter_map(|o| o.summary.map(|s| s.key)) {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// How a run's `flags` record a product's own flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// One object under the product's name, after every other key: the resolved values.
    Nested,
    /// Each flag's key at the top level after the common keys, in the declared order, as
    /// given (typed): the keys records had before the product declared its flags, so old
    /// and new records read the same, byte for byte.
    Flat,
}

/// Everything a product adds to `bench <product>`.
pub struct BenchExt {
    pub flags: &'static [BenchFlag],
    /// How the run's `flags` record them.
    pub record: Record,
    /// Given values (only the flags given; text from a command line, typed from a record:
    /// [`typed`] reads both) to resolved ones, for `phase`: checks (exit 2 with the product's
    /// message) and defaults.
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
    /// What it does on the started server before its queries, through
    /// [`super::op::OpCtx`] (`None`: nothing).
    pub before_queries: Option<&'static super::op::BeforeQueries>,
    /// Its flags that run another installed version on a managed workspace's data (`None`:
    /// it has none).
    pub version_override: Option<&'static VersionOverride>,
    /// Its flags for HTTP basic auth against an external server (`None`: it has none).
    pub basic_auth: Option<&'static BasicAuth>,
    /// The table split into regions its resolved values ask the load to create (`None`:
    /// none; the product's [`super::Loading::create_partitioned`] makes it).
    pub partitioning: fn(values: &Values) -> Option<super::Partitioning>,
    /// What the core reads of its given flags (typed, checked by [`BenchExt::resolve`]):
    /// the variant, the token variables, the count timeout ([`CoreValues::none`]: nothing).
    pub core: fn(given: &Values) -> CoreValues,
    /// The maintenance records its operations and its work before the queries write, and
    /// what each makes of the data-state label (empty: none changes it).
    pub maintenance: &'static [MaintenanceWords],
    /// The settings of its loads besides workers and batch size that its runs' workloads
    /// record, and what summaries, reports and comparisons make of them (`None`: none).
    pub write_settings: Option<&'static WriteSettings>,
}

/// A product's write settings (InfluxDB 3's durability flags), as its runs' workloads record
/// them among [`WORKLOAD_KEYS`].
pub struct WriteSettings {
    /// The workload keys that hold them, in order: `runs compare` holds two loads to the same
    /// values and names the ones recorded by these keys.
    pub keys: &'static [&'static str],
    /// How the run's writes were acknowledged (the summary's `durability`), from its
    /// workload record.
    pub durability: fn(workload: &Values) -> Durability,
}

/// How a run's writes were acknowledged: the summary's `durability`, for a product whose
/// [`WriteSettings`] say it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Durability {
    pub no_sync: bool,
    pub accept_partial: bool,
    pub durable_write_acknowledgement: bool,
    pub whole_batch_rejection: bool,
}

/// The [`WriteSettings`] of the product named `product` (`None`: it declares none, or this
/// tsbsctl does not know it).
pub fn write_settings(product: &str) -> Option<&'static WriteSettings> {
    super::resolve(product, None)
        .ok()?
        .bench_ext()?
        .write_settings
}

/// The values of a run's write settings (the declared keys its `workload` records, `null`
/// ones left out), by the product named `product`: what `runs compare` holds two loads to.
pub fn recorded_write_settings(product: &str, workload: &Values) -> Values {
    write_settings(product)
        .map(|w| w.keys)
        .unwrap_or_default()
        .iter()
        .filter_map(|k| {
            workload
                .get(*k)
                .filter(|v| !v.is_null())
                .map(|v| (k.to_string(), v.clone()))
        })
        .collect()
}

/// The few of a product's flag values the core itself reads (the rest is the product's):
/// generic settings, whichever product flag gives them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CoreValues {
    /// The variant the target runs (the value of the entry's `variant_flag`).
    pub variant: Option<String>,
    /// The variable holding the token (or password) of an external server: the name only.
    pub auth_token_env: Option<String>,
    /// The variable holding the admin token, where the product reads one.
    pub admin_token_env: Option<String>,
    /// Seconds one row-count request may take.
    pub count_timeout: Option<f64>,
    /// Writes acknowledged before they are durable, as parsed (the request shows it; the
    /// loader and the row count read the product's resolved values).
    pub no_sync: bool,
}

impl CoreValues {
    /// A product whose flags the core does not read.
    pub fn none(_: &Values) -> CoreValues {
        CoreValues::default()
    }
}

/// The text given for the flag `f` (typed values).
pub fn given_text(given: &Values, f: &BenchFlag) -> Option<String> {
    text(given, f)
}

/// A product's pair of flags that runs another installed version of it on a managed
/// workspace's data, for some phases (the workspace stays bound to its own version): the
/// version, and its confirmation (the workspace id, exactly). The core checks and runs it.
pub struct VersionOverride {
    pub version: &'static BenchFlag,
    pub confirm: &'static BenchFlag,
    /// The phases that take them.
    pub phases: &'static [&'static str],
}

/// A product's pair of flags for HTTP basic auth against an external server: the user (its
/// name recorded) and the environment variable holding the password (the variable's name
/// recorded, never the password). The core checks them and hands them to the requests and
/// the tools (`ExternalServer::takes_basic_auth`).
pub struct BasicAuth {
    pub user: &'static BenchFlag,
    pub password_env: &'static BenchFlag,
}

impl BasicAuth {
    /// The user and the password's variable given among `given`.
    pub fn given(&self, given: &Values) -> (Option<String>, Option<String>) {
        (text(given, self.user), text(given, self.password_env))
    }
}

/// The text given for `f`.
fn text(given: &Values, f: &BenchFlag) -> Option<String> {
    given
        .get(&f.key())
        .and_then(Value::as_str)
        .map(str::to_string)
}

impl VersionOverride {
    /// The version and the confirmation given among `given`.
    pub fn given(&self, given: &Values) -> (Option<String>, Option<String>) {
        (text(given, self.version), text(given, self.confirm))
    }
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
    /// No flags, operations or phases: the base a product's extension changes with struct
    /// update (`BenchExt { flags, resolve, core, ..BenchExt::NONE }`).
    pub const NONE: BenchExt = BenchExt {
        flags: &[],
        record: Record::Nested,
        resolve: |_, _| Ok(Values::new()),
        load_args: |_| Vec::new(),
        summary_lines: |_| Vec::new(),
        operations: &[],
        data_location: None,
        analyze: None,
        before_queries: None,
        version_override: None,
        basic_auth: None,
        partitioning: |_| None,
        core: CoreValues::none,
        maintenance: &[],
        write_settings: None,
    };

    /// The operation named `name`, if the product has one.
    pub fn operation(&self, name: &str) -> Option<&'static Operation> {
        self.operations.iter().find(|o| o.name == name)
    }

    /// The flag whose key is `key`.
    pub fn flag(&self, key: &str) -> Option<&'static BenchFlag> {
        self.flags.iter().find(|f| f.key() == key)
    }

    /// The given values (text from a command line) as a record holds them ([`typed`]).
    pub fn typed(&self, given: &Values) -> Result<Values> {
        typed(self.flags, given)
    }

    /// The record of `given` (typed) in the [`Record::Flat`] shape: every declared flag in
    /// order, an absent one as `null` (a switch `false`) when [`BenchFlag::always_recorded`].
    pub fn flat_record(&self, given: &Values) -> Values {
        let mut out = Values::new();
        for f in self.flags {
            match given.get(&f.key()) {
                Some(v) => {
                    out.insert(f.key(), v.clone());
                }
                None if f.always_recorded => {
                    let absent = match f.kind {
                        FlagKind::Switch => Value::Bool(false),
                        _ => Value::Null,
                    };
                    out.insert(f.key(), absent);
                }
                None => {}
            }
        }
        out
    }

    /// The given values a [`Record::Flat`] record holds (its declared keys; `null` and a
    /// `false` switch are absent). `Err` names a value not of its flag's kind (the record was
    /// edited).
    pub fn from_flat_record(&self, record: &Values) -> std::result::Result<Values, String> {
        let mut out = Values::new();
        for f in self.flags {
            let v = match record.get(&f.key()) {
                None | Some(Value::Null) | Some(Value::Bool(false)) => continue,
                Some(v) => v,
            };
            let fits = match f.kind {
                FlagKind::Number => v.is_u64(),
                FlagKind::Seconds => v.is_number(),
                FlagKind::Text => v.is_string(),
                FlagKind::Switch => v.is_boolean(),
            };
            if !fits {
                return Err(format!("{}: {v} is not a value of --{}", f.key(), f.long));
            }
            out.insert(f.key(), v.clone());
        }
        Ok(out)
    }
}

/// The given values of `flags` (text from a command line, or typed from a record) as a record
/// holds them: a number as a number, a switch as `true`; a value that is not of its flag's
/// kind is exit 2.
pub fn typed(flags: &[BenchFlag], given: &Values) -> Result<Values> {
    let mut out = Values::new();
    for f in flags {
        let Some(v) = given.get(&f.key()) else {
            continue;
        };
        let typed = match (f.kind, v) {
            (FlagKind::Number, Value::String(s)) => s
                .trim()
                .parse::<u64>()
                .map(Value::from)
                .map_err(|_| not_a(f, s, "whole number"))?,
            (FlagKind::Seconds, Value::String(s)) => s
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| not_a(f, s, "number of seconds"))?,
            (FlagKind::Switch, Value::Bool(false)) => continue,
            (_, v) => v.clone(),
        };
        out.insert(f.key(), typed);
    }
    Ok(out)
}

/// The one step from given values to resolved ones, for a command line and a recorded run
/// alike: the phases checked ([`check_phases`]), then the product's [`BenchExt::resolve`].
pub fn resolve(product: &str, ext: &BenchExt, phase: &str, given: &Values) -> Result<Values> {
    check_phases(product, ext, phase, given)?;
    (ext.resolve)(phase, given)
}

fn not_a(f: &BenchFlag, given: &str, what: &str) -> Error {
    Error::invalid(format!("--{} {given:?} is not a {what}", f.long)).with_hint(match f.default {
        Some(d) => format!("e.g. --{} {d}", f.long),
        None => format!("pass --{} {}", f.long, f.value_name),
    })
}

/// Refuses (exit 2) a given flag the phase `phase` does not take. The message names every
/// flag taken by the same phases as the one given (they are one group to a user), and the
/// phases: "--hot-runs applies to the analyze phase only", "--table, --strategy and --window
/// apply to the compact phase only" (hint: drop them, or run `bench <product> compact`).
pub fn check_phases(product: &str, ext: &BenchExt, phase: &str, given: &Values) -> Result<()> {
    let Some(f) = ext.flags.iter().find(|f| {
        given.contains_key(&f.key()) && !f.phases.is_empty() && !f.phases.contains(&phase)
    }) else {
        return Ok(());
    };
    let group: Vec<String> = ext
        .flags
        .iter()
        .filter(|g| g.phases == f.phases)
        .map(|g| format!("--{}", g.long))
        .collect();
    let (flags, verb) = match group.as_slice() {
        [one] => (one.clone(), "applies"),
        [init @ .., last] => (format!("{} and {last}", init.join(", ")), "apply"),
        [] => unreachable!("the flag is in its own group"),
    };
    let phases = match f.phases {
        [one] => format!("the {one} phase"),
        [init @ .., last] => format!("the {} and {last} phases", init.join(", ")),
        [] => unreachable!("checked above"),
    };
    let hint = match (group.len(), f.phases) {
        (1, _) => format!("drop {flags}"),
        (_, [one]) => format!("drop them, or run `bench {product} {one}`"),
        _ => "drop them".to_string(),
    };
    Err(Error::invalid(format!("{flags} {verb} to {phases} only")).with_hint(hint))
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
        phases: &[],
        requires: None,
        always_recorded: false,
    };

    const A: BenchFlag = BenchFlag {
        long: "alpha",
        phases: &["compact"],
        always_recorded: true,
        ..F
    };
    const B: BenchFlag = BenchFlag {
        long: "beta",
        kind: FlagKind::Seconds,
        phases: &["compact"],
        always_recorded: true,
        ..F
    };
    const S: BenchFlag = BenchFlag {
        long: "gamma",
        kind: FlagKind::Switch,
        phases: &["query", "all"],
        always_recorded: true,
        ..F
    };
    static EXT: BenchExt = BenchExt {
        flags: &[A, B, S, F],
        record: Record::Flat,
        resolve: |_, g| Ok(g.clone()),
        ..BenchExt::NONE
    };

    fn given(pairs: &[(&str, Value)]) -> Values {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn a_flag_given_to_a_phase_that_does_not_take_it_is_refused_with_its_group() {
        let g = given(&[("beta", "5".into())]);
        check_phases("p", &EXT, "compact", &g).unwrap();
        let e = check_phases("p", &EXT, "query", &g).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "--alpha and --beta apply to the compact phase only"
        );
        assert_eq!(
            e.hint.as_deref(),
            Some("drop them, or run `bench p compact`")
        );
        let e = check_phases("p", &EXT, "load", &given(&[("gamma", true.into())])).unwrap_err();
        assert_eq!(
            e.message,
            "--gamma applies to the query and all phases only"
        );
        assert_eq!(e.hint.as_deref(), Some("drop --gamma"));
        // A flag every phase takes, and no flag at all.
        check_phases("p", &EXT, "load", &given(&[("some_bytes", 3.into())])).unwrap();
        check_phases("p", &EXT, "load", &Values::new()).unwrap();
    }

    #[test]
    fn a_flat_record_keeps_every_key_in_order_and_reads_back() {
        let g = EXT
            .typed(&given(&[("beta", "5".into()), ("alpha", "7".into())]))
            .unwrap();
        let rec = EXT.flat_record(&g);
        assert_eq!(
            serde_json::to_string(&rec).unwrap(),
            r#"{"alpha":7,"beta":5.0,"gamma":false}"#
        );
        assert_eq!(EXT.from_flat_record(&rec).unwrap(), g);
        let edited = given(&[("alpha", "seven".into())]);
        assert!(EXT.from_flat_record(&edited).is_err());
        let e = EXT.typed(&given(&[("beta", "soon".into())])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("--beta \"soon\""), "{}", e.message);
    }

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
