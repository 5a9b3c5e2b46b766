//! GreptimeDB under `--memory`: the buffers, caches and thresholds it sizes from the
//! machine's memory, given the sizes it would take on a machine of the shape's size.
//!
//! GreptimeDB v1.0.2 reads the memory limit at `/sys/fs/cgroup` itself (`memory.max` under
//! cgroup v2, `memory.limit_in_bytes` under v1, where that file is not at the mount point), never
//! its own group's, then the host's memory (`common_stat::get_total_memory_bytes`). A server
//! held to a shape in a cgroup below the root therefore sizes from the host: seen on the real
//! v1.0.2 on this 23.5 GiB host, its `/config` said a page cache of 3,159,522,816 bytes, an
//! eighth of the host, under any shape. Of a machine of M bytes its mito engine takes
//! (src/mito2/src/config.rs):
//!
//! * `MitoConfig::adjust_buffer_and_cache_size`: a global write buffer of min(M/8, 1 GiB),
//!   rejecting writes at twice that, an SST metadata cache of min(M/32, 128 MiB), vector,
//!   selector-result and range-result caches of min(M/16, 512 MiB) each, a page cache of M/8;
//! * `IndexConfig::adjust_buffer_and_cache_size`: index content and result caches of
//!   min(M/16, 128 MiB), an index metadata cache of min(M/32, 64 MiB) (below the defaults only
//!   under 2 GiB);
//! * `mem_threshold_on_create = "auto"` of the inverted, full-text and bloom-filter indexes:
//!   M/16, the memory an index build may take before it sorts on disk (at any size: 1.47 GiB of
//!   this host against 128 MiB of a 2 GiB shape).
//!
//! These have no command-line flags, so a start under a shape reads a config written for it:
//! the workspace's `config.toml` with these sizes where it leaves them to the server (a key
//! it sets, the server would keep too), written anew at every such start. A standalone reads
//! `config.shaped.toml`. A cluster's datanodes share the shape's memory with each other (and
//! with the metasrv, the frontends and the metadata store, all in the one group): each reads
//! `datanode-<i>.toml`, sized for a machine of M divided by the number of datanodes, so the
//! cluster's caches add up to a standalone's in the same shape.
//!
//! Left as the server sizes them: the vector index's build threshold (a build option, no
//! vector column in TSBS) and the partition-tree memtable's dictionary (not the default
//! memtable). The scan and compaction memory limits are unlimited by default, so no host
//! memory enters them.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{Error, Result};

/// The config a standalone's start under `--memory` reads, beside the workspace's
/// `config.toml`.
pub const SHAPED_CONFIG: &str = "config.shaped.toml";

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Where a size lives in `[region_engine.mito]`: its sub-table (none for the engine's own
/// keys) and key; recorded as `table.key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub table: Option<&'static str>,
    pub key: &'static str,
}

impl Key {
    const fn top(key: &'static str) -> Self {
        Key { table: None, key }
    }
    const fn of(table: &'static str, key: &'static str) -> Self {
        Key {
            table: Some(table),
            key,
        }
    }
    /// The name the run records it under (`page_cache_size`, `index.result_cache_size`).
    pub fn name(&self) -> String {
        match self.table {
            None => self.key.to_string(),
            Some(t) => format!("{t}.{}", self.key),
        }
    }
}

/// The index builds' memory thresholds: `"auto"` is M/16 of the memory the server sees.
const THRESHOLD: &str = "mem_threshold_on_create";

