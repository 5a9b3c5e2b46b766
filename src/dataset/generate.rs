//! Generation of a stored format: [`ensure_generated`] reuses a completed variant or runs
//! `tsbs_generate_data` under the variant lock, streams its output through the
//! pipeline (`pipeline.rs`) and publishes the data file and its manifest.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::lock::{self, LockOptions};
use crate::manifest;
use crate::output::{Event, Reporter, Unit};

use super::format::{
    check_generator, read_format_manifest, reuse_checked, reuse_fast, sweep_leftovers, use_formats,
    validate_format, Compression, Digest, Fingerprint, FormatManifest, Generator, StoredFormat,
    VariantStatus,
};
use super::pipeline::{open_direct, stream, StreamResult};
use super::rows::{DataFormat, RowCounter, RowLayout, TableRows};
use super::spec::{generator_args, ExpectedRows};
use super::store::Dataset;
use super::usecase::UseCase;
use super::GENERATION_WAIT;

/// On reuse: the variant's generator must be the prepared one. Without a prepared
/// environment there is nothing to compare with (and no TSBS tool will read the data).
fn check_reuse_generator(
    dataset_id: &str,
    m: &FormatManifest,
    generator: &mut dyn FnMut() -> Result<Generator>,
    reporter: &dyn Reporter,
) -> Result<()> {
    match generator() {
        Ok(gen) => check_generator(
            &format!("dataset {dataset_id} ({})", m.format),
            &m.generator,
            &gen,
            format!(
                "regenerate it with the prepared tools: `tsbsctl data generate --format {} --dataset-id {dataset_id} --regenerate`",
                m.format
            ),
            reporter,
        ),
        Err(_) => Ok(()),
    }
}

/// What `data generate` asks for.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub format: String,
    /// `None`: keep whatever is stored, `none` for a new variant.
    pub compression: Option<Compression>,
    pub regenerate: bool,
    /// The formats the products' loaders read (`crate::product::data_formats()`): the ones
    /// that may be generated, with their row layouts. Passed in, as dataset sits below product
    /// in the layering.
    pub generatable: Vec<DataFormat>,
}

