//! Run directories: `<root>/<product>/runs/<run-id>/{manifest.json, events.jsonl, summary.json,
//! summary.md, logs/, results/}`.
//!
//! * The id is the UTC start time `YYYYMMDDTHHMMSSZ` (plus `-01`, `-02`, ... when taken) or
//!   `--run-id`; the directory is reserved with one `mkdir`, so two processes never share one.
//! * `manifest.json` pins what is needed to rerun (tool version and git revision, host facts,
//!   every flag, environment, server, dataset, query set, data state); it is rewritten
//!   atomically whenever a pin is added.
//! * `events.jsonl` gets one line per step start and end (status, attempt, log, results),
//!   appended and fsynced, so a crash loses at most the step that was running. Beside them, a
//!   bench command records every typed [`Event`] and [`Warning`] it emits while the run is
//!   open ([`RunEvents`]): lines `{"ts", "event": <kind>, ...}` (a warning: `"event":
//!   "warning", "kind": <kind>`), redacted; step readers skip them.
//! * While a command works in a run it holds the run's lock (`.lock`). A run found `running`
//!   whose lock is free belongs to a dead process: [`RunDir::open`] marks its unfinished steps
//!   and the run `interrupted`, never leaving them `running` forever.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::lock::{self, LockGuard, LockOptions};
use crate::manifest::{self, Manifest};
use crate::output::{Event, Progress, Reporter, SharedReporter, Unit, Warning};
use crate::paths::Root;
use crate::redact::Redactor;
use crate::workspace::manifest::DataState;

pub mod data;

/// The git revision tsbsctl was built from (`unknown` outside a checkout).
pub const GIT_REVISION: &str = env!("TSBSCTL_GIT_REVISION");

/// The events file of a run.
pub const EVENTS_FILE: &str = "events.jsonl";

/// What a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Load and/or query (and analyze) phases.
    Benchmark,
    /// A product's own operation (`bench <product> <operation>`) on a managed workspace: the
    /// word its records carry, `operation` or the one the operation declares
    /// ([`crate::product::ext::Operation::kind`]).
    Operation(&'static str),
}

impl Serialize for RunKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RunKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<RunKind, D::Error> {
        use crate::product::ext::{declared_run_kind, OPERATION_KIND};
        let word = String::deserialize(d)?;
        match word.as_str() {
            "benchmark" => Ok(RunKind::Benchmark),
            OPERATION_KIND => Ok(RunKind::Operation(OPERATION_KIND)),
            w => declared_run_kind(w).map(RunKind::Operation).ok_or_else(|| {
                serde::de::Error::unknown_variant(w, &["benchmark", OPERATION_KIND])
            }),
        }
    }
}

/// The state of a run or a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Running,
    Completed,
    /// A run (never a step) that ran every step it meant to, but the managed server died
    /// under one query type or more (OOM or a crash): those cells are its results, as in
    /// the published tables (issue 24 §2), the other types' numbers stand.
    CompletedWithFailures,
    /// The step was not needed: loaded data reused.
    Reused,
    Failed,
    Interrupted,
    /// Not attempted because an earlier step failed.
    Skipped,
}

impl RunKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Benchmark => "benchmark",
            RunKind::Operation(word) => word,
        }
    }
}

/// How a product's step ended, as the run records it.
impl From<crate::product::op::StepEnd> for Status {
    fn from(how: crate::product::op::StepEnd) -> Status {
        use crate::product::op::StepEnd;
        match how {
            StepEnd::Completed => Status::Completed,
            StepEnd::Failed => Status::Failed,
            StepEnd::Interrupted => Status::Interrupted,
        }
    }
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed => "completed",
            Status::CompletedWithFailures => "completed_with_failures",
            Status::Reused => "reused",
            Status::Failed => "failed",
            Status::Interrupted => "interrupted",
            Status::Skipped => "skipped",
        }
    }
    pub fn finished(self) -> bool {
        self != Status::Running
    }
    /// The status in words, for people (`completed with failures`).
    pub fn words(self) -> &'static str {
        match self {
            Status::CompletedWithFailures => "completed with failures",
            s => s.as_str(),
        }
    }
}

/// tsbsctl itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub version: String,
    pub git_revision: String,
}

impl ToolInfo {
    pub fn current() -> ToolInfo {
        ToolInfo {
            version: crate::VERSION.to_string(),
            git_revision: GIT_REVISION.to_string(),
        }
    }
}

/// The machine a run ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cpu_model: Option<String>,
    /// Logical CPUs online.
    pub cpus: u64,
    pub memory_bytes: Option<u64>,
    pub os: String,
    pub os_release: Option<String>,
    pub kernel: Option<String>,
    pub arch: String,
    /// Filesystem type of the directory holding the server's data (or the state root).
    pub data_dir: Option<PathBuf>,
    pub data_filesystem: Option<String>,
    /// The mount holding the data directory (`/proc/self/mountinfo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_mount: Option<PathBuf>,
    /// What is mounted there (`/dev/vda1`, `tmpfs`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_device: Option<String>,
    /// The block device's name under `/sys/block` (a partition's disk), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_block_device: Option<String>,
    /// `/sys/block/<dev>/queue/rotational`: a spinning disk (`true`) or not; `None` where no
    /// block device is behind the mount (tmpfs, overlay, network) or it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_rotational: Option<bool>,
}

impl Host {
    /// Facts about this machine; `data_dir` is the directory whose filesystem is recorded.
    pub fn current(data_dir: Option<&Path>) -> Host {
        let uname = nix::sys::utsname::uname().ok();
        let mount = data_dir.and_then(mount_of);
        let block = mount
            .as_ref()
            .and_then(|m| block_device(Path::new("/sys"), &m.dev));
        Host {
            hostname: lock::hostname(),
            cpu_model: cpu_model(),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get() as u64)
                .unwrap_or(1),
            memory_bytes: memory_bytes(),
            os: std::env::consts::OS.to_string(),
            os_release: os_release(),
            kernel: uname
                .as_ref()
                .map(|u| u.release().to_string_lossy().into_owned()),
            arch: std::env::consts::ARCH.to_string(),
            data_dir: data_dir.map(Path::to_path_buf),
            data_filesystem: mount.as_ref().map(|m| m.fstype.clone()),
            data_mount: mount.as_ref().map(|m| m.mount_point.clone()),
            data_device: mount.as_ref().map(|m| m.source.clone()),
            data_block_device: block.as_ref().map(|(name, _)| name.clone()),
            data_rotational: block.and_then(|(_, r)| r),
        }
    }
}

fn cpu_model() -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    for key in ["model name", "Hardware", "Processor", "cpu model"] {
        for line in text.lines() {
            if let Some((k, v)) = line.split_once(':') {
                if k.trim() == key && !v.trim().is_empty() {
                    return Some(v.trim().to_string());
                }
            }
        }
    }
    None
}

fn memory_bytes() -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn os_release() -> Option<String> {
    let text = fs::read_to_string("/etc/os-release").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
}

/// A line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    pub mount_point: PathBuf,
    /// `major:minor` of the filesystem's device.
    pub dev: String,
    pub fstype: String,
    pub source: String,
}

/// The filesystem type of the mount holding `path`.
pub fn filesystem_type(path: &Path) -> Option<String> {
    mount_of(path).map(|m| m.fstype)
}

/// The mount holding `path` (Linux: the longest mount point of `/proc/self/mountinfo` that
/// is a prefix of the canonical path of `path` or its nearest existing parent).
pub fn mount_of(path: &Path) -> Option<Mount> {
    let mut p = path.to_path_buf();
    while !p.exists() {
        p = p.parent()?.to_path_buf();
    }
    let canon = p.canonicalize().ok()?;
    let text = fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_in(&text, &canon)
}

