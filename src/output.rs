//! What a command hands back, and how it reaches the user.
//!
//! Commands return an [`Outcome`] (JSON data plus a human rendering) and never print; progress
//! and log lines go through a [`Reporter`], so the core stays testable and `--json` keeps stdout
//! to exactly one document. Status lines are typed [`Event`]s; their words live in the CLI
//! (`src/cli/reporters.rs`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use serde_json::{json, Value};

use crate::error::Error;

/// The result of a successful command.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The `data` object of the JSON envelope.
    pub data: Value,
    /// What a person sees on stdout without `--json`: typed where the core ends a command,
    /// worded by the CLI (`src/cli/reporters.rs`, `impl Display for Words`).
    pub human: Words,
}

impl Outcome {
    /// An outcome a CLI module words itself.
    pub fn new(data: Value, human: impl Into<String>) -> Self {
        Outcome {
            data,
            human: Words::Text(human.into()),
        }
    }
    /// An outcome the core ends with, in typed words.
    pub fn typed(data: Value, human: Words) -> Self {
        Outcome { data, human }
    }
    /// Adds a line a CLI module words itself after the outcome's words.
    pub fn push_line(&mut self, line: &str) {
        match &mut self.human {
            Words::Text(t) => t.push_str(line),
            other => {
                *other = Words::Text(format!("{other}{line}"));
            }
        }
    }
}

/// What a person sees when a command succeeds, as data.
#[derive(Debug, Clone, PartialEq)]
pub enum Words {
    /// Worded by the CLI module that made it.
    Text(String),
    /// A bench command (or operation) ended.
    Bench(BenchOutcome),
    /// `runs rerun`: the run reproduced, then how the bench command ended.
    Rerun { of: String, then: Box<Words> },
    /// `runs resume`: the run and the query types it ran, then how it ended.
    Resumed {
        run: String,
        query_types: Vec<String>,
        then: Box<Words>,
    },
    /// `quickstart`: how its benchmark ended, then where to read it.
    Quickstart { then: Box<Words> },
}

impl Words {
    pub fn is_empty(&self) -> bool {
        matches!(self, Words::Text(t) if t.is_empty())
    }
}

/// The `--json` envelope: `{"schema_version":1,"command":..,"ok":..,"data":..,"error":..}`.
pub fn envelope(command: &str, result: &Result<Outcome, Error>) -> Value {
    match result {
        Ok(outcome) => json!({
            "schema_version": 1,
            "command": command,
            "ok": true,
            "data": outcome.data,
            "error": null,
        }),
        Err(err) => json!({
            "schema_version": 1,
            "command": command,
            "ok": false,
            "data": null,
            "error": {
                "kind": err.kind.as_str(),
                "message": err.message,
                "hint": err.hint,
            },
        }),
    }
}

/// `1 worker`, `2 workers`: a count with its noun in the right number (trial-run #30).
pub fn count_of(n: impl std::fmt::Display, noun: &str) -> String {
    let text = n.to_string();
    if text == "1" {
        format!("1 {noun}")
    } else {
        format!("{text} {noun}s")
    }
}

/// How progress is shown for one long operation.
pub trait Progress: Send + Sync {
    /// Sets the total once it is known (bytes, rows, ...).
    fn set_total(&self, total: u64);
    /// Advances by `delta` units.
    fn inc(&self, delta: u64);
    /// Sets the absolute position (used when a download resumes).
    fn set_position(&self, pos: u64);
    /// Replaces the short message beside the bar.
    fn set_message(&self, msg: String);
    /// Ends the bar, leaving nothing behind.
    fn finish(&self);
}

/// The unit a progress bar counts in; decides how numbers are formatted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Items,
    /// A count whose rate and ETA come from the tool's own reports (in the message), not
    /// from how often the bar is advanced.
    Reported,
}

/// A rate with sensible digits: `767,140` (no decimals from 100 up), `42.5`, `0.73`.
pub fn fmt_rate(r: f64) -> String {
    if !r.is_finite() || r < 0.0 {
        return "unknown".into();
    }
    if r >= 100.0 {
        let n = r.round() as u64;
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.2}")
    }
}

