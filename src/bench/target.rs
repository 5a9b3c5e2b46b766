//! Where a benchmark goes: a managed workspace (loaded, locked for the whole command, its
//! server started by tsbsctl) or an external server (health- and version-probed first).

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::context::Ctx;
use crate::dataset::{Dataset, StoredFormat};
use crate::error::{Error, Result};
use crate::install;
use crate::lock::LockGuard;
use crate::lock::LockOptions;
use crate::output::{Event, Warning};
use crate::paths::Root;
use crate::platform::Platform;
use crate::product::ext::Values;
use crate::product::{CountRequest, Entry, ExternalServer, Product};
use crate::run::{RunDir, RunTarget, TargetMode};
use crate::server::{ServerSpec, Timing};
use crate::tsbs::{DatabaseMode, Secret};
use crate::workspace::{self, Workspace};

/// Checks an external `--url` the product's way (HTTP products: absolute http(s) with a host;
/// PostgreSQL: `postgres://USER@HOST:PORT/DB`, no password); the SQL database it names, if any.
pub fn check_url(product: &dyn ExternalServer, u: &str) -> Result<Option<String>> {
    product.check_external_url(u)
}

/// Where the target is, and how it is reached: decided from the flags before the target
/// opens ([`Target::open`] reads only this; [`super::plan::resolve`] decides it).
#[derive(Debug)]
pub struct TargetPlan {
    pub place: PlacePlan,
    /// The tokens, read from their variables (the given ones, else the product's defaults).
    pub auth_token: Option<Secret>,
    pub admin_token: Option<Secret>,
    pub lock: LockOptions,
    /// The limit of one row-count request.
    pub count_timeout: std::time::Duration,
    /// A load's mode and its confirmation, checked against a workspace's database (`None`:
    /// the phase does not load).
    pub load_mode: Option<(DatabaseMode, Option<String>)>,
    /// The product's resolved values: the variant that runs checks them
    /// ([`crate::product::Driver::check_bench_values`]) before a workspace is locked.
    pub product_values: Values,
}

/// A managed workspace or an external server.
#[derive(Debug)]
pub enum PlacePlan {
    Managed {
        database_id: String,
        /// `--database` given: it must be the workspace's.
        database: Option<String>,
        /// Another installed version to run on the workspace's data, and its confirmation.
        runtime: Option<(String, Option<String>)>,
    },
    External {
        /// Without a trailing `/`.
        urls: Vec<String>,
        /// `--database`, else the one the URL names, else `benchmark`.
        database: String,
        /// The variant the servers run (products with variants).
        variant: Option<String>,
        /// The user of HTTP basic auth.
        user: Option<String>,
    },
}

/// A managed workspace held under its lock.
pub struct Managed {
    pub root: Root,
    pub ws: Workspace,
    pub _guard: LockGuard,
    /// `--greptime-version`: the version that runs (when it differs from the workspace's).
    pub runtime: Option<Runtime>,
}

/// The installation that runs instead of the workspace's own (version override).
#[derive(Debug, Clone)]
pub struct Runtime {
    pub version: String,
    pub binary_sha256: String,
    pub installation_path: PathBuf,
}

/// Where the benchmark runs.
pub enum Place {
    // Boxed: a workspace (manifest, lock guard) is several times an external target's size.
    Managed(Box<Managed>),
    External(External),
}

/// An external server.
pub struct External {
    /// `--user` of HTTP basic auth (recorded; its password is the auth token).
    pub user: Option<String>,
    pub urls: Vec<String>,
    pub database: String,
    pub variant: Option<String>,
    /// What the server reported (version, ...).
    pub probe: Value,
}

pub struct Target {
    /// The registry entry the command named (`bench <product>`).
    pub entry: &'static Entry,
    /// The product in the variant that runs: the workspace's, or `--edition` of an external one.
    pub product: Box<dyn Product>,
    /// Managed or external: exactly one.
    pub place: Place,
    pub auth_token: Option<Secret>,
    pub admin_token: Option<Secret>,
    /// InfluxDB 3 row counts: the dataset's `[start, end)` in ns (time slices stay inside it)
    /// and the limit of one count request.
    pub count_window: Option<(i64, i64)>,
    pub count_timeout: std::time::Duration,
    /// The tables of the run's dataset, in the generator's order (empty: no dataset resolved,
    /// e.g. a maintenance run).
    pub tables: Vec<String>,
}