/// The mito engine's sizes for a machine of `memory` bytes, as v1.0.2 works them out.
pub fn mito_sizes(memory: u64) -> [(Key, u64); 13] {
    let write_buffer = (memory / 8).min(GIB);
    let mem_cache = (memory / 16).min(512 * MIB);
    let index_cache = (memory / 16).min(128 * MIB);
    [
        (Key::top("global_write_buffer_size"), write_buffer),
        (
            Key::top("global_write_buffer_reject_size"),
            write_buffer * 2,
        ),
        (
            Key::top("sst_meta_cache_size"),
            (memory / 32).min(128 * MIB),
        ),
        (Key::top("vector_cache_size"), mem_cache),
        (Key::top("page_cache_size"), memory / 8),
        (Key::top("selector_result_cache_size"), mem_cache),
        (Key::top("range_result_cache_size"), mem_cache),
        (
            Key::of("index", "metadata_cache_size"),
            (memory / 32).min(64 * MIB),
        ),
        (Key::of("index", "content_cache_size"), index_cache),
        (Key::of("index", "result_cache_size"), index_cache),
        (Key::of("inverted_index", THRESHOLD), memory / 16),
        (Key::of("fulltext_index", THRESHOLD), memory / 16),
        (Key::of("bloom_filter_index", THRESHOLD), memory / 16),
    ]
}

/// Gives config `t` (read from `path`) the sizes of a machine of `memory` bytes in
/// `[region_engine.mito]`, where it leaves them to the server: a size it sets stays, as the
/// server keeps it; a build threshold of `"auto"` is the server's share of the memory it sees
/// and is replaced. The engine list, when `t` has none, becomes mito and file (listing one
/// engine replaces the server's default list).
pub fn shape_config(t: &mut toml::Table, path: &Path, memory: u64) -> Result<()> {
    let engines = t
        .entry("region_engine")
        .or_insert_with(|| {
            toml::Value::Array(
                ["mito", "file"]
                    .map(|e| {
                        toml::Value::Table(toml::Table::from_iter([(
                            e.to_string(),
                            toml::Value::Table(toml::Table::new()),
                        )]))
                    })
                    .to_vec(),
            )
        })
        .as_array_mut()
        .ok_or_else(|| {
            Error::integrity(format!("{}: region_engine is not a list", path.display()))
        })?;
    let mito = super::workspace_setup::mito_table(engines).ok_or_else(|| {
        Error::integrity(format!(
            "{} lists region engines without [region_engine.mito]",
            path.display()
        ))
    })?;
    for (k, bytes) in mito_sizes(memory) {
        let table = match k.table {
            None => &mut *mito,
            Some(name) => mito
                .entry(name)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .ok_or_else(|| {
                    Error::integrity(format!(
                        "{}: region_engine.mito.{name} is not a table",
                        path.display()
                    ))
                })?,
        };
        let set_by_workspace = table
            .get(k.key)
            .is_some_and(|v| v.as_str().is_none_or(|s| !s.eq_ignore_ascii_case("auto")));
        if !set_by_workspace {
            // Bytes, unambiguous: GreptimeDB reads "MB" as MiB.
            table.insert(k.key.into(), toml::Value::String(format!("{bytes}B")));
        }
    }
    Ok(())
}

/// Writes `config.shaped.toml` in workspace `dir`: its `config.toml` given the sizes of a
/// machine of `memory` bytes ([`shape_config`]).
pub fn write_config(dir: &Path, memory: u64) -> Result<PathBuf> {
    let (path, mut t) = super::workspace_setup::read_config(dir)?;
    shape_config(&mut t, &path, memory)?;
    let body = toml::to_string(&t).map_err(|e| Error::failed(format!("{SHAPED_CONFIG}: {e}")))?;
    let out = format!(
        "# Written by tsbsctl at every start under --memory {}: config.toml with the buffers,\n\
         # caches and index-build thresholds GreptimeDB sizes from the machine's memory, sized for\n\
         # a machine of the shape's size (the server would take them from the host's). Edit\n\
         # config.toml, not this.\n{body}",
        crate::render::bytes(minijinja::Value::from(memory))
    );
    let shaped = dir.join(SHAPED_CONFIG);
    crate::fsutil::write_atomic(&shaped, out.as_bytes())?;
    Ok(shaped)
}