/// A duration for a person: `45s`, `3m 20s`, `2h 05m`.
pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// What a leftover was left by, for [`Event::RemovedLeftover`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftBy {
    /// An earlier install of the product (`.old-*`, `.install-*`).
    EarlierRun,
    /// An interrupted workspace operation, named by its staging tag (`copy`, `removing`).
    Interrupted(String),
    /// An interrupted dataset generation or adoption.
    Generation,
    /// An interrupted query-set generation.
    QuerySetGeneration,
}

/// Why a TSBS tool is (re)built, for [`Event::Building`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildReason {
    /// `--rebuild` was given.
    Asked,
    /// The checkout has local changes.
    DirtyCheckout,
    /// No build is recorded.
    NotBuilt,
    /// The recorded binary is gone.
    Missing,
    /// The binary's checksum no longer matches the record.
    Drifted,
}

/// A port two workspaces share, for [`Event::PortShared`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedPort {
    pub port: u16,
    pub product: String,
    pub workspace: String,
}

/// A status line as data: the core emits these through [`Reporter::event`] and the CLI words
/// them (`src/cli/reporters.rs`, `impl Display for Event`), so no sentence is built in the
/// core. URLs are already redacted when they get here. In a run's `events.jsonl` an event is
/// a line `{"ts", "event": "<variant in snake_case>", <its fields>, "message"}` (durations
/// in seconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    // -- download and install
    /// An archive is being fetched into the download cache.
    Downloading { file: String, url: String },
    /// A cached archive that still hashes to its checksum is reused.
    UsingVerifiedDownload { path: PathBuf },
    /// A transient failure; the request is tried again after `delay` (from `from_byte` when
    /// a partial download resumes).
    Retrying {
        error: String,
        #[serde(serialize_with = "secs")]
        delay: Duration,
        from_byte: Option<u64>,
    },
    /// The server ignored the Range header of a resumed download.
    NoResume { url: String },
    /// A product release is being installed.
    Installing { product: String },
    /// A staging leftover of an interrupted operation was removed.
    RemovedLeftover { path: PathBuf, left_by: LeftBy },
    /// The Go archive's checksum is looked up in the download index.
    CheckingGo { archive: String, index_url: String },
    /// An archive is being unpacked.
    Extracting { archive: String },
    /// A managed Go was installed.
    GoInstalled { version: String, dir: PathBuf },
    /// A system Go was looked at and passed over.
    GoNotUsed { path: PathBuf, why: String },
    /// The TSBS source is fetched at a commit.
    FetchingTsbs { commit: String, repo: String },
    /// A TSBS tool is being built.
    Building {
        tool: String,
        reason: BuildReason,
        go_version: String,
    },

    // -- server
    /// A started server has not answered yet.
    WaitingForServer {
        label: String,
        /// What the server says it waits for, if anything (`startup_wait`).
        until: Option<String>,
        #[serde(serialize_with = "secs")]
        timeout: Duration,
    },
    /// A server is stopped without waiting for work whose result is discarded.
    StoppingDiscarded {
        label: String,
        why: String,
        #[serde(serialize_with = "secs")]
        kill_after: Duration,
    },
    /// A server drains its flush and compaction jobs before it exits.
    StoppingDraining {
        label: String,
        #[serde(serialize_with = "secs")]
        stall: Duration,
        #[serde(serialize_with = "secs")]
        limit: Duration,
    },

    // -- workspace
    /// No release of the product is installed; the latest one will be.
    NoneInstalled { product: String, latest: String },
    /// A workspace listens on a port other workspaces use too.
    PortShared { id: String, shared: Vec<SharedPort> },
    /// A workspace's data is copied into a new one.
    CopyingWorkspace { from: PathBuf, id: String },
    /// `remove` deletes a workspace's objects (`location`: [`crate::s3::Location::describe`]).
    DeletingObjects { location: String },

    // -- datasets and query sets
    /// A stored dataset was written by another build of the same TSBS commit; it is reused.
    OtherBuildSameCommit {
        what: String,
        commit: String,
        recorded_sha256: String,
        recorded_go: String,
        prepared_sha256: String,
        prepared_go: String,
    },
    /// A stored data file's size, mtime or inode changed; it is hashed again.
    VerifyingChanged { path: PathBuf },
    /// A dataset format was adopted from the reference tool's directory.
    Adopted {
        dataset: String,
        format: String,
        rows: u64,
        bytes: u64,
        hard_link: bool,
    },
    /// A dataset format is being generated.
    Generating {
        dataset: String,
        format: String,
        compression: String,
        rows: u64,
        /// Whether `rows` is exact (`false`: at most).
        exact: bool,
    },
    /// A dataset format was generated.
    Generated { rows: u64, bytes: u64, seconds: f64 },
    /// A query set was published.
    QuerySetPublished { id: String, dir: PathBuf },
    /// A query set is generated from scratch.
    GeneratingQuerySet {
        id: String,
        types: usize,
        parallel: usize,
    },
    /// A query set is generated by extending another one.
    ExtendingQuerySet {
        from: String,
        id: String,
        copied: usize,
        generated: usize,
        parallel: usize,
    },

    // -- benchmark runs
    /// A managed workspace already holds the dataset: the load is skipped.
    LoadSkipped { workspace: String, dataset: String },
    /// The loader starts.
    Loading {
        rows: u64,
        dataset: String,
        tool: String,
        workers: u32,
        batch: u32,
        log: PathBuf,
    },
    /// A partitioned table was created with the schema the server gives the dataset.
    TableCreated {
        table: String,
        regions: u32,
        column: String,
    },
    /// A run starts in its directory; `operation` names a maintenance run (`compaction`).
    RunIn {
        operation: Option<String>,
        run: String,
        dir: PathBuf,
    },
    /// The managed server answers.
    ServerReady { label: String, endpoint: String },
    /// The tables' rows are counted before the queries.
    CountingRows { tables: Vec<String>, expected: u64 },
    /// A maintenance statement was sent; the server answers when its work is done.
    WaitingForAnswer { sql: String, server: String },
    /// A maintenance statement was answered. (`statement_step` in `events.jsonl`: a line with
    /// a `step` key is a step line.)
    Answered {
        #[serde(rename = "statement_step")]
        step: String,
        seconds: f64,
    },
    /// An external server was probed.
    ExternalVersion {
        product: String,
        urls: Vec<String>,
        version: Option<String>,
    },
    /// What the external server's cluster information lists.
    ClusterInfo {
        summary: Option<String>,
        frontends_unused: u64,
    },
    /// A rerun builds the TSBS commit its run recorded.
    BuildingRecordedTsbs { commit: String, go: String },
    /// A rerun prepares the workspace it runs in.
    PreparingWorkspace {
        id: String,
        product: String,
        version: String,
        http_port: u16,
    },
    /// A run is run again with its recorded pins.
    Rerunning {
        run: String,
        product: String,
        version: Option<String>,
    },
    /// A stopped run is resumed.
    Resuming {
        run: String,
        status: String,
        /// The database mode of a load run again, if it is.
        load_again: Option<String>,
        types: usize,
        /// Query types added by this resume.
        added: Vec<String>,
    },
    /// `quickstart` prepares the TSBS environment.
    QuickstartEnvironment,
    /// `quickstart` prepares its workspace.
    QuickstartWorkspace { product: String, id: String },
    /// A query type's precision target was reached or not (`stop`: why the batches stopped).
    Precision {
        query_type: String,
        /// The target half-width, in percent.
        target_pct: f64,
        reached: bool,
        stop: String,
        /// The half-width reached, as a fraction (none: too few queries to tell).
        half_width: Option<f64>,
        queries: u64,
        batches: u32,
    },
    /// A TSBS tool that had stalled makes progress again.
    ProgressResumed {
        tool: String,
        count: u64,
        unit: String,
    },
    /// A lock is held by another process; this one waits.
    WaitingForLock {
        label: String,
        holder: String,
        #[serde(serialize_with = "secs")]
        wait: Duration,
    },
}