impl Target {
    /// Opens the target the plan names: a managed workspace loaded and locked (for the whole
    /// command), or an external server probed.
    pub fn open(
        ctx: &Ctx,
        root: &Root,
        entry: &'static Entry,
        plan: &TargetPlan,
    ) -> Result<Target> {
        let (auth_token, admin_token) = (plan.auth_token.clone(), plan.admin_token.clone());
        match &plan.place {
            PlacePlan::Managed {
                database_id: id,
                database,
                runtime,
            } => {
                let product = crate::product::for_workspace(root, entry.name, id)?;
                // The workspace's variant decides, before its lock is taken (nothing to wait for).
                product.check_bench_values(&plan.product_values)?;
                let ws = workspace::load(root, product.as_ref(), id)?;
                let guard =
                    workspace::lock_workspace(ctx, product.as_ref(), &ws.dir, id, &plan.lock)?;
                // Re-read under the lock: another command may have changed it meanwhile.
                let ws = workspace::load(root, product.as_ref(), id)?;
                // Every phase starts the server: a workspace the product refuses to serve is
                // refused before a run exists.
                product.check_can_serve(&ws.manifest)?;
                if let Some(w) = product.serve_warning(&ws.manifest) {
                    ctx.reporter.warning(&Warning::Product { text: w });
                }
                if let Some(d) = database {
                    if d != &ws.manifest.database {
                        return Err(Error::invalid(format!(
                            "workspace {id} is bound to SQL database {:?}, not {d:?}",
                            ws.manifest.database
                        ))
                        .with_hint("drop --database (the workspace's database is used), or prepare another workspace"));
                    }
                }
                if let Some((mode, confirm)) = &plan.load_mode {
                    mode.check_confirmation(&ws.manifest.database, confirm.as_deref())?;
                }
                let runtime = match runtime {
                    None => None,
                    Some((v, confirm)) => {
                        version_override(root, product.as_ref(), &ws, v, confirm.as_deref())?
                    }
                };
                Ok(Target {
                    entry,
                    product,
                    place: Place::Managed(Box::new(Managed {
                        root: root.clone(),
                        ws,
                        _guard: guard,
                        runtime,
                    })),
                    auth_token,
                    admin_token,
                    count_window: None,
                    tables: Vec::new(),
                    count_timeout: plan.count_timeout,
                })
            }
            PlacePlan::External {
                urls,
                database,
                variant,
                user,
            } => {
                let product = (entry.make)(variant.as_deref())?;
                product.check_bench_values(&plan.product_values)?;
                // `--user`: the password is the auth secret; both reach every request to these
                // URLs (tsbsctl's and the tools') as HTTP basic auth, never a bearer token.
                if let (Some(user), Some(password)) = (user, &auth_token) {
                    crate::tsbs::credentials::register(
                        urls,
                        &crate::tsbs::credentials::BasicAuth {
                            user: user.clone(),
                            password: password.clone(),
                        },
                    );
                }
                let bearer = auth_token.as_ref().filter(|_| !product.takes_basic_auth());
                let probe =
                    probe_external(entry, product.as_ref(), urls, bearer, variant.as_deref())?;
                ctx.reporter.event(&Event::ExternalVersion {
                    product: entry.display.to_string(),
                    urls: urls.clone(),
                    version: probe["version"].as_str().map(str::to_string),
                });
                if let Some(t) = probe.get("topology").filter(|t| t["known"] == true) {
                    let unused = t["frontends_unused"].as_u64().unwrap_or(0);
                    ctx.reporter.event(&Event::ClusterInfo {
                        summary: t["summary"].as_str().map(str::to_string),
                        frontends_unused: unused,
                    });
                }
                Ok(Target {
                    entry,
                    product,
                    place: Place::External(External {
                        user: user.clone(),
                        urls: urls.clone(),
                        database: database.clone(),
                        variant: variant.clone(),
                        probe,
                    }),
                    auth_token,
                    admin_token,
                    count_window: None,
                    tables: Vec::new(),
                    count_timeout: plan.count_timeout,
                })
            }
        }
    }

    /// A managed server that cannot serve (the product's `check_can_serve` says why), or a
    /// shape (`--cpus`, `--memory`) for a server tsbsctl does not manage or cannot hold, is
    /// refused before the run exists (#16).
    pub fn check_can_serve(&self, shape: Option<&crate::server::cgroup::Shape>) -> Result<()> {
        if let Some(shape) = shape {
            if !self.is_managed() {
                return Err(Error::invalid(
                    "--cpus and --memory hold a server tsbsctl manages to a shape; an external server runs in the shape of its own host",
                )
                .with_hint("leave them out with --url (the summary records what the server's /metrics say, where it has them), or benchmark a managed workspace"));
            }
            // Whether a cgroup can be had here: exit 2 with the reason before anything exists.
            crate::server::cgroup::check(shape)?;
        }
        match self.managed() {
            Some(m) => self.product.check_can_serve(&m.ws.manifest),
            None => Ok(()),
        }
    }

