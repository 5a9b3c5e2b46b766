//! The storage engine stand-in: a catalog, one region per table (or one per partition rule of a
//! table created with `PARTITION ON COLUMNS`, see [`super::partition`]), a WAL file per region until
//! flush, SST files after flush/compaction, a manifest per region. Everything lives under the
//! data home (and the WAL dir), with relative paths only, so copies of the data dir work.
//!
//! Row counts are exact and deduplicated like GreptimeDB's (a row is identified by its series
//! — measurement plus tag set — and its timestamp; writing it again does not add a row).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::{self, File, OpenOptions};
use std::hash::Hasher;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::lineproto::FieldType;
use super::logging;
use super::partition::{parse_rules, region_of, RuleSet};

/// A GreptimeDB error: status code and message (HTTP status is mapped by the server).
#[derive(Debug, Clone)]
pub struct GtError {
    pub code: u32,
    pub msg: String,
}

impl GtError {
    pub fn new(code: u32, msg: impl Into<String>) -> GtError {
        GtError {
            code,
            msg: msg.into(),
        }
    }

    /// A write whose field `column` has type `given` where the table (or the batch) has
    /// `expected`, as v1.0.2 refuses it.
    pub fn type_conflict(column: &str, expected: &FieldType, given: &FieldType) -> GtError {
        GtError::new(
            1004,
            format!(
                "Invalid request to region, reason: column {column} expect type {}, given: {}",
                expected.name(),
                given.name()
            ),
        )
    }
}

/// The catalog, where the real standalone server keeps its raft-engine metadata store
/// (`metadata/<seq:016>.raftlog`); the content here is JSON, not raft-engine's format.
const CATALOG_FILE: &str = "metadata/0000000000000001.raftlog";
/// The size of the catalog file with its preallocated tail (observed: 2.01 MiB).
const CATALOG_PREALLOCATED: usize = 2_107_392;

pub const SYSTEM_DATABASES: [&str; 2] = ["greptime_private", "information_schema"];
pub const TIME_INDEX: &str = "greptime_timestamp";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Catalog {
    next_table_id: u32,
    databases: BTreeMap<String, DbMeta>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct DbMeta {
    tables: BTreeMap<String, TableMeta>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableMeta {
    /// The table name (the catalog key; not stored twice).
    #[serde(skip)]
    pub name: String,
    pub table_id: u32,
    pub tags: Vec<String>,
    /// (name, type name)
    pub fields: Vec<(String, String)>,
    pub time_index: String,
    /// `PARTITION ON COLUMNS (columns) (rules)` of a created table: the rules as printed,
    /// re-parsed at open (absent: one region).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<PartitionDef>,
    /// A table made by `CREATE TABLE`: its columns in declared order and its `WITH` options
    /// (absent: auto-created by a write, columns tags-fields-time index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<CreatedDef>,
    /// In a cluster, the region numbers this datanode holds (the metasrv spreads a table's
    /// regions over the datanodes round-robin; each datanode opens and stores only its own);
    /// absent: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosted: Option<Vec<u32>>,
}

/// The partition of a table as stored in the catalog.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartitionDef {
    pub columns: Vec<String>,
    pub rules: Vec<String>,
}

/// What `CREATE TABLE` declared beyond the columns' kinds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CreatedDef {
    pub order: Vec<String>,
    pub options: Vec<(String, String)>,
}

impl TableMeta {
    /// The partition rules (`None`: one region).
    pub fn rule_set(&self) -> Option<RuleSet> {
        let p = self.partition.as_ref()?;
        parse_rules(&p.columns, &p.rules.join(",\n")).ok()
    }

    /// Region numbers of the table.
    pub fn region_numbers(&self) -> std::ops::Range<u32> {
        0..self
            .partition
            .as_ref()
            .map_or(1, |p| p.rules.len().max(1) as u32)
    }

    /// The region numbers this server holds (all of them but in a cluster's datanode).
    pub fn local_regions(&self) -> Vec<u32> {
        self.region_numbers()
            .filter(|n| self.hosted.as_ref().is_none_or(|h| h.contains(n)))
            .collect()
    }

    /// The columns in the table's order: as `CREATE TABLE` declared them, or (auto-created by
    /// a write) tags, then fields, then the time index, each in first-seen order.
    pub fn column_order(&self) -> Vec<String> {
        match &self.created {
            Some(c) => c.order.clone(),
            None => self
                .tags
                .iter()
                .cloned()
                .chain(self.fields.iter().map(|(f, _)| f.clone()))
                .chain([self.time_index.clone()])
                .collect(),
        }
    }

    /// Adds a column at the end of the table, as the real `ALTER TABLE ... ADD COLUMN` (and
    /// a write's added column) does: a tag joins the primary key, last.
    pub fn add_column(&mut self, name: &str, kind: &str, tag: bool) {
        if tag {
            self.tags.push(name.to_string());
        } else {
            self.fields.push((name.to_string(), kind.to_string()));
        }
        if let Some(c) = &mut self.created {
            c.order.push(name.to_string());
        }
    }