/// [`mount_of`] on a mountinfo text; the last of equal mount points wins (it is mounted over
/// the others).
pub fn mount_in(mountinfo: &str, canon: &Path) -> Option<Mount> {
    let unescape = |s: &str| {
        s.replace("\\040", " ")
            .replace("\\011", "\t")
            .replace("\\012", "\n")
            .replace("\\134", "\\")
    };
    let mut best: Option<Mount> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(dev), Some(mount), Some(fstype), Some(source)) = (
            fields.get(2),
            fields.get(4),
            fields.get(sep + 1),
            fields.get(sep + 2),
        ) else {
            continue;
        };
        let mount = PathBuf::from(unescape(mount));
        let longer = best
            .as_ref()
            .is_none_or(|b| mount.as_os_str().len() >= b.mount_point.as_os_str().len());
        if canon.starts_with(&mount) && longer {
            best = Some(Mount {
                mount_point: mount,
                dev: dev.to_string(),
                fstype: fstype.to_string(),
                source: unescape(source),
            });
        }
    }
    best
}

/// The block device behind `major:minor` (`sys`: where sysfs is mounted) and whether it is
/// rotational: a partition answers for its disk. `None` without a block device (major 0:
/// tmpfs, overlay, NFS).
pub fn block_device(sys: &Path, dev: &str) -> Option<(String, Option<bool>)> {
    if dev.starts_with("0:") {
        return None;
    }
    let node = sys.join("dev/block").join(dev).canonicalize().ok()?;
    let disk = if node.join("queue").is_dir() {
        node
    } else {
        node.parent()?.to_path_buf()
    };
    let name = disk.file_name()?.to_string_lossy().into_owned();
    let rotational = fs::read_to_string(disk.join("queue/rotational"))
        .ok()
        .and_then(|t| match t.trim() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        });
    Some((name, rotational))
}

/// The process that owns a running run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    pub host: String,
}

/// `manifest.json` of a run. The pins are typed; a part that is product-specific keeps its
/// product fields in an `extra` map, so a new product needs no field here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    pub run_id: String,
    pub run_kind: RunKind,
    /// `greptimedb`, `influxdb3`.
    pub product: String,
    /// The product's variant (an edition, a mode), recorded as `edition`.
    #[serde(rename = "edition")]
    pub variant: Option<String>,
    /// `all`, `load`, `query`, `compact`, `analyze`.
    pub phase: String,
    pub status: Status,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
    pub tool: ToolInfo,
    /// The command line, with secrets redacted.
    pub command: String,
    /// Every flag as parsed (defaults included), secrets never present.
    pub flags: Value,
    pub host: Host,
    pub owner: Owner,
    /// Where the benchmark went: managed workspace or external URLs.
    pub target: RunTarget,
    /// Go, TSBS commit and binaries.
    pub environment: Option<RunEnvironment>,
    /// Server version, binary and config checksums (managed only).
    pub server: Option<ServerPin>,
    pub dataset: Option<RunDataset>,
    pub query_set: Option<RunQuerySet>,
    /// Workers, batch size, database mode, query counts, durability flags.
    pub workload: Workload,
    /// The workspace's data state this run saw (loads, compactions).
    pub data_state: Option<RunDataState>,
    /// Set when this run reproduces an earlier one.
    pub rerun_of: Option<String>,
    /// Why the run ended badly, when it did.
    pub error: Option<RunError>,
    /// Each `runs resume` that continued (or extended) this run, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumes: Vec<ResumeRecord>,
}

/// A step attempt, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRef {
    pub step: String,
    pub attempt: u32,
}

/// One `runs resume` of a run (`resumes` of its manifest, and the data of its `resume` step).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeRecord {
    pub at: String,
    /// The tsbsctl that resumed (it may differ from the one that started the run).
    pub tool: ToolInfo,
    /// The resuming command line.
    pub command: String,
    pub pid: u32,
    /// The run's status before the resume (`interrupted`, `failed`, `completed` when extended).
    pub previous_status: Status,
    /// The query types this resume ran: those not done before, and the added ones.
    pub query_types: Vec<String>,
    /// The query types this resume added to the run (an extension).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_query_types: Vec<String>,
    /// Step attempts that had not finished well before the resume (interrupted, failed, left
    /// running by a killed process), or, when the resume loaded again, every earlier attempt:
    /// kept in `events.jsonl`, left out of the summary, which counts the resume's attempts
    /// instead.
    #[serde(default)]
    pub superseded: Vec<StepRef>,
    /// The query set the run had before an extension replaced it with a larger one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_query_set: Option<RunQuerySet>,
    /// The run's load had not finished: this resume loaded again from the start, with this
    /// database mode (`reset` once a load had begun: its partial data was dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_mode: Option<String>,
}

/// Whether tsbsctl manages the server or only talks to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetMode {
    Managed,
    External,
}

/// `target` of a run manifest. The fields of one mode are absent in the other (as written);
/// product-specific parts (InfluxDB 3: `server_settings`) are in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunTarget {
    pub mode: TargetMode,
    pub product: String,
    #[serde(rename = "edition")]
    pub variant: Option<String>,
    /// The workspace id (managed); `null` for an external server.
    pub database_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urls: Option<Vec<String>>,
    pub endpoint: String,
    /// The SQL database benchmarked.
    pub database: String,
    /// The version that ran (external: what the probe reported, if anything).
    pub version: Option<String>,
    pub binary_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_binary_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_override: Option<bool>,
    /// What the external server's probe answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Value>,
    /// Whether a token was passed (never the token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_token: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RunTarget {
    pub fn is_managed(&self) -> bool {
        self.mode == TargetMode::Managed
    }
}

/// `environment` of a run manifest: the TSBS build the run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnvironment {
    pub go_version: String,
    pub tsbs_repo: String,
    pub tsbs_commit: String,
    pub tsbs_dirty: bool,
    /// Keyed by tool name.
    pub binaries: BTreeMap<String, BinaryPin>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A TSBS tool the run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinaryPin {
    pub path: PathBuf,
    /// What the build recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Re-hashed just before the tool ran (set once the file is known good).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_sha256: Option<String>,
}

/// `server` of a run manifest (managed): what a rerun must start again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerPin {
    pub runtime: RuntimePin,
    pub workspace_version: String,
    pub workspace_binary_sha256: String,
    pub version_override: bool,
    pub platform: String,
    pub config_path: PathBuf,
    pub config_sha256: Option<String>,
    /// The config file's text.
    pub config: Option<String>,
    pub ports: BTreeMap<String, u16>,
    /// The archive the installation came from (`null` when it is not installed any more).
    pub installation: Option<ArchivePin>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The binary that ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimePin {
    pub version: String,
    pub binary_sha256: String,
    pub installation_path: PathBuf,
}

/// What a rerun must download again: the archive and its checksum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchivePin {
    pub source_url: String,
    pub checksum_url: String,
    pub archive_sha256: String,
    pub archive_size: u64,
    pub tree_digest: String,
    pub version_source: String,
}

/// `dataset` of a run manifest: the dataset, and the stored format a load read (or, for a
/// query-only run, what the workspace's binding says).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDataset {
    pub dataset_id: String,
    pub dataset_path: PathBuf,
    pub spec: Value,
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncompressed_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncompressed_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    /// The SHA-256 of the bytes the loader was fed (`null` when they were not hashed).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub loaded_sha256: Option<Option<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A field that is present (maybe `null`): tells a written `null` from an absent key
/// (`#[serde(default, deserialize_with = "present")]` on an `Option<Option<_>>`).
pub(crate) fn present<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// `query_set` of a run manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunQuerySet {
    pub query_set_id: String,
    pub query_set_path: PathBuf,
    pub manifest_sha256: String,
    pub format: String,
    pub query_counts: BTreeMap<String, u64>,
    pub spec: Value,
    pub reused: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `workload` of a run manifest: a benchmark's or a product operation's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Workload {
    Benchmark(BenchWorkload),
    Operation(OperationWorkload),
}