    /// The run's dataset: its row counts stay inside `ds`'s time range (InfluxDB 3 slices in
    /// it), and its tables are what a product's step before the queries covers.
    pub fn set_dataset(&mut self, ds: &Dataset) {
        self.count_window = count_window(&ds.spec);
        self.tables = ds
            .spec
            .use_case()
            .map(|u| u.table_names().into_iter().map(String::from).collect())
            .unwrap_or_default();
    }

    /// The managed workspace, when the target is one.
    pub fn managed(&self) -> Option<&Managed> {
        match &self.place {
            Place::Managed(m) => Some(m),
            Place::External(_) => None,
        }
    }

    fn managed_mut(&mut self) -> Option<&mut Managed> {
        match &mut self.place {
            Place::Managed(m) => Some(m),
            Place::External(_) => None,
        }
    }

    pub fn is_managed(&self) -> bool {
        self.managed().is_some()
    }

    pub fn database_id(&self) -> Option<String> {
        self.managed().map(|m| m.ws.id().to_string())
    }

    pub fn database(&self) -> &str {
        match &self.place {
            Place::Managed(m) => &m.ws.manifest.database,
            Place::External(e) => &e.database,
        }
    }

    pub fn variant(&self) -> Option<String> {
        match &self.place {
            Place::Managed(m) => m.ws.manifest.variant.clone(),
            Place::External(e) => e.variant.clone(),
        }
    }

    /// The endpoint of the managed server (its configured port) or the first external URL.
    pub fn endpoint(&self) -> String {
        match &self.place {
            Place::Managed(m) => m.ws.endpoint(),
            Place::External(e) => e.urls[0].clone(),
        }
    }

    /// The URLs the TSBS tools get.
    pub fn urls_with(&self, endpoint: &str) -> Vec<String> {
        match &self.place {
            Place::External(e) => e.urls.clone(),
            Place::Managed(m) => self.product.managed_urls(&m.ws.manifest, endpoint),
        }
    }

    /// With several external URLs, the ones a TSBS tool of `workers` workers really uses: its
    /// worker i connects to URL i mod n (`tsbs_load_greptime`'s `process.go`, the runners'
    /// `main.go`), so fewer workers than URLs leave the last URLs idle. `None`: one URL.
    pub fn urls_in_use(&self, workers: u32) -> Option<Vec<String>> {
        let urls = match &self.place {
            Place::External(e) => e.urls.clone(),
            Place::Managed(m) => self.product.managed_urls(&m.ws.manifest, &m.ws.endpoint()),
        };
        (urls.len() > 1).then(|| urls.into_iter().take(workers.max(1) as usize).collect())
    }

    pub fn tokens(&self) -> (Option<Secret>, Option<Secret>) {
        (self.auth_token.clone(), self.admin_token.clone())
    }

    /// The auth token for tsbsctl's own requests to the server (row counts, the product's
    /// after-load work, the `/metrics` sampler, as a bearer token): external servers only,
    /// managed ones run without auth. A basic-auth password (GreptimeDB `--user`) is no
    /// token: it goes only where [`crate::tsbs::credentials`] sends it.
    pub fn external_token(&self) -> Option<&str> {
        match &self.place {
            Place::Managed(_) => None,
            Place::External(_) if self.product.takes_basic_auth() => None,
            Place::External(_) => self.auth_token.as_ref().map(|t| t.expose()),
        }
    }

    pub fn data_dir(&self) -> Option<PathBuf> {
        self.managed().map(|m| m.ws.data_dir())
    }

    pub fn binding(&self) -> Option<&workspace::Binding> {
        self.managed().and_then(|m| m.ws.manifest.binding.as_ref())
    }

    pub fn default_timing(&self) -> Timing {
        self.managed()
            .map(|_| self.product.default_timing())
            .unwrap_or_default()
    }

    /// The `target` of the run manifest.
    pub fn to_run_target(&self) -> Result<RunTarget> {
        let mut t = self.run_target()?;
        let runtime = self.managed().and_then(|m| m.runtime.as_ref());
        if let Some(settings) = self.product.server_settings(
            self.managed().map(|m| &m.ws.manifest),
            self.data_dir().as_deref(),
            runtime.map(|r| r.version.as_str()),
        ) {
            t.extra.insert("server_settings".into(), settings);
        }
        Ok(t)
    }

