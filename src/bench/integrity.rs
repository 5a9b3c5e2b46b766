//! Checks a run makes on what it is about to measure (issue 16, "measure only what you
//! checked"): the TSBS binary a phase starts is re-hashed against its build record first, so
//! the manifest records the checksum of what ran, not of what was once built (#5); and the
//! rows of a managed workspace are counted against its binding before queries (#6).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::output::{Event, NoProgress};
use crate::run::data::{self, RowCountData};
use crate::run::{RunDir, Status};

/// Re-hashes the built tool `name` (a few tens of MB: well under a second) and returns its
/// path. A checksum other than the build's is an integrity error (exit 4) whose hint is the
/// rebuild. The run manifest gets `environment.binaries.<name>.ran_sha256` once the file is
/// known good (no timestamp: a rerun's environment must compare equal).
pub fn verified_binary(env: &TsbsEnv, name: &str, run: &mut RunDir) -> Result<PathBuf> {
    let b = env.binary(name)?;
    let sha = rehash(name, &b.path, &b.sha256)?;
    if let Some(pins) = run.manifest.environment.as_mut() {
        let entry =
            pins.binaries
                .entry(name.to_string())
                .or_insert_with(|| crate::run::BinaryPin {
                    path: b.path.clone(),
                    sha256: None,
                    ran_sha256: None,
                });
        entry.ran_sha256 = Some(sha.clone());
        run.save()?;
    }
    Ok(b.path.clone())
}

/// The SHA-256 of the tool at `path`, which must be `recorded` (exit 4 otherwise).
pub fn rehash(name: &str, path: &Path, recorded: &str) -> Result<String> {
    let (sha, _) = crate::hash::sha256_file(path, &NoProgress)?;
    if sha != recorded {
        return Err(Error::integrity(format!(
            "the TSBS tool {name} at {} changed since it was built: SHA-256 {sha}, the build recorded {recorded}",
            path.display()
        ))
        .with_hint("run `tsbsctl env prepare --rebuild` (nothing was started)"));
    }
    Ok(sha)
}

/// A generator of the run's TSBS build, re-hashed before it is used.
pub fn verified_generator(env: &TsbsEnv, name: &str) -> Result<crate::dataset::Generator> {
    let g = crate::dataset::Generator::from_env(env, name)?;
    rehash(name, &g.path, &g.sha256)?;
    Ok(g)
}

impl super::Bench<'_> {
    /// #6: before queries or an analysis on a managed workspace, the server (running) must
    /// hold the rows the workspace's binding claims. Counted with the same per-product path as
    /// the post-load check ([`super::target::Target::count_rows`]). A different count, or a
    /// database or table that is not there (`data/` wiped), is an integrity error (exit 4)
    /// that says how to reload; nothing is benchmarked.
    pub(super) fn check_loaded_rows(&mut self) -> Result<()> {
        let Some(binding) = self.target.binding().cloned() else {
            return Ok(());
        };
        let expected = binding.rows;
        // The tables the binding records (several for devops and iot), else the one table.
        let tables: Vec<(String, u64)> =
            match binding.extra.get("tables").and_then(|t| t.as_object()) {
                Some(t) => t
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                    .collect(),
                None => vec![(super::TABLE.to_string(), expected)],
            };
        let ws = self.target.database_id().unwrap_or_default();
        let db = self.target.database().to_string();
        let dataset = binding.dataset_id.clone();
        let reload = format!(
            "reload it: tsbsctl bench {} load --database-id {ws} --dataset-id {dataset} --database-mode reset --confirm-reset {db}",
            self.entry.name
        );
        let attempt = self.run.next_attempt("row-check")?;
        self.run.begin("row-check", attempt, None, None, None)?;
        let endpoint = self.endpoint();
        let names: Vec<&str> = tables.iter().map(|(t, _)| t.as_str()).collect();
        // A full count: minutes on a large table (229 s at 2.6 M rows on a real InfluxDB 3).
        self.ctx.reporter.event(&Event::CountingRows {
            tables: names.iter().map(|n| n.to_string()).collect(),
            expected,
        });
        let mut checked = Vec::new();
        let mut failed = None;
        let count = |table: &str, expected: u64, actual: u64, took_s: f64| RowCountData {
            table: Some(table.to_string()),
            expected: Some(expected),
            actual: Some(actual),
            ok: Some(actual == expected),
            took_s: Some(took_s),
            ..RowCountData::default()
        };
        for (table, expected) in &tables {
            let started = std::time::Instant::now();
            let counted = self.target.count_rows(&endpoint, table);
            let took_s = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
            match counted {
                Ok(actual) if actual == *expected => {
                    checked.push(count(table, *expected, actual, took_s));
                }
                Ok(actual) => {
                    let r = format!(
                        "workspace {ws} holds {actual} rows in table {table}, but its binding to dataset {dataset} says {expected}: the loaded data is {}",
                        if actual < *expected { "incomplete" } else { "not what was loaded" }
                    );
                    let data = data::value(&count(table, *expected, actual, took_s));
                    failed = Some((r.clone(), Error::integrity(r), Some(data)));
                    break;
                }
                // The database or table is gone (`data/` wiped, a table dropped), as the
                // server's own typed answer says (each product's count sets it): the binding
                // claims data that is not there.
                Err(e) if e.missing().is_some() => {
                    let missing = e.missing().map(ToString::to_string).unwrap_or_default();
                    let r = format!(
                        "workspace {ws} is bound to dataset {dataset} ({expected} rows in table {table}), but its server does not have them (no {missing}): {}",
                        e.message
                    );
                    failed = Some((r.clone(), Error::integrity(r), None));
                    break;
                }
                Err(e) => {
                    failed = Some((e.message.clone(), e, None));
                    break;
                }
            }
        }
        let Some((reason, err, data)) = failed else {
            let data = if checked.len() == 1 {
                checked.pop().map_or(Value::Null, |c| data::value(&c))
            } else {
                data::value(&RowCountData {
                    table: Some(names.join(", ")),
                    expected: Some(tables.iter().map(|(_, n)| n).sum::<u64>()),
                    ok: Some(true),
                    tables: Some(checked),
                    ..RowCountData::default()
                })
            };
            self.run
                .end("row-check", attempt, Status::Completed, None, Some(data))?;
            return Ok(());
        };
        self.run
            .end("row-check", attempt, Status::Failed, Some(reason), data)?;
        let hint = if err.kind == crate::error::ErrorKind::Integrity {
            format!("{reload}; nothing was benchmarked")
        } else {
            err.hint.clone().unwrap_or_else(|| {
                "the rows could not be counted before the queries; see the server log".into()
            })
        };
        Err(err.with_hint(hint))
    }
}