/// Which TSBS tool leaves `--url` endpoints unused, for [`Warning::UrlsUnused`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UrlUser {
    /// The loader (`--workers`).
    Loader,
    /// The query runner (`--query-workers`).
    QueryRunner,
}

/// Failures of one cause, with the steps it hit (#22), for [`Warning::DiedUnderQueries`] and
/// the error of a failed run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailureGroup {
    /// The first failure's reason.
    pub reason: String,
    pub steps: Vec<String>,
}

/// The failure groups of a run, said in one line (`cause (steps: a, b); ...`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct FailureGroups(pub Vec<FailureGroup>);

/// A warning as data: the core emits these through [`Reporter::warning`] and the CLI words
/// them (`src/cli/reporters.rs`, `impl Display for Warning`). In a run's `events.jsonl` a
/// warning is a line `{"ts", "event": "warning", "kind": "<variant in snake_case>", <its
/// fields>, "message"}` (durations in seconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    // -- download and install
    /// A cached download no longer hashes to its checksum; it is fetched again.
    DamagedDownload { path: PathBuf, sha256: String },
    /// A resumed download does not verify; it starts over once.
    ResumedDownloadBad { url: String },
    /// `GITHUB_TOKEN` cannot be sent in a header.
    GithubTokenUnusable,
    /// The installation a reinstall replaced could not be removed.
    ReplacedNotRemoved { path: PathBuf, error: String },
    /// An installation moved aside by an interrupted reinstall is put back.
    RestoringInstall { path: PathBuf },
    /// The Go download index does not list the archive; the compiled checksum is used.
    GoNotInIndex { index_url: String, archive: String },
    /// The Go download index could not be read; the compiled checksum is used.
    GoIndexUnreadable { archive: String, why: String },
    /// The TSBS checkout holds another commit or local changes; it is fetched again.
    TsbsCheckoutStale {
        path: PathBuf,
        head: String,
        commit: String,
    },
    /// The TSBS checkout is not a git checkout tsbsctl can read; it is fetched again.
    TsbsCheckoutUnusable { path: PathBuf, commit: String },
    /// The TSBS `go.mod` asks for a Go that ignores `math/rand.Seed`.
    SeedIgnored { major: u32, minor: u32 },
    /// The TSBS build record does not read; everything is built again.
    BuildRecordUnreadable { error: String },
    /// A built TSBS tool's checksum drifted; it is built again.
    BinaryDrifted {
        path: PathBuf,
        recorded: String,
        found: String,
    },

    // -- workspaces, locks and servers
    /// `--hold-token` was given for a lock without a manual hold.
    HoldTokenIgnored { label: String },
    /// A workspace's config file differs from what this tsbsctl would write.
    ConfigDiffers { path: PathBuf, written_by: String },
    /// A setting in a file tsbsctl does not write; `overridden`: tsbsctl's value replaces it.
    OutsideSetting {
        file: String,
        name: String,
        value: String,
        overridden: bool,
    },
    /// A server tsbsctl did not stop is no longer running.
    OrphanGone {
        pid: u32,
        started_at: String,
        tsbsctl_pid: u32,
        log: PathBuf,
    },
    /// A server tsbsctl did not stop is stopped now.
    StoppingOrphan {
        pid: u32,
        #[serde(serialize_with = "secs")]
        grace: Duration,
    },
    /// A server did not stop within its grace period.
    KilledAfterGrace { label: String },
    /// The managed server of a run needed SIGKILL to stop; queued work was lost.
    ServerStopForced { seconds: f64 },
    /// The managed server was killed during its shutdown by something else.
    ServerKilledInShutdown { how: String, seconds: f64 },

    // -- runs and comparisons
    /// A rerun measures another data state, accepted with `--accept-data-state`.
    DataStateAccepted {
        run: String,
        original: String,
        now: String,
    },
    /// A run whose owner died is on read-only media: its end cannot be recorded.
    ReadOnlyRun { run: String },
    /// A comparison could not be saved on read-only media.
    ComparisonNotSaved { dir: PathBuf, error: String },

    // -- benchmark runs
    /// The host was busy before a phase.
    NotQuiet { before: String, reading: String },
    /// Fewer tool workers than `--url` endpoints.
    UrlsUnused {
        tool: UrlUser,
        workers: u32,
        used: usize,
        urls: usize,
    },
    /// `--check-answers` with a runner whose responses tsbsctl cannot read.
    AnswersNotChecked { runner: String },
    /// A query type failed.
    QueryTypeFailed { query_type: String, reason: String },
    /// A query type failed with the cause an earlier one (`first`) failed with.
    QueryTypeFailedAsBefore { query_type: String, first: String },
    /// A batch of an analyze phase failed.
    QueryBatchFailed {
        query_type: String,
        batch: u32,
        reason: String,
    },
    /// The managed server died under a query type; it is started again.
    ServerDiedUnder { query_type: String, what: String },
    /// The regions' row total differs from what the load wrote.
    RegionRowsDiffer {
        table: String,
        regions: Option<u64>,
        loaded: u64,
    },
    /// Regions of the table hold no rows.
    EmptyRegions { table: String, regions: Vec<String> },
    /// The resource timeline could not start.
    NoTimeline { error: String },
    /// A TSBS tool made no progress for a while; `stopped`: `--on-stall stop` stopped it.
    Stalled {
        tool: String,
        seconds: u64,
        count: u64,
        unit: String,
        stopped: bool,
    },
    /// Every failure of a run is a result of the server dying under query types.
    DiedUnderQueries {
        failures: usize,
        groups: FailureGroups,
    },

    /// A warning a product's own module words (`src/product/<name>`) about its server's
    /// state (the core knows no product's concepts).
    Product { text: String },
}