    fn run_target(&self) -> Result<RunTarget> {
        let common = |mode, variant: Option<String>, database: &str, endpoint: String| RunTarget {
            mode,
            product: self.entry.name.to_string(),
            variant,
            database_id: None,
            workspace_path: None,
            urls: None,
            endpoint,
            database: database.to_string(),
            version: None,
            binary_sha256: None,
            workspace_version: None,
            workspace_binary_sha256: None,
            version_override: None,
            probe: None,
            auth_token: None,
            admin_token: None,
            extra: Default::default(),
        };
        match &self.place {
            Place::Managed(m) => {
                let w = &m.ws.manifest;
                let (version, sha) = match &m.runtime {
                    Some(r) => (r.version.clone(), r.binary_sha256.clone()),
                    None => (w.version.clone(), w.binary_sha256.clone()),
                };
                // A cluster workspace: every frontend the tools take, and its topology.
                let urls = self.product.managed_urls(w, &m.ws.endpoint());
                let extra = w
                    .extra
                    .get("topology")
                    .map(|t| ("topology".to_string(), t.clone()))
                    .into_iter()
                    .collect();
                Ok(RunTarget {
                    urls: (urls.len() > 1).then_some(urls),
                    extra,
                    database_id: Some(w.database_id.clone()),
                    workspace_path: Some(m.ws.dir.clone()),
                    version: Some(version),
                    binary_sha256: Some(sha),
                    workspace_version: Some(w.version.clone()),
                    workspace_binary_sha256: Some(w.binary_sha256.clone()),
                    version_override: Some(m.runtime.is_some()),
                    ..common(
                        TargetMode::Managed,
                        w.variant.clone(),
                        &w.database,
                        m.ws.endpoint(),
                    )
                })
            }
            Place::External(e) => Ok(RunTarget {
                extra: e
                    .user
                    .iter()
                    .map(|u| ("user".to_string(), Value::from(u.clone())))
                    .collect(),
                urls: Some(e.urls.clone()),
                version: e.probe["version"].as_str().map(str::to_string),
                probe: Some(e.probe.clone()),
                auth_token: Some(self.auth_token.is_some()),
                admin_token: Some(self.admin_token.is_some()),
                ..common(
                    TargetMode::External,
                    e.variant.clone(),
                    &e.database,
                    e.urls[0].clone(),
                )
            }),
        }
    }

    /// Server pins of the run manifest.
    pub fn server_pin(&self) -> Option<crate::run::ServerPin> {
        let m = self.managed()?;
        let w = &m.ws.manifest;
        let inst = match &m.runtime {
            Some(r) => crate::run::RuntimePin {
                version: r.version.clone(),
                binary_sha256: r.binary_sha256.clone(),
                installation_path: r.installation_path.clone(),
            },
            None => crate::run::RuntimePin {
                version: w.version.clone(),
                binary_sha256: w.binary_sha256.clone(),
                installation_path: w.installation_path.clone(),
            },
        };
        let config = std::fs::read_to_string(m.ws.config_path()).ok();
        // What a rerun must download again: the archive and its checksum.
        let version = m
            .runtime
            .as_ref()
            .map(|r| r.version.clone())
            .unwrap_or_else(|| w.version.clone());
        let (os, arch) = w.platform.split_once('-').unwrap_or(("", ""));
        let archive = Platform::from_parts(os, arch)
            .ok()
            .and_then(|p| {
                install::open(&m.root, self.product.as_ref(), &version, &p)
                    .ok()
                    .flatten()
            })
            .map(|i| crate::run::ArchivePin {
                source_url: i.manifest.source_url,
                checksum_url: i.manifest.checksum_url,
                archive_sha256: i.manifest.archive_sha256,
                archive_size: i.manifest.archive_size,
                tree_digest: i.manifest.tree_digest,
                version_source: i.manifest.version_source,
            });
        Some(crate::run::ServerPin {
            runtime: inst,
            workspace_version: w.version.clone(),
            workspace_binary_sha256: w.binary_sha256.clone(),
            version_override: m.runtime.is_some(),
            platform: w.platform.clone(),
            config_path: m.ws.config_path(),
            config_sha256: w.config_sha256.clone(),
            config,
            ports: w.ports.clone(),
            installation: archive,
            extra: Default::default(),
        })
    }

