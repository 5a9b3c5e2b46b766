//! Checks that must pass before a run directory is reserved or a server starts (trial-run
//! defects #1, #16, #17): exit 2 means nothing changed. They read the resolved plan
//! ([`super::plan`]) and the workspace's and dataset's manifests; the flags' own rules are
//! [`super::validate`]'s.

use super::plan::{Plan, Workload};
use super::target::Target;
use super::Phase;
use crate::dataset::{self, Dataset, GenerateRequest};
use crate::diskspace::{self, Need};
use crate::error::{Error, Result};
use crate::queryset::{self, QuerySetRequest};

/// `--compression` that differs from how the dataset stores the format the product loads
/// (#16): generation would refuse it later, after the run directory exists.
pub fn check_compression(target: &Target, ds: &Dataset, plan: &Plan) -> Result<()> {
    let Some(want) = plan.compression else {
        return Ok(());
    };
    if !ds.stored {
        return Ok(());
    }
    let format = target.product.data_format().name;
    if let Some(m) = dataset::read_format_manifest(&ds.format_dir(format))? {
        if m.status == dataset::VariantStatus::Completed && m.compression != Some(want) {
            return Err(Error::invalid(format!(
                "dataset {} stores {format} as {}, not {}",
                ds.id,
                m.compression.map(|c| c.as_str()).unwrap_or("?"),
                want.as_str(),
            ))
            .with_hint("drop --compression (the stored data is used), or regenerate it with `tsbsctl data generate --regenerate --compression ...`"));
        }
    }
    Ok(())
}

/// A load into a workspace bound to the same dataset id but other content (the dataset was
/// regenerated since) needs a confirmed reset: decided from the manifests before the run
/// exists, as for another id (#16).
pub fn check_binding_content(target: &Target, ds: &Dataset, plan: &Plan) -> Result<()> {
    let mode = plan.mode;
    let Some(b) = target.binding() else {
        return Ok(());
    };
    if !target.is_managed() || b.dataset_id != ds.id || !ds.stored {
        return Ok(());
    }
    // The binding records the variant the product loads; another format's content differs.
    let format = target.product.data_format().name;
    let Some(m) = dataset::read_format_manifest(&ds.format_dir(format))? else {
        return Ok(());
    };
    if m.status != dataset::VariantStatus::Completed {
        return Ok(());
    }
    let Some(u) = &m.uncompressed else {
        return Ok(());
    };
    target.check_binding_data(&ds.id, &u.sha256, mode)
}

/// Free space for what this command will generate: the dataset (loads, when no completed
/// variant exists) and the query set (unless published), #1.
pub fn check_disk(target: &Target, plan: &Plan, w: &Workload) -> Result<()> {
    let (root, phase, ds, counts) = (&plan.root, plan.phase, &w.dataset, &w.counts);
    let mut needs: Vec<Need> = Vec::new();
    if phase.loads() {
        let format = target.product.data_format().name;
        let done = ds.stored
            && dataset::read_format_manifest(&ds.format_dir(format))?
                .is_some_and(|m| m.status == dataset::VariantStatus::Completed);
        if !done {
            let rows = ds.spec.expected_rows()?.rows;
            needs.push(dataset::generation_need(
                ds,
                &GenerateRequest {
                    format: format.into(),
                    compression: plan.compression,
                    regenerate: false,
                    generatable: crate::product::data_formats(),
                },
                rows,
            )?);
        }
    }
    if phase != Phase::Load {
        let log_dir = root.path().join("logs");
        needs.push(queryset::generation_need(
            root,
            &QuerySetRequest {
                dataset: ds,
                format: target.product.query_format(),
                counts,
                log_dir: &log_dir,
                pinned_manifest_sha256: None,
                full_verify: false,
                batch: None,
            },
        )?);
    }
    diskspace::ensure_room(&needs)
}

/// A product operation that works on a table (`op`, given by `flag`): the table must be one
/// the workspace's loaded dataset wrote (#16: deciding it by asking the server would start
/// the server first): one of its use case's tables.
pub fn check_operation_table(
    target: &Target,
    op: &str,
    flag: &crate::product::ext::BenchFlag,
    table: &str,
) -> Result<()> {
    let Some(m) = target.managed() else {
        return Ok(());
    };
    let id = m.ws.id();
    match target.binding() {
        None => Err(Error::invalid(format!(
            "nothing to {op} in workspace {id}: it holds no loaded data (table {table} does not exist)"
        ))
        .with_hint(format!(
            "load the dataset first: tsbsctl bench {} load --database-id {id}",
            target.entry.name
        ))),
        Some(b) => {
            let uc = b
                .spec
                .get("use_case")
                .and_then(|v| v.as_str())
                .and_then(dataset::use_case)
                .or_else(|| dataset::use_case("cpu-only"))
                .expect("cpu-only is a use case");
            let tables = uc.table_names();
            if tables.contains(&table) {
                return Ok(());
            }
            Err(Error::invalid(format!(
                "table {table} does not exist in workspace {id}: its dataset {} ({}) has the tables {}",
                b.dataset_id,
                uc.name,
                tables.join(", ")
            ))
            .with_hint(format!("pass --{} {}", flag.long, uc.first_table())))
        }
    }
}
