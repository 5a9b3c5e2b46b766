//! `tsbsctl data generate --only queries`: a query set of a dataset without its data (the
//! generator needs only the dataset's spec), in one product's query format; `--extend ID`
//! makes the set with more types or queries from a published one (see
//! [`crate::queryset::extend_query_set`]).

use std::collections::BTreeMap;

use serde_json::json;

use crate::bench::flags::SpecArgs;
use crate::context::Ctx;
use crate::dataset::{Dataset, Profile};
use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::output::Outcome;
use crate::paths::Root;
use crate::queryset::{self, QuerySetRequest};

use super::data::QueryArgs;

/// The counts of a set `base` extended by the flags (types given replace or add their counts).
fn extended_counts(
    types: &[&str],
    profile: Profile,
    base: &BTreeMap<String, u64>,
    q: &QueryArgs,
) -> Result<BTreeMap<String, u64>> {
    if q.query_types.is_empty() && q.query_counts.is_empty() && q.queries.is_none() {
        return Err(
            Error::invalid("--extend needs the types or counts to add").with_hint(
                "e.g. --query-type high-cpu-all --queries 20, or --query-count lastpoint=50",
            ),
        );
    }
    let added = if q.query_types.is_empty() && q.query_counts.is_empty() {
        // --queries alone: more queries of every type the set has.
        queryset::resolve_counts_in(types, profile, Some(base), &[], q.queries, &[])?
    } else {
        queryset::resolve_counts_in(
            types,
            profile,
            None,
            &q.query_types,
            q.queries,
            &q.query_counts,
        )?
    };
    let mut all = base.clone();
    all.extend(added);
    Ok(all)
}

pub fn generate(
    ctx: &Ctx,
    root: &Root,
    dataset_id: Option<&str>,
    spec: &SpecArgs,
    q: &QueryArgs,
) -> Result<Outcome> {
    let reporter = ctx.reporter.as_ref();
    let name = q.product.as_deref().ok_or_else(|| {
        Error::invalid("--only queries needs --product (the query format is the product's)")
            .with_hint(format!(
                "e.g. --product greptimedb; products: {}",
                crate::product::names().join(", ")
            ))
    })?;
    let entry = crate::product::entry(name)?;
    if q.edition.is_some() && entry.variant_flag.is_none() {
        return Err(Error::invalid(format!("{} has no variants", entry.display))
            .with_hint("drop --edition"));
    }
    let product = (entry.make)(q.edition.as_deref())?;
    let format = product.query_format();
    let ds = Dataset::resolve(root, dataset_id, &spec.overrides())?;
    crate::dataset::check_stored_spec(&ds)?;
    // Not every format's generator has every use case's queries (influx3 has no iot).
    let uc = ds.spec.use_case()?;
    if !format.use_cases.contains(&uc.query_use_case) {
        return Err(Error::invalid(format!(
            "{} has no {} queries: the fork's query generator has none for its format {} (it has: {})",
            entry.display,
            uc.name,
            format.name,
            format.use_cases.join(", ")
        ))
        .with_hint("choose another --product, or a dataset of a use case this product's queries cover"));
    }
    let profile = spec.profile.unwrap_or(if ds.spec == Profile::Smoke.spec() {
        Profile::Smoke
    } else {
        Profile::Manual
    });
    // The base set of an extension: a published set of this dataset and format.
    let base = match &q.extend {
        Some(id) => {
            crate::ids::validate_id("--extend", id)?;
            let dir = queryset::query_set_dir(root, &ds.id, format, id);
            if !dir.join("manifest.json").is_file() {
                return Err(Error::invalid(format!(
                    "dataset {} has no {} query set {id}",
                    ds.id,
                    format.as_str()
                ))
                .with_hint(format!(
                    "`tsbsctl data inspect --dataset-id {}` lists its query sets",
                    ds.id
                )));
            }
            let m: crate::queryset::QuerySetManifest =
                crate::queryset::read_manifest(&dir.join("manifest.json"), format)?;
            let counts: BTreeMap<String, u64> = m.spec["query_counts"]
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                        .collect()
                })
                .unwrap_or_default();
            Some((dir, counts))
        }
        None => None,
    };
    let types = uc.query_types;
    let counts = match &base {
        Some((_, b)) => extended_counts(types, profile, b, q)?,
        None => queryset::resolve_counts_in(
            types,
            profile,
            None,
            &q.query_types,
            q.queries,
            &q.query_counts,
        )?,
    };
    queryset::check_query_needs(&ds, &counts)?;
    queryset::check_runnable_types(&format, entry.display, &counts)?;
    // Generator logs go to the state root, never the (maybe shared) query root.
    let log_dir = ctx
        .root
        .path()
        .join("logs")
        .join("generate-queries")
        .join(crate::ids::timestamp_id_now());
    let state_root = ctx.root.clone();
    let mut gen = move || -> Result<crate::dataset::Generator> {
        let env = TsbsEnv::load(&state_root, None)?;
        crate::bench::integrity::verified_generator(&env, "tsbs_generate_queries")
    };
    // A logical dataset that was named by its spec only gets its dataset.json now.
    let (ds, _) = ds.ensure_stored(&ctx.command_line(), reporter)?;
    let req = QuerySetRequest {
        dataset: &ds,
        format,
        counts: &counts,
        log_dir: &log_dir,
        pinned_manifest_sha256: None,
        full_verify: false,
        batch: None,
    };
    let set = match &base {
        Some((dir, _)) => queryset::extend_query_set(root, &req, dir, &mut gen, reporter)?,
        None => queryset::ensure_query_set(root, &req, &mut gen, reporter)?,
    };
    let m: crate::queryset::QuerySetManifest =
        crate::queryset::read_manifest(&set.manifest_path, format)?;
    let mut data = set.to_json();
    data["dataset_id"] = json!(ds.id);
    data["format"] = json!(format.as_str());
    data["created_at"] = json!(m.created_at);
    data["extended_from"] = json!(m.extended_from);
    data["generated_at"] = json!(m
        .files
        .iter()
        .map(|(t, f)| (t.clone(), json!(f.generated_at)))
        .collect::<serde_json::Map<_, _>>());
    let mut human = format!(
        "Query set {}: {} ({} format, dataset {})\nPath: {}\n",
        if set.reused { "reused" } else { "generated" },
        set.id,
        format.as_str(),
        ds.id,
        set.path.display()
    );
    if let Some(e) = &m.extended_from {
        human.push_str(&format!(
            "Extended from {}: copied {}; generated {}\n",
            e.query_set_id,
            if e.reused_types.is_empty() {
                "-".to_string()
            } else {
                e.reused_types.join(", ")
            },
            e.generated_types.join(", ")
        ));
    }
    for (t, n) in set.counts() {
        human.push_str(&format!("  {t}: {n} queries\n"));
    }
    Ok(Outcome::new(data, human))
}