/// Makes sure `dataset` holds `req.format`: reuses a completed variant (without reading the
/// data when its fingerprint is unchanged), else generates it under the variant lock. A second
/// process asking for the same variant waits for the first and reuses its result.
///
/// `generator` gives the prepared generator. Reuse works without one (its error is ignored
/// then); with one, a variant generated from another TSBS source is an integrity error (exit
/// 4), and one another build of the same commit made is reused with a note. The dataset's `dataset.json` is written when new.
pub fn ensure_generated(
    dataset: &Dataset,
    req: &GenerateRequest,
    generator: &mut dyn FnMut() -> Result<Generator>,
    command: &str,
    reporter: &dyn Reporter,
) -> Result<StoredFormat> {
    validate_format(&req.format, &req.generatable)?;
    let layout = req
        .generatable
        .iter()
        .find(|f| f.name == req.format)
        .map(|f| f.layout);
    let Some(layout) = layout else {
        let names: Vec<&str> = req.generatable.iter().map(|f| f.name).collect();
        return Err(Error::invalid(format!(
            "--format {} cannot be generated: tsbsctl generates the formats the products load ({})",
            req.format,
            names.join(", ")
        ))
        .with_hint(use_formats(&req.generatable)));
    };
    let expected = dataset.spec.expected_rows()?;
    let uc = dataset.spec.use_case()?;
    let layout = layout_for(layout, uc);
    let expected_rows = expected.rows;
    let dir = dataset.format_dir(&req.format);
    sweep_leftovers(&dir, reporter);

    // Fast path, no lock: a completed manifest whose fingerprint still matches.
    let mut completed_seen = false;
    if dataset.stored {
        if let Some(m) = read_format_manifest(&dir)? {
            if m.status == VariantStatus::Completed {
                completed_seen = true;
                if !req.regenerate && compression_ok(&m, req) {
                    if let Some(sf) = reuse_fast(&dir, &m)? {
                        check_reuse_generator(&dataset.id, &m, generator, reporter)?;
                        return Ok(sf);
                    }
                }
            }
        }
    }
    // Generation is certainly needed: find the generator before writing anything, so a
    // missing TSBS environment changes nothing on disk.
    let mut gen_cache: Option<Generator> = None;
    if req.regenerate || !completed_seen {
        gen_cache = Some(generator()?);
        // Room for the whole file before anything is written (trial-run #1).
        crate::diskspace::ensure_room(&[generation_need(dataset, req, expected_rows)?])?;
    }
    let (dataset, _) = dataset.ensure_stored(command, reporter)?;
    fs_err::create_dir_all(&dir)?;
    let _guard = lock::lock_dir(
        &dir,
        &format!("dataset {}/{}", dataset.id, req.format),
        command,
        Some("generating data"),
        &LockOptions {
            wait: Some(GENERATION_WAIT),
            hold_token: None,
        },
        reporter,
    )?;
    let existing = read_format_manifest(&dir)?;
    let completed = existing
        .as_ref()
        .filter(|m| m.status == VariantStatus::Completed);
    if let Some(m) = completed {
        if !compression_ok(m, req) && !req.regenerate {
            return Err(Error::invalid(format!(
                "dataset {} stores {} as {}, not {}",
                dataset.id,
                req.format,
                m.compression.map(|c| c.as_str()).unwrap_or("?"),
                req.compression.map(|c| c.as_str()).unwrap_or("?"),
            ))
            .with_hint(
                "add --regenerate to store it with the new compression, or drop --compression",
            ));
        }
        if !req.regenerate {
            // Generated by someone else while we waited, or the fingerprint changed.
            let sf = reuse_checked(&dir, m, layout, reporter)?;
            match &gen_cache {
                Some(gen) => check_generator(
                    &format!("dataset {} ({})", dataset.id, m.format),
                    &m.generator,
                    gen,
                    format!(
                        "regenerate it with the prepared tools: `tsbsctl data generate --format {} --dataset-id {} --regenerate`",
                        m.format, dataset.id
                    ),
                    reporter,
                )?,
                None => check_reuse_generator(&dataset.id, m, generator, reporter)?,
            }
            return Ok(sf);
        }
    }
    for t in ["gen", "cwd"] {
        for f in [Compression::None, Compression::Gzip, Compression::Xz] {
            fsutil_clean(&dir.join(f.file_name()), t);
        }
        fsutil_clean(&dir.join("work"), t);
        fsutil_clean(&dir.join("generate.log"), t);
    }
    let compression = req
        .compression
        .or(completed.and_then(|m| m.compression))
        .unwrap_or(Compression::None);
    let gen = match gen_cache {
        Some(g) => g,
        None => generator()?,
    };
    generate(
        &dataset,
        &dir,
        &req.format,
        compression,
        expected,
        uc,
        layout,
        &gen,
        completed,
        reporter,
    )
}

/// What generating `req.format` of `dataset` will write, for the free-space check.
pub fn generation_need(
    dataset: &Dataset,
    req: &GenerateRequest,
    rows: u64,
) -> Result<crate::diskspace::Need> {
    let dir = dataset.format_dir(&req.format);
    let compression = match req.compression {
        Some(c) => c,
        None => read_format_manifest(&dir)
            .ok()
            .flatten()
            .and_then(|m| m.compression)
            .unwrap_or(Compression::None),
    };
    let uc = dataset.spec.use_case()?;
    Ok(crate::diskspace::Need {
        what: format!("dataset {} ({rows} {} rows)", dataset.id, uc.name),
        bytes: estimated_bytes(uc, rows, compression),
        dir,
    })
}