    pub fn data_state(&self) -> Option<crate::run::RunDataState> {
        let m = self.managed()?;
        Some(crate::run::RunDataState::of(
            &m.ws.manifest.data_state,
            self.entry.name,
        ))
    }

    /// The binding a load of `sf` would record.
    pub fn binding_for(&self, ds: &Dataset, sf: &StoredFormat) -> workspace::Binding {
        workspace::binding_for(ds, sf)
    }

    /// The workspace holds exactly this data (same dataset, same content).
    pub fn bound_to(&self, binding: &workspace::Binding) -> bool {
        self.managed()
            .is_some_and(|m| m.ws.manifest.bound_to(binding))
    }

    /// Before anything is written: a workspace bound to another dataset needs a confirmed
    /// reset.
    pub fn check_binding_id(&self, ds: &Dataset, mode: DatabaseMode) -> Result<()> {
        let Some(b) = self.binding() else {
            return Ok(());
        };
        let bound = b.dataset_id.as_str();
        if bound != ds.id && mode != DatabaseMode::Reset {
            return Err(self.rebind_error(bound, &ds.id));
        }
        Ok(())
    }

    /// After generation: same id but other content also needs a confirmed reset.
    pub fn check_binding_data(
        &self,
        dataset_id: &str,
        uncompressed_sha256: &str,
        mode: DatabaseMode,
    ) -> Result<()> {
        let Some(b) = self.binding() else {
            return Ok(());
        };
        let same = b.dataset_id == dataset_id && b.uncompressed_sha256 == uncompressed_sha256;
        if mode != DatabaseMode::Reset && !same {
            return Err(self.rebind_error(&b.dataset_id, dataset_id));
        }
        Ok(())
    }

    fn rebind_error(&self, bound: &str, wanted: &str) -> Error {
        let db = self.database();
        Error::invalid(format!(
            "workspace {} holds dataset {bound}, not {wanted}",
            self.database_id().unwrap_or_default()
        ))
        .with_hint(format!(
            "load it anyway with --database-mode reset --confirm-reset {db} (drops the data), or use another workspace"
        ))
    }

    /// Query and analyze need the workspace to hold the run's dataset.
    /// `named`: the command named its dataset (`--dataset-id` or a spec flag); otherwise a
    /// repair hint names the dataset an unfinished load was loading, not the default one.
    pub fn require_binding(&self, root: &Root, ds: &Dataset, named: bool) -> Result<()> {
        let Some(m) = self.managed() else {
            return Ok(());
        };
        match self.binding() {
            Some(b) if b.dataset_id == ds.id => Ok(()),
            Some(b) => Err(Error::invalid(format!(
                "workspace {} holds dataset {}, not {}",
                m.ws.id(),
                b.dataset_id,
                ds.id
            ))
            .with_hint("drop --dataset-id and the spec flags to query the loaded data, or load this dataset first")),
            None => Err(Error::invalid(format!("workspace {} holds no loaded data", m.ws.id()))
                .with_hint(self.load_hint(root, m.ws.id(), ds, named))),
        }
    }

    /// The load command that gives this workspace the dataset a query asked for: it names the
    /// dataset (a bare `load` would generate the 36 GB manual one), and after a load that began
    /// but never finished (the SQL database may exist) it resets, which a plain load refuses.
    fn load_hint(&self, root: &Root, ws_id: &str, ds: &Dataset, named: bool) -> String {
        let since = self
            .managed()
            .map(|m| m.ws.manifest.created_at.as_str())
            .unwrap_or("");
        let unfinished = unfinished_load(root, self.entry.name, ws_id, since);
        // Without a named dataset `ds` is the manual default; the repair reloads what the
        // unfinished run was loading (stored, so its id alone names it).
        let mut ds = ds;
        let loaded;
        if let Some((_, Some(id))) = &unfinished {
            if !named && id != &ds.id {
                if let Ok(d) = Dataset::resolve(root, Some(id), &Default::default()) {
                    if d.stored {
                        loaded = d;
                        ds = &loaded;
                    }
                }
            }
        }
        let mut cmd = format!(
            "tsbsctl bench {} load --database-id {ws_id} --dataset-id {}",
            self.entry.name, ds.id
        );
        // Not generated yet: the id alone would mean the manual profile's spec.
        if !ds.stored && ds.spec == crate::dataset::Profile::Smoke.spec().canonical() {
            cmd.push_str(" --profile smoke");
        }
        if let Some((run, _)) = &unfinished {
            cmd.push_str(&format!(
                " --database-mode reset --confirm-reset {}",
                self.database()
            ));
            let mut hint = format!(
                "run {run} began loading this workspace and no verified load followed, so its database may exist and hold part of the data; load it again, replacing that: {cmd}"
            );
            if !ds.stored && ds.spec != crate::dataset::Profile::Smoke.spec().canonical() {
                hint.push_str(" (with the dataset flags of this command)");
            }
            hint
        } else {
            let mut hint = format!("load it first: {cmd}");
            if !ds.stored && ds.spec != crate::dataset::Profile::Smoke.spec().canonical() {
                hint.push_str(" (with the dataset flags of this command)");
            }
            hint
        }
    }