    /// Column name → GreptimeDB type name.
    pub fn column_type(&self, name: &str) -> Option<&str> {
        if name == self.time_index {
            return Some("TimestampNanosecond");
        }
        if self.tags.iter().any(|t| t == name) {
            return Some("String");
        }
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SstMeta {
    pub file_id: String,
    pub level: u8,
    pub time_range: (i64, i64),
    pub num_rows: u64,
    pub file_size: u64,
    pub index_file_size: u64,
    pub sequence: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RegionManifest {
    region_id: u64,
    table_id: u32,
    schema: String,
    table: String,
    flushed_wal_offset: u64,
    flushed_sequence: u64,
    compaction_time_window: Option<u64>,
    files: Vec<SstMeta>,
}

struct Region {
    m: RegionManifest,
    manifest_version: u64,
    /// Absolute region directory.
    dir: PathBuf,
    wal_path: PathBuf,
    wal_len: u64,
    keys: KeySet,
    sequence: u64,
    written_bytes: u64,
}

/// What a write request brings for one table (parsed outside the store lock).
#[derive(Default)]
pub struct TableBatch {
    /// Tag and field names in first-seen order (columns are added in that order).
    pub tags: Vec<String>,
    pub fields: Vec<(String, FieldType)>,
    /// Normalised lines (nanosecond timestamps), each ending in `\n`.
    pub lines: Vec<u8>,
    pub keys: Vec<u64>,
    /// The tag and field names of the previous line (schema changes are rare).
    pub last_tags: Vec<String>,
    pub last_fields: Vec<(String, FieldType)>,
}

/// `information_schema.region_statistics` values for one region.
pub struct RegionStat {
    pub region_id: u64,
    pub table_id: u32,
    pub region_rows: u64,
    pub written_bytes: u64,
    pub disk_size: u64,
    pub memtable_size: u64,
    pub manifest_size: u64,
    pub sst_size: u64,
    pub sst_num: u64,
    pub index_size: u64,
}

/// One compaction's input, chosen by [`Store::plan`].
#[derive(Debug, Clone)]
pub struct Plan {
    pub region_id: u64,
    pub window: u64,
    pub strict: bool,
    pub inputs: Vec<SstMeta>,
    pub input_bytes: u64,
    /// Output windows (SWCS re-reads the whole input once per window).
    pub windows: usize,
}

impl Plan {
    /// The real completion line (`mito2::compaction::task`), written after the merge and
    /// before the manifest update.
    pub fn compacted_line(&self, outputs: &[SstMeta], waiter_num: u32, secs: f64) -> String {
        let show = |fs: &[SstMeta]| {
            fs.iter()
                .map(|f| file_meta_debug(self.region_id, f))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "Compacted SST files, region_id: {}, input: [{}], output: [{}], window: Some({}), waiter_num: {waiter_num}, merge_time: {secs:.3}s",
            region_display(self.region_id),
            show(&self.inputs),
            show(outputs),
            self.window
        )
    }
}

pub struct Store {
    data_home: PathBuf,
    /// Where `data/greptime/...` (the region files) is: the data home, or with object storage
    /// the emulator's copy in the write cache ([`super::objstore`]).
    objects_home: PathBuf,
    wal_dir: PathBuf,
    auto_flush_bytes: u64,
    wal_purge_threshold: u64,
    /// TWCS `trigger_file_num` (the table option `compaction.twcs.trigger_file_num`).
    twcs_trigger_file_num: usize,
    catalog: Catalog,
    /// By region id (`table_id << 32 | region_number`).
    regions: BTreeMap<u64, Region>,
    /// Regions flushed since [`Store::take_flushed`] last ran.
    flushed: Vec<u64>,
    _locks: Vec<File>,
}

/// Series key + timestamp → the row's identity (FNV-1a over 8-byte words: fast in debug
/// builds too; collisions are negligible at test sizes).
pub fn row_key(series: &str, ts: i64) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let b = series.as_bytes();
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        h = (h ^ u64::from_le_bytes(c.try_into().expect("8 bytes"))).wrapping_mul(PRIME);
        h ^= h >> 29;
    }
    for &x in chunks.remainder() {
        h = (h ^ x as u64).wrapping_mul(PRIME);
    }
    h = (h ^ ts as u64).wrapping_mul(PRIME);
    h ^= h >> 32;
    h.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The keys are hashes already: the set hashes them no further.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type KeySet = HashSet<u64, std::hash::BuildHasherDefault<IdHasher>>;

/// Splits a stored (normalised) line into its series and timestamp.
fn stored_line_key(line: &str) -> Option<(&str, i64)> {
    let b = line.as_bytes();
    let mut i = 0;
    let mut end = None;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b' ' => {
                end = Some(i);
                break;
            }
            _ => {}
        }
        i += 1;
    }
    let series = &line[..end?];
    let ts = line.rsplit(' ').next()?.parse().ok()?;
    Some((series, ts))
}

/// Where a datanode takes the id of a new table from (its metasrv); unset in standalone.
pub static TABLE_IDS: std::sync::OnceLock<Box<dyn Fn() -> Result<u32, String> + Send + Sync>> =
    std::sync::OnceLock::new();

/// One region's part of a scan (see [`Store::region_scans`]).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RegionScan {
    pub region_id: u64,
    pub rows: u64,
    pub files: usize,
    pub memtable: bool,
}

pub fn region_id(table_id: u32, number: u32) -> u64 {
    ((table_id as u64) << 32) | number as u64
}

/// `4398046511104(1024, 0)`, as GreptimeDB displays a RegionId.
pub fn region_display(region_id: u64) -> String {
    format!(
        "{region_id}({}, {})",
        region_id >> 32,
        region_id & 0xffff_ffff
    )
}