/// The layout of `uc`'s rows in a format whose layout is declared for one table: a header
/// (TSBS `writeHeader`: the tags line, one line per table, a blank line) grows by a line per
/// further table.
fn layout_for(layout: RowLayout, uc: &UseCase) -> RowLayout {
    if layout.header_lines == 0 {
        return layout;
    }
    RowLayout {
        header_lines: layout.header_lines + uc.tables.len() as u64 - 1,
        ..layout
    }
}

/// How many points past its bound the iot simulator may write: its last batch (10 points)
/// keeps asking the base simulator for points after it is finished (`iot/simulator.go`
/// `getNextEntry`), so a few rows can land at or after `--timestamp-end` (seen with the real
/// tool: seed 1, scale 3, one hour at 10 s wrote a row at the end time).
const IOT_OVERRUN: u64 = 10;

/// What is wrong with the per-table counts of a generated file, if anything: a table the use
/// case does not write, or one whose rows are not `scale × intervals` (at most that for iot).
fn table_problem(
    tables: Option<&std::collections::BTreeMap<String, TableRows>>,
    uc: &UseCase,
    expected: ExpectedRows,
) -> Option<String> {
    let tables = tables?;
    for (name, r) in tables {
        if !uc.tables.iter().any(|t| t.name == name) {
            return Some(format!(
                "it holds table {name:?}, which the use case does not write ({})",
                uc.table_names().join(", ")
            ));
        }
        let wrong = if expected.exact {
            r.rows != expected.per_table
        } else {
            r.rows > expected.per_table + IOT_OVERRUN
        };
        if wrong {
            return Some(format!(
                "table {name} has {} rows, expected {}{} (scale × intervals)",
                r.rows,
                if expected.exact { "" } else { "at most " },
                expected.per_table
            ));
        }
    }
    None
}

fn fsutil_clean(target: &Path, tag: &str) {
    let _ = crate::fsutil::clean_staging(target, tag);
}

fn compression_ok(m: &FormatManifest, req: &GenerateRequest) -> bool {
    req.compression.is_none() || req.compression == m.compression
}