impl Workload {
    pub fn benchmark(&self) -> Option<&BenchWorkload> {
        match self {
            Workload::Benchmark(w) => Some(w),
            Workload::Operation(_) => None,
        }
    }
    /// The fields beside the typed ones: a benchmark's product-specific settings, an
    /// operation's record.
    pub fn fields(&self) -> &Map<String, Value> {
        match self {
            Workload::Benchmark(w) => &w.extra,
            Workload::Operation(w) => &w.extra,
        }
    }
    /// A product-specific field (`no_sync`, `flush_before_queries` ...), `null` when absent.
    pub fn extra(&self, key: &str) -> &Value {
        self.fields().get(key).unwrap_or(&Value::Null)
    }
}

/// The workload of a load/query/analyze run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchWorkload {
    /// `smoke`, `manual`.
    pub profile: String,
    pub load_workers: u64,
    pub batch_size: u64,
    pub query_workers: u64,
    /// `create`, `reuse`, `reset`; `null` for a phase that does not load.
    #[serde(default)]
    pub database_mode: Option<String>,
    /// Query type -> queries.
    #[serde(default)]
    pub query_counts: BTreeMap<String, u64>,
    /// Analyze: runs after the cold one; `null` otherwise.
    #[serde(default)]
    pub hot_runs: Option<u64>,
    /// Product-specific settings (`no_sync`, `accept_partial`, `flush_before_queries`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The workload of a product operation's run: its name and the product's resolved flags, or
/// the record the operation declares ([`crate::product::ext::Operation::workload`], without
/// the name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationWorkload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data_state` of a run manifest: the workspace's data state and its label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDataState {
    #[serde(flatten)]
    pub state: DataState,
    /// See [`DataState::label`].
    pub label: String,
}

impl RunDataState {
    /// The data state of a workspace of `product`, labelled in its maintenance words.
    pub fn of(state: &DataState, product: &str) -> RunDataState {
        RunDataState {
            state: state.clone(),
            label: state.label(crate::product::ext::maintenance_words(product)),
        }
    }
}

/// The data-state label of a run that ended without finishing a step that changes the data
/// (a load; of a product operation, the steps it declares, `changes_data`, else any but the
/// server's): the data is then in an unknown state, whether the run was stopped by Ctrl-C,
/// kill -9 or a failure, so `runs list`, `summary.md` and the report all say so (trial 2
/// N15). `None`: the recorded label stands.
pub fn unfinished_change_label(
    kind: RunKind,
    changes_data: &[&str],
    status: Status,
    steps: &[Step],
) -> Option<&'static str> {
    let failed = match status {
        Status::Failed => true,
        Status::Interrupted | Status::Running => false,
        _ => return None,
    };
    let done = |s: &Step| matches!(s.status, Status::Completed | Status::Reused);
    match kind {
        // A step of a product's operation that changes the data left unfinished leaves the
        // data unknown.
        RunKind::Operation(_) => steps
            .iter()
            .any(|s| {
                let changes = if changes_data.is_empty() {
                    s.step != "server"
                } else {
                    changes_data.contains(&s.step.as_str())
                };
                changes && !done(s)
            })
            .then_some(if failed {
                "maintenance failed: state unknown"
            } else {
                "maintenance interrupted: state unknown"
            }),
        RunKind::Benchmark => {
            let loads: Vec<&Step> = steps.iter().filter(|s| s.step == "load").collect();
            (!loads.is_empty() && !loads.iter().any(|s| done(s))).then_some(if failed {
                "load failed: state unknown"
            } else {
                "load interrupted: state unknown"
            })
        }
    }
}

/// `error` of a run manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunError {
    /// The error kind (`invalid`, `failed`, `integrity`, ...).
    pub kind: String,
    pub message: String,
    pub hint: Option<String>,
}

impl Manifest for RunManifest {
    const KIND: &'static str = "run";
}

impl RunManifest {
    /// The product operation this run ran (its phase names it), if it is one this tsbsctl
    /// knows.
    pub fn operation(&self) -> Option<&'static crate::product::ext::Operation> {
        match self.run_kind {
            RunKind::Operation(_) => crate::product::ext::operation_of(&self.product, &self.phase),
            RunKind::Benchmark => None,
        }
    }
    /// The steps of its operation that change the data (empty: any but the server's).
    pub fn changes_data(&self) -> &'static [&'static str] {
        self.operation().map_or(&[], |o| o.changes_data)
    }
}

/// One line of `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepEvent {
    pub seq: u64,
    /// `tsbs-env`, `dataset`, `query-set`, `server`, `load`, `row-count`, `footprint`,
    /// `query:<type>`, `flush`, `compact`, `analyze:<type>`, ...
    pub step: String,
    pub attempt: u32,
    pub status: Status,
    pub at: String,
    /// Relative to the run directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The folded state of one step attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub step: String,
    pub attempt: u32,
    pub status: Status,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub log: Option<String>,
    pub results: Option<String>,
    pub reason: Option<String>,
    /// The data of the start and end events, merged (end wins); read as its kind's record
    /// with [`Step::data_as`] (the kinds' records: [`data`]).
    pub data: Value,
}

impl Step {
    /// This step's data read as its kind's record (a [`data`] struct): a missing key is `None`,
    /// an unknown key is ignored, a known key of another type is `None` (as a look-up of it
    /// read `null`); a record that still does not read (not an object) reads as empty.
    pub fn data_as<T: serde::de::DeserializeOwned + Default>(&self) -> T {
        T::deserialize(&self.data).unwrap_or_default()
    }
}

/// Reads `events.jsonl`; a torn last line (a crash mid-append) is ignored.
pub fn read_events(dir: &Path) -> Result<Vec<StepEvent>> {
    let path = dir.join(EVENTS_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read", &path, e)),
    };
    Ok(text
        .lines()
        .filter(|l| !is_event_line(l))
        .filter_map(|l| serde_json::from_str::<StepEvent>(l).ok())
        .collect())
}