/// What the running servers say they sized (their `GET /config`, the options they loaded),
/// for the run's `server_settings`: a standalone's, or every datanode's of a cluster (the
/// frontends have no storage engine). `endpoints` are their HTTP addresses; `sized` says
/// whether tsbsctl gave them shaped configs. The sizes are in bytes (a build threshold may
/// say "auto" or "unlimited"); a cluster's are the first datanode's, with every datanode's when they
/// differ. `None` when a server has no `/config` or its answer has no mito engine.
pub fn reported(endpoints: &[String], sized: bool) -> Option<Value> {
    let each: Vec<Value> = endpoints
        .iter()
        .map(|e| {
            crate::sampler::read_text(
                &format!("{e}/config"),
                &None,
                std::time::Duration::from_secs(10),
            )
            .and_then(|text| sizes_in(&text))
        })
        .collect::<Option<_>>()?;
    let sizes = each.first()?.clone();
    let say = |k: &str| match sizes.get(k) {
        Some(Value::Number(b)) => crate::render::bytes(minijinja::Value::from(b.as_u64())),
        Some(Value::String(s)) => s.clone(),
        _ => "unknown".into(),
    };
    let who = match each.len() {
        1 => "as the server reports them (GET /config)".to_string(),
        n if each.iter().all(|s| *s == sizes) => {
            format!("in each of the {n} datanodes, as they report them (GET /config)")
        }
        n => format!(
            "in the first of the {n} datanodes, as it reports them (GET /config; the others \
             report other sizes, recorded)"
        ),
    };
    let what = format!(
        "page cache {}, write buffer {}, index build threshold {} {who}",
        say("page_cache_size"),
        say("global_write_buffer_size"),
        say("inverted_index.mem_threshold_on_create"),
    );
    let note = match (sized, each.len()) {
        (true, 1) => format!("{what}; tsbsctl gave its buffers, caches and thresholds the sizes it takes of a machine of the --memory shape's size, which it would have taken of the host's memory"),
        (true, n) => format!("{what}; tsbsctl gave each datanode the sizes it takes of a machine of 1/{n} of the --memory shape's size (the shape holds the whole cluster), which it would have taken of the host's memory"),
        (false, _) => format!("{what} (its defaults: shares of the memory it sees, the host's)"),
    };
    let mut out = json!({
        "memory_sizes": sizes,
        "memory_sized_to_shape": sized,
        "memory_note": note,
    });
    if each.len() > 1 {
        out["memory_datanodes"] = json!(each.len());
    }
    if each.iter().any(|s| *s != sizes) {
        out["memory_sizes_by_datanode"] = Value::Array(each);
    }
    Some(out)
}

/// The sizes of [`mito_sizes`] in a `/config` answer, in bytes (GreptimeDB writes a whole
/// number of units as `1GiB` and anything else as a number of bytes).
fn sizes_in(config: &str) -> Option<Value> {
    let t: toml::Table = toml::from_str(config).ok()?;
    let mito = t
        .get("region_engine")?
        .as_array()?
        .iter()
        .find_map(|e| e.get("mito").and_then(toml::Value::as_table))?;
    let mut out = serde_json::Map::new();
    for (k, _) in mito_sizes(0) {
        let table = match k.table {
            None => Some(mito),
            Some(name) => mito.get(name).and_then(toml::Value::as_table),
        };
        let v = match table.and_then(|t| t.get(k.key)) {
            Some(toml::Value::Integer(n)) => u64::try_from(*n).ok().map(|b| json!(b)),
            // A build threshold's "auto" or "unlimited", as said.
            Some(toml::Value::String(s)) => readable_size(s)
                .map(|b| json!(b))
                .or_else(|| (k.key == THRESHOLD).then(|| json!(s))),
            _ => None,
        };
        if let Some(v) = v {
            out.insert(k.name(), v);
        }
    }
    Some(Value::Object(out))
}