/// How a bench command ended, for its human output (worded by the CLI,
/// `src/cli/reporters.rs`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchOutcome {
    pub run_id: String,
    /// The run's status in words (`completed with failures`).
    pub status: String,
    pub run_dir: PathBuf,
    pub summary_md: PathBuf,
    /// Each query type that did not complete, with its failure kind (as the report names it).
    pub failed_types: Vec<(String, String)>,
}

/// A duration as seconds (in `events.jsonl`).
fn secs<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Where logs and progress go. The core calls this; it never prints by itself.
pub trait Reporter: Send + Sync {
    /// A status line for a person ("downloading X", "server ready on ..."). Goes to stderr.
    fn info(&self, msg: &str);
    /// A typed status line; the CLI words it (`src/cli/reporters.rs`). By default it goes to
    /// [`Reporter::info`] in those words.
    fn event(&self, e: &Event) {
        self.info(&e.to_string());
    }
    /// A warning line. Goes to stderr, even with `--quiet`.
    fn warn(&self, msg: &str);
    /// A typed warning; the CLI words it (`src/cli/reporters.rs`). By default it goes to
    /// [`Reporter::warn`] in those words.
    fn warning(&self, w: &Warning) {
        self.warn(&w.to_string());
    }
    /// A progress bar for a long operation; a no-op when not on a terminal or with `--json`.
    fn progress(&self, label: &str, total: Option<u64>, unit: Unit) -> Box<dyn Progress>;
}

