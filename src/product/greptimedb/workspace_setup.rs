//! GreptimeDB's [`WorkspaceSetup`]: what its workspaces are made of.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{cluster, storage, GreptimeDb, TEMPLATE};
use crate::error::{Error, Result};
use crate::product::{compare_versions, WorkspaceSetup};
use crate::workspace_manifest::WorkspaceManifest;

impl WorkspaceSetup for GreptimeDb {
    fn default_http_port(&self) -> u16 {
        4000
    }

    /// The vendor's layout: HTTP P, gRPC P+1, MySQL P+2, PostgreSQL P+3 (4000-4003).
    fn default_ports(&self, http: u16) -> Result<BTreeMap<String, u16>> {
        if http > u16::MAX - 3 {
            return Err(Error::invalid(format!(
                "--http-port {http} leaves no room for the gRPC, MySQL and PostgreSQL ports above it"
            ))
            .with_hint("pick an HTTP port of at most 65532"));
        }
        Ok(BTreeMap::from([
            ("http".to_string(), http),
            ("grpc".to_string(), http + 1),
            ("mysql".to_string(), http + 2),
            ("postgres".to_string(), http + 3),
        ]))
    }

    fn render_config(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<Option<String>> {
        let s3 = storage::ObjectStorage::of(&ws.extra)?;
        if s3.is_some() && compare_versions(&ws.version, storage::MIN_VERSION).is_lt() {
            return Err(Error::invalid(format!(
                "--storage s3 needs GreptimeDB {} or later (its write cache keys); the workspace has {}",
                storage::MIN_VERSION,
                ws.version
            )));
        }
        if cluster::Topology::of(ws).is_some() {
            return Ok(Some(cluster::datanode_config(ws, s3.as_ref())));
        }
        let port = |name: &str| -> Result<String> {
            ws.ports
                .get(name)
                .map(|p| format!("127.0.0.1:{p}"))
                .ok_or_else(|| {
                    Error::integrity(format!("workspace {} has no {name} port", ws.database_id))
                })
        };
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(true);
        env.add_filter("toml", |s: String| toml::Value::String(s).to_string());
        env.add_template("standalone.toml", TEMPLATE)
            .map_err(|e| Error::failed(format!("GreptimeDB config template: {e}")))?;
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let s3 = s3.map(|s| {
            minijinja::context! {
                bucket => s.location.bucket,
                prefix => s.location.prefix,
                endpoint => s.location.endpoint,
                region => s.location.region,
                cache_path => path(&dir.join(storage::CACHE_DIR)),
                // Bytes, unambiguous: GreptimeDB reads "MB" as MiB.
                cache_size => format!("{}B", s.cache_size_bytes),
            }
        });
        let ctx = minijinja::context! {
            s3 => s3,
            database_id => ws.database_id,
            version => ws.version,
            tool_version => crate::VERSION,
            http_addr => port("http")?,
            grpc_addr => port("grpc")?,
            mysql_addr => port("mysql")?,
            postgres_addr => port("postgres")?,
            // v0.12.0 renamed `[grpc] addr` to `[grpc] bind_addr`.
            grpc_bind_addr_key => compare_versions(&ws.version, "0.12.0").is_ge(),
            // `0s` disables the server's HTTP timeout only from 0.9 (GreptimeTeam/greptimedb
            // #4217); before, a zero timeout cuts every request, so a day stands for "none".
            http_timeout => if compare_versions(&ws.version, "0.9.0").is_ge() { "0s" } else { "24h" },
            data_home => path(&dir.join("data")),
            log_dir => path(&dir.join("logs")),
        };
        let text = env
            .get_template("standalone.toml")
            .and_then(|t| t.render(ctx))
            .map_err(|e| Error::failed(format!("rendering the GreptimeDB config: {e}")))?;
        toml::from_str::<toml::Value>(&text).map_err(|e| {
            Error::failed(format!("the rendered GreptimeDB config is not TOML: {e}"))
        })?;
        Ok(Some(text))
    }
    /// A rerun of a run on S3 measures the same setup (endpoint, bucket, region, cache, key
    /// variables) under a prefix of its own, beside the recorded one: the new workspace must
    /// not write into, nor be counted with, the first one's objects.
    fn rerun_workspace_fields(
        &self,
        server_settings: Option<&Value>,
    ) -> serde_json::Map<String, Value> {
        let Some(mut s) = server_settings
            .and_then(|v| v.get("object_storage"))
            .and_then(|v| serde_json::from_value::<storage::ObjectStorage>(v.clone()).ok())
        else {
            return Default::default();
        };
        s.location.prefix = format!(
            "{}-rerun-{}",
            s.location.prefix,
            time::OffsetDateTime::now_utc().unix_timestamp()
        );
        [(
            storage::FIELD.to_string(),
            storage::ObjectStorage::field(Some(&s)),
        )]
        .into_iter()
        .collect()
    }
}

/// The workspace's `config.toml` in `dir`, parsed, and its path: the base of the configs
/// derived from it at a start (a cluster datanode's, a shaped standalone's).
pub(super) fn read_config(dir: &Path) -> Result<(std::path::PathBuf, toml::Table)> {
    let path = dir.join(crate::product::CONFIG_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io("read", &path, e))?;
    let t = toml::from_str(&text).map_err(|e| {
        Error::integrity(format!("{} is not TOML: {e}", path.display()))
            .with_hint("`tsbsctl greptimedb verify` names what changed")
    })?;
    Ok((path, t))
}

/// The `[region_engine.mito]` table of a config's engine list, if it lists one.
pub(super) fn mito_table(engines: &mut [toml::Value]) -> Option<&mut toml::Table> {
    engines
        .iter_mut()
        .find_map(|e| e.get_mut("mito").and_then(toml::Value::as_table_mut))
}