/// GreptimeDB's `ReadableSize` text: a number and a binary unit, where `KB`, `MB`, ... are
/// binary too (`common_base::readable_size`).
fn readable_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KB" | "KiB" => 1 << 10,
        "M" | "MB" | "MiB" => 1 << 20,
        "G" | "GB" | "GiB" => 1 << 30,
        "T" | "TB" | "TiB" => 1 << 40,
        "P" | "PB" | "PiB" => 1 << 50,
        _ => return None,
    };
    let n: f64 = num.parse().ok()?;
    Some((n * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shaped config [`write_config`] writes in `dir` for a 2 GiB shape, read back.
    fn shaped_2gib(dir: &Path) -> toml::Table {
        let p = write_config(dir, 2 * GIB).unwrap();
        toml::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
    }

    /// The index content cache and the inverted index's build threshold of a 2 GiB shape.
    fn assert_index_sized_for_2gib(mito: &toml::Value) {
        assert_eq!(
            mito["index"]["content_cache_size"].as_str(),
            Some("134217728B")
        );
        assert_eq!(
            mito["inverted_index"][THRESHOLD].as_str(),
            Some("134217728B")
        );
    }

    /// The real v1.0.2's shares, as its source works them out, at three sizes.
    #[test]
    fn sizes_are_v1_0_2s_shares_of_the_shape() {
        let get = |m: u64, k: &str| mito_sizes(m).iter().find(|(n, _)| n.name() == k).unwrap().1;
        // 2 GiB: every share below its cap.
        assert_eq!(get(2 * GIB, "global_write_buffer_size"), 256 * MIB);
        assert_eq!(get(2 * GIB, "global_write_buffer_reject_size"), 512 * MIB);
        assert_eq!(get(2 * GIB, "sst_meta_cache_size"), 64 * MIB);
        assert_eq!(get(2 * GIB, "vector_cache_size"), 128 * MIB);
        assert_eq!(get(2 * GIB, "page_cache_size"), 256 * MIB);
        // 16 GiB, the published machine: capped but the page cache.
        assert_eq!(get(16 * GIB, "global_write_buffer_size"), GIB);
        assert_eq!(get(16 * GIB, "sst_meta_cache_size"), 128 * MIB);
        assert_eq!(get(16 * GIB, "range_result_cache_size"), 512 * MIB);
        assert_eq!(get(16 * GIB, "page_cache_size"), 2 * GIB);
        assert_eq!(get(16 * GIB, "index.metadata_cache_size"), 64 * MIB);
        assert_eq!(get(16 * GIB, "index.result_cache_size"), 128 * MIB);
        // The index builds' threshold has no cap: a sixteenth at any size.
        assert_eq!(get(16 * GIB, "inverted_index.mem_threshold_on_create"), GIB);
        assert_eq!(
            get(2 * GIB, "bloom_filter_index.mem_threshold_on_create"),
            128 * MIB
        );
        // 1 GiB: the index caches fall below their defaults.
        assert_eq!(get(GIB, "index.metadata_cache_size"), 32 * MIB);
        assert_eq!(get(GIB, "index.content_cache_size"), 64 * MIB);
        assert_eq!(get(GIB, "fulltext_index.mem_threshold_on_create"), 64 * MIB);
        // The real server's page cache on this 24,683,772 KiB host, unshaped.
        assert_eq!(get(24_683_772 * 1024, "page_cache_size"), 3_159_522_816);
    }

    /// A `/config` answer of the real v1.0.2 (its mito part, the index tables of a start with
    /// the inverted index's threshold set): units and plain bytes.
    #[test]
    fn reads_the_sizes_of_a_real_config_answer() {
        let text = "[[region_engine]]\n\n[region_engine.mito]\nnum_workers = 1\n\
                    global_write_buffer_size = \"1GiB\"\nglobal_write_buffer_reject_size = \"2GiB\"\n\
                    sst_meta_cache_size = \"128MiB\"\nvector_cache_size = \"512MiB\"\n\
                    page_cache_size = 3159522816\nselector_result_cache_size = \"512MiB\"\n\
                    range_result_cache_size = \"512MiB\"\n\n[region_engine.mito.index]\n\
                    aux_path = \"\"\nstaging_size = \"2GiB\"\nmetadata_cache_size = \"64MiB\"\n\
                    content_cache_size = \"128MiB\"\ncontent_cache_page_size = \"64KiB\"\n\
                    result_cache_size = \"128MiB\"\n\n[region_engine.mito.inverted_index]\n\
                    create_on_flush = \"auto\"\nmem_threshold_on_create = \"128MiB\"\n\n\
                    [region_engine.mito.fulltext_index]\nmem_threshold_on_create = \"auto\"\n\
                    compress = true\n\n[[region_engine]]\n\n[region_engine.file]\n";
        let s = sizes_in(text).unwrap();
        assert_eq!(s["page_cache_size"], 3_159_522_816u64);
        assert_eq!(s["global_write_buffer_size"], GIB);
        assert_eq!(s["global_write_buffer_reject_size"], 2 * GIB);
        assert_eq!(s["index.metadata_cache_size"], 64 * MIB);
        assert_eq!(s["index.result_cache_size"], 128 * MIB);
        assert_eq!(s["inverted_index.mem_threshold_on_create"], 128 * MIB);
        // "auto" is a share the server works out at each build: recorded as said.
        assert_eq!(s["fulltext_index.mem_threshold_on_create"], "auto");
        assert_eq!(s.as_object().unwrap().len(), 12);
        assert_eq!(readable_size("0KiB"), Some(0));
        assert_eq!(readable_size("64MB"), Some(64 * MIB));
        assert_eq!(readable_size("5 apples"), None);
    }

    /// The shaped config keeps the workspace's own mito keys (S3's write cache) and its
    /// engines, and adds the mito engine and the file engine when none is listed.
    #[test]
    fn the_shaped_config_keeps_the_workspace_config() {
        let t = tempfile::tempdir().unwrap();
        let cfg = t.path().join(super::super::super::CONFIG_FILE);
        std::fs::write(&cfg, "[http]\naddr = \"127.0.0.1:4000\"\n").unwrap();
        let got = shaped_2gib(t.path());
        assert_eq!(got["http"]["addr"].as_str(), Some("127.0.0.1:4000"));
        let engines = got["region_engine"].as_array().unwrap();
        assert_eq!(engines.len(), 2);
        assert_eq!(
            engines[0]["mito"]["page_cache_size"].as_str(),
            Some("268435456B")
        );
        assert!(engines[1]["file"].as_table().unwrap().is_empty());
        std::fs::write(
            &cfg,
            "[[region_engine]]\n[region_engine.mito]\nenable_write_cache = true\n\
             write_cache_size = \"1024B\"\n[[region_engine]]\n[region_engine.file]\n",
        )
        .unwrap();
        let got = shaped_2gib(t.path());
        let engines = got["region_engine"].as_array().unwrap();
        assert_eq!(engines.len(), 2);
        let mito = &engines[0]["mito"];
        assert_eq!(mito["write_cache_size"].as_str(), Some("1024B"));
        assert_eq!(mito["enable_write_cache"].as_bool(), Some(true));
        assert_eq!(
            mito["global_write_buffer_size"].as_str(),
            Some("268435456B")
        );
        assert_index_sized_for_2gib(mito);
    }

    /// A size the workspace sets stays (the server keeps it too); a threshold left "auto" is
    /// the server's share of what it sees and is replaced; "unlimited" stays.
    #[test]
    fn the_shaped_config_keeps_what_the_workspace_sets() {
        let t = tempfile::tempdir().unwrap();
        let cfg = t.path().join(super::super::super::CONFIG_FILE);
        std::fs::write(
            &cfg,
            "[[region_engine]]\n[region_engine.mito]\npage_cache_size = \"1GiB\"\n\
             [region_engine.mito.index]\nresult_cache_size = \"0B\"\n\
             [region_engine.mito.inverted_index]\nmem_threshold_on_create = \"auto\"\n\
             [region_engine.mito.fulltext_index]\nmem_threshold_on_create = \"unlimited\"\n",
        )
        .unwrap();
        let got = shaped_2gib(t.path());
        let engines = got["region_engine"].as_array().unwrap();
        assert_eq!(engines.len(), 1, "the workspace's engine list stays");
        let mito = &engines[0]["mito"];
        assert_eq!(mito["page_cache_size"].as_str(), Some("1GiB"));
        assert_eq!(mito["sst_meta_cache_size"].as_str(), Some("67108864B"));
        assert_eq!(mito["index"]["result_cache_size"].as_str(), Some("0B"));
        assert_index_sized_for_2gib(mito);
        assert_eq!(
            mito["fulltext_index"][THRESHOLD].as_str(),
            Some("unlimited")
        );
    }
}
