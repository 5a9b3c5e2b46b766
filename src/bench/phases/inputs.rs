//! The run's inputs, recorded before any server starts: the TSBS build (`tsbs-env`), the
//! dataset (materialised in the product's data format for loads), the query set.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::dataset::{self, Dataset, GenerateRequest, StoredFormat};
use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::queryset::{self, QuerySet, QuerySetRequest};

use super::super::{integrity, Bench};

impl Bench<'_> {
    /// The TSBS build the run uses (`tsbs-env`); its binaries are re-hashed when they start.
    pub(in crate::bench) fn env(&mut self) -> Result<TsbsEnv> {
        let key = self.plan.rerun.as_ref().map(|p| p.tsbs_key.as_str());
        let root = &self.ctx.root;
        let attempt = self.run.next_attempt("tsbs-env")?;
        self.run.step("tsbs-env", attempt, |run| {
            let env = TsbsEnv::load(root, key)?;
            let binaries: BTreeMap<String, Value> = env
                .binaries
                .iter()
                .map(|(k, v)| (k.clone(), json!({"path": v.path, "sha256": v.sha256})))
                .collect();
            let v = json!({
                "go_version": env.go_version,
                "tsbs_repo": env.repo,
                "tsbs_commit": env.commit,
                "tsbs_dirty": env.dirty,
                "binaries": binaries,
            });
            run.manifest.environment = Some(serde_json::from_value(v.clone())?);
            run.save()?;
            Ok((env, v))
        })
    }

    /// The dataset, materialised in the product's data format for loads (logical otherwise),
    /// and recorded with what the run will read: the stored file, or for a query-only run
    /// what the workspace holds. A rerun's pinned checksum must match.
    pub(in crate::bench) fn dataset(
        &mut self,
        env: &TsbsEnv,
        ds: &Dataset,
    ) -> Result<(Dataset, Option<StoredFormat>)> {
        let gen_env = env.clone();
        let mut data_gen = move || integrity::verified_generator(&gen_env, "tsbs_generate_data");
        let command = self.ctx.command_line();
        let reporter = self.ctx.reporter.as_ref();
        let (phase, plan, target) = (self.phase, self.plan, &self.target);
        let attempt = self.run.next_attempt("dataset")?;
        self.run.step("dataset", attempt, |run| {
            let (ds, stored) = if phase.loads() {
                let sf = dataset::ensure_generated(
                    ds,
                    &GenerateRequest {
                        format: target.product.data_format().name.into(),
                        compression: plan.compression,
                        regenerate: false,
                        generatable: crate::product::data_formats(),
                    },
                    &mut data_gen,
                    &command,
                    reporter,
                )?;
                let (ds, _) = ds.ensure_stored(&command, reporter)?;
                (ds, Some(sf))
            } else {
                let (ds, _) = ds.ensure_stored(&command, reporter)?;
                (ds, None)
            };
            let mut dv = ds.to_json();
            if let Some(pinned) = plan.rerun.as_ref().and_then(|p| p.dataset_sha256.as_ref()) {
                let have = match &stored {
                    Some(sf) => Some(sf.sha256.clone()),
                    None => target.binding().map(|b| b.sha256.clone()),
                };
                if have.as_ref() != Some(pinned) {
                    return Err(Error::integrity(format!(
                        "dataset {} has SHA-256 {}, the run being reproduced used {pinned}",
                        ds.id,
                        have.as_deref().unwrap_or("unknown")
                    ))
                    .with_hint(
                        "restore the dataset the run used (a rerun never substitutes data)",
                    ));
                }
            }
            if let Some(sf) = &stored {
                if let Value::Object(m) = sf.to_json() {
                    for (k, v) in m {
                        dv[k] = v;
                    }
                }
            } else if let Some(b) = target.binding().and_then(|b| serde_json::to_value(b).ok()) {
                // Query-only runs record what the workspace holds (format, rows, checksums).
                for k in [
                    "format",
                    "compression",
                    "rows",
                    "metrics",
                    "bytes",
                    "sha256",
                    "uncompressed_sha256",
                ] {
                    if let Some(v) = b.get(k) {
                        dv[k] = v.clone();
                    }
                }
            }
            run.manifest.dataset = Some(serde_json::from_value(dv.clone())?);
            run.save()?;
            Ok(((ds, stored), dv))
        })
    }

    /// The query set in the product's query format (a rerun's pinned manifest must match).
    pub(in crate::bench) fn query_set(
        &mut self,
        env: &TsbsEnv,
        ds: &Dataset,
        counts: &BTreeMap<String, u64>,
    ) -> Result<QuerySet> {
        let qenv = env.clone();
        let mut q_gen = move || integrity::verified_generator(&qenv, "tsbs_generate_queries");
        let reporter = self.ctx.reporter.as_ref();
        let (plan, target) = (self.plan, &self.target);
        let attempt = self.run.next_attempt("query-set")?;
        self.run.step("query-set", attempt, |run| {
            let log_dir = run.dir.join("logs");
            let root = &plan.root;
            let qreq = QuerySetRequest {
                dataset: ds,
                format: target.product.query_format(),
                counts,
                log_dir: &log_dir,
                pinned_manifest_sha256: plan
                    .rerun
                    .as_ref()
                    .and_then(|p| p.query_set_manifest_sha256.as_deref()),
                full_verify: false,
                batch: None,
            };
            // A resume that extends the run makes the larger set from the run's own.
            let set = match plan
                .resume
                .as_ref()
                .and_then(|r| r.base_query_set.as_deref())
            {
                Some(base) => queryset::extend_query_set(root, &qreq, base, &mut q_gen, reporter)?,
                None => queryset::ensure_query_set(root, &qreq, &mut q_gen, reporter)?,
            };
            if let Some(r) = &plan.resume {
                crate::bench::resume_files_unchanged(r, &set)?;
            }
            let qv = json!({
                "query_set_id": set.id,
                "query_set_path": set.path,
                "manifest_sha256": set.manifest_sha256,
                "format": set.format.as_str(),
                "query_counts": set.counts(),
                "spec": set.spec,
                "reused": set.reused,
            });
            run.manifest.query_set = Some(serde_json::from_value(qv.clone())?);
            run.save()?;
            Ok((set, qv))
        })
    }
}