#[allow(clippy::too_many_arguments)]
fn generate(
    dataset: &Dataset,
    dir: &Path,
    format: &str,
    compression: Compression,
    expected: ExpectedRows,
    uc: &UseCase,
    layout: RowLayout,
    gen: &Generator,
    completed: Option<&FormatManifest>,
    reporter: &dyn Reporter,
) -> Result<StoredFormat> {
    let target = dir.join(compression.file_name());
    let staging = crate::fsutil::staging_path(&target, "gen")?;
    let log_staging = crate::fsutil::staging_path(&dir.join("generate.log"), "gen")?;
    let cwd = crate::fsutil::staging_path(&dir.join("work"), "cwd")?;
    let expected_rows = expected.rows;
    let args = generator_args(&dataset.spec, format);
    let mut command = vec![gen.path.to_string_lossy().into_owned()];
    command.extend(args.iter().cloned());
    let started_at = manifest::now_rfc3339();
    let t0 = Instant::now();
    reporter.event(&Event::Generating {
        dataset: dataset.id.to_string(),
        format: format.to_string(),
        compression: compression.as_str().to_string(),
        rows: expected_rows,
        exact: expected.exact,
    });

    let outcome = (|| -> Result<StreamResult> {
        // TSBS reads a config.* from its working directory: give it an empty one.
        fs_err::create_dir(&cwd)?;
        let mut log = fs_err::File::create(&log_staging)?;
        writeln!(
            log,
            "$ {}",
            crate::proc::command_line(&command[0], &command[1..])
        )?;
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&staging)
            .map_err(|e| Error::io("create", &staging, e))?;
        let mut cmd = Command::new(&gen.path);
        cmd.args(&args)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        crate::proc::configure(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| {
            Error::failed(format!("could not run {}: {e}", gen.path.display()))
                .with_hint("rebuild the TSBS tools with `tsbsctl env prepare --rebuild`")
        })?;
        let stderr = child.stderr.take().expect("piped stderr");
        let log_thread = std::thread::spawn(move || -> Vec<String> {
            let mut tail = Vec::new();
            for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
                let _ = writeln!(log, "{line}");
                tail.push(line);
                if tail.len() > 20 {
                    tail.remove(0);
                }
            }
            let _ = log.sync_all();
            tail
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let progress = reporter.progress(
            &format!("generating {}/{format}", dataset.id),
            Some(expected_rows),
            Unit::Items,
        );
        let direct = open_direct(&staging);
        // On Ctrl-C/SIGTERM stop the generator even while it writes nothing (the read would
        // otherwise wait for it); its pipe then closes and the pipeline unwinds.
        let watch = crate::proc::InterruptWatch::start(&child, Duration::from_secs(2));
        // Several tables, or rows only the file knows: count each table line by line.
        let counter = if uc.tables.len() > 1 || !uc.fixed_rows {
            RowCounter::with_tables(layout, uc.device_tag)
        } else {
            RowCounter::new(layout)
        };
        let streamed = stream(
            stdout,
            file,
            direct,
            compression,
            counter,
            progress.as_ref(),
        );
        progress.finish();
        watch.finish();
        if streamed.is_err() {
            crate::proc::stop_group(&mut child, Duration::ZERO);
        }
        let status = child
            .wait()
            .map_err(|e| Error::failed(format!("wait for the generator: {e}")))?;
        let stderr_tail = log_thread.join().unwrap_or_default();
        let streamed = streamed?;
        if !status.success() {
            let code = status
                .code()
                .map(|c| format!("exit code {c}"))
                .unwrap_or_else(|| "a signal".to_string());
            let last = stderr_tail.last().cloned().unwrap_or_default();
            return Err(Error::failed(format!(
                "tsbs_generate_data failed with {code}{}",
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            )));
        }
        let lines_ok = streamed.lines == layout.lines_for(streamed.rows);
        let rows_ok = if expected.exact {
            streamed.rows == expected_rows
        } else {
            streamed.rows <= expected_rows + IOT_OVERRUN
                && (streamed.rows > 0 || expected_rows == 0)
        };
        if let Some(bad) = table_problem(streamed.tables.as_ref(), uc, expected) {
            return Err(Error::failed(format!(
                "tsbs_generate_data exited 0 but its {} output is not the {} use case's: {bad}",
                format, uc.name
            )));
        }
        if !rows_ok || !lines_ok || !streamed.tail.ends_with(b"\n") && streamed.bytes > 0 {
            let tail = String::from_utf8_lossy(&streamed.tail);
            let last_line = tail
                .trim_end()
                .rsplit('\n')
                .next()
                .unwrap_or("")
                .to_string();
            return Err(Error::failed(format!(
                "tsbs_generate_data exited 0 but wrote {} rows, expected {}{expected_rows} ({}scale × intervals){}; its output ends with: {last_line:?}",
                streamed.rows,
                if expected.exact { "" } else { "at most " },
                if uc.tables.len() > 1 {
                    format!("{} tables × ", uc.tables.len())
                } else {
                    String::new()
                },
                if lines_ok {
                    String::new()
                } else {
                    format!(
                        ", in {} lines where the {format} layout has {}",
                        streamed.lines,
                        layout.lines_for(streamed.rows)
                    )
                }
            )));
        }
        Ok(streamed)
    })();
    let _ = fs::remove_dir_all(&cwd);
    let finished_at = manifest::now_rfc3339();
    let seconds = t0.elapsed().as_secs_f64();
    let base = FormatManifest {
        dataset_id: dataset.id.clone(),
        format: format.to_string(),
        status: VariantStatus::Failed,
        compression: None,
        file: None,
        rows: None,
        layout: None,
        tables: None,
        metrics: None,
        uncompressed: None,
        stored: None,
        fingerprint: None,
        generator: gen.record(),
        command: command.clone(),
        started_at,
        finished_at,
        generate_seconds: seconds,
        verified_at: None,
        log: "generate.log".into(),
        error: None,
        tool_version: crate::VERSION.to_string(),
        adopted_from: None,
    };
    let streamed = match outcome {
        Ok(s) => s,
        Err(mut err) => {
            let _ = fs::remove_file(&staging);
            // Ctrl-C reaches the generator too; what it leaves behind is an interruption.
            if crate::interrupt::requested() && err.kind != crate::error::ErrorKind::Interrupted {
                err = Error::interrupted(format!("interrupted while generating ({})", err.message))
                    .with_hint("run the command again to generate the data");
            }
            let log_name = if completed.is_some() {
                // Keep the completed variant's log; the failed attempt's goes beside it.
                "generate.failed.log"
            } else {
                "generate.log"
            };
            let log_path = dir.join(log_name);
            let _ = crate::fsutil::rename_durable(&log_staging, &log_path);
            if completed.is_none() {
                let failed = FormatManifest {
                    error: Some(err.message.clone()),
                    ..base
                };
                manifest::write(&dir.join("manifest.json"), &failed)?;
            }
            err.message = format!("{}; see {}", err.message, log_path.display());
            if err.hint.is_none() {
                err = err.with_hint(if completed.is_some() {
                    "the previously generated data is untouched; check the log and try again"
                } else {
                    "check the log; `tsbsctl data generate` retries"
                });
            }
            return Err(err);
        }
    };
    crate::fsutil::rename_durable(&staging, &target)?;
    let fp = Fingerprint::of(&target)?;
    let (stored_sha, stored_bytes) = streamed
        .stored
        .clone()
        .unwrap_or_else(|| (streamed.sha256.clone(), streamed.bytes));
    let m = FormatManifest {
        status: VariantStatus::Completed,
        compression: Some(compression),
        file: Some(compression.file_name().to_string()),
        rows: Some(streamed.rows),
        metrics: Some(match &streamed.tables {
            Some(t) => t.values().map(|r| r.metrics).sum(),
            None => streamed.rows * uc.tables[0].metrics,
        }),
        tables: streamed.tables.clone(),
        layout: Some(layout),
        uncompressed: Some(Digest {
            bytes: streamed.bytes,
            sha256: streamed.sha256.clone(),
        }),
        stored: Some(Digest {
            bytes: stored_bytes,
            sha256: stored_sha,
        }),
        fingerprint: Some(fp),
        ..base
    };
    manifest::write(&dir.join("manifest.json"), &m)?;
    crate::fsutil::rename_durable(&log_staging, &dir.join("generate.log"))?;
    let _ = fs::remove_file(dir.join("generate.failed.log"));
    // A regeneration with another compression leaves the old file behind: remove it.
    for c in [Compression::None, Compression::Gzip, Compression::Xz] {
        if c != compression {
            let _ = fs::remove_file(dir.join(c.file_name()));
        }
    }
    reporter.event(&Event::Generated {
        rows: streamed.rows,
        bytes: streamed.bytes,
        seconds,
    });
    StoredFormat::from_manifest(dir, &m, false, false)
}