    /// Clears the binding (and the data state) before a reset drops the database.
    pub fn clear_binding(&mut self) -> Result<()> {
        if let Some(m) = self.managed_mut() {
            if m.ws.manifest.clear_binding() {
                m.ws.save()?;
            }
        }
        Ok(())
    }

    /// Sets the binding after a verified load, and records the load in the data state.
    pub fn set_binding(&mut self, binding: workspace::Binding, run: &RunDir) -> Result<()> {
        if let Some(m) = self.managed_mut() {
            let now = crate::manifest::now_rfc3339();
            m.ws.manifest
                .set_binding(binding, run.id(), run.dir.clone(), &now);
            m.ws.save()?;
        }
        Ok(())
    }

    /// Appends a maintenance record (compaction) to the workspace's data state.
    pub fn push_maintenance(&mut self, rec: workspace::MaintenanceRecord) -> Result<()> {
        if let Some(m) = self.managed_mut() {
            m.ws.manifest.push_maintenance(rec);
            m.ws.save()?;
        }
        Ok(())
    }

    /// Replaces the last maintenance record (the intent a compaction recorded) by its outcome.
    pub fn update_last_maintenance(&mut self, rec: workspace::MaintenanceRecord) -> Result<()> {
        if let Some(m) = self.managed_mut() {
            m.ws.manifest.update_last_maintenance(rec);
            m.ws.save()?;
        }
        Ok(())
    }

    /// The product's checks of a managed server that answers (see
    /// [`crate::product::ManagedServer::check_serving`]); nothing for an external one.
    pub fn check_serving(&self, endpoint: &str, pid: u32) -> Result<Option<Value>> {
        match self.managed() {
            Some(m) => self
                .product
                .check_serving(&m.ws.manifest, &m.ws.dir, endpoint, pid),
            None => Ok(None),
        }
    }

    pub fn server_spec(&self, root: &Root, log: PathBuf, timing: Timing) -> Result<ServerSpec> {
        let m = self
            .managed()
            .ok_or_else(|| Error::failed("an external server is not started by tsbsctl"))?;
        let mut ws = m.ws.clone();
        if let Some(r) = &m.runtime {
            ws.manifest.version = r.version.clone();
            ws.manifest.binary_sha256 = r.binary_sha256.clone();
        }
        workspace::server_spec(root, self.product.as_ref(), &ws, log, timing, false)
    }

    pub fn count_rows(&self, endpoint: &str, table: &str) -> Result<u64> {
        self.count_rows_detailed(endpoint, table).map(|(n, _)| n)
    }

    /// The row count and, where the product counts in pieces, how it was obtained.
    pub fn count_rows_detailed(&self, endpoint: &str, table: &str) -> Result<(u64, Option<Value>)> {
        self.product
            .count_rows_detailed(&self.count_request(endpoint, table))
    }

    /// The row count of `table` after a load of `expected` rows (`values`: the product's
    /// resolved flag values the load ran with), read as the product reads it (see [`crate::product::Loading::count_after_load`]).
    pub fn count_after_load(
        &self,
        endpoint: &str,
        table: &str,
        expected: u64,
        values: &crate::product::ext::Values,
    ) -> std::result::Result<crate::product::LoadCount, crate::product::CountFailed> {
        let load = crate::product::LoadRun {
            values,
            managed: self.is_managed(),
        };
        self.product
            .count_after_load(&self.count_request(endpoint, table), expected, load)
    }

    fn count_request<'a>(&'a self, endpoint: &'a str, table: &'a str) -> CountRequest<'a> {
        // The run's dataset, else the one the workspace holds.
        let window = self.count_window.or_else(|| {
            let spec = &self.binding()?.spec;
            crate::product::window_ns(spec["start"].as_str()?, spec["end"].as_str()?)
        });
        CountRequest {
            endpoint,
            database: self.database(),
            table,
            window,
            token: self.external_token(),
            timeout: self.count_timeout,
        }
    }
}