/// Whether a line of `events.jsonl` is a recorded [`Event`] or [`Warning`] ([`RunEvents`]
/// writes `ts` first), not a step line.
pub fn is_event_line(line: &str) -> bool {
    line.starts_with(r#"{"ts":"#)
}

/// A reporter that records every typed [`Event`] and [`Warning`] in a run's `events.jsonl`
/// before passing it on: a line `{"ts", "event": <kind>, <fields>, "message": <the words>}`;
/// a warning's line is `{"ts", "event": "warning", "kind": <kind>, <fields>, "message"}`.
/// Every string in it goes through the redactor (the run's tokens, secret-shaped text).
/// A line that cannot be written is not an error: the status line still reaches the user.
pub struct RunEvents {
    inner: SharedReporter,
    path: PathBuf,
    redactor: Redactor,
    /// One line at a time (threads report too: the tool watcher, the sampler).
    write: std::sync::Mutex<()>,
}

impl RunEvents {
    pub fn new(run: &RunDir, inner: SharedReporter, redactor: Redactor) -> RunEvents {
        RunEvents {
            inner,
            path: run.dir.join(EVENTS_FILE),
            redactor,
            write: std::sync::Mutex::new(()),
        }
    }

    /// Writes what `early` held from before the run directory existed, in order, at the times
    /// they were told (the user saw them then; they are not told again).
    pub fn replay(&self, early: &EarlyEvents) {
        let held = std::mem::take(&mut *early.held.lock().unwrap_or_else(|e| e.into_inner()));
        for (ts, h) in &held {
            self.record(ts, h.told());
        }
    }

    /// Appends the line of what was told at `ts`: an info line as printed, a typed event with
    /// its fields, a warning (text or typed) under `"event": "warning"`.
    fn record(&self, ts: &str, told: Told) {
        let line = match told {
            Told::Info(msg) => self.line(ts, &[("event", "info")], Value::Null, msg.to_string()),
            Told::Event(e) => serde_json::to_value(e)
                .ok()
                .and_then(|body| self.line(ts, &[], body, e.to_string())),
            Told::Text(msg) => self.line(
                ts,
                &[("event", "warning"), ("kind", "text")],
                Value::Null,
                msg.to_string(),
            ),
            Told::Warning(w) => serde_json::to_value(w)
                .ok()
                .and_then(|body| self.line(ts, &[("event", "warning")], body, w.to_string())),
        };
        self.append(line);
    }

    /// `{"ts", "event", <head>..., <body's fields>, "message"}`, redacted.
    fn line(
        &self,
        ts: &str,
        head: &[(&str, &str)],
        body: Value,
        message: String,
    ) -> Option<String> {
        let mut m = Map::new();
        m.insert("ts".into(), json!(ts));
        for (k, v) in head {
            m.insert((*k).into(), json!(v));
        }
        if let Value::Object(fields) = body {
            for (k, v) in fields {
                m.entry(k).or_insert(v);
            }
        }
        m.insert("message".into(), json!(message));
        let mut v = Value::Object(m);
        redact_strings(&mut v, &self.redactor);
        serde_json::to_string(&v).ok()
    }

    fn append(&self, line: Option<String>) {
        let Some(mut line) = line else { return };
        line.push('\n');
        let _one = self.write.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(mut f) = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// What a bench command told before its run directory existed (the target opened, the plan
/// resolved: an external server's version, a product's warning), held in memory with the
/// time it was told and passed on at once; [`RunEvents::replay`] writes it into the run's
/// `events.jsonl` once the run exists. Nothing is written before that (the redactor that
/// knows the run's tokens is the run's).
pub struct EarlyEvents {
    inner: SharedReporter,
    held: std::sync::Mutex<Vec<(String, Held)>>,
}

/// One thing a reporter was told, as [`RunEvents`] records it.
#[derive(Clone, Copy)]
enum Told<'a> {
    Info(&'a str),
    Event(&'a Event),
    /// A warning in words only.
    Text(&'a str),
    Warning(&'a Warning),
}

/// One thing an [`EarlyEvents`] holds: what it was told, owned.
enum Held {
    Info(String),
    Event(Event),
    Text(String),
    Warning(Warning),
}

impl Held {
    fn told(&self) -> Told<'_> {
        match self {
            Held::Info(m) => Told::Info(m),
            Held::Event(e) => Told::Event(e),
            Held::Text(m) => Told::Text(m),
            Held::Warning(w) => Told::Warning(w),
        }
    }
}

impl EarlyEvents {
    pub fn new(inner: SharedReporter) -> EarlyEvents {
        EarlyEvents {
            inner,
            held: std::sync::Mutex::new(Vec::new()),
        }
    }
    /// The reporter it passes everything on to.
    pub fn inner(&self) -> SharedReporter {
        self.inner.clone()
    }
    fn hold(&self, h: Held) {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((manifest::now_rfc3339(), h));
    }
}

impl Reporter for EarlyEvents {
    fn info(&self, msg: &str) {
        self.hold(Held::Info(msg.to_string()));
        self.inner.info(msg);
    }
    fn event(&self, e: &Event) {
        self.hold(Held::Event(e.clone()));
        self.inner.event(e);
    }
    fn warn(&self, msg: &str) {
        self.hold(Held::Text(msg.to_string()));
        self.inner.warn(msg);
    }
    fn warning(&self, w: &Warning) {
        self.hold(Held::Warning(w.clone()));
        self.inner.warning(w);
    }
    fn progress(&self, label: &str, total: Option<u64>, unit: Unit) -> Box<dyn Progress> {
        self.inner.progress(label, total, unit)
    }
}

/// Every string in `v` (keys stay) through `r`.
fn redact_strings(v: &mut Value, r: &Redactor) {
    match v {
        Value::String(s) => *s = r.redact(s),
        Value::Array(a) => a.iter_mut().for_each(|x| redact_strings(x, r)),
        Value::Object(m) => m.values_mut().for_each(|x| redact_strings(x, r)),
        _ => {}
    }
}

impl Reporter for RunEvents {
    /// A line a product words itself (or the query phase's "query type i/n T"): kept as
    /// printed, so the file holds every status line the command showed.
    fn info(&self, msg: &str) {
        self.record(&manifest::now_rfc3339(), Told::Info(msg));
        self.inner.info(msg);
    }
    fn event(&self, e: &Event) {
        self.record(&manifest::now_rfc3339(), Told::Event(e));
        self.inner.event(e);
    }
    fn warn(&self, msg: &str) {
        self.record(&manifest::now_rfc3339(), Told::Text(msg));
        self.inner.warn(msg);
    }
    fn warning(&self, w: &Warning) {
        self.record(&manifest::now_rfc3339(), Told::Warning(w));
        self.inner.warning(w);
    }
    fn progress(&self, label: &str, total: Option<u64>, unit: Unit) -> Box<dyn Progress> {
        self.inner.progress(label, total, unit)
    }
}

/// Folds events into steps, in the order they started.
pub fn fold_steps(events: &[StepEvent]) -> Vec<Step> {
    let mut order: Vec<(String, u32)> = Vec::new();
    let mut map: BTreeMap<(String, u32), Step> = BTreeMap::new();
    for e in events {
        let key = (e.step.clone(), e.attempt);
        let s = map.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            Step {
                step: e.step.clone(),
                attempt: e.attempt,
                status: Status::Running,
                started_at: e.at.clone(),
                finished_at: None,
                log: None,
                results: None,
                reason: None,
                data: json!({}),
            }
        });
        s.status = e.status;
        if e.status.finished() {
            s.finished_at = Some(e.at.clone());
        }
        if e.log.is_some() {
            s.log = e.log.clone();
        }
        if e.results.is_some() {
            s.results = e.results.clone();
        }
        if e.reason.is_some() {
            s.reason = e.reason.clone();
        }
        if let Some(Value::Object(d)) = &e.data {
            if let Value::Object(m) = &mut s.data {
                for (k, v) in d {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
    }
    order.into_iter().filter_map(|k| map.remove(&k)).collect()
}

/// Told of every step event once it is recorded (the resource sampler labels its samples
/// with the step that runs).
pub trait StepObserver: Send + Sync {
    fn step_event(&self, step: &str, status: Status);
}

/// A run directory held by this process (or opened read-only for summaries).
pub struct RunDir {
    pub dir: PathBuf,
    pub manifest: RunManifest,
    seq: u64,
    /// Held while this process works in the run.
    _lock: Option<LockGuard>,
    observer: Option<std::sync::Arc<dyn StepObserver>>,
}

impl std::fmt::Debug for RunDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunDir").field("dir", &self.dir).finish()
    }
}

/// Formats the UTC time as a run id (`20261129T201500Z`).
pub fn run_id_now() -> String {
    crate::ids::timestamp_id_now()
}

/// Reserves `<runs>/<id>` with one `mkdir`: the generated id gets `-01`, `-02`, ... when
/// taken; an explicit `--run-id` that is taken is invalid input.
pub fn reserve(runs: &Path, requested: Option<&str>) -> Result<(String, PathBuf)> {
    fs::create_dir_all(runs).map_err(|e| Error::io("create", runs, e))?;
    if let Some(id) = requested {
        crate::ids::validate_id("--run-id", id)?;
        let dir = runs.join(id);
        return match fs::create_dir(&dir) {
            Ok(()) => Ok((id.to_string(), dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::invalid(
                format!("run {id} already exists at {}", dir.display()),
            )
            .with_hint("choose another --run-id, or omit it to get a fresh time-based id")),
            Err(e) => Err(Error::io("create", &dir, e)),
        };
    }
    let base = run_id_now();
    for n in 0..1000 {
        let id = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n:02}")
        };
        let dir = runs.join(&id);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok((id, dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io("create", &dir, e)),
        }
    }
    Err(Error::failed(format!(
        "no free run id for {base} under {}",
        runs.display()
    )))
}

/// What a new run starts with.
pub struct NewRun<'a> {
    pub product: &'a str,
    pub variant: Option<String>,
    pub kind: RunKind,
    pub phase: &'a str,
    pub run_id: Option<&'a str>,
    pub command: String,
    pub flags: Value,
    pub target: RunTarget,
    pub workload: Workload,
    pub host_data_dir: Option<PathBuf>,
}

impl RunDir {
    /// Reserves and initialises a run directory, and locks it.
    pub fn create(root: &Root, new: NewRun, reporter: &dyn Reporter) -> Result<RunDir> {
        let runs = root.runs(new.product);
        let (id, dir) = reserve(&runs, new.run_id)?;
        let lock = lock::lock_dir(
            &dir,
            &format!("run {}/{id}", new.product),
            &new.command,
            None,
            &LockOptions::default(),
            reporter,
        )?;
        for sub in ["logs", "results"] {
            fs::create_dir_all(dir.join(sub)).map_err(|e| Error::io("create", &dir, e))?;
        }
        let now = manifest::now_rfc3339();
        let m = RunManifest {
            run_id: id,
            run_kind: new.kind,
            product: new.product.to_string(),
            variant: new.variant,
            phase: new.phase.to_string(),
            status: Status::Running,
            created_at: now.clone(),
            updated_at: now,
            finished_at: None,
            tool: ToolInfo::current(),
            command: new.command,
            flags: new.flags,
            host: Host::current(new.host_data_dir.as_deref().or(Some(root.path()))),
            owner: Owner {
                pid: std::process::id(),
                host: lock::hostname(),
            },
            target: new.target,
            environment: None,
            server: None,
            dataset: None,
            query_set: None,
            workload: new.workload,
            data_state: None,
            rerun_of: None,
            error: None,
            resumes: Vec::new(),
        };
        let mut run = RunDir {
            dir,
            manifest: m,
            seq: 0,
            _lock: Some(lock),
            observer: None,
        };
        run.save()?;
        reserve_space(&run.dir);
        Ok(run)
    }

    /// Opens an existing run (for summaries). When it says `running` but no process holds its
    /// lock, its owner died: unfinished steps and the run are marked `interrupted`.
    pub fn open(dir: &Path, reporter: &dyn Reporter) -> Result<RunDir> {
        let m: RunManifest = manifest::read(&dir.join("manifest.json"))?;
        let events = read_events(dir)?;
        let seq = events.iter().map(|e| e.seq).max().unwrap_or(0);
        let mut run = RunDir {
            dir: dir.to_path_buf(),
            manifest: m,
            seq,
            _lock: None,
            observer: None,
        };
        if run.manifest.status == Status::Running && crate::media::is_read_only(dir) {
            // Read-only media (an archive, a remounted disk): nothing can be locked or
            // recorded, but a free lock still says whether its owner is alive (#19).
            if owner_gone(dir) {
                run.manifest.status = Status::Interrupted;
                if run.manifest.finished_at.is_none() {
                    run.manifest.finished_at = events.last().map(|e| e.at.clone());
                }
                reporter.warning(&Warning::ReadOnlyRun {
                    run: run.manifest.run_id.clone(),
                });
            }
        } else if run.manifest.status == Status::Running {
            match lock::lock_dir(
                dir,
                &format!("run {}", run.manifest.run_id),
                "tsbsctl runs summarize",
                None,
                &LockOptions::default(),
                reporter,
            ) {
                Ok(g) => {
                    run._lock = Some(g);
                    run.mark_interrupted(
                        "the process running this step ended without finishing it",
                    )?;
                }
                Err(e) if e.kind == ErrorKind::Busy => {}
                Err(e) => return Err(e),
            }
        }
        Ok(run)
    }

    pub fn id(&self) -> &str {
        &self.manifest.run_id
    }

    /// Rewrites `manifest.json` atomically.
    pub fn save(&mut self) -> Result<()> {
        self.manifest.updated_at = manifest::now_rfc3339();
        manifest::write(&self.dir.join("manifest.json"), &self.manifest)
    }

    /// `(absolute, relative)` path of a log file.
    pub fn log(&self, name: &str) -> (PathBuf, String) {
        let rel = format!("logs/{name}");
        (self.dir.join(&rel), rel)
    }

    /// `(absolute, relative)` path of a results file.
    pub fn result(&self, name: &str) -> (PathBuf, String) {
        let rel = format!("results/{name}");
        (self.dir.join(&rel), rel)
    }

    /// The steps recorded so far, without the attempts a resume superseded (see
    /// [`ResumeRecord::superseded`]).
    pub fn steps(&self) -> Result<Vec<Step>> {
        let superseded = superseded(&self.manifest);
        Ok(self
            .all_steps()?
            .into_iter()
            .filter(|s| !superseded.contains(&(s.step.as_str(), s.attempt)))
            .collect())
    }

    /// Every step attempt recorded, superseded ones included.
    pub fn all_steps(&self) -> Result<Vec<Step>> {
        Ok(fold_steps(&read_events(&self.dir)?))
    }

    /// The next attempt number of `step` (1 for the first; never one a superseded attempt
    /// used, so its logs stay).
    pub fn next_attempt(&self, step: &str) -> Result<u32> {
        Ok(self
            .all_steps()?
            .iter()
            .filter(|s| s.step == step)
            .map(|s| s.attempt)
            .max()
            .unwrap_or(0)
            + 1)
    }

    /// Appends one event durably.
    pub fn event(&mut self, mut e: StepEvent) -> Result<()> {
        self.seq += 1;
        e.seq = self.seq;
        let mut line = serde_json::to_string(&e)?;
        line.push('\n');
        let path = self.dir.join(EVENTS_FILE);
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io("open", &path, e))?;
        f.write_all(line.as_bytes())
            .and_then(|_| f.sync_data())
            .map_err(|e| Error::io("append to", &path, e))?;
        if let Some(o) = &self.observer {
            o.step_event(&e.step, e.status);
        }
        Ok(())
    }

    /// Tells `o` of every step event from now on.
    pub fn set_observer(&mut self, o: std::sync::Arc<dyn StepObserver>) {
        self.observer = Some(o);
    }

    /// Records the start of a step attempt.
    pub fn begin(
        &mut self,
        step: &str,
        attempt: u32,
        log: Option<&str>,
        results: Option<&str>,
        data: Option<Value>,
    ) -> Result<()> {
        self.event(StepEvent {
            seq: 0,
            step: step.to_string(),
            attempt,
            status: Status::Running,
            at: manifest::now_rfc3339(),
            log: log.map(str::to_string),
            results: results.map(str::to_string),
            reason: None,
            data,
        })
    }

    /// Records the end of a step attempt.
    pub fn end(
        &mut self,
        step: &str,
        attempt: u32,
        status: Status,
        reason: Option<String>,
        data: Option<Value>,
    ) -> Result<()> {
        self.event(StepEvent {
            seq: 0,
            step: step.to_string(),
            attempt,
            status,
            at: manifest::now_rfc3339(),
            log: None,
            results: None,
            reason,
            data,
        })
    }

    /// Runs `f` as attempt `attempt` of step `name`: its start event, then, when `f` returns
    /// `(value, data)`, its `completed` end event with `data`. An error leaves the attempt
    /// running, as every step an error cuts short: [`RunDir::finish`] ends it with the error
    /// that ended the run, after what the run does on its way out (stopping its server).
    pub fn step<T>(
        &mut self,
        name: &str,
        attempt: u32,
        f: impl FnOnce(&mut RunDir) -> Result<(T, Value)>,
    ) -> Result<T> {
        self.begin(name, attempt, None, None, None)?;
        let (value, data) = f(self)?;
        self.end(name, attempt, Status::Completed, None, Some(data))?;
        Ok(value)
    }

    /// Records a step that started and ended at once (reused data, a skipped step).
    pub fn instant(
        &mut self,
        step: &str,
        attempt: u32,
        status: Status,
        reason: Option<String>,
        data: Option<Value>,
    ) -> Result<()> {
        self.begin(step, attempt, None, None, None)?;
        self.end(step, attempt, status, reason, data)
    }

    /// Marks every unfinished step and the run `interrupted`.
    pub fn mark_interrupted(&mut self, reason: &str) -> Result<()> {
        // The run died after its last event, not when someone noticed (#28).
        let died = read_events(&self.dir)?.last().map(|e| e.at.clone());
        for s in self.steps()? {
            if s.status == Status::Running {
                self.event(StepEvent {
                    seq: 0,
                    step: s.step.clone(),
                    attempt: s.attempt,
                    status: Status::Interrupted,
                    at: died.clone().unwrap_or_else(manifest::now_rfc3339),
                    log: None,
                    results: None,
                    reason: Some(reason.to_string()),
                    data: None,
                })?;
            }
        }
        release_space(&self.dir);
        if self.manifest.status == Status::Running {
            self.manifest.status = Status::Interrupted;
            self.manifest.finished_at = Some(died.unwrap_or_else(manifest::now_rfc3339));
            self.label_unfinished_change()?;
            self.save()?;
        }
        Ok(())
    }

    /// See [`unfinished_change_label`].
    fn label_unfinished_change(&mut self) -> Result<()> {
        let steps = self.steps()?;
        if let (Some(l), Some(ds)) = (
            unfinished_change_label(
                self.manifest.run_kind,
                self.manifest.changes_data(),
                self.manifest.status,
                &steps,
            ),
            self.manifest.data_state.as_mut(),
        ) {
            ds.label = l.to_string();
        }
        Ok(())
    }

    /// Ends the run with `status` (unfinished steps become `interrupted` or `failed`).
    pub fn finish(&mut self, status: Status, error: Option<&Error>) -> Result<()> {
        // Room for the last events, the manifest and the summary on a disk that filled up.
        release_space(&self.dir);
        let step_status = if status == Status::Interrupted {
            Status::Interrupted
        } else {
            Status::Failed
        };
        for s in self.steps()? {
            if s.status == Status::Running {
                self.end(
                    &s.step,
                    s.attempt,
                    step_status,
                    Some(
                        error
                            .map(|e| e.message.clone())
                            .unwrap_or_else(|| "the run ended before this step finished".into()),
                    ),
                    None,
                )?;
            }
        }
        self.manifest.status = status;
        self.manifest.finished_at = Some(manifest::now_rfc3339());
        self.label_unfinished_change()?;
        if let Some(e) = error {
            self.manifest.error = Some(RunError {
                kind: e.kind.as_str().to_string(),
                message: e.message.clone(),
                hint: e.hint.clone(),
            });
        }
        self.save()
    }
}

/// A file of real (not sparse) bytes kept while a run works, and deleted when it ends, so a
/// disk that filled up during the run (#18) still has room for its last records.
/// The `(step, attempt)` pairs every resume of the run superseded.
pub fn superseded(m: &RunManifest) -> std::collections::BTreeSet<(&str, u32)> {
    m.resumes
        .iter()
        .flat_map(|r| r.superseded.iter())
        .map(|s| (s.step.as_str(), s.attempt))
        .collect()
}

impl RunDir {
    /// Opens a run to continue it (`runs resume`): its lock taken (busy, exit 3, while any
    /// process works in it), and a run its dead owner left `running` marked interrupted
    /// first. Nothing else is written until [`RunDir::record_resume`].
    pub fn reopen(dir: &Path, command: &str, reporter: &dyn Reporter) -> Result<RunDir> {
        let m: RunManifest = manifest::read(&dir.join("manifest.json"))?;
        let lock = lock::lock_dir(
            dir,
            &format!("run {}", m.run_id),
            command,
            None,
            &LockOptions::default(),
            reporter,
        )?;
        let events = read_events(dir)?;
        let mut run = RunDir {
            dir: dir.to_path_buf(),
            manifest: m,
            seq: events.iter().map(|e| e.seq).max().unwrap_or(0),
            _lock: Some(lock),
            observer: None,
        };
        if run.manifest.status == Status::Running {
            run.mark_interrupted("the process running this step ended without finishing it")?;
        }
        Ok(run)
    }

    /// Records a resume: the manifest says so (and the run is `running` again, owned by this
    /// process), and a `resume` step in `events.jsonl` carries the same record.
    pub fn record_resume(&mut self, r: ResumeRecord) -> Result<()> {
        let attempt = self.next_attempt("resume")?;
        self.manifest.status = Status::Running;
        self.manifest.finished_at = None;
        self.manifest.error = None;
        self.manifest.owner = Owner {
            pid: std::process::id(),
            host: lock::hostname(),
        };
        self.manifest.resumes.push(r.clone());
        self.save()?;
        reserve_space(&self.dir);
        self.instant(
            "resume",
            attempt,
            Status::Completed,
            None,
            Some(serde_json::to_value(&r)?),
        )
    }
}

pub const SPACE_RESERVE: &str = ".space-reserve";
const RESERVE_BYTES: usize = 1 << 20;

fn reserve_space(dir: &Path) {
    // Best effort: without the reserve a run still works, it is only less sure to finish its
    // records on a full disk.
    let _ = fs::write(dir.join(SPACE_RESERVE), vec![0u8; RESERVE_BYTES]);
}

fn release_space(dir: &Path) {
    let _ = fs::remove_file(dir.join(SPACE_RESERVE));
}

/// On read-only media: the run's lock file is free (no process holds it), or missing.
fn owner_gone(dir: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(f) = fs::File::open(lock::lock_path_of(dir)) else {
        return true;
    };
    // SAFETY: flock on a descriptor we own; a shared probe works on a read-only file.
    let free = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
    if free {
        // SAFETY: as above.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) };
    }
    free
}

/// Finds a run by path or id (across products). An id matching several runs is invalid input
/// listing the candidates. A path comes back absolute: the TSBS tools a resumed run starts
/// work in a directory of their own, where a relative result path does not lead to the run
/// (a real runner failed every type of a resume given `state/greptimedb/runs/<id>`).
pub fn resolve(root: &Root, run: &str) -> Result<PathBuf> {
    let p = Path::new(run);
    if p.join("manifest.json").is_file() {
        return std::path::absolute(p).map_err(|e| Error::io("resolve", p, e));
    }
    let mut found = Vec::new();
    for product in crate::product::names() {
        let d = root.runs(product).join(run);
        if crate::ids::validate_id("RUN", run).is_ok() && d.join("manifest.json").is_file() {
            found.push(d);
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(Error::invalid(format!(
            "no run {run:?} (neither a run directory nor a run id)"
        ))
        .with_hint(format!(
            "pass a run directory, or an id from {}",
            root.runs("<product>").display()
        ))),
        _ => Err(Error::invalid(format!(
            "run id {run:?} is ambiguous: {}",
            found
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .with_hint("pass the run directory path instead")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trial 2 N15: every way a data-changing step can end unfinished gets the same label.
    #[test]
    fn an_unfinished_load_or_maintenance_leaves_the_state_unknown() {
        let step = |name: &str, status: Status| Step {
            step: name.into(),
            attempt: 1,
            status,
            started_at: String::new(),
            finished_at: None,
            log: None,
            results: None,
            reason: None,
            data: Value::Null,
        };
        let label = unfinished_change_label;
        // GreptimeDB's compaction: its flush and compact steps change the data.
        let compact = crate::product::ext::operation_of("greptimedb", "compact").unwrap();
        let compaction = RunKind::Operation(compact.run_kind());
        let flushed_then_killed = [
            step("flush", Status::Completed),
            step("compact", Status::Interrupted),
        ];
        for st in [Status::Interrupted, Status::Running] {
            assert_eq!(
                label(compaction, compact.changes_data, st, &flushed_then_killed),
                Some("maintenance interrupted: state unknown")
            );
        }
        assert_eq!(
            label(
                compaction,
                compact.changes_data,
                Status::Failed,
                &flushed_then_killed
            ),
            Some("maintenance failed: state unknown")
        );
        // A product's operation: any of its steps unfinished (the server's aside).
        let vacuum_failed = [
            step("server", Status::Completed),
            step("vacuum", Status::Failed),
        ];
        assert_eq!(
            label(
                RunKind::Operation("operation"),
                &[],
                Status::Failed,
                &vacuum_failed
            ),
            Some("maintenance failed: state unknown")
        );
        assert_eq!(
            label(
                RunKind::Operation("operation"),
                &[],
                Status::Interrupted,
                &[step("server", Status::Interrupted)]
            ),
            None
        );
        // Before the flush began, or after the load completed: the recorded label stands.
        assert_eq!(
            label(
                compaction,
                compact.changes_data,
                Status::Interrupted,
                &[step("server", Status::Interrupted)]
            ),
            None
        );
        let loaded = [
            step("load", Status::Completed),
            step("query:lastpoint", Status::Interrupted),
        ];
        assert_eq!(
            label(RunKind::Benchmark, &[], Status::Interrupted, &loaded),
            None
        );
        assert_eq!(
            label(
                RunKind::Benchmark,
                &[],
                Status::Interrupted,
                &[step("load", Status::Interrupted)]
            ),
            Some("load interrupted: state unknown")
        );
        assert_eq!(
            label(
                RunKind::Benchmark,
                &[],
                Status::Failed,
                &[step("load", Status::Failed)]
            ),
            Some("load failed: state unknown")
        );
        assert_eq!(
            label(
                RunKind::Benchmark,
                &[],
                Status::Completed,
                &[step("load", Status::Failed)]
            ),
            None
        );
    }

    #[test]
    fn reservation_is_atomic_and_suffixed() {
        let d = tempfile::tempdir().unwrap();
        let (a, _) = reserve(d.path(), None).unwrap();
        let (b, _) = reserve(d.path(), None).unwrap();
        assert_ne!(a, b);
        assert!(b.starts_with(&a[..16]) || b.len() == 16);
        assert_eq!(reserve(d.path(), Some(&a)).unwrap_err().exit_code(), 2);
        let (c, _) = reserve(d.path(), Some("mine")).unwrap();
        assert_eq!(c, "mine");
        assert_eq!(reserve(d.path(), Some("../x")).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn events_fold_and_torn_lines_are_ignored() {
        let d = tempfile::tempdir().unwrap();
        let mut lines = String::new();
        for (i, (step, st)) in [
            ("load", Status::Running),
            ("load", Status::Completed),
            ("query:lastpoint", Status::Running),
        ]
        .iter()
        .enumerate()
        {
            let e = StepEvent {
                seq: i as u64 + 1,
                step: step.to_string(),
                attempt: 1,
                status: *st,
                at: format!("t{i}"),
                log: Some(format!("logs/{step}.log")),
                results: None,
                reason: None,
                data: Some(json!({"i": i})),
            };
            lines.push_str(&serde_json::to_string(&e).unwrap());
            lines.push('\n');
        }
        lines.push_str("{\"seq\": 4, \"step\"");
        fs::write(d.path().join(EVENTS_FILE), lines).unwrap();
        let steps = fold_steps(&read_events(d.path()).unwrap());
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].status, Status::Completed);
        assert_eq!(steps[0].finished_at.as_deref(), Some("t1"));
        assert_eq!(steps[0].data["i"], 1);
        assert_eq!(steps[1].status, Status::Running);
    }

    /// A run of the first fixture's manifest in `dir`, with no events yet.
    fn fixture_run(dir: &Path) -> RunDir {
        RunDir {
            dir: dir.to_path_buf(),
            manifest: serde_json::from_str(RUN_FIXTURES[0].1).unwrap(),
            seq: 0,
            _lock: None,
            observer: None,
        }
    }

    /// Issue 23 §3: a run's typed events and warnings are lines of its events.jsonl beside
    /// the step lines, which every step reader still reads alone; no token reaches the file.
    #[test]
    fn events_and_warnings_are_recorded_beside_the_steps_and_redacted() {
        use crate::output::{Event, SilentReporter, Warning};
        let d = tempfile::tempdir().unwrap();
        let mut run = fixture_run(d.path());
        let token = "plainTOKENvalue42";
        let rep = RunEvents::new(
            &run,
            std::sync::Arc::new(SilentReporter),
            Redactor::new().with_token(token),
        );
        rep.event(&Event::RunIn {
            operation: None,
            run: "R".into(),
            dir: d.path().to_path_buf(),
        });
        run.begin("load", 1, None, None, Some(json!({"rows": 3})))
            .unwrap();
        rep.warning(&Warning::QueryTypeFailed {
            query_type: "lastpoint".into(),
            reason: format!("HTTP 401: token {token} refused"),
        });
        rep.event(&Event::WaitingForLock {
            label: "run R".into(),
            holder: "pid 1".into(),
            wait: std::time::Duration::from_millis(1500),
        });
        rep.info(&format!("query type 1/2 lastpoint ({token})"));
        run.end("load", 1, Status::Completed, None, None).unwrap();
        // A torn last line, as a crash mid-append leaves it.
        let mut f = OpenOptions::new()
            .append(true)
            .open(d.path().join(EVENTS_FILE))
            .unwrap();
        f.write_all(br#"{"ts":"2026-12-06T00:00:00Z","event":"downl"#)
            .unwrap();
        drop(f);

        let text = fs::read_to_string(d.path().join(EVENTS_FILE)).unwrap();
        assert!(!text.contains(token), "{text}");
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let kinds: Vec<String> = lines
            .iter()
            .map(|l| match (l.get("event"), l.get("step")) {
                (Some(e), _) => format!(
                    "{}/{}",
                    e.as_str().unwrap(),
                    l["kind"].as_str().unwrap_or("")
                ),
                (None, Some(s)) => format!("step {}", s.as_str().unwrap()),
                _ => "?".into(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "run_in/",
                "step load",
                "warning/query_type_failed",
                "waiting_for_lock/",
                "info/",
                "step load"
            ]
        );
        assert_eq!(lines[4]["message"], "query type 1/2 lastpoint (<redacted>)");
        let w = &lines[2];
        assert!(w["ts"].is_string(), "{w}");
        assert_eq!(w["query_type"], "lastpoint");
        assert_eq!(w["reason"], "HTTP 401: token <redacted> refused");
        assert_eq!(
            w["message"],
            "query type lastpoint failed: HTTP 401: token <redacted> refused"
        );
        assert_eq!(lines[3]["wait"], 1.5, "durations in seconds");
        // Step readers see the steps only; the seq goes on from the step lines.
        let events = read_events(d.path()).unwrap();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        let steps = fold_steps(&events);
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].status, Status::Completed);
        assert_eq!(steps[0].data["rows"], 3);
    }

    #[test]
    fn host_facts_are_plausible() {
        let h = Host::current(Some(Path::new("/")));
        assert!(h.cpus >= 1);
        assert!(!h.os.is_empty());
        if cfg!(target_os = "linux") {
            assert!(h.data_filesystem.is_some());
            assert!(h.memory_bytes.unwrap_or(0) > 0);
        }
    }

    /// Run manifests written by the previous version (real runs of the testbed flow:
    /// managed and external, both products, compaction, analyze, failed and interrupted).
    const RUN_FIXTURES: &[(&str, &str)] = &[
        (
            "run-greptimedb-all-failed.json",
            include_str!("../tests/fixtures/run-data-v1/run-greptimedb-all-failed.json"),
        ),
        (
            "run-greptimedb-analyze.json",
            include_str!("../tests/fixtures/run-data-v1/run-greptimedb-analyze.json"),
        ),
        (
            "run-greptimedb-compaction-completed.json",
            include_str!("../tests/fixtures/run-data-v1/run-greptimedb-compaction-completed.json"),
        ),
        (
            "run-greptimedb-compaction-failed.json",
            include_str!("../tests/fixtures/run-data-v1/run-greptimedb-compaction-failed.json"),
        ),
        (
            "run-greptimedb-external-all.json",
            include_str!("../tests/fixtures/run-data-v1/run-greptimedb-external-all.json"),
        ),
        (
            "run-greptimedb-query-after-compaction.json",
            include_str!(
                "../tests/fixtures/run-data-v1/run-greptimedb-query-after-compaction.json"
            ),
        ),
        (
            "run-greptimedb-query-interrupted.json",
            include_str!("../tests/fixtures/run-data-v1/run-greptimedb-query-interrupted.json"),
        ),
        (
            "run-greptimedb-query-version-override.json",
            include_str!(
                "../tests/fixtures/run-data-v1/run-greptimedb-query-version-override.json"
            ),
        ),
        (
            "run-influxdb3-core-all.json",
            include_str!("../tests/fixtures/run-data-v1/run-influxdb3-core-all.json"),
        ),
        (
            "run-influxdb3-external-enterprise-all.json",
            include_str!(
                "../tests/fixtures/run-data-v1/run-influxdb3-external-enterprise-all.json"
            ),
        ),
    ];

    #[test]
    fn a_step_records_its_start_and_end_and_an_error_leaves_it_for_finish() {
        let d = tempfile::tempdir().unwrap();
        let mut run = fixture_run(d.path());
        let got = run
            .step("dataset", 1, |r| {
                r.manifest.phase = "changed inside".into();
                Ok((7, json!({"rows": 3})))
            })
            .unwrap();
        assert_eq!(got, 7);
        assert_eq!(run.manifest.phase, "changed inside");
        let err = run
            .step("query-set", 1, |_| -> Result<((), Value)> {
                Err(Error::failed("no query set"))
            })
            .unwrap_err();
        assert_eq!(err.message, "no query set");
        let events = read_events(d.path()).unwrap();
        let seen: Vec<_> = events
            .iter()
            .map(|e| (e.seq, e.step.as_str(), e.status, e.data.clone()))
            .collect();
        assert_eq!(
            seen,
            [
                (1, "dataset", Status::Running, None),
                (2, "dataset", Status::Completed, Some(json!({"rows": 3}))),
                (3, "query-set", Status::Running, None),
            ]
        );
        run.finish(Status::Failed, Some(&err)).unwrap();
        let steps = run.steps().unwrap();
        assert_eq!(steps[1].status, Status::Failed);
        assert_eq!(steps[1].reason.as_deref(), Some("no query set"));
    }

    #[test]
    fn run_manifests_of_the_previous_version_round_trip_byte_for_byte() {
        for (name, text) in RUN_FIXTURES {
            let m: RunManifest =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(manifest::to_text(&m).unwrap(), *text, "{name}");
        }
    }

    #[test]
    fn recorded_parts_are_read_as_typed() {
        let read = |n: &str| -> RunManifest {
            let (_, t) = RUN_FIXTURES.iter().find(|(f, _)| f.contains(n)).unwrap();
            serde_json::from_str(t).unwrap()
        };
        let ext = read("influxdb3-external");
        assert_eq!(ext.target.mode, TargetMode::External);
        assert!(ext.target.urls.as_ref().is_some_and(|u| !u.is_empty()));
        assert!(ext.target.extra["server_settings"].is_object());
        assert!(ext.server.is_none());
        let w = ext.workload.benchmark().unwrap();
        assert!(w.extra.contains_key("no_sync"));
        let compact = read("compaction-failed");
        assert!(compact.workload.benchmark().is_none());
        assert_eq!(compact.workload.extra("table"), "cpu");
        assert_eq!(compact.run_kind.as_str(), "compaction");
        assert!(compact.error.is_some());
        let over = read("version-override");
        let pin = over.server.unwrap();
        assert!(pin.version_override);
        assert_ne!(pin.runtime.version, pin.workspace_version);
        let after = read("query-after-compaction");
        assert_eq!(after.data_state.unwrap().label, "after manual compaction");
        let env = after.environment.unwrap();
        assert!(env.binaries.values().any(|b| b.ran_sha256.is_some()));
    }

    #[test]
    fn the_data_dirs_mount_device_and_disk_kind() {
        let info = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
            27 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw\n\
            30 27 0:30 / /work/my\\040dir rw - tmpfs tmpfs rw\n\
            31 27 259:2 / /work/my\\040dir rw - xfs /dev/nvme0n1p2 rw\n";
        let m = mount_in(info, Path::new("/home/x/data")).unwrap();
        assert_eq!(
            (
                m.mount_point.to_str(),
                m.dev.as_str(),
                m.fstype.as_str(),
                m.source.as_str()
            ),
            (Some("/"), "254:1", "ext4", "/dev/vda1")
        );
        // The later of two mounts on one point is the one in force.
        let m = mount_in(info, Path::new("/work/my dir/ws/data")).unwrap();
        assert_eq!((m.fstype.as_str(), m.dev.as_str()), ("xfs", "259:2"));
        // A fake sysfs: a partition of a rotational disk, and a non-rotational whole disk.
        let d = tempfile::tempdir().unwrap();
        let sys = d.path();
        let disk = sys.join("devices/virtual/block/sda");
        fs::create_dir_all(disk.join("queue")).unwrap();
        fs::create_dir_all(disk.join("sda1")).unwrap();
        fs::write(disk.join("queue/rotational"), "1\n").unwrap();
        let nvme = sys.join("devices/pci/nvme0n1");
        fs::create_dir_all(nvme.join("queue")).unwrap();
        fs::write(nvme.join("queue/rotational"), "0\n").unwrap();
        fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(disk.join("sda1"), sys.join("dev/block/8:1")).unwrap();
        std::os::unix::fs::symlink(&nvme, sys.join("dev/block/259:0")).unwrap();
        assert_eq!(
            block_device(sys, "8:1"),
            Some(("sda".to_string(), Some(true)))
        );
        assert_eq!(
            block_device(sys, "259:0"),
            Some(("nvme0n1".to_string(), Some(false)))
        );
        assert_eq!(block_device(sys, "0:30"), None);
        assert_eq!(block_device(sys, "7:7"), None);
        // This machine: whatever it is, the host record names the mount of the directory.
        let h = Host::current(Some(Path::new("/proc/self")));
        assert_eq!(h.data_filesystem.as_deref(), Some("proc"));
        assert_eq!(h.data_mount.as_deref(), Some(Path::new("/proc")));
        assert_eq!(h.data_rotational, None);
    }
}
