//! The load phase: the loader reading the dataset (the file itself, watched and hashed after
//! it; a compressed dataset streamed and hashed on its way), the row count the database must
//! then hold, the product's hooks around the load, and the storage footprint at
//! rest. A managed workspace's binding is set only once all of that held.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::dataset::{Compression, Dataset, StoredFormat};
use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::output::{Event, UrlUser, Warning};
use crate::product::{LoadCount, ToolOptions, NOT_STORED_HINT};
use crate::run::data::{self, LoadData, LoadEnded, RowCountData};
use crate::run::Status;
use crate::tsbs::{self, DatabaseMode};

use super::super::exec::{self, Input, ToolEnd};
use super::super::inputfile::WatchedFile;
use super::super::plan::Workload;
use super::super::{footprint, integrity, watch, Bench};

impl Bench<'_> {
    pub(in crate::bench) fn load(
        &mut self,
        env: &TsbsEnv,
        w: &Workload,
        ds: &Dataset,
        sf: &StoredFormat,
    ) -> Result<()> {
        let mode = self.plan.mode;
        let binding = self.target.binding_for(ds, sf);
        if self.target.is_managed() && mode != DatabaseMode::Reset && self.target.bound_to(&binding)
        {
            self.reporter().event(&Event::LoadSkipped {
                workspace: self.target.database_id().unwrap_or_default().to_string(),
                dataset: ds.id.to_string(),
            });
            self.run.instant(
                "load",
                1,
                Status::Reused,
                None,
                Some(data::value(&LoadData {
                    dataset_id: Some(ds.id.clone()),
                    database_mode: Some("reuse".into()),
                    binding: Some(data::value(&binding)),
                    ..LoadData::default()
                })),
            )?;
            // The footprint of the loaded data, at rest.
            self.footprint("at-rest")?;
            return Ok(());
        }
        if self.target.is_managed() {
            self.target.check_binding_data(
                &binding.dataset_id,
                &binding.uncompressed_sha256,
                mode,
            )?;
        }
        // The binding is cleared before a reset drops anything.
        // Before anything is dropped or started: a changed loader stops the run here.
        let loader =
            integrity::verified_binary(env, self.target.product.tsbs_loader(), &mut self.run)?;
        if mode == DatabaseMode::Reset {
            self.target.clear_binding()?;
        }
        self.start_server()?;
        // Other people's sessions are ended only on a server tsbsctl manages.
        let before_load = if self.target.is_managed() {
            self.product_step("before-load", |b| {
                b.target
                    .product
                    .before_load(&b.endpoint(), b.target.database())
            })?
        } else {
            None
        };
        self.machine_check("the load")?;
        let (workers, batch) = (w.load_workers, w.batch_size);
        let attempt = self.run.next_attempt("load")?;
        let (log, log_rel) = self.run.log(&format!("load-{attempt:03}.log"));
        let (results, results_rel) = self.run.result(&format!("load-{attempt:03}.json"));
        // The loader reads an uncompressed dataset itself, so nothing of tsbsctl is in the
        // path whose throughput is measured (issue 27); its bytes are proven by a watch and a
        // hash after ([`WatchedFile`]). A compressed one must be decompressed on its way, so
        // tsbsctl streams it, hashing what it feeds (#7).
        let input = match sf.compression {
            Compression::None => tsbs::LoadInput::File(sf.path.clone()),
            _ => tsbs::LoadInput::Stdin,
        };
        let (auth, admin) = self.target.tokens();
        // A partitioned table is made by tsbsctl before the loader, which then only writes
        // (with its own create it would drop the database holding the table).
        let own_db = if let Some(p) = &w.partitioning {
            self.create_partitioned(p, ds, sf, mode)?;
            true
        } else {
            // Work its loader leaves to the product (InfluxDB 2's buckets); then the loader only writes.
            self.target.product.prepare_database(
                &self.endpoint(),
                self.target.database(),
                mode,
                self.target.external_token(),
            )?
        };
        let urls = self.target.urls_with(&self.endpoint());
        let mut target = self.target.product.load_target(&ToolOptions {
            auth_token: auth,
            admin_token: admin,
            values: self.plan.product.clone(),
        });
        if let Some(x) = self.target.product.bench_ext() {
            target.args.extend((x.load_args)(&self.plan.product));
        }
        target.connection = self.target.product.load_connection(&urls)?;
        let spec = tsbs::LoadSpec {
            binary: loader,
            target,
            urls,
            input,
            database: self.target.database().to_string(),
            batch_size: batch,
            workers,
            results_file: results,
            mode: if own_db { DatabaseMode::Reuse } else { mode },
            confirm_reset: self.plan.confirm_reset.clone().or_else(|| {
                (mode == DatabaseMode::Reset).then(|| self.target.database().to_string())
            }),
        };
        let cmd = tsbs::load_command(&spec)?;
        let urls_in_use = self.target.urls_in_use(workers);
        if let Some(used) = urls_in_use.as_ref().filter(|u| u.len() < spec.urls.len()) {
            self.reporter().warning(&Warning::UrlsUnused {
                tool: UrlUser::Loader,
                workers,
                used: used.len(),
                urls: spec.urls.len(),
            });
        }
        let started = LoadData {
            dataset_id: Some(ds.id.clone()),
            database: Some(self.target.database().to_string()),
            database_mode: Some(mode.as_str().to_string()),
            workers: Some(workers.into()),
            batch_size: Some(batch.into()),
            input: Some(json!(if cmd.stdin_data { "stdin" } else { "file" })),
            command: Some(cmd.redacted()),
            stall: Some(self.stall_policy().to_json()),
            urls_in_use: urls_in_use.clone(),
            ..LoadData::default()
        };
        self.run.begin(
            "load",
            attempt,
            Some(&log_rel),
            Some(&results_rel),
            Some(data::value(&started)),
        )?;
        self.reporter().event(&Event::Loading {
            rows: sf.rows,
            dataset: ds.id.to_string(),
            tool: cmd.tool().to_string(),
            workers,
            batch,
            log: log.to_path_buf(),
        });
        // Watched from before the loader starts, so no change can slip in between.
        let tool_input = if cmd.stdin_data {
            Input::Stream(sf.open_uncompressed()?)
        } else {
            Input::File(WatchedFile::open(&sf.path)?)
        };
        let machine = super::super::quiet::Reading::now(self.server.as_ref().map(|s| s.pid()));
        let ran = self.run_watched(
            &cmd,
            &log,
            tool_input,
            "load",
            attempt,
            watch::Counting::Rows,
            "load",
            Some(sf.rows),
        )?;
        let (end, usage) = (ran.end, ran.usage);
        let machine = self.machine_since(&machine);
        // What the loader read: hashed only after a load that completed (a failed or
        // interrupted one is not worth the read), but a changed file is always said.
        let fed = match ran.file {
            Some(mut f) => {
                if matches!(&end, ToolEnd::Exited(s) if s.success()) {
                    let progress = self.reporter().progress(
                        "checking the dataset the loader read",
                        Some(sf.uncompressed_bytes),
                        crate::output::Unit::Bytes,
                    );
                    Some(exec::Fed::from_proof(f.finish(progress.as_ref())?))
                } else {
                    f.check()?.map(|c| exec::Fed {
                        changed: Some(c),
                        ..exec::Fed::default()
                    })
                }
            }
            None => ran.fed,
        };
        if let Some(change) = fed.as_ref().and_then(|f| f.changed.as_deref()) {
            let e = changed_error(sf, change);
            self.run.end(
                "load",
                attempt,
                Status::Failed,
                Some(e.message.clone()),
                Some(data::value(&LoadEnded {
                    usage: Some(json!(usage)),
                    input: Some(json!(fed)),
                    ..LoadEnded::default()
                })),
            )?;
            return Err(e);
        }
        let log_text = crate::fsutil::read_log(&log);
        let status = self.tool_exit("load", attempt, end, "the load", &log)?;
        match tsbs::load_outcome(&cmd.tool(), status, &log_text, &spec.results_file) {
            Ok(r) => {
                let fed = fed.unwrap_or_default();
                let input = data::value(&LoaderRead {
                    fed: &fed,
                    expected_sha256: &sf.uncompressed_sha256,
                    matches_manifest: fed.sha256.as_deref()
                        == Some(sf.uncompressed_sha256.as_str()),
                });
                if let Err(e) = check_fed(&fed, sf) {
                    self.run.end(
                        "load",
                        attempt,
                        Status::Failed,
                        Some(e.message.clone()),
                        Some(data::value(&LoadEnded {
                            rows: Some(r.rows),
                            metrics: Some(Some(r.metrics)),
                            usage: Some(json!(usage)),
                            input: Some(input),
                            ..LoadEnded::default()
                        })),
                    )?;
                    return Err(e);
                }
                if let Some(d) = self.run.manifest.dataset.as_mut() {
                    d.loaded_sha256 = Some(fed.sha256.clone());
                }
                self.run.save()?;
                self.run.end(
                    "load",
                    attempt,
                    Status::Completed,
                    None,
                    Some(data::value(&LoadEnded {
                        rows: Some(r.rows),
                        metrics: Some(Some(r.metrics)),
                        usage: Some(json!(usage)),
                        input: Some(input),
                        machine: Some(machine),
                        ..LoadEnded::default()
                    })),
                )?;
            }
            Err(f) => {
                let gone = self.server_gone();
                let mut reason = match gone {
                    Some(g) => format!("{}; the server is gone: {g}", f.reason),
                    None => f.reason.clone(),
                };
                // A full disk under the server is the root cause of its refusals: name it (#18).
                let full = [self.target.data_dir(), Some(self.run.dir.clone())]
                    .into_iter()
                    .flatten()
                    .find_map(|d| crate::media::full_disk_note(&d));
                if let Some(note) = &full {
                    reason = format!(
                        "{note}; the loader stopped because the server refused writes: {reason}"
                    );
                }
                // On a full disk this record may not fit; the run's end records the step.
                let _ = self.run.end(
                    "load",
                    attempt,
                    Status::Failed,
                    Some(reason.clone()),
                    Some(data::value(&LoadEnded {
                        failure: Some(json!(f)),
                        disk_full: Some(full.clone()),
                        ..LoadEnded::default()
                    })),
                );
                if full.is_some() {
                    return Err(Error::failed(format!("load failed: {reason}")).with_hint(format!(
                        "free space on that disk (or move the workspace to a larger one), then load again with --database-mode reset --confirm-reset {}; see {}",
                        self.target.database(),
                        log.display()
                    )));
                }
                let hint = if f.kind == tsbs::FailureKind::DatabaseExists {
                    format!(
                        "the SQL database already exists (an earlier, unfinished load?); load with --database-mode reset --confirm-reset {} to replace it; see {}",
                        self.target.database(),
                        log.display()
                    )
                } else {
                    format!("see {}", log.display())
                };
                return Err(Error::failed(format!("load failed: {reason}")).with_hint(hint));
            }
        }

        // Row count: the database must hold the dataset.
        self.row_count(ds, sf)?;
        if self
            .plan
            .workload()
            .is_some_and(|w| w.partitioning.is_some())
        {
            self.region_report(sf.rows)?;
        }
        let scale = ds.spec.scale;
        let exact_tags = ds.spec.use_case()?.fixed_rows;
        let after = self.product_step("after-load", |b| {
            b.target.product.after_load(&crate::product::AfterLoad {
                endpoint: &b.endpoint(),
                database: b.target.database(),
                scale,
                exact_tags,
                before: before_load.as_ref(),
                token: b.target.external_token(),
            })
        })?;
        self.load_footprint = after.and_then(|v| v.get("footprint").cloned());
        // Footprint at rest after ingestion: stop first.
        if self.target.is_managed() {
            self.stop_server()?;
            self.footprint("after-load")?;
            self.target.set_binding(binding, &self.run)?;
            // Later phases of this run see the data as just loaded.
            self.run.manifest.data_state = self.target.data_state();
            self.run.save()?;
        } else {
            // External: the product's SQL measure is the footprint (no data directory here).
            self.footprint("after-load")?;
        }
        Ok(())
    }

    /// Step `create-table`: the database by `mode` and the partitioned table, made from the
    /// schema the server gives the dataset's first line; both `SHOW CREATE TABLE` texts are
    /// recorded (step data, and as files in the run's results). A schema that differs from
    /// the auto-created one fails the run after it is recorded.
    fn create_partitioned(
        &mut self,
        p: &crate::product::Partitioning,
        ds: &Dataset,
        sf: &StoredFormat,
        mode: DatabaseMode,
    ) -> Result<()> {
        let attempt = self.run.next_attempt("create-table")?;
        let sample = first_line(sf)?;
        let endpoint = self.endpoint();
        let made = self
            .target
            .product
            .create_partitioned(&crate::product::PartitionedLoad {
                endpoint: &endpoint,
                database: self.target.database(),
                mode,
                partitioning: p,
                scale: ds.spec.scale,
                sample_line: &sample,
            });
        let v = match made {
            Ok(v) => v,
            Err(e) => {
                self.run.instant(
                    "create-table",
                    attempt,
                    Status::Failed,
                    Some(e.message.clone()),
                    None,
                )?;
                return Err(e);
            }
        };
        let made = TableMade::deserialize(&v).unwrap_or_default();
        let write = |text: Option<String>, name: &str| -> Result<String> {
            let (path, rel) = self.run.result(name);
            let text = text.unwrap_or_default();
            crate::fsutil::write_atomic(&path, format!("{text}\n").as_bytes())?;
            Ok(rel)
        };
        let record = CreatedTable {
            auto_created_file: write(made.auto_created, "show-create-auto-created.sql")?,
            created_file: write(made.created, "show-create-partitioned.sql")?,
            record: match v {
                Value::Object(m) => m,
                _ => serde_json::Map::new(),
            },
        };
        if made.schema_matches == Some(true) {
            let said = Event::TableCreated {
                table: made.table.as_deref().unwrap_or("cpu").to_string(),
                regions: p.partitions,
                column: p.column.clone(),
            };
            self.run.instant(
                "create-table",
                attempt,
                Status::Completed,
                None,
                Some(data::value(&record)),
            )?;
            self.reporter().event(&said);
            return Ok(());
        }
        let why = format!(
            "the partitioned table's SHOW CREATE TABLE, less its PARTITION block, differs from the table the server auto-creates for the dataset's first line (see {} and {})",
            record.auto_created_file, record.created_file
        );
        self.run.instant(
            "create-table",
            attempt,
            Status::Failed,
            Some(why.clone()),
            Some(data::value(&record)),
        )?;
        Err(Error::failed(why).with_hint(
            "the loader would write into a table of another schema than its own; load without --partitions, and report the two texts",
        ))
    }

    /// Step `regions`: where each region of the loaded table is and how many rows it holds;
    /// their sum must be the loaded rows (a difference is said, not fatal: the count is the
    /// verdict). A region without rows is said too.
    fn region_report(&mut self, loaded: u64) -> Result<()> {
        let endpoint = self.endpoint();
        let db = self.target.database().to_string();
        let got = self.product_step("regions", |b| {
            let r = b
                .target
                .product
                .region_report(&endpoint, &db, crate::bench::TABLE, loaded)?;
            Ok(r.map(|v| {
                let counts = RegionCounts::deserialize(&v).unwrap_or_default();
                data::value(&RegionsChecked {
                    report: match v {
                        Value::Object(m) => m,
                        _ => serde_json::Map::new(),
                    },
                    loaded_rows: loaded,
                    rows_match: counts.rows == Some(loaded),
                })
            }))
        })?;
        if let Some(v) = got {
            let counts = RegionCounts::deserialize(&v).unwrap_or_default();
            if counts.rows != Some(loaded) {
                self.reporter().warning(&Warning::RegionRowsDiffer {
                    table: crate::bench::TABLE.to_string(),
                    regions: counts.rows,
                    loaded,
                });
            }
            if let Some(e) = counts.empty_regions.filter(|e| !e.is_empty()) {
                self.reporter().warning(&Warning::EmptyRegions {
                    table: crate::bench::TABLE.to_string(),
                    regions: e.iter().map(|x| x.to_string()).collect(),
                });
            }
        }
        Ok(())
    }

    /// Runs a product hook as step `name` when it has something to do (`Some`), recording
    /// what it returns; `None` records nothing.
    fn product_step(
        &mut self,
        name: &str,
        f: impl FnOnce(&Self) -> Result<Option<Value>>,
    ) -> Result<Option<Value>> {
        match f(self) {
            Ok(None) => Ok(None),
            Ok(Some(v)) => {
                let attempt = self.run.next_attempt(name)?;
                self.run
                    .instant(name, attempt, Status::Completed, None, Some(v.clone()))?;
                Ok(Some(v))
            }
            Err(e) => {
                let attempt = self.run.next_attempt(name)?;
                self.run
                    .instant(name, attempt, Status::Failed, Some(e.message.clone()), None)?;
                Err(e)
            }
        }
    }

    /// Counts each table of the dataset's use case after the load and judges it against the
    /// rows the file holds for it (cpu-only: the one table `cpu`). Where the product's count
    /// moves, the product counts again until it can trust the reading
    /// ([`crate::product::Loading::count_after_load`]) and words a difference itself. One `row-count` step: with several tables
    /// its data lists each (`tables`) and sums them.
    fn row_count(&mut self, ds: &Dataset, sf: &StoredFormat) -> Result<()> {
        let attempt = self.run.next_attempt("row-count")?;
        self.run.begin("row-count", attempt, None, None, None)?;
        let tables = sf.table_rows(ds.spec.use_case()?);
        let mut datas = Vec::new();
        let mut failure: Option<(Error, String)> = None;
        for (table, expected) in &tables {
            let (data, problem) = self.count_table(table, *expected);
            datas.push(data);
            if let Some(p) = problem {
                failure = Some(p);
                break;
            }
        }
        let data = if tables.len() == 1 {
            datas.pop().map_or(Value::Null, |d| data::value(&d))
        } else {
            let failed = failure.as_ref().map(|(e, _)| e.message.clone());
            data::value(&RowCountData {
                table: Some(
                    tables
                        .iter()
                        .map(|(t, _)| t.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                expected: Some(tables.iter().map(|(_, n)| n).sum::<u64>()),
                actual: Some(datas.iter().filter_map(|d| d.actual).sum::<u64>()),
                ok: Some(failure.is_none() && datas.len() == tables.len()),
                // The last table's count failed (not a mismatch): said on the sum too.
                error: failed.filter(|_| datas.last().is_some_and(|l| l.error.is_some())),
                tables: Some(datas),
                ..RowCountData::default()
            })
        };
        match failure {
            None => self
                .run
                .end("row-count", attempt, Status::Completed, None, Some(data)),
            Some((err, reason)) => {
                self.run.end(
                    "row-count",
                    attempt,
                    Status::Failed,
                    Some(reason),
                    Some(data),
                )?;
                Err(err)
            }
        }
    }

    /// Counts one table against `expected`: its record, and the error with the step's failure
    /// reason when it does not hold them.
    fn count_table(
        &mut self,
        table: &str,
        expected: u64,
    ) -> (RowCountData, Option<(Error, String)>) {
        let endpoint = self.endpoint();
        let mut data = RowCountData {
            table: Some(table.to_string()),
            expected: Some(expected),
            ..RowCountData::default()
        };
        let counted = self
            .target
            .count_after_load(&endpoint, table, expected, &self.plan.product);
        let LoadCount {
            rows: actual,
            method,
            wait,
            mismatch,
        } = match counted {
            Ok(c) => c,
            Err(b) => {
                let (e, wait) = *b;
                data.wait = wait;
                // Said as a failed count, never as a mismatch of rows nobody counted.
                data.error = Some(e.message.clone());
                let reason = format!("count failed: {}", e.message);
                return (data, Some((e, reason)));
            }
        };
        let ok = actual == expected;
        data.actual = Some(actual);
        data.ok = Some(ok);
        data.method = method;
        data.wait = wait;
        if ok {
            return (data, None);
        }
        let (r, hint) = mismatch.unwrap_or_else(|| {
            (
                format!(
                    "row count mismatch: table {table} holds {actual} rows, the dataset has {expected}",
                ),
                NOT_STORED_HINT,
            )
        });
        (data, Some((Error::failed(r.clone()).with_hint(hint), r)))
    }

    fn footprint(&mut self, when: &str) -> Result<()> {
        let Some(dir) = self.target.data_dir() else {
            // An external server: only what the product measured over SQL, if anything.
            let Some(Value::Object(mut m)) = self.load_footprint.clone() else {
                return Ok(());
            };
            let attempt = self.run.next_attempt("footprint")?;
            m.insert("when".into(), json!(when));
            m.insert("data_dir".into(), Value::Null);
            m.insert("server_stopped".into(), json!(false));
            return self
                .run
                .step("footprint", attempt, |_| Ok(((), Value::Object(m))));
        };
        let attempt = self.run.next_attempt("footprint")?;
        let (product, stopped) = (self.target.product.as_ref(), self.server.is_none());
        let (forced_stop, load_footprint) = (self.forced_stop, self.load_footprint.clone());
        // Object storage (GreptimeDB on S3: SSTs, indexes and manifests; InfluxDB 3 on S3:
        // everything): the bucket's listing and the local cache, not only `data/`.
        let managed = self
            .target
            .managed()
            .map(|m| (m.ws.manifest.clone(), m.ws.dir.clone()));
        self.run.step("footprint", attempt, |run| {
            let f = footprint::measure_for(product, &dir)?;
            let mut v = f.record(product);
            if let Some((ws, ws_dir)) = &managed {
                if let Some((o, cache)) = product.object_store_footprint(ws, ws_dir)? {
                    v["object_store"] = o;
                    if let Some(c) = cache {
                        v["cache"] = c;
                    }
                }
            }
            // Where a product has more than one storage engine, its files on disk say which
            // one the server used.
            if run
                .manifest
                .target
                .extra
                .get("server_settings")
                .is_some_and(Value::is_object)
            {
                let engine = product.storage_engine(f.combined_files, f.wal_files + f.data_files);
                if let Some(e) = engine {
                    let st = &mut run.manifest.target.extra["server_settings"];
                    st["storage_engine"] = json!(e);
                    st["storage_engine_source"] = json!("data directory layout");
                    run.save()?;
                }
            }
            v["when"] = json!(when);
            v["data_dir"] = json!(dir);
            v["server_stopped"] = json!(stopped);
            v["after_forced_stop"] = json!(forced_stop);
            // Neither product flushes the WAL to data files on shutdown: say when it never did.
            v["never_flushed"] = match v["object_store"]["data_objects"].as_u64() {
                // On S3 the data files are objects, never local files; so is the WAL of a
                // server that keeps it there (InfluxDB 3).
                Some(n) => {
                    let wal = v["object_store"]["wal_bytes"].as_u64().unwrap_or(0);
                    json!(n == 0 && (f.wal_bytes > 0 || wal > 0))
                }
                None => footprint::never_flushed(&f),
            };
            // The product's own measure (PostgreSQL: database size, table/index split, load WAL).
            if let Some(Value::Object(m)) = load_footprint {
                for (k, x) in m {
                    if v.get(&k).is_none_or(Value::is_null) {
                        v[k] = x;
                    }
                }
            }
            Ok(((), v))
        })
    }
}

/// Step `create-table` (a partitioned load): the product's record of the table it made, then
/// the files tsbsctl wrote its two `SHOW CREATE TABLE` texts to.
#[derive(serde::Serialize)]
struct CreatedTable {
    #[serde(flatten)]
    record: serde_json::Map<String, Value>,
    auto_created_file: String,
    created_file: String,
}

/// What the load reads of the product's record of a partitioned table.
#[derive(Default, serde::Deserialize)]
struct TableMade {
    #[serde(default, deserialize_with = "data::lenient")]
    table: Option<String>,
    /// The `SHOW CREATE TABLE` text of the table the server made from the first line.
    #[serde(default, deserialize_with = "data::lenient")]
    auto_created: Option<String>,
    /// And of the partitioned table.
    #[serde(default, deserialize_with = "data::lenient")]
    created: Option<String>,
    #[serde(default, deserialize_with = "data::lenient")]
    schema_matches: Option<bool>,
}

/// Step `regions`: the product's report of the loaded table's regions, then whether their rows
/// add up to the load.
#[derive(serde::Serialize)]
struct RegionsChecked {
    #[serde(flatten)]
    report: serde_json::Map<String, Value>,
    loaded_rows: u64,
    rows_match: bool,
}

/// What the load reads of the product's region report.
#[derive(Default, serde::Deserialize)]
struct RegionCounts {
    #[serde(default, deserialize_with = "data::lenient")]
    rows: Option<u64>,
    #[serde(default, deserialize_with = "data::lenient")]
    empty_regions: Option<Vec<Value>>,
}

/// What a completed loader read (`input` of its `load` step's end): the bytes fed and their
/// hash, beside the hash the dataset's manifest records.
#[derive(serde::Serialize)]
struct LoaderRead<'a> {
    #[serde(flatten)]
    fed: &'a exec::Fed,
    expected_sha256: &'a str,
    matches_manifest: bool,
}