/// Estimated bytes of `rows` rows of use case `uc` stored with `compression` (the disk-space
/// check before generation). A cpu-only influx line is about 330 bytes
/// (`shared/fixtures/tsbs-real`); a devops line averages more (redis rows carry 31 fields,
/// disk rows 13-digit integers); an iot line less (8 tags, 3-10 short fields). Rounded up.
pub fn estimated_bytes(uc: &UseCase, rows: u64, compression: Compression) -> u64 {
    let raw: u64 = match uc.name {
        "devops" => 480,
        "iot" => 300,
        _ => 360,
    };
    let per_row = match compression {
        Compression::None => raw,
        Compression::Gzip => raw / 4,
        Compression::Xz => raw / 5,
    };
    rows.saturating_mul(per_row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_estimate_scales_with_rows_and_compression() {
        let cpu = crate::dataset::use_case("cpu-only").unwrap();
        assert_eq!(
            estimated_bytes(cpu, 86_400, Compression::None),
            86_400 * 360
        );
        assert_eq!(estimated_bytes(cpu, 10, Compression::Gzip), 900);
        assert_eq!(estimated_bytes(cpu, 10, Compression::Xz), 720);
        assert!(
            estimated_bytes(cpu, 10, Compression::Gzip)
                < estimated_bytes(cpu, 10, Compression::None)
        );
        assert_eq!(estimated_bytes(cpu, u64::MAX, Compression::None), u64::MAX);
        // Per use case: a devops row is longer than a cpu-only one, an iot row shorter.
        let devops = crate::dataset::use_case("devops").unwrap();
        let iot = crate::dataset::use_case("iot").unwrap();
        assert!(estimated_bytes(devops, 10, Compression::None) > 3600);
        assert!(estimated_bytes(iot, 10, Compression::None) < 3600);
    }

    /// The timescaledb header has a line per table (TSBS `writeHeader`).
    #[test]
    fn the_header_grows_with_the_tables() {
        let ts = RowLayout {
            header_lines: 3,
            lines_per_row: 2,
            row_line: crate::dataset::RowLine::MeasurementDigit,
        };
        let uc = |n| crate::dataset::use_case(n).unwrap();
        assert_eq!(layout_for(ts, uc("cpu-only")).header_lines, 3);
        assert_eq!(layout_for(ts, uc("devops")).header_lines, 11);
        assert_eq!(layout_for(ts, uc("iot")).header_lines, 4);
        let lp = crate::dataset::DataFormat::Influx.layout;
        assert_eq!(layout_for(lp, uc("devops")), lp);
    }

    #[test]
    fn per_table_counts_are_judged_against_the_spec() {
        let mut spec = crate::dataset::Profile::Smoke.spec();
        spec.use_case = "devops".into();
        let e = spec.expected_rows().unwrap();
        let uc = crate::dataset::use_case("devops").unwrap();
        let mut t = std::collections::BTreeMap::new();
        for n in uc.table_names() {
            t.insert(
                n.to_string(),
                TableRows {
                    rows: e.per_table,
                    metrics: 0,
                    duplicates: 0,
                },
            );
        }
        assert_eq!(table_problem(Some(&t), uc, e), None);
        t.get_mut("redis").unwrap().rows -= 1;
        let p = table_problem(Some(&t), uc, e).unwrap();
        assert!(p.contains("table redis has 86399 rows"), "{p}");
        t.get_mut("redis").unwrap().rows += 1;
        t.insert("readings".into(), TableRows::default());
        assert!(table_problem(Some(&t), uc, e)
            .unwrap()
            .contains("\"readings\""));
        // iot: at most scale × intervals per table.
        let mut spec = crate::dataset::Profile::Smoke.spec();
        spec.use_case = "iot".into();
        let e = spec.expected_rows().unwrap();
        let uc = crate::dataset::use_case("iot").unwrap();
        let mut t = std::collections::BTreeMap::new();
        t.insert(
            "readings".to_string(),
            TableRows {
                rows: e.per_table - 900,
                metrics: 0,
                duplicates: 0,
            },
        );
        assert_eq!(table_problem(Some(&t), uc, e), None);
        t.get_mut("readings").unwrap().rows = e.per_table + IOT_OVERRUN;
        assert_eq!(table_problem(Some(&t), uc, e), None);
        t.get_mut("readings").unwrap().rows = e.per_table + IOT_OVERRUN + 1;
        assert!(table_problem(Some(&t), uc, e).is_some());
    }
}
