//! The emulated write buffer: catalog, WAL files per flush, Parquet-like snapshot files, and
//! the rows kept in memory for queries. Everything lives in the object store (the data dir, or
//! an S3 bucket: [`super::objects`]), or nowhere with `--object-store=memory`.

use super::lp::{self, Field, Line};
use super::objects::Objects;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

pub const INTERNAL_DB: &str = "_internal";
const WAL_MAGIC: &[u8] = b"idb3.001\n";
/// `--snapshotted-wal-files-to-keep` default (src `serve.rs`: 300).
const SNAPSHOTTED_WAL_KEPT: u64 = 300;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Catalog {
    pub catalog_uuid: String,
    next_db_id: u32,
    next_table_id: u32,
    pub databases: Vec<DbEntry>,
    /// `pachatree` for an Enterprise cluster created on 3.11 or later (the upgraded engine:
    /// WAL and data in `.pt` files); absent for the Parquet engine (Core, older clusters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_engine: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DbEntry {
    pub id: u32,
    pub name: String,
    pub deleted: bool,
    pub hard_deleted: bool,
    pub deleted_at: Option<String>,
    pub tables: Vec<TableEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableEntry {
    pub id: u32,
    pub name: String,
    pub columns: Vec<Column>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    /// `tag`, `time`, or the field type (`float`, `integer`, `uinteger`, `string`, `boolean`).
    pub kind: String,
}

/// A tag set shared by every row of one series (keeps memory small for TSBS-sized data).
#[derive(Debug)]
pub struct Series {
    pub tags: Vec<(Arc<str>, Arc<str>)>,
}

/// One stored row: time, series, and fields by column index (see [`TableData::field_index`]).
#[derive(Debug)]
pub struct Row {
    pub time: i64,
    pub series: Arc<Series>,
    pub fields: Box<[(u16, Field)]>,
}

/// Rows of one table; `persisted` rows are already in snapshot files.
#[derive(Debug, Default)]
pub struct TableData {
    pub rows: Vec<Row>,
    /// `rows[persisted..]` as normalised line protocol (ns timestamps), for WAL and snapshots.
    texts: Vec<String>,
    persisted: usize,
    /// Every snapshot (Parquet) file of this table that has landed: what Core's query file
    /// limit counts and `system.parquet_files` lists.
    pub files: Vec<FileMeta>,
    /// The snapshot being persisted in the background, if any (see [`Snapshotting`]).
    snapshotting: Option<Snapshotting>,
    series: HashMap<String, Arc<Series>>,
    names: Vec<Arc<str>>,
    name_idx: HashMap<Arc<str>, u16>,
}

/// A landed Parquet file, as `system.parquet_files` lists it.
#[derive(Debug, Clone)]
pub struct FileMeta {
    pub path: String,
    pub size_bytes: u64,
    pub row_count: u64,
    pub min_time: i64,
    pub max_time: i64,
}

/// Rows `[lo, hi)` are in a snapshot whose files are still being written, one gen1 window per
/// file. As real Core 3.10.1 (`queryable_buffer.rs:358-366`), the first file that lands clears
/// *all* of the table's snapshotting chunks from the queryable buffer, so from then until its
/// window's file lands a row of a pending window is invisible to queries: acknowledged durable
/// rows dip from `count(*)` while a snapshot persists.
#[derive(Debug)]
struct Snapshotting {
    lo: usize,
    hi: usize,
    gen1_ns: i64,
    pending: std::collections::BTreeSet<i64>,
    any_landed: bool,
}

impl TableData {
    /// Whether row `i` is visible to queries now.
    pub fn visible(&self, i: usize) -> bool {
        match &self.snapshotting {
            Some(s) if s.any_landed && (s.lo..s.hi).contains(&i) => {
                let t = self.rows[i].time;
                !s.pending.contains(&(t - t.rem_euclid(s.gen1_ns)))
            }
            _ => true,
        }
    }

    /// The rows queries see (all of them unless a snapshot is persisting).
    pub fn visible_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .enumerate()
            .filter(|(i, _)| self.visible(*i))
            .map(|(_, r)| r)
    }

    fn intern(&mut self, line: Line) -> Row {
        let mut key = String::new();
        for (k, v) in &line.tags {
            key.push_str(k);
            key.push('\u{1}');
            key.push_str(v);
            key.push('\u{2}');
        }
        let series = match self.series.get(&key) {
            Some(s) => s.clone(),
            None => {
                let s = Arc::new(Series {
                    tags: line
                        .tags
                        .iter()
                        .map(|(k, v)| (Arc::from(k.as_str()), Arc::from(v.as_str())))
                        .collect(),
                });
                self.series.insert(key, s.clone());
                s
            }
        };
        let mut fields = Vec::with_capacity(line.fields.len());
        for (name, value) in line.fields {
            let idx = match self.name_idx.get(name.as_str()) {
                Some(i) => *i,
                None => {
                    let i = self.names.len() as u16;
                    let n: Arc<str> = Arc::from(name.as_str());
                    self.names.push(n.clone());
                    self.name_idx.insert(n, i);
                    i
                }
            };
            fields.push((idx, value));
        }
        Row {
            time: line.timestamp.unwrap_or(0),
            series,
            fields: fields.into_boxed_slice(),
        }
    }

    /// Appends a row not yet in a snapshot file.
    fn push(&mut self, line: Line, text: String) {
        let row = self.intern(line);
        self.rows.push(row);
        self.texts.push(text);
    }

    /// Appends a row read back from a snapshot file (before any unpersisted row).
    fn push_persisted(&mut self, line: Line) {
        let row = self.intern(line);
        self.rows.push(row);
        self.persisted += 1;
    }

    /// Builds table data from parsed lines (tests).
    #[cfg(test)]
    pub(crate) fn from_lines(lines: Vec<Line>) -> TableData {
        let mut td = TableData::default();
        for l in lines {
            td.push(l, String::new());
        }
        td
    }

    pub fn field_index(&self, name: &str) -> Option<u16> {
        self.name_idx.get(name).copied()
    }

    /// The value of `column` in `row` (tags as strings).
    pub fn value_of<'a>(&self, row: &'a Row, column: &str) -> Option<ValueRef<'a>> {
        if let Some((_, v)) = row.series.tags.iter().find(|(k, _)| &**k == column) {
            return Some(ValueRef::Tag(v));
        }
        let idx = self.field_index(column)?;
        row.fields
            .iter()
            .find(|(i, _)| *i == idx)
            .map(|(_, v)| ValueRef::Field(v))
    }
}