/// Shared handle to the reporter.
pub type SharedReporter = Arc<dyn Reporter>;

/// The reporter used by the binary: status lines on stderr, indicatif bars on a terminal only.
pub struct StderrReporter {
    quiet: bool,
    bars: bool,
}

impl StderrReporter {
    /// Bars only when stderr is a terminal, stdout is a terminal (so a pipe means "a machine
    /// reads this"), and neither `--json` nor `--quiet` was given.
    pub fn new(json: bool, quiet: bool) -> Self {
        let tty = std::io::stderr().is_terminal() && std::io::stdout().is_terminal();
        StderrReporter {
            quiet,
            bars: tty && !json && !quiet,
        }
    }
}

impl Reporter for StderrReporter {
    fn info(&self, msg: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "{msg}");
        }
    }

    fn warn(&self, msg: &str) {
        let _ = writeln!(std::io::stderr(), "warning: {msg}");
    }

    fn progress(&self, label: &str, total: Option<u64>, unit: Unit) -> Box<dyn Progress> {
        if !self.bars {
            return Box::new(NoProgress);
        }
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
        bar.set_style(style(unit, total.is_some()));
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Box::new(BarProgress { bar, unit })
    }
}

/// The look of a bar: with a known total, a bar with the size, percent and ETA (#24);
/// without, a spinner with the count and the rate.
fn style(unit: Unit, known_total: bool) -> ProgressStyle {
    let template = match (unit, known_total) {
        (Unit::Bytes, true) => {
            "{prefix} {wide_bar} {bytes}/{total_bytes} {percent}% {bytes_per_sec} eta {eta} {msg}"
        }
        (Unit::Bytes, false) => "{prefix} {spinner} {bytes} {bytes_per_sec} {msg}",
        (Unit::Items, true) => {
            "{prefix} {wide_bar} {human_pos}/{human_len} {rate}/s eta {eta} {msg}"
        }
        (Unit::Items, false) => "{prefix} {spinner} {human_pos} {rate}/s {msg}",
        (Unit::Reported, true) => "{prefix} {wide_bar} {human_pos}/{human_len} {msg}",
        (Unit::Reported, false) => "{prefix} {spinner} {human_pos} {msg}",
    };
    ProgressStyle::with_template(template)
        .map(|s| {
            // indicatif's own {per_sec} prints four decimals ("767,139.5061/s").
            s.with_key(
                "rate",
                |st: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&fmt_rate(st.per_sec()));
                },
            )
        })
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