/// The dataset's first line (the loader's first row), for the schema probe.
fn first_line(sf: &StoredFormat) -> Result<String> {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(sf.open_uncompressed()?)
        .read_line(&mut line)
        .map_err(|e| Error::io("read", &sf.path, e))?;
    if line.trim().is_empty() {
        return Err(Error::integrity(format!(
            "the dataset {} starts with an empty line",
            sf.path.display()
        )));
    }
    Ok(line.trim_end().to_string())
}

/// The dataset file changed while the loader read it: what it loaded is unknown.
fn changed_error(sf: &StoredFormat, change: &str) -> Error {
    Error::integrity(format!(
        "the dataset {} changed while the loader read it ({change}), so what it loaded is not known",
        sf.path.display()
    ))
    .with_hint(format!(
        "nothing may write to a dataset while a run reads it; check it with `tsbsctl data verify --dataset-id {}`, then load again with --database-mode reset",
        sf.dataset_id
    ))
}

/// What the loader read must be the dataset the manifest describes, all of it.
fn check_fed(fed: &exec::Fed, sf: &StoredFormat) -> Result<()> {
    let hint = format!(
        "regenerate the dataset with `tsbsctl data generate --dataset-id {} --format {} --regenerate`, then load again with --database-mode reset",
        sf.dataset_id, sf.format
    );
    match &fed.sha256 {
        Some(got) if *got == sf.uncompressed_sha256 => Ok(()),
        Some(got) => Err(Error::integrity(format!(
            "the dataset the loader read ({}, {} bytes) has SHA-256 {got}, its manifest says {}: the file changed on disk",
            sf.path.display(),
            fed.bytes,
            sf.uncompressed_sha256
        ))
        .with_hint(hint)),
        None => Err(Error::integrity(format!(
            "the loader ended without reading all of {} ({} bytes read{}), so what it loaded is not known",
            sf.path.display(),
            fed.bytes,
            fed.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default()
        ))
        .with_hint(hint)),
    }
}