/// One write batch in a WAL file. On disk: `@op <json header>` then `lines` lines of line
/// protocol (plain text, so the WAL is as big as the data, like the real one).
#[derive(Debug, Serialize, Deserialize)]
struct WalOp {
    db_id: u32,
    db: String,
    #[serde(skip)]
    lines: Vec<String>,
    #[serde(rename = "lines")]
    count: usize,
    /// The parsed rows by table id: they reach the queryable buffer only when this op's WAL
    /// file is written, as on the real server (a `no_sync` write is acknowledged before).
    #[serde(skip)]
    rows: Vec<(u32, Line, String)>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SnapshotInfo {
    snapshot_sequence: u64,
    wal_file_sequence_number: u64,
    files: Vec<ParquetEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ParquetEntry {
    db_id: u32,
    table_id: u32,
    path: String,
    row_count: usize,
    min_time: i64,
    max_time: i64,
    size_bytes: u64,
}

/// `(db id, db name, [(table id, table name)])`.
type DbTables = (u32, String, Vec<(u32, String)>);

struct Inner {
    catalog: Catalog,
    data: HashMap<u32, HashMap<u32, TableData>>,
    pending: Vec<WalOp>,
    flushes: u64,
    wal_seq: u64,
    snapshot_seq: u64,
    wal_since_snapshot: u64,
    file_seq: u64,
    /// Files of the snapshot in flight not yet written (background persistence).
    persist_queue: std::collections::VecDeque<PersistJob>,
    /// The snapshot in flight: its info, completed as its files land.
    in_flight: Option<SnapshotInfo>,
}

/// One file of a snapshot to write: one gen1 window of one table.
#[derive(Debug)]
struct PersistJob {
    db_id: u32,
    table_id: u32,
    window: i64,
    rel: String,
    text: String,
    rows: u64,
    min_time: i64,
    max_time: i64,
}

/// Where files go: `<catalog prefix>/catalog/...` and `<node-id>/...`, as keys of the object
/// store (a directory, or a bucket).
#[derive(Debug, Clone)]
pub struct Layout {
    pub objects: Objects,
    pub node_id: String,
    pub catalog_prefix: String,
}

impl Layout {
    /// The key of `rel` under the node's directory.
    fn node(&self, rel: &str) -> String {
        format!("{}/{rel}", self.node_id)
    }
    fn catalog_key(&self) -> String {
        format!("{}/catalog/checkpoint", self.catalog_prefix)
    }
    /// Reads an object that must be there.
    fn read(&self, key: &str) -> Result<Vec<u8>, String> {
        self.objects
            .get(key)?
            .ok_or_else(|| format!("object {key} is missing"))
    }
}

pub struct Store {
    inner: Mutex<Inner>,
    flushed: Condvar,
    layout: Option<Layout>,
    gen1_ns: i64,
    snapshot_after: u64,
    /// How long each file of a snapshot takes to persist (knob; zero: all at once, in the flush).
    persist_per_file: Duration,
    /// Bytes of WAL files replayed at open.
    pub replayed_wal_bytes: u64,
}

/// One rejected line, reported in the write error bodies.
#[derive(Debug, Clone)]
pub struct LineError {
    pub line_number: usize,
    pub original_line: String,
    pub error_message: String,
}

pub enum WriteOutcome {
    /// Written; durable once flush number `batch` is done. `errors` are skipped lines.
    Written { batch: u64, errors: Vec<LineError> },
    /// Nothing written because of these errors.
    Rejected(Vec<LineError>),
    /// The database is soft-deleted.
    Deleted,
}

pub enum AdminError {
    Exists,
    NotFound,
    Invalid(String),
}

pub fn valid_db_name(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    name.len() <= 511
        && first.is_ascii_alphanumeric()
        && name.matches('/').count() <= 1
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/'))
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).expect("in-memory gzip");
    enc.finish().expect("in-memory gzip")
}

fn gunzip(data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// The sequence number a file name starts with (`00000000012.wal` → 12).
fn seq_of(key: &str) -> u64 {
    key.rsplit('/')
        .next()
        .and_then(|n| n.split('.').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

impl Store {
    /// Opens (or creates) the store: catalog, snapshot files, then WAL replay.
    /// `new_engine`: a catalog created now uses the upgraded (`.pt`) engine.
    pub fn open(
        layout: Option<Layout>,
        gen1_minutes: u64,
        snapshot_after: u64,
        new_engine: bool,
    ) -> Result<Store, String> {
        let stored = match &layout {
            Some(l) => l.objects.get(&l.catalog_key())?,
            None => None,
        };
        let catalog = match (&layout, stored) {
            (Some(l), Some(text)) => serde_json::from_slice(&text)
                .map_err(|e| format!("catalog {} is corrupt: {e}", l.catalog_key()))?,
            _ => Catalog {
                catalog_uuid: super::uuid(4),
                storage_engine: new_engine.then(|| "pachatree".to_string()),
                next_db_id: 1,
                next_table_id: 0,
                databases: vec![DbEntry {
                    id: 0,
                    name: INTERNAL_DB.into(),
                    deleted: false,
                    hard_deleted: false,
                    deleted_at: None,
                    tables: vec![],
                }],
            },
        };
        let mut replayed = 0;
        let mut inner = Inner {
            catalog,
            data: HashMap::new(),
            pending: vec![],
            flushes: 0,
            wal_seq: 0,
            snapshot_seq: 0,
            wal_since_snapshot: 0,
            file_seq: 0,
            persist_queue: Default::default(),
            in_flight: None,
        };
        if let Some(l) = &layout {
            l.objects.put(
                &l.catalog_key(),
                &serde_json::to_vec_pretty(&inner.catalog).unwrap(),
            )?;
            let ext = file_ext(&inner.catalog);
            replayed = load_files(l, &mut inner, ext)?;
        }
        Ok(Store {
            inner: Mutex::new(inner),
            flushed: Condvar::new(),
            layout,
            gen1_ns: (gen1_minutes.max(1) * 60_000_000_000) as i64,
            snapshot_after: snapshot_after.max(1),
            persist_per_file: Duration::ZERO,
            replayed_wal_bytes: replayed,
        })
    }

    /// Each file of a snapshot takes `d` to persist, in the background ([`Store::persist_next`]).
    pub fn with_persist_per_file(mut self, d: Duration) -> Store {
        self.persist_per_file = d;
        self
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn catalog_uuid(&self) -> String {
        self.lock().catalog.catalog_uuid.clone()
    }

    fn save_catalog(&self, inner: &Inner) -> Result<(), String> {
        match &self.layout {
            Some(l) => l.objects.put(
                &l.catalog_key(),
                &serde_json::to_vec_pretty(&inner.catalog).unwrap(),
            ),
            None => Ok(()),
        }
    }

    /// `(name, deleted)` for the list endpoint; `_internal` first.
    pub fn list(&self, show_deleted: bool) -> Vec<(String, bool)> {
        let inner = self.lock();
        inner
            .catalog
            .databases
            .iter()
            .filter(|d| !d.hard_deleted && (show_deleted || !d.deleted))
            .map(|d| (d.name.clone(), d.deleted))
            .collect()
    }

    pub fn create(&self, name: &str) -> Result<(), AdminError> {
        if !valid_db_name(name) {
            return Err(AdminError::Invalid(format!(
                "invalid character in database or rp name: {name}"
            )));
        }
        let mut inner = self.lock();
        if live_db(&inner.catalog, name).is_some() {
            return Err(AdminError::Exists);
        }
        retire_name(&mut inner.catalog, name);
        add_db(&mut inner.catalog, name);
        self.save_catalog(&inner).map_err(AdminError::Invalid)?;
        Ok(())
    }

    /// Deletes `name`; `hard` also removes its files and frees it for good.
    pub fn delete(&self, name: &str, hard: bool) -> Result<(), AdminError> {
        if name == INTERNAL_DB {
            return Err(AdminError::Invalid(format!(
                "cannot delete internal database {name}"
            )));
        }
        let mut inner = self.lock();
        let Some(idx) = inner
            .catalog
            .databases
            .iter()
            .position(|d| d.name == name && !d.deleted && !d.hard_deleted)
        else {
            return Err(AdminError::NotFound);
        };
        let id = inner.catalog.databases[idx].id;
        {
            let db = &mut inner.catalog.databases[idx];
            db.deleted = true;
            db.hard_deleted = hard;
            db.deleted_at = Some(super::timestamp());
        }
        inner.data.remove(&id);
        inner.pending.retain(|op| op.db_id != id);
        self.save_catalog(&inner).map_err(AdminError::Invalid)?;
        if hard {
            if let Some(l) = &self.layout {
                l.objects.delete_all(&l.node(&format!("dbs/{id}/")));
            }
        }
        Ok(())
    }

    /// Validates and applies a write. `lines`: `(line_number, original, parsed)`.
    pub fn write(
        &self,
        db_name: &str,
        lines: Vec<(usize, &str, Result<Line, String>)>,
        precision: &str,
        accept_partial: bool,
        now_ns: i64,
    ) -> Result<WriteOutcome, String> {
        let mut inner = self.lock();
        let db_idx = live_db(&inner.catalog, db_name);
        if db_idx.is_none()
            && inner
                .catalog
                .databases
                .iter()
                .any(|d| d.name == db_name && d.deleted && !d.hard_deleted)
        {
            return Ok(WriteOutcome::Deleted);
        }
        // Schema seen so far (table -> column -> kind): catalog plus this batch's new columns.
        let mut schema: HashMap<String, HashMap<String, String>> = HashMap::new();
        if let Some(i) = db_idx {
            for t in &inner.catalog.databases[i].tables {
                let cols = schema.entry(t.name.clone()).or_default();
                for c in &t.columns {
                    cols.insert(c.name.clone(), c.kind.clone());
                }
            }
        }
        // Columns (and tables) this batch adds, in first-seen order.
        let mut new_columns: Vec<(String, String, String)> = Vec::new();
        // (line, normalised text when the original already is normalised)
        let mut good: Vec<(Line, Option<&str>)> = Vec::new();
        let mut errors: Vec<LineError> = Vec::new();
        for (line_number, original, parsed) in lines {
            let err = |m: String| LineError {
                line_number,
                original_line: original.to_string(),
                error_message: m,
            };
            let mut line = match parsed {
                Ok(l) => l,
                Err(m) => {
                    errors.push(err(m));
                    continue;
                }
            };
            let given_ns =
                line.timestamp.is_some() && matches!(precision, "nanosecond" | "ns" | "n");
            let ts = match line.timestamp {
                Some(t) => match lp::to_nanos(t, precision) {
                    Some(ns) => ns,
                    None => {
                        errors.push(err(format!(
                            "timestamp {t} is out of range for precision {precision}"
                        )));
                        continue;
                    }
                },
                None => now_ns,
            };
            line.timestamp = Some(ts);
            let known = schema.get(line.measurement.as_str());
            let mut problem = None;
            let mut additions: Vec<(&str, &'static str)> = vec![];
            for (k, _) in &line.tags {
                match known.and_then(|m| m.get(k.as_str())) {
                    Some(kind) if kind != "tag" => {
                        problem = Some(format!(
                            "invalid column type for column '{k}', expected iox::column_type::field::{kind}, got iox::column_type::tag"
                        ))
                    }
                    Some(_) => {}
                    None => additions.push((k, "tag")),
                }
            }
            for (k, v) in &line.fields {
                match known.and_then(|m| m.get(k.as_str())) {
                    Some(kind) if kind != v.type_name() => {
                        let expected = if kind == "tag" {
                            "iox::column_type::tag".to_string()
                        } else {
                            format!("iox::column_type::field::{kind}")
                        };
                        problem = Some(format!(
                            "invalid column type for column '{k}', expected {expected}, got iox::column_type::field::{}",
                            v.type_name()
                        ))
                    }
                    Some(_) => {}
                    None => additions.push((k, v.type_name())),
                }
            }
            if let Some(p) = problem {
                errors.push(err(p));
                continue;
            }
            if known.is_none() || !additions.is_empty() {
                let cols = schema.entry(line.measurement.clone()).or_default();
                if cols.is_empty() {
                    cols.insert("time".into(), "time".into());
                    new_columns.push((line.measurement.clone(), "time".into(), "time".into()));
                }
                for (k, kind) in additions {
                    cols.insert(k.to_string(), kind.to_string());
                    new_columns.push((line.measurement.clone(), k.to_string(), kind.to_string()));
                }
            }
            good.push((line, given_ns.then(|| original.trim())));
        }
        if !errors.is_empty() && !accept_partial {
            return Ok(WriteOutcome::Rejected(errors));
        }
        if good.is_empty() {
            return Ok(WriteOutcome::Rejected(errors));
        }
        let db_i = match db_idx {
            Some(i) => i,
            None => {
                retire_name(&mut inner.catalog, db_name);
                add_db(&mut inner.catalog, db_name)
            }
        };
        let catalog_changed = db_idx.is_none() || !new_columns.is_empty();
        let db_id = inner.catalog.databases[db_i].id;
        {
            let cat = &mut inner.catalog;
            let db = &mut cat.databases[db_i];
            for (table, col, kind) in new_columns {
                let t_idx = match db.tables.iter().position(|t| t.name == table) {
                    Some(t) => t,
                    None => {
                        db.tables.push(TableEntry {
                            id: cat.next_table_id,
                            name: table.clone(),
                            columns: vec![],
                        });
                        cat.next_table_id += 1;
                        db.tables.len() - 1
                    }
                };
                db.tables[t_idx].columns.push(Column { name: col, kind });
            }
        }
        let table_ids: HashMap<String, u32> = inner.catalog.databases[db_i]
            .tables
            .iter()
            .map(|t| (t.name.clone(), t.id))
            .collect();
        let mut rendered = Vec::with_capacity(good.len());
        let mut rows = Vec::with_capacity(good.len());
        for (line, text) in good {
            let text = match text {
                Some(t) => t.to_string(),
                None => line.render(line.timestamp.unwrap_or(now_ns)),
            };
            rendered.push(text.clone());
            let table_id = table_ids[line.measurement.as_str()];
            rows.push((table_id, line, text));
        }
        if catalog_changed {
            self.save_catalog(&inner)?;
        }
        inner.pending.push(WalOp {
            db_id,
            db: db_name.to_string(),
            count: rendered.len(),
            lines: rendered,
            rows,
        });
        Ok(WriteOutcome::Written {
            batch: inner.flushes + 1,
            errors,
        })
    }

    /// Writes pending operations to one WAL file, then makes their rows queryable;
    /// snapshots when enough WAL files have accumulated.
    pub fn flush(&self) -> Result<(), String> {
        let mut inner = self.lock();
        if inner.pending.is_empty() {
            return Ok(());
        }
        let mut ops = std::mem::take(&mut inner.pending);
        if let Some(l) = &self.layout {
            inner.wal_seq += 1;
            let mut bytes = WAL_MAGIC.to_vec();
            bytes.extend(format!("{{\"sequence\":{}}}\n", inner.wal_seq).into_bytes());
            for op in &ops {
                bytes.extend(b"@op ");
                bytes.extend(serde_json::to_vec(op).unwrap());
                bytes.push(b'\n');
                for l in &op.lines {
                    bytes.extend(l.as_bytes());
                    bytes.push(b'\n');
                }
            }
            let key = l.node(&format!(
                "wal/{:011}.{}",
                inner.wal_seq,
                file_ext(&inner.catalog).0
            ));
            l.objects.put(&key, &bytes)?;
            inner.wal_since_snapshot += 1;
        }
        for op in &mut ops {
            let tables = inner.data.entry(op.db_id).or_default();
            for (table_id, line, text) in op.rows.drain(..) {
                tables.entry(table_id).or_default().push(line, text);
            }
        }
        inner.flushes += 1;
        self.flushed.notify_all();
        // One snapshot at a time: the next waits until the one in flight has landed.
        if inner.wal_since_snapshot >= self.snapshot_after && inner.in_flight.is_none() {
            self.snapshot_locked(&mut inner)?;
        }
        Ok(())
    }

    /// Waits until flush number `batch` happened (or `stop` is set).
    pub fn wait_flushed(&self, batch: u64, stop: &AtomicBool) {
        let mut inner = self.lock();
        while inner.flushes < batch && !stop.load(Ordering::SeqCst) {
            inner = self
                .flushed
                .wait_timeout(inner, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Graceful shutdown: flush the WAL buffer only. As real Core
    /// (`influxdb3_wal/src/object_store.rs` `shutdown` → `flush_buffer(false)`), nothing is
    /// snapshotted to Parquet unless a snapshot is due anyway, so a short load leaves WAL files.
    pub fn shutdown(&self) -> Result<(), String> {
        self.flush()
    }

    /// Plans a snapshot of every unpersisted row (one file per table and gen1 window, named
    /// as real Core: `dbs/<db id>/<table id>/<YYYY-MM-DD>/<HH-MM>/<last WAL seq:010>.parquet`)
    /// and persists it: at once, or file by file in the background when persisting is slow.
    fn snapshot_locked(&self, inner: &mut Inner) -> Result<(), String> {
        if self.layout.is_none() {
            return Ok(());
        }
        let dbs: Vec<DbTables> = inner
            .catalog
            .databases
            .iter()
            .filter(|d| !d.deleted)
            .map(|d| {
                (
                    d.id,
                    d.name.clone(),
                    d.tables.iter().map(|t| (t.id, t.name.clone())).collect(),
                )
            })
            .collect();
        let wal_seq = inner.wal_seq;
        let ext = file_ext(&inner.catalog).1;
        let mut jobs = Vec::new();
        for (db_id, _, tables) in dbs {
            for (table_id, _) in tables {
                let Some(td) = inner
                    .data
                    .get_mut(&db_id)
                    .and_then(|m| m.get_mut(&table_id))
                else {
                    continue;
                };
                if td.persisted >= td.rows.len() {
                    continue;
                }
                let mut windows: std::collections::BTreeMap<i64, Vec<(i64, &str)>> =
                    Default::default();
                for (row, text) in td.rows[td.persisted..].iter().zip(&td.texts) {
                    let t = row.time;
                    windows
                        .entry(t - t.rem_euclid(self.gen1_ns))
                        .or_default()
                        .push((t, text));
                }
                for (start, rows) in &windows {
                    let when = time::OffsetDateTime::from_unix_timestamp_nanos(*start as i128)
                        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
                    let rel = format!(
                        "dbs/{db_id}/{table_id}/{:04}-{:02}-{:02}/{:02}-{:02}/{wal_seq:010}.{ext}",
                        when.year(),
                        u8::from(when.month()),
                        when.day(),
                        when.hour(),
                        when.minute(),
                    );
                    let text: Vec<&str> = rows.iter().map(|(_, t)| *t).collect();
                    jobs.push(PersistJob {
                        db_id,
                        table_id,
                        window: *start,
                        rel,
                        text: text.join("\n"),
                        rows: rows.len() as u64,
                        min_time: rows.iter().map(|(t, _)| *t).min().unwrap_or(0),
                        max_time: rows.iter().map(|(t, _)| *t).max().unwrap_or(0),
                    });
                }
                td.snapshotting = Some(Snapshotting {
                    lo: td.persisted,
                    hi: td.rows.len(),
                    gen1_ns: self.gen1_ns,
                    pending: windows.keys().copied().collect(),
                    any_landed: false,
                });
                td.persisted = td.rows.len();
                td.texts = Vec::new();
            }
        }
        inner.snapshot_seq += 1;
        let seq = inner.snapshot_seq;
        super::log(
            "INFO",
            "influxdb3_write::write_buffer::queryable_buffer",
            "Buffering contents and persisting snapshotted data",
            &[(
                "snapshot_details",
                format!("SnapshotDetails {{ snapshot_sequence_number: SnapshotSequenceNumber({seq}), last_wal_sequence_number: WalFileSequenceNumber({wal_seq}) }}"),
            )],
        );
        super::log(
            "INFO",
            "influxdb3_write::write_buffer::queryable_buffer",
            &format!("persisting {} chunks for wal number {wal_seq}", jobs.len()),
            &[],
        );
        inner.in_flight = Some(SnapshotInfo {
            snapshot_sequence: seq,
            wal_file_sequence_number: wal_seq,
            files: Vec::new(),
        });
        inner.persist_queue.extend(jobs);
        inner.wal_since_snapshot = 0;
        if self.persist_per_file.is_zero() {
            while let Some(job) = inner.persist_queue.pop_front() {
                let landed = self.write_file(&job)?;
                self.land(inner, job, landed)?;
            }
        }
        Ok(())
    }

    /// Writes one snapshot file (outside the lock when persisting in the background).
    fn write_file(&self, job: &PersistJob) -> Result<u64, String> {
        let Some(l) = &self.layout else {
            return Ok(0);
        };
        super::log(
            "INFO",
            "influxdb3_write::write_buffer::queryable_buffer",
            &format!(
                "Persisting {} rows for db id {} and table id {} and chunk {} to file {}/{}",
                job.rows, job.db_id, job.table_id, job.window, l.node_id, job.rel
            ),
            &[],
        );
        let body = gzip(job.text.as_bytes());
        let mut bytes = b"PAR1".to_vec();
        bytes.extend(&body);
        bytes.extend((body.len() as u32).to_le_bytes());
        bytes.extend(b"PAR1");
        l.objects.put(&l.node(&job.rel), &bytes)?;
        Ok(bytes.len() as u64)
    }

    /// A file has landed: it becomes queryable, its window's rows visible again; the last
    /// file of a snapshot writes the snapshot's info file and retires old WAL files.
    fn land(&self, inner: &mut Inner, job: PersistJob, size_bytes: u64) -> Result<(), String> {
        let Some(l) = &self.layout else {
            return Ok(());
        };
        super::log(
            "INFO",
            "influxdb3_write::write_buffer::queryable_buffer",
            &format!("Persisted parquet file: {}/{}", l.node_id, job.rel),
            &[],
        );
        if let Some(td) = inner
            .data
            .get_mut(&job.db_id)
            .and_then(|m| m.get_mut(&job.table_id))
        {
            td.files.push(FileMeta {
                path: format!("{}/{}", l.node_id, job.rel),
                size_bytes,
                row_count: job.rows,
                min_time: job.min_time,
                max_time: job.max_time,
            });
            if let Some(s) = td.snapshotting.as_mut() {
                s.any_landed = true;
                s.pending.remove(&job.window);
                if s.pending.is_empty() {
                    td.snapshotting = None;
                }
            }
        }
        let entry = ParquetEntry {
            db_id: job.db_id,
            table_id: job.table_id,
            path: job.rel,
            row_count: job.rows as usize,
            min_time: job.min_time,
            max_time: job.max_time,
            size_bytes,
        };
        let Some(info) = inner.in_flight.as_mut() else {
            return Ok(());
        };
        info.files.push(entry);
        if !inner.persist_queue.is_empty() {
            return Ok(());
        }
        let info = inner.in_flight.take().expect("in flight");
        l.objects.put(
            &l.node(&format!(
                "snapshots/{:020}.info.json",
                info.snapshot_sequence
            )),
            &serde_json::to_vec_pretty(&info).unwrap(),
        )?;
        // Real Core keeps the newest 300 snapshotted WAL files
        // (`--snapshotted-wal-files-to-keep`), so a snapshot removes only older ones.
        let wal_suffix = format!(".{}", file_ext(&inner.catalog).0);
        let keep_from = info
            .wal_file_sequence_number
            .saturating_sub(SNAPSHOTTED_WAL_KEPT);
        for k in l.objects.list(&l.node("wal/"), &wal_suffix)? {
            if seq_of(&k) <= keep_from {
                l.objects.delete(&k);
            }
        }
        Ok(())
    }

    /// Background persistence: writes the next queued snapshot file after the per-file delay.
    /// `false` when nothing is queued.
    pub fn persist_next(&self) -> Result<bool, String> {
        let job = self.lock().persist_queue.pop_front();
        let Some(job) = job else {
            return Ok(false);
        };
        std::thread::sleep(self.persist_per_file);
        let size = self.write_file(&job)?;
        let mut inner = self.lock();
        self.land(&mut inner, job, size)?;
        Ok(true)
    }

    /// Runs `f` over the live database `name`: `(catalog entry, data)` per table.
    pub fn with_db<R>(
        &self,
        name: &str,
        f: impl FnOnce(&[(&TableEntry, &TableData)]) -> R,
    ) -> Option<R> {
        let inner = self.lock();
        let i = live_db(&inner.catalog, name)?;
        let db = &inner.catalog.databases[i];
        let empty = TableData::default();
        let tables: Vec<(&TableEntry, &TableData)> = db
            .tables
            .iter()
            .map(|t| {
                let data = inner
                    .data
                    .get(&db.id)
                    .and_then(|m| m.get(&t.id))
                    .unwrap_or(&empty);
                (t, data)
            })
            .collect();
        Some(f(&tables))
    }

    /// Total rows and lines written since start (for /metrics).
    pub fn row_count(&self) -> usize {
        let inner = self.lock();
        inner
            .data
            .values()
            .flat_map(|m| m.values())
            .map(|t| t.rows.len())
            .sum()
    }
}

fn live_db(cat: &Catalog, name: &str) -> Option<usize> {
    cat.databases
        .iter()
        .position(|d| d.name == name && !d.deleted && !d.hard_deleted)
}

/// A soft-deleted database keeps its entry but gives up its name when the name is reused.
fn retire_name(cat: &mut Catalog, name: &str) {
    for d in cat.databases.iter_mut() {
        if d.name == name && d.deleted {
            d.name = format!("{name}-{}", d.id);
        }
    }
}

fn add_db(cat: &mut Catalog, name: &str) -> usize {
    cat.databases.push(DbEntry {
        id: cat.next_db_id,
        name: name.to_string(),
        deleted: false,
        hard_deleted: false,
        deleted_at: None,
        tables: vec![],
    });
    cat.next_db_id += 1;
    cat.databases.len() - 1
}

fn table_of(cat: &Catalog, db_id: u32, name: &str) -> Option<u32> {
    cat.databases
        .iter()
        .find(|d| d.id == db_id)?
        .tables
        .iter()
        .find(|t| t.name == name)
        .map(|t| t.id)
}

fn alive(cat: &Catalog, db_id: u32) -> bool {
    cat.databases.iter().any(|d| d.id == db_id && !d.deleted)
}

/// `(WAL, data)` file extensions of the catalog's engine. The `.pt` names follow the docs
/// ("anonymized `.pt` WAL files", "a new columnar file format (`.pt` files)"); their paths
/// and contents here are a guess (undocumented), only the extension is relied on.
fn file_ext(cat: &Catalog) -> (&'static str, &'static str) {
    match cat.storage_engine.as_deref() {
        Some("pachatree") => ("pt", "pt"),
        _ => ("wal", "parquet"),
    }
}

/// Loads the snapshots' files, then replays the WAL files after the last snapshot; returns
/// the bytes of WAL replayed.
fn load_files(l: &Layout, inner: &mut Inner, ext: (&str, &str)) -> Result<u64, String> {
    let mut replayed = 0u64;
    let mut last_wal = 0;
    for p in l.objects.list(&l.node("snapshots/"), ".info.json")? {
        let text = l.read(&p)?;
        let info: SnapshotInfo =
            serde_json::from_slice(&text).map_err(|e| format!("snapshot {p} is corrupt: {e}"))?;
        inner.snapshot_seq = inner.snapshot_seq.max(info.snapshot_sequence);
        last_wal = last_wal.max(info.wal_file_sequence_number);
        for f in info.files {
            inner.file_seq = inner.file_seq.max(seq_of(&f.path));
            if !alive(&inner.catalog, f.db_id) {
                continue;
            }
            let path = l.node(&f.path);
            let bytes = l.read(&path)?;
            if bytes.len() < 12 || &bytes[..4] != b"PAR1" || &bytes[bytes.len() - 4..] != b"PAR1" {
                return Err(format!("parquet file {path} is corrupt"));
            }
            let body = gunzip(&bytes[4..bytes.len() - 8])
                .map_err(|e| format!("parquet file {path} is corrupt: {e}"))?;
            let td = inner
                .data
                .entry(f.db_id)
                .or_default()
                .entry(f.table_id)
                .or_default();
            td.files.push(FileMeta {
                path: format!("{}/{}", l.node_id, f.path),
                size_bytes: f.size_bytes,
                row_count: f.row_count as u64,
                min_time: f.min_time,
                max_time: f.max_time,
            });
            for text in String::from_utf8_lossy(&body).lines() {
                let line = lp::parse_line(text)
                    .map_err(|e| format!("parquet file {path} is corrupt: {e}"))?;
                td.push_persisted(line);
            }
        }
    }
    inner.wal_seq = last_wal;
    for p in l.objects.list(&l.node("wal/"), &format!(".{}", ext.0))? {
        let seq = seq_of(&p);
        if seq <= last_wal {
            continue;
        }
        let bytes = l.read(&p)?;
        replayed += bytes.len() as u64;
        let body = bytes
            .strip_prefix(WAL_MAGIC)
            .ok_or_else(|| format!("WAL file {p} is corrupt"))?;
        let corrupt = |why: &str| format!("WAL file {p} is corrupt: {why}");
        let text = std::str::from_utf8(body).map_err(|e| corrupt(&e.to_string()))?;
        let mut it = text.lines();
        it.next().ok_or_else(|| corrupt("no header"))?;
        while let Some(head) = it.next() {
            let meta = head
                .strip_prefix("@op ")
                .ok_or_else(|| corrupt("bad op header"))?;
            let op: WalOp = serde_json::from_str(meta).map_err(|e| corrupt(&e.to_string()))?;
            let live = alive(&inner.catalog, op.db_id);
            for _ in 0..op.count {
                let text = it.next().ok_or_else(|| corrupt("truncated op"))?;
                if !live {
                    continue;
                }
                let line = lp::parse_line(text).map_err(|e| corrupt(&e))?;
                let Some(tid) = table_of(&inner.catalog, op.db_id, &line.measurement) else {
                    continue;
                };
                inner
                    .data
                    .entry(op.db_id)
                    .or_default()
                    .entry(tid)
                    .or_default()
                    .push(line, text.to_string());
            }
        }
        inner.wal_seq = inner.wal_seq.max(seq);
        inner.wal_since_snapshot += 1;
    }
    Ok(replayed)
}

pub enum ValueRef<'a> {
    Tag(&'a str),
    Field(&'a Field),
}