fn new_file_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let d = Sha256::digest(format!(
        "{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let h = hex::encode(&d[..16]);
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn io_err(what: &str, e: std::io::Error) -> GtError {
    GtError::new(1003, format!("Failed to {what}: {e}"))
}

/// Writes `bytes` to `path` through a temporary sibling and a rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)
}

/// Reads an SST back into normalised lines (`<series> <fields> <ts>`).
///
/// SST format (a stand-in for Parquet: dictionary-encoded series, so files are smaller than
/// the WAL as real SSTs are): `GTSST 1`, `<n>`, n series lines, then `<series#> <ts> <fields>`
/// per row.
fn read_sst(path: &Path) -> std::io::Result<String> {
    let text = fs::read_to_string(path)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not an SST file");
    let mut lines = text.lines();
    if lines.next() != Some("GTSST 1") {
        return Err(bad());
    }
    let n: usize = lines.next().and_then(|l| l.parse().ok()).ok_or_else(bad)?;
    let series: Vec<&str> = lines.by_ref().take(n).collect();
    let mut out = String::with_capacity(text.len() * 2);
    for l in lines {
        let mut parts = l.splitn(3, ' ');
        let (Some(i), Some(ts), Some(fields)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let s = i
            .parse::<usize>()
            .ok()
            .and_then(|i| series.get(i))
            .ok_or_else(bad)?;
        out.push_str(s);
        out.push(' ');
        out.push_str(fields);
        out.push(' ');
        out.push_str(ts);
        out.push('\n');
    }
    Ok(out)
}

fn lock_file(path: &Path) -> Result<File, String> {
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on a valid, open descriptor.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        return Err(format!(
            "Failed to open log store, lock file {} is held by another process: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(f)
}

fn dir_size(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The tables a data home's catalog holds, as `<db>/<table id>` (their region directories
/// are `data/greptime/<db>/<table id>/...`); empty when it has no catalog yet. A cluster's
/// datanode opens only these regions, so only their objects are its own.
pub fn held_tables(data_home: &Path) -> BTreeSet<String> {
    let Ok(raw) = fs::read(data_home.join(CATALOG_FILE)) else {
        return BTreeSet::new();
    };
    let used = raw.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    let Ok(c) = serde_json::from_slice::<Catalog>(&raw[..used]) else {
        return BTreeSet::new();
    };
    c.databases
        .iter()
        .flat_map(|(db, m)| {
            m.tables
                .values()
                .map(move |t| format!("{db}/{}", t.table_id))
        })
        .collect()
}

impl Store {
    /// Opens (or initialises) the data home: locks it, loads the catalog, every region's
    /// manifest and SSTs, and replays the WAL.
    pub fn open(
        data_home: &Path,
        objects_home: &Path,
        wal_dir: &Path,
        auto_flush_bytes: u64,
        wal_purge_threshold: u64,
    ) -> Result<Store, String> {
        for d in [
            data_home.to_path_buf(),
            data_home.join("metadata"),
            objects_home.join("data/greptime"),
            // Empty in the real layout too (index staging, atomic-write temp).
            data_home.join("index_intermediate"),
            data_home.join("tmp"),
            wal_dir.to_path_buf(),
        ] {
            fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        let locks = vec![
            lock_file(&data_home.join("metadata/LOCK"))?,
            lock_file(&wal_dir.join("LOCK"))?,
        ];
        let cat_path = data_home.join(CATALOG_FILE);
        let catalog = if cat_path.exists() {
            let raw = fs::read(&cat_path)
                .map_err(|e| format!("cannot read {}: {e}", cat_path.display()))?;
            // The preallocated zero tail ends the records; the open truncates it, as
            // raft-engine does ("Truncating log file due to broken batch").
            let used = raw.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
            if used < raw.len() {
                logging::info(
                    "raft_engine::file_pipe_log::pipe_builder",
                    &format!(
                        "Truncating log file due to broken batch (queue=Append,seq=1,offset={used})"
                    ),
                );
                fs::write(&cat_path, &raw[..used])
                    .map_err(|e| format!("cannot truncate {}: {e}", cat_path.display()))?;
            }
            let text = String::from_utf8_lossy(&raw[..used]);
            let mut c: Catalog = serde_json::from_str(&text)
                .map_err(|e| format!("corrupt catalog {}: {e}", cat_path.display()))?;
            for db in c.databases.values_mut() {
                for (name, t) in db.tables.iter_mut() {
                    t.name = name.clone();
                }
            }
            c
        } else {
            let mut c = Catalog {
                next_table_id: 1024,
                databases: BTreeMap::new(),
            };
            c.databases.insert("public".into(), DbMeta::default());
            c
        };
        let mut store = Store {
            data_home: data_home.to_path_buf(),
            objects_home: objects_home.to_path_buf(),
            wal_dir: wal_dir.to_path_buf(),
            auto_flush_bytes,
            twcs_trigger_file_num: TWCS_TRIGGER_FILE_NUM,
            wal_purge_threshold,
            catalog,
            regions: BTreeMap::new(),
            flushed: Vec::new(),
            _locks: locks,
        };
        store.save_catalog().map_err(|e| e.msg)?;
        let regions: Vec<(String, String, u64)> = store
            .catalog
            .databases
            .iter()
            .flat_map(|(db, m)| {
                m.tables.iter().flat_map(move |(t, tm)| {
                    tm.local_regions()
                        .into_iter()
                        .map(move |n| (db.clone(), t.clone(), region_id(tm.table_id, n)))
                })
            })
            .collect();
        for (db, table, id) in regions {
            let region = store
                .load_region(&db, &table, id)
                .map_err(|e| format!("cannot open region {}: {}", region_display(id), e.msg))?;
            store.regions.insert(id, region);
        }
        Ok(store)
    }

    fn save_catalog(&self) -> Result<(), GtError> {
        let mut bytes = serde_json::to_vec_pretty(&self.catalog).unwrap_or_default();
        // raft-engine preallocates its active log file: 2.01 MiB on disk for 22,923 B of
        // records on a real v1.0.2; the tail reads as zeros until written.
        bytes.resize(bytes.len().max(CATALOG_PREALLOCATED), 0);
        write_atomic(&self.data_home.join(CATALOG_FILE), &bytes)
            .map_err(|e| io_err("write the catalog", e))
    }

    /// `data/greptime/<db>/<table_id>/<table_id>_<region_number:010>` (the real layout).
    fn region_dir(&self, db: &str, rid: u64) -> PathBuf {
        let table_id = rid >> 32;
        self.objects_home
            .join("data/greptime")
            .join(db)
            .join(table_id.to_string())
            .join(format!("{table_id}_{:010}", rid & 0xffff_ffff))
    }

    fn wal_path(&self, rid: u64) -> PathBuf {
        self.wal_dir.join(format!("{rid:020}.raftlog"))
    }

    fn load_region(&self, db: &str, table: &str, rid: u64) -> Result<Region, GtError> {
        let table_id = (rid >> 32) as u32;
        let dir = self.region_dir(db, rid);
        let mdir = dir.join("manifest");
        let mut latest: Option<u64> = None;
        if let Ok(rd) = fs::read_dir(&mdir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if let Some(n) = name
                    .strip_suffix(".json")
                    .and_then(|s| s.parse::<u64>().ok())
                {
                    latest = Some(latest.map_or(n, |l| l.max(n)));
                }
            }
        }
        let (m, version) = match latest {
            Some(v) => {
                let p = mdir.join(format!("{v:020}.json"));
                let text = fs::read_to_string(&p).map_err(|e| io_err("read the manifest", e))?;
                let m: RegionManifest = serde_json::from_str(&text)
                    .map_err(|e| GtError::new(1003, format!("corrupt manifest: {e}")))?;
                (m, v)
            }
            None => (
                RegionManifest {
                    region_id: rid,
                    table_id,
                    schema: db.into(),
                    table: table.into(),
                    flushed_wal_offset: 0,
                    flushed_sequence: 0,
                    compaction_time_window: None,
                    files: Vec::new(),
                },
                0,
            ),
        };
        let wal_path = self.wal_path(rid);
        let mut region = Region {
            m,
            manifest_version: version,
            dir,
            wal_path,
            wal_len: 0,
            keys: KeySet::default(),
            sequence: 0,
            written_bytes: 0,
        };
        if latest.is_none() {
            fs::create_dir_all(region.dir.join("manifest"))
                .map_err(|e| io_err("create the region dir", e))?;
            fs::create_dir_all(region.dir.join("index"))
                .map_err(|e| io_err("create the region dir", e))?;
            region.save_manifest()?;
        }
        for f in &region.m.files {
            let text = read_sst(&region.dir.join(format!("{}.parquet", f.file_id)))
                .map_err(|e| io_err(&format!("read SST {}", f.file_id), e))?;
            for line in text.lines() {
                if let Some((s, ts)) = stored_line_key(line) {
                    region.keys.insert(row_key(s, ts));
                }
            }
        }
        region.sequence = region.m.flushed_sequence;
        let mut wal = Vec::new();
        if let Ok(mut f) = File::open(&region.wal_path) {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            region.wal_len = len;
            if region.m.flushed_wal_offset > len {
                // Purged after the manifest was written: nothing of it is unflushed.
                region.m.flushed_wal_offset = len;
            }
            f.seek(SeekFrom::Start(region.m.flushed_wal_offset))
                .and_then(|_| f.read_to_end(&mut wal))
                .map_err(|e| io_err("read the WAL", e))?;
        } else {
            region.m.flushed_wal_offset = 0;
        }
        let mut replayed = 0u64;
        for line in String::from_utf8_lossy(&wal).lines() {
            if let Some((s, ts)) = stored_line_key(line) {
                region.keys.insert(row_key(s, ts));
                replayed += 1;
            }
        }
        region.sequence += replayed;
        logging::info(
            "mito2::region::opener",
            &format!(
                "Replay WAL for region: {}, rows recovered: {replayed}, last entry id: {}",
                region_display(rid),
                region.sequence
            ),
        );
        Ok(region)
    }

    /// Every database, sorted, the system ones included.
    pub fn databases(&self) -> Vec<String> {
        let mut all: BTreeSet<String> = self.catalog.databases.keys().cloned().collect();
        for s in SYSTEM_DATABASES {
            all.insert(s.to_string());
        }
        all.into_iter().collect()
    }

    pub fn has_database(&self, db: &str) -> bool {
        SYSTEM_DATABASES.contains(&db) || self.catalog.databases.contains_key(db)
    }

    pub fn create_database(&mut self, db: &str, if_not_exists: bool) -> Result<u64, GtError> {
        if self.has_database(db) {
            if if_not_exists {
                return Ok(0);
            }
            return Err(GtError::new(1004, format!("Schema {db} already exists")));
        }
        self.catalog
            .databases
            .insert(db.to_string(), DbMeta::default());
        self.save_catalog()?;
        Ok(1)
    }

    pub fn drop_database(&mut self, db: &str, if_exists: bool) -> Result<u64, GtError> {
        if SYSTEM_DATABASES.contains(&db) || db == "public" {
            return Err(GtError::new(
                1004,
                format!("Illegal access to catalog: greptime and schema: {db}"),
            ));
        }
        let Some(meta) = self.catalog.databases.remove(db) else {
            if if_exists {
                return Ok(0);
            }
            return Err(GtError::new(4004, format!("Database not found: {db}")));
        };
        self.save_catalog()?;
        for t in meta.tables.values() {
            for n in t.local_regions() {
                if let Some(r) = self.regions.remove(&region_id(t.table_id, n)) {
                    let _ = fs::remove_file(&r.wal_path);
                }
            }
        }
        let db_dir = self.objects_home.join("data/greptime").join(db);
        super::objstore::delete_tree(&db_dir);
        let _ = fs::remove_dir_all(db_dir);
        Ok(0)
    }

    pub fn tables(&self, db: &str) -> Vec<String> {
        let mut t: Vec<String> = self
            .catalog
            .databases
            .get(db)
            .map(|m| m.tables.keys().cloned().collect())
            .unwrap_or_default();
        if db == "public" {
            t.push("numbers".into());
            t.sort();
        }
        t
    }

    pub fn table(&self, db: &str, table: &str) -> Option<&TableMeta> {
        self.catalog.databases.get(db)?.tables.get(table)
    }

    /// (database, table, meta) for every user table.
    pub fn all_tables(&self) -> Vec<(String, String, TableMeta)> {
        self.catalog
            .databases
            .iter()
            .flat_map(|(db, m)| {
                m.tables
                    .iter()
                    .map(move |(t, tm)| (db.clone(), t.clone(), tm.clone()))
            })
            .collect()
    }

    pub fn row_count(&self, table_id: u32) -> u64 {
        self.table_regions(table_id)
            .map(|r| r.keys.len() as u64)
            .sum()
    }

    /// The regions of a table, by region number.
    fn table_regions(&self, table_id: u32) -> impl Iterator<Item = &Region> {
        self.regions
            .range(region_id(table_id, 0)..=region_id(table_id, u32::MAX))
            .map(|(_, r)| r)
    }

    /// The region ids of a table that are open.
    pub fn region_ids(&self, table_id: u32) -> Vec<u64> {
        self.table_regions(table_id)
            .map(|r| r.m.region_id)
            .collect()
    }

    /// Appends `batches` (table name → rows) to database `db`, creating tables and columns as
    /// GreptimeDB's auto-create does. Returns the number of new (not duplicate) rows.
    pub fn write(
        &mut self,
        db: &str,
        batches: BTreeMap<String, TableBatch>,
    ) -> Result<u64, GtError> {
        if !self.catalog.databases.contains_key(db) {
            return Err(GtError::new(
                1004,
                format!("Failed to find schema, schema info: {db}"),
            ));
        }
        let mut catalog_changed = false;
        let mut new_rows = 0;
        for (table, batch) in batches {
            let exists = self.catalog.databases[db].tables.contains_key(&table);
            let next_id = match TABLE_IDS.get() {
                // A datanode: table ids are global, the metasrv hands them out.
                Some(source) if !exists => source()
                    .map_err(|e| GtError::new(1003, format!("Failed to allocate table id: {e}")))?,
                _ => self.catalog.next_table_id,
            };
            let dbm = self.catalog.databases.get_mut(db).expect("checked above");
            let meta = dbm.tables.entry(table.clone()).or_insert_with(|| {
                catalog_changed = true;
                TableMeta {
                    name: table.clone(),
                    table_id: next_id,
                    tags: Vec::new(),
                    fields: Vec::new(),
                    time_index: TIME_INDEX.into(),
                    partition: None,
                    created: None,
                    hosted: None,
                }
            });
            if meta.table_id == next_id {
                self.catalog.next_table_id = self.catalog.next_table_id.max(next_id + 1);
            }
            for t in &batch.tags {
                if !meta.tags.contains(t) {
                    meta.add_column(t, "String", true);
                    catalog_changed = true;
                }
            }
            for (f, ty) in &batch.fields {
                match meta.fields.iter().find(|(n, _)| n == f) {
                    Some((_, existing)) if existing != ty.name() => {
                        return Err(GtError::new(
                            1004,
                            format!(
                                "Invalid request to region, reason: column {f} expect type {existing}, given: {}",
                                ty.name()
                            ),
                        ));
                    }
                    Some(_) => {}
                    None => {
                        meta.add_column(f, ty.name(), false);
                        catalog_changed = true;
                    }
                }
            }
            let table_id = meta.table_id;
            let rules = meta.rule_set();
            if catalog_changed {
                self.save_catalog()?;
                catalog_changed = false;
            }
            // Each row to its region (a table without rules has one, number 0).
            let parts: Vec<(u32, Vec<u8>, Vec<u64>)> = match &rules {
                None => vec![(0, batch.lines, batch.keys)],
                Some(rules) => split_by_region(rules, &batch.lines, batch.keys),
            };
            for (number, lines, keys) in parts {
                let rid = region_id(table_id, number);
                if !self.regions.contains_key(&rid) {
                    let r = self.load_region(db, &table, rid)?;
                    self.regions.insert(rid, r);
                }
                let auto_flush = self.auto_flush_bytes;
                let region = self.regions.get_mut(&rid).expect("inserted above");
                let mut f = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&region.wal_path)
                    .map_err(|e| io_err("open the WAL", e))?;
                f.write_all(&lines)
                    .map_err(|e| io_err("append to the WAL", e))?;
                region.wal_len += lines.len() as u64;
                region.written_bytes += lines.len() as u64;
                region.sequence += keys.len() as u64;
                for k in keys {
                    if region.keys.insert(k) {
                        new_rows += 1;
                    }
                }
                if region.wal_len - region.m.flushed_wal_offset >= auto_flush {
                    self.flush_region(rid, "EngineFull")?;
                }
            }
        }
        Ok(new_rows)
    }

    /// Creates table `table` in `db` as `CREATE TABLE` declared it, with one region per
    /// partition rule (all opened at once, as the real create does). `Ok(false)`: it existed
    /// and `if_not_exists` was given.
    pub fn create_table(
        &mut self,
        db: &str,
        mut meta: TableMeta,
        if_not_exists: bool,
    ) -> Result<bool, GtError> {
        let Some(dbm) = self.catalog.databases.get(db) else {
            return Err(GtError::new(4004, format!("Database not found: {db}")));
        };
        if dbm.tables.contains_key(&meta.name) {
            if if_not_exists {
                return Ok(false);
            }
            return Err(GtError::new(
                4000,
                format!("Table already exists: `greptime.{db}.{}`", meta.name),
            ));
        }
        meta.table_id = match TABLE_IDS.get() {
            // A table spread over datanodes: the frontend took its id from the metasrv once
            // and gave it to each.
            _ if meta.hosted.is_some() => meta.table_id,
            // A datanode: table ids are global, the metasrv hands them out.
            Some(source) => source()
                .map_err(|e| GtError::new(1003, format!("Failed to allocate table id: {e}")))?,
            None => self.catalog.next_table_id,
        };
        self.catalog.next_table_id = self.catalog.next_table_id.max(meta.table_id + 1);
        let (name, table_id, numbers) = (meta.name.clone(), meta.table_id, meta.local_regions());
        self.catalog
            .databases
            .get_mut(db)
            .expect("checked above")
            .tables
            .insert(name.clone(), meta);
        self.save_catalog()?;
        for n in numbers {
            let rid = region_id(table_id, n);
            let r = self.load_region(db, &name, rid)?;
            self.regions.insert(rid, r);
        }
        Ok(true)
    }

    /// Adds `columns` (name, kind, tag) to table `db.table`, in order (`ALTER TABLE ... ADD
    /// COLUMN`, checked by the caller).
    pub fn add_columns(
        &mut self,
        db: &str,
        table: &str,
        columns: &[(String, String, bool)],
    ) -> Result<(), GtError> {
        let meta = self
            .catalog
            .databases
            .get_mut(db)
            .and_then(|d| d.tables.get_mut(table))
            .ok_or_else(|| GtError::new(4001, format!("Table not found: greptime.{db}.{table}")))?;
        for (name, kind, tag) in columns {
            meta.add_column(name, kind, *tag);
        }
        self.save_catalog()
    }

    /// Flushes the memtable (the unflushed WAL) of every region of a table into a new level-0
    /// SST each (the real `ADMIN FLUSH_TABLE` sends one flush per region).
    pub fn flush(&mut self, table_id: u32) -> Result<(), GtError> {
        for rid in self.region_ids(table_id) {
            self.flush_region(rid, "Manual")?;
        }
        Ok(())
    }

    fn flush_region(&mut self, rid: u64, reason: &str) -> Result<(), GtError> {
        let purge = self.wal_purge_threshold;
        let Some(region) = self.regions.get_mut(&rid) else {
            return Ok(());
        };
        let start = std::time::Instant::now();
        let mut wal = Vec::new();
        if let Ok(mut f) = File::open(&region.wal_path) {
            f.seek(SeekFrom::Start(region.m.flushed_wal_offset))
                .and_then(|_| f.read_to_end(&mut wal))
                .map_err(|e| io_err("read the WAL", e))?;
        }
        let end = region.m.flushed_wal_offset + wal.len() as u64;
        let text = String::from_utf8_lossy(&wal);
        let mut rows: Vec<(i64, &str, &str)> = text
            .lines()
            .filter_map(|l| stored_line_key(l).map(|(s, ts)| (ts, s, l)))
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        rows.sort_by_key(|r| r.0);
        let meta = write_sst(&region.dir, &rows, 0, region.sequence)?;
        let file_id = meta.file_id.clone();
        region.m.files.push(meta);
        region.m.flushed_wal_offset = end;
        region.m.flushed_sequence = region.sequence;
        let shown = region_display(rid);
        region.save_manifest()?;
        if end >= purge && end == region.wal_len {
            if let Ok(f) = OpenOptions::new().write(true).open(&region.wal_path) {
                let _ = f.set_len(0);
            }
            region.wal_len = 0;
            region.m.flushed_wal_offset = 0;
            region.save_manifest()?;
            logging::info(
                "log_store::raft_engine::log_store",
                &format!("Successfully purged WAL of region {shown}"),
            );
        }
        logging::info(
            "mito2::flush",
            &format!(
                "Successfully flushed memtables, region: {shown}, reason: {reason}, files: [{file_id}], cost: {:.3}s",
                start.elapsed().as_secs_f64()
            ),
        );
        self.flushed.push(rid);
        Ok(())
    }

    /// What a compaction of `table_id` would merge, or `None` when the picker finds nothing
    /// to do (real: no plan → the waiter gets `Ok(0)` and no line is logged).
    ///
    /// `strict` (SWCS) rewrites every window that holds data, so it has a plan whenever the
    /// region has SSTs. TWCS merges the files of windows holding two or more files (the real
    /// picker's thresholds differ; guessed from the observed automatic compactions).
    pub fn plan(&self, rid: u64, window: Option<u64>, strict: bool) -> Option<Plan> {
        let region = self.regions.get(&rid)?;
        let files = region.m.files.clone();
        if files.is_empty() {
            return None;
        }
        let window = window
            .or(region.m.compaction_time_window)
            .unwrap_or_else(|| infer_window(&files));
        let w_ns = (window as i64).saturating_mul(1_000_000_000).max(1);
        let bucket = |ts: i64| ts.div_euclid(w_ns);
        let inputs: Vec<SstMeta> = if strict {
            files
        } else {
            // TWCS (v1.0.2 `twcs.rs`): a window is picked when its files overlap in time
            // (several sorted runs to reduce) or when it holds `trigger_file_num` (4) files.
            let mut per: BTreeMap<i64, Vec<&SstMeta>> = BTreeMap::new();
            for f in &files {
                per.entry(bucket(f.time_range.0)).or_default().push(f);
            }
            let picked = |w: &[&SstMeta]| {
                let overlap = w.iter().enumerate().any(|(i, a)| {
                    w[i + 1..].iter().any(|b| {
                        a.time_range.0 <= b.time_range.1 && b.time_range.0 <= a.time_range.1
                    })
                });
                overlap || w.len() >= self.twcs_trigger_file_num
            };
            let chosen: BTreeSet<i64> = per
                .iter()
                .filter(|(_, w)| picked(w))
                .map(|(b, _)| *b)
                .collect();
            files
                .into_iter()
                .filter(|f| chosen.contains(&bucket(f.time_range.0)))
                .collect()
        };
        if inputs.is_empty() {
            return None;
        }
        let windows: BTreeSet<i64> = inputs
            .iter()
            .flat_map(|f| bucket(f.time_range.0)..=bucket(f.time_range.1))
            .collect();
        Some(Plan {
            region_id: rid,
            window,
            strict,
            input_bytes: inputs.iter().map(|f| f.file_size).sum(),
            windows: windows.len().max(1),
            inputs,
        })
    }

    /// Merges the plan's inputs into one new SST per window (written to disk, not yet in the
    /// manifest: see [`Store::commit`]).
    pub fn merge(&self, plan: &Plan) -> Result<Vec<SstMeta>, GtError> {
        let Some(region) = self.regions.get(&plan.region_id) else {
            return Ok(Vec::new());
        };
        let w_ns = (plan.window as i64).saturating_mul(1_000_000_000).max(1);
        let bucket = |ts: i64| ts.div_euclid(w_ns);
        let dir = region.dir.clone();
        let sequence = region.sequence;
        // Later files win on duplicate rows (dedup by series + timestamp).
        let mut texts = Vec::new();
        for f in &plan.inputs {
            texts.push(
                read_sst(&dir.join(format!("{}.parquet", f.file_id)))
                    .map_err(|e| io_err(&format!("read SST {}", f.file_id), e))?,
            );
        }
        let mut latest: std::collections::HashMap<u64, (i64, &str, &str)> =
            std::collections::HashMap::new();
        for t in &texts {
            for l in t.lines() {
                if let Some((s, ts)) = stored_line_key(l) {
                    latest.insert(row_key(s, ts), (ts, s, l));
                }
            }
        }
        let mut by_window: BTreeMap<i64, Vec<(i64, &str, &str)>> = BTreeMap::new();
        for row in latest.into_values() {
            by_window.entry(bucket(row.0)).or_default().push(row);
        }
        let mut outputs = Vec::new();
        for (_, mut rows) in by_window {
            rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
            outputs.push(write_sst(&dir, &rows, 1, sequence)?);
        }
        Ok(outputs)
    }

    /// Replaces the plan's inputs by `outputs` in the manifest and deletes the inputs.
    pub fn commit(&mut self, plan: &Plan, outputs: Vec<SstMeta>) -> Result<(), GtError> {
        let Some(region) = self.regions.get_mut(&plan.region_id) else {
            return Ok(());
        };
        let gone: HashSet<&str> = plan.inputs.iter().map(|f| f.file_id.as_str()).collect();
        region
            .m
            .files
            .retain(|f| !gone.contains(f.file_id.as_str()));
        region.m.files.extend(outputs);
        if plan.strict {
            region.m.compaction_time_window = Some(plan.window);
        }
        region.save_manifest()?;
        for f in &plan.inputs {
            for p in [
                region.dir.join(format!("{}.parquet", f.file_id)),
                region.dir.join(format!("index/{}.puffin", f.file_id)),
            ] {
                let _ = fs::remove_file(&p);
                super::objstore::delete_file(&p);
            }
        }
        Ok(())
    }

    /// The regions flushed since the last call (each flush schedules an automatic compaction).
    pub fn take_flushed(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.flushed)
    }

    /// Unflushed WAL bytes over all regions (what a start replays).
    pub fn unflushed_wal_bytes(&self) -> u64 {
        self.regions
            .values()
            .map(|r| r.wal_len.saturating_sub(r.m.flushed_wal_offset))
            .sum()
    }

    pub fn region_stats(&self) -> Vec<RegionStat> {
        self.regions
            .values()
            .map(|r| {
                let sst_size: u64 = r.m.files.iter().map(|f| f.file_size).sum();
                let index_size: u64 = r.m.files.iter().map(|f| f.index_file_size).sum();
                let manifest_size = dir_size(&r.dir.join("manifest"));
                RegionStat {
                    region_id: r.m.region_id,
                    table_id: r.m.table_id,
                    region_rows: r.keys.len() as u64,
                    written_bytes: r.written_bytes,
                    disk_size: sst_size + index_size + manifest_size,
                    memtable_size: r.wal_len.saturating_sub(r.m.flushed_wal_offset),
                    manifest_size,
                    sst_size,
                    sst_num: r.m.files.len() as u64,
                    index_size,
                }
            })
            .collect()
    }

    /// Sets TWCS's `trigger_file_num` (a table option on the real server).
    pub fn set_twcs_trigger_file_num(&mut self, n: usize) {
        self.twcs_trigger_file_num = n.max(1);
    }

    /// `information_schema.ssts_manifest`: every SST file the manifests list, with its path
    /// relative to the data home (`data/greptime/<db>/<table id>/<region dir>/<id>.parquet`).
    pub fn ssts_manifest(&self) -> Vec<(String, u32, u64, SstMeta, String)> {
        let mut out = Vec::new();
        for r in self.regions.values() {
            let rel = self.relative(&r.dir);
            let table_dir = rel.rsplit_once('/').map_or("", |(d, _)| d).to_string() + "/";
            for f in &r.m.files {
                out.push((
                    table_dir.clone(),
                    r.m.table_id,
                    r.m.region_id,
                    f.clone(),
                    format!("{rel}/{}.parquet", f.file_id),
                ));
            }
        }
        out
    }

    /// `information_schema.ssts_storage`: every SST and index file in the region directories,
    /// listed or not (outputs of a compaction whose manifest update failed are here only).
    pub fn ssts_storage(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in self.regions.values() {
            let rel = self.relative(&r.dir);
            let mut names: Vec<String> = fs::read_dir(&r.dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".parquet"))
                .map(|n| format!("{rel}/{n}"))
                .collect();
            names.extend(
                fs::read_dir(r.dir.join("index"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.ends_with(".puffin"))
                    .map(|n| format!("{rel}/index/{n}")),
            );
            names.sort();
            out.extend(names);
        }
        out
    }

    fn relative(&self, dir: &Path) -> String {
        dir.strip_prefix(&self.objects_home)
            .unwrap_or(dir)
            .to_string_lossy()
            .into_owned()
    }

    /// The SST files of a table (for EXPLAIN output).
    /// What a scan of each open region of `table_id` reads, for EXPLAIN ANALYZE: region id,
    /// rows, SST files, and whether its memtable holds rows.
    pub fn region_scans(&self, table_id: u32) -> Vec<RegionScan> {
        self.table_regions(table_id)
            .map(|r| RegionScan {
                region_id: r.m.region_id,
                rows: r.keys.len() as u64,
                files: r.m.files.len(),
                memtable: r.wal_len > r.m.flushed_wal_offset,
            })
            .collect()
    }

    /// What a query of `table_id` reads: the normalised lines (`<series> <fields> <ts>`) of
    /// its SSTs, oldest sequence first, then of the unflushed WAL (later lines win on a
    /// duplicate series + timestamp, as the real merge reader dedups).
    pub fn scan_lines(&self, table_id: u32) -> Result<Vec<String>, GtError> {
        let mut out = Vec::new();
        // A series lives in one region, so reading the regions one after the other keeps
        // the dedup of each.
        for region in self.table_regions(table_id) {
            out.extend(Self::scan_region(region)?);
        }
        Ok(out)
    }

    fn scan_region(region: &Region) -> Result<Vec<String>, GtError> {
        let mut files = region.m.files.clone();
        files.sort_by_key(|f| f.sequence);
        let mut out = Vec::new();
        for f in &files {
            let text = read_sst(&region.dir.join(format!("{}.parquet", f.file_id)))
                .map_err(|e| io_err(&format!("read SST {}", f.file_id), e))?;
            out.extend(text.lines().map(str::to_string));
        }
        let mut wal = Vec::new();
        if let Ok(mut f) = File::open(&region.wal_path) {
            f.seek(SeekFrom::Start(region.m.flushed_wal_offset))
                .and_then(|_| f.read_to_end(&mut wal))
                .map_err(|e| io_err("read the WAL", e))?;
        }
        out.extend(String::from_utf8_lossy(&wal).lines().map(str::to_string));
        Ok(out)
    }

    /// Changes whenever what [`Store::scan_lines`] reads may have changed.
    pub fn scan_version(&self, table_id: u32) -> String {
        let each: Vec<String> = self
            .table_regions(table_id)
            .map(|r| {
                let ids: Vec<&str> = r.m.files.iter().map(|f| f.file_id.as_str()).collect();
                format!(
                    "{}:{}:{}:{}:{}",
                    r.dir.display(),
                    r.wal_len,
                    r.m.flushed_wal_offset,
                    r.sequence,
                    ids.join(",")
                )
            })
            .collect();
        each.join(";")
    }
}

/// Splits a write's normalised lines (and their row keys) by the region each row goes to.
fn split_by_region(rules: &RuleSet, lines: &[u8], keys: Vec<u64>) -> Vec<(u32, Vec<u8>, Vec<u64>)> {
    let mut by: BTreeMap<u32, (Vec<u8>, Vec<u64>)> = BTreeMap::new();
    let text = String::from_utf8_lossy(lines);
    for (line, key) in text.split_inclusive('\n').zip(keys) {
        let series = stored_line_key(line.trim_end_matches('\n')).map_or("", |(s, _)| s);
        let number = region_of(rules, &|c| series_tag(series, c));
        let e = by.entry(number).or_default();
        e.0.extend_from_slice(line.as_bytes());
        e.1.push(key);
    }
    by.into_iter().map(|(n, (l, k))| (n, l, k)).collect()
}

/// The value of tag `name` in a series (`measurement,k=v,k=v`, line-protocol escapes).
pub fn series_tag(series: &str, name: &str) -> Option<String> {
    use super::lineproto::{split_unescaped, unescape};
    split_unescaped(series, b',', false)
        .into_iter()
        .skip(1)
        .find_map(|kv| match split_unescaped(kv, b'=', false)[..] {
            [k, v] if unescape(k) == name => Some(unescape(v)),
            _ => None,
        })
}

impl Region {
    fn save_manifest(&mut self) -> Result<(), GtError> {
        self.manifest_version += 1;
        let mdir = self.dir.join("manifest");
        let bytes = serde_json::to_vec(&self.m).unwrap_or_default();
        let path = mdir.join(format!("{:020}.json", self.manifest_version));
        write_atomic(&path, &bytes).map_err(|e| io_err("write the manifest", e))?;
        super::objstore::put_file(&path).map_err(|e| GtError::new(1003, e))?;
        // Keep the last few deltas, as a checkpointed manifest would.
        if self.manifest_version > 10 {
            let old = mdir.join(format!("{:020}.json", self.manifest_version - 10));
            let _ = fs::remove_file(&old);
            super::objstore::delete_file(&old);
        }
        Ok(())
    }
}

/// The TWCS picker's default `trigger_file_num` (v1.0.2 `region/options.rs`).
const TWCS_TRIGGER_FILE_NUM: usize = 4;

/// TWCS-style window inference: the smallest bucket that holds the widest file.
fn infer_window(files: &[SstMeta]) -> u64 {
    let span = files
        .iter()
        .map(|f| (f.time_range.1 - f.time_range.0).max(0) as u64 / 1_000_000_000)
        .max()
        .unwrap_or(0);
    [3600u64, 7200, 43200, 86400, 604800, 31536000]
        .into_iter()
        .find(|w| *w > span)
        .unwrap_or(31536000)
}

fn file_meta_debug(region_id: u64, f: &SstMeta) -> String {
    format!(
        "FileMeta {{ region_id: {}, file_id: FileId({}), time_range: ({}::Nanosecond, {}::Nanosecond), level: {}, file_size: {}, available_indexes: [Inverted], index_file_size: {}, num_rows: {}, num_row_groups: 1, sequence: Some({}) }}",
        region_display(region_id),
        f.file_id,
        f.time_range.0,
        f.time_range.1,
        f.level,
        f.file_size,
        f.index_file_size,
        f.num_rows,
        f.sequence
    )
}

/// Writes sorted rows as one SST (`<id>.parquet`, compressed rows) plus its index
/// (`index/<id>.puffin`, the distinct series).
fn write_sst(
    dir: &Path,
    rows: &[(i64, &str, &str)],
    level: u8,
    sequence: u64,
) -> Result<SstMeta, GtError> {
    let file_id = new_file_id();
    let mut dict: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut names: Vec<&str> = Vec::new();
    let mut body = String::new();
    for (ts, series, line) in rows {
        let idx = *dict.entry(series).or_insert_with(|| {
            names.push(series);
            names.len() - 1
        });
        let fields = line
            .get(series.len() + 1..)
            .and_then(|rest| rest.rsplit_once(' '))
            .map_or("", |(f, _)| f);
        body.push_str(&format!("{idx} {ts} {fields}\n"));
    }
    let mut data = format!("GTSST 1\n{}\n", names.len());
    for n in &names {
        data.push_str(n);
        data.push('\n');
    }
    data.push_str(&body);
    let data = data.into_bytes();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    let index = sorted.join("\n").into_bytes();
    fs::create_dir_all(dir.join("index")).map_err(|e| io_err("create the index dir", e))?;
    let (sst, puffin) = (
        dir.join(format!("{file_id}.parquet")),
        dir.join(format!("index/{file_id}.puffin")),
    );
    write_atomic(&sst, &data).map_err(|e| io_err("write an SST", e))?;
    write_atomic(&puffin, &index).map_err(|e| io_err("write an index file", e))?;
    // Object storage: the files count once they are in the bucket.
    for p in [&sst, &puffin] {
        super::objstore::put_file(p).map_err(|e| GtError::new(1003, e))?;
    }
    Ok(SstMeta {
        file_id,
        level,
        time_range: (rows[0].0, rows[rows.len() - 1].0),
        num_rows: rows.len() as u64,
        file_size: data.len() as u64,
        index_file_size: index.len() as u64,
        sequence,
    })
}