/// The newest run of `product` that began a load into workspace `ws_id` (created at
/// `since`, so a removed workspace of the same id does not count). Called when the workspace
/// holds no binding: it records one only after a verified load, so a load killed, failed or
/// not verified shows only in its run's events, and its SQL database may exist.
/// The latest run that began loading workspace `ws_id` since `since`, and the dataset it loaded.
fn unfinished_load(
    root: &Root,
    product: &str,
    ws_id: &str,
    since: &str,
) -> Option<(String, Option<String>)> {
    let rd = std::fs::read_dir(root.runs(product)).ok()?;
    let mut found: Vec<(String, String, Option<String>)> = Vec::new();
    for e in rd.flatten() {
        let dir = e.path();
        let Ok(m) = crate::manifest::read::<crate::run::RunManifest>(&dir.join("manifest.json"))
        else {
            continue;
        };
        if m.target.database_id.as_deref() != Some(ws_id) || m.created_at.as_str() < since {
            continue;
        }
        let events = crate::run::read_events(&dir).unwrap_or_default();
        let steps = crate::run::fold_steps(&events);
        if steps
            .iter()
            .any(|s| s.step == "load" && s.status != crate::run::Status::Reused)
        {
            let ds = m.dataset.as_ref().map(|d| d.dataset_id.clone());
            found.push((m.created_at.clone(), m.run_id.clone(), ds));
        }
    }
    found.sort();
    found.pop().map(|(_, id, ds)| (id, ds))
}

fn version_override(
    root: &Root,
    product: &dyn Product,
    ws: &Workspace,
    raw: &str,
    confirm: Option<&str>,
) -> Result<Option<Runtime>> {
    let v = product.normalize_version(raw)?;
    if v == ws.manifest.version {
        return Ok(None);
    }
    if confirm != Some(ws.id()) {
        // The product's confirmation flag (validate found it declared).
        let confirm = product
            .bench_ext()
            .and_then(|x| x.version_override)
            .map_or_else(
                || "a confirmation".to_string(),
                |o| format!("--{}", o.confirm.long),
            );
        return Err(Error::invalid(format!(
            "running {} {v} on workspace {} (bound to {}) needs {confirm} {}",
            product.display_name(),
            ws.id(),
            ws.manifest.version,
            ws.id()
        ))
        .with_hint(format!(
            "add {confirm} {}; or copy the workspace with `{} copy` to bind another version for good",
            ws.id(),
            product.cli()
        )));
    }
    let (os, arch) = ws.manifest.platform.split_once('-').unwrap_or(("", ""));
    let platform = Platform::from_parts(os, arch)?;
    let inst = install::open(root, product, &v, &platform)?.ok_or_else(|| {
        Error::invalid(format!("{} {v} is not installed", product.display_name()))
            .with_hint(product.install_command(&v, false))
    })?;
    Ok(Some(Runtime {
        version: v,
        binary_sha256: inst.manifest.binary_sha256.clone(),
        installation_path: inst.dir.clone(),
    }))
}

/// The external-probe client, built once per process (a blocking client starts a runtime
/// thread). Unlike the admin client it honours proxies: an external server may sit behind one.
fn client() -> Result<reqwest::blocking::Client> {
    crate::http::external()
}

/// Health and version of every external URL; different versions across URLs are refused.
/// The product reads the version its way (and may refuse a server of another variant: an
/// InfluxDB 3 `X-Influxdb-Build` that is not `--edition` is an integrity error).
fn probe_external(
    entry: &Entry,
    product: &dyn ExternalServer,
    urls: &[String],
    token: Option<&Secret>,
    variant: Option<&str>,
) -> Result<Value> {
    let c = client()?;
    let mut versions = Vec::new();
    let mut each = Vec::new();
    for u in urls {
        if let Some(path) = product.external_health_path() {
            health(entry, &c, u, path, token)?;
        }
        let (version, extra) = product.probe_version(&c, u, token, variant)?;
        // #13: a server that does not name its version the product's way is not that product
        // (a GreptimeDB benchmark against an InfluxDB 3 port would fail every query type).
        let Some(v) = &version else {
            return Err(not_the_product(entry, product, u));
        };
        versions.push(v.clone());
        each.push(json!({"url": u, "healthy": true, "version": version, "details": extra}));
    }
    versions.dedup();
    if versions.len() > 1 {
        return Err(Error::invalid(format!(
            "the --url servers report different versions: {}",
            versions.join(", ")
        ))
        .with_hint("benchmark servers of one version together"));
    }
    let topology = product.probe_topology(&c, urls)?;
    Ok(json!({"version": versions.first(), "servers": each, "topology": topology}))
}