struct BarProgress {
    bar: ProgressBar,
    unit: Unit,
}

impl Progress for BarProgress {
    fn set_total(&self, total: u64) {
        // A total learnt later (a download's Content-Length) turns the spinner into a bar.
        if self.bar.length().is_none() {
            self.bar.set_style(style(self.unit, true));
        }
        self.bar.set_length(total);
    }
    fn inc(&self, delta: u64) {
        self.bar.inc(delta);
    }
    fn set_position(&self, pos: u64) {
        self.bar.set_position(pos);
    }
    fn set_message(&self, msg: String) {
        self.bar.set_message(msg);
    }
    fn finish(&self) {
        if self.unit == Unit::Bytes {
            // A download leaves its final frame (size, 100%): a small one finished before any
            // tick and was last drawn as "0 B/290 B 0%" (#24).
            self.bar.finish();
        } else {
            self.bar.finish_and_clear();
        }
    }
}

/// A progress sink that shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn set_total(&self, _: u64) {}
    fn inc(&self, _: u64) {}
    fn set_position(&self, _: u64) {}
    fn set_message(&self, _: String) {}
    fn finish(&self) {}
}

/// A reporter that drops everything; for library callers and unit tests.
pub struct SilentReporter;

impl Reporter for SilentReporter {
    fn info(&self, _: &str) {}
    fn warn(&self, _: &str) {}
    fn progress(&self, _: &str, _: Option<u64>, _: Unit) -> Box<dyn Progress> {
        Box::new(NoProgress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// A terminal that keeps every line written to it.
    #[derive(Debug, Default, Clone)]
    struct Screen(Arc<std::sync::Mutex<Vec<String>>>);

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push(s.to_string());
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push(s.to_string());
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.0.lock().unwrap().push("<clear>".into());
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// #24 (trial 2): a 290-byte download was last drawn as `0 B/290 B 0%`.
    #[test]
    fn a_finished_download_draws_its_final_size() {
        let screen = Screen::default();
        // A terminal's refresh limit drops frames that come fast: here every one after the
        // first, as a small download's bytes come right after its size.
        let bar = ProgressBar::with_draw_target(
            None,
            ProgressDrawTarget::term_like_with_hz(Box::new(screen.clone()), 1),
        );
        bar.set_style(style(Unit::Bytes, false));
        bar.set_prefix("go.tar.gz");
        let p = BarProgress {
            bar,
            unit: Unit::Bytes,
        };
        p.set_total(290);
        p.inc(290);
        p.finish();
        let lines = screen.0.lock().unwrap().clone();
        // The last thing written is the final frame, not a clear (which left the last frame
        // the refresh limit let through on the terminal: 0%).
        let last = lines
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .cloned()
            .unwrap_or_default();
        assert!(last.contains("290 B/290 B 100%"), "{lines:?}");
    }

    #[test]
    fn rates_have_sensible_digits_defect_25() {
        assert_eq!(fmt_rate(767139.5061), "767,140");
        assert_eq!(fmt_rate(1051388.7233), "1,051,389");
        assert_eq!(fmt_rate(100.4), "100");
        assert_eq!(fmt_rate(42.46), "42.5");
        assert_eq!(fmt_rate(0.731), "0.73");
        assert_eq!(fmt_rate(f64::NAN), "unknown");
        assert_eq!(fmt_duration(Duration::from_secs(45)), "45s");
        assert_eq!(fmt_duration(Duration::from_secs(200)), "3m 20s");
        assert_eq!(fmt_duration(Duration::from_secs(7500)), "2h 05m");
    }

    #[test]
    fn envelope_has_the_documented_shape() {
        let ok = envelope("env show", &Ok(Outcome::new(json!({"a": 1}), "a")));
        assert_eq!(ok["schema_version"], 1);
        assert_eq!(ok["ok"], true);
        assert_eq!(ok["data"]["a"], 1);
        assert!(ok["error"].is_null());

        assert_eq!(count_of(1, "worker"), "1 worker");
        assert_eq!(count_of(6, "worker"), "6 workers");

        let err = envelope("env show", &Err(Error::busy("held").with_hint("wait")));
        assert_eq!(err["ok"], false);
        assert_eq!(err["error"]["kind"], "busy");
        assert_eq!(err["error"]["hint"], "wait");
        assert!(err["data"].is_null());
    }
}