/// `GET <url><path>` must answer 2xx.
fn health(
    entry: &Entry,
    c: &reqwest::blocking::Client,
    u: &str,
    path: &str,
    token: Option<&Secret>,
) -> Result<()> {
    let mut r = c.get(format!("{u}{path}"));
    if let Some(t) = token {
        r = r.bearer_auth(t.expose());
    }
    let resp = r.send().map_err(|e| {
        Error::failed(format!(
            "{} at {u} did not answer {path}: {e}",
            entry.display
        ))
        .with_hint("check the URL and that the server is running")
    })?;
    if !resp.status().is_success() {
        return Err(Error::failed(format!(
            "{} at {u} is not healthy: {path} answered {}",
            entry.display,
            resp.status()
        ))
        .with_hint("check the server (and the token named by --auth-token-env)"));
    }
    Ok(())
}

/// The probe's refusal of a server that is not the product (exit 2: the --url is wrong;
/// nothing was written yet).
fn not_the_product(entry: &Entry, product: &dyn ExternalServer, url: &str) -> Error {
    let (how, port) = product.probe_identity();
    Error::invalid(format!(
        "the server at {url} does not identify as {}: {how}",
        entry.display
    ))
    .with_hint(format!(
        "check --url: it must be {}'s HTTP endpoint (by default port {port}); nothing was run",
        entry.display
    ))
}

/// The `[start, end)` a product counting in time slices counts in, in ns. IoT's last batch
/// may write a few points at or after the end (see `dataset::generate`): its window reaches
/// past them, by more intervals than points can overrun.
fn count_window(spec: &crate::dataset::DatasetSpec) -> Option<(i64, i64)> {
    let (a, b) = crate::product::window_ns(&spec.start, &spec.end)?;
    let step = crate::dataset::parse_go_duration(&spec.log_interval).unwrap_or(0);
    match spec.use_case() {
        Ok(uc) if !uc.fixed_rows => {
            let extra = i64::try_from(step.saturating_mul(11)).unwrap_or(i64::MAX);
            Some((a, b.saturating_add(extra)))
        }
        _ => Some((a, b)),
    }
}

#[cfg(test)]
mod count_window_tests {
    use super::count_window;

    #[test]
    fn iot_counts_past_the_end_the_others_stop_at_it() {
        let mut spec = crate::dataset::Profile::Smoke.spec();
        let (a, b) = count_window(&spec).unwrap();
        assert_eq!(b - a, 86_400_000_000_000);
        spec.use_case = "devops".into();
        assert_eq!(count_window(&spec), Some((a, b)));
        spec.use_case = "iot".into();
        assert_eq!(count_window(&spec), Some((a, b + 110_000_000_000)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn external(name: &str, edition: Option<&str>, user: Option<&str>) -> Target {
        let entry = crate::product::entry(name).unwrap();
        Target {
            entry,
            product: (entry.make)(edition).unwrap(),
            place: Place::External(External {
                user: user.map(str::to_string),
                urls: vec!["http://10.0.0.5:4000".into()],
                database: "benchmark".into(),
                variant: edition.map(str::to_string),
                probe: Value::Null,
            }),
            auth_token: Some(Secret::new("s3cr3t")),
            admin_token: None,
            count_window: None,
            count_timeout: crate::product::DEFAULT_COUNT_TIMEOUT,
            tables: Vec::new(),
        }
    }

    /// Issue 22: a GreptimeDB password is no bearer token: the sampler, row counts and
    /// after-load work never get it (only the basic-auth store does); the user is recorded.
    #[test]
    fn a_basic_auth_password_is_no_bearer_token() {
        let g = external("greptimedb", None, Some("bench"));
        assert_eq!(g.external_token(), None);
        let t = g.to_run_target().unwrap();
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["user"], "bench");
        assert_eq!(v["urls"], json!(["http://10.0.0.5:4000"]));
        assert!(!v.to_string().contains("s3cr3t"));
        let i = external("influxdb3", Some("core"), None);
        assert_eq!(i.external_token(), Some("s3cr3t"));
        let v = serde_json::to_value(i.to_run_target().unwrap()).unwrap();
        assert!(v.get("user").is_none(), "{v}");
    }
}
