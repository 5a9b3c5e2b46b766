//! GreptimeDB under `--memory`: the buffers and caches it sizes from the machine's memory,
//! given the sizes it would take on a machine of the shape's size.
//!
//! GreptimeDB v1.0.2 reads the memory limit at `/sys/fs/cgroup` itself (`memory.max` under
//! cgroup v2, `memory.limit_in_bytes` under v1, where that file is not at the mount point), never
//! its own group's, then the host's memory (`common_stat::get_total_memory_bytes`). A server
//! held to a shape in a cgroup below the root therefore sizes its write buffer and caches
//! from the host: seen on the real v1.0.2 on this 23.5 GiB host, its `/config` said a page
//! cache of 3,159,522,816 bytes, an eighth of the host, under any shape. Its mito engine takes
//! (`MitoConfig::adjust_buffer_and_cache_size`, src/mito2/src/config.rs) of a machine of M
//! bytes: a global write buffer of min(M/8, 1 GiB), rejecting writes at twice that, an SST
//! metadata cache of min(M/32, 128 MiB), vector, selector-result and range-result caches of
//! min(M/16, 512 MiB) each, and a page cache of M/8. These have no command-line flags, so a
//! start under a shape reads `config.shaped.toml`: the workspace's `config.toml` with these
//! sizes in its `[region_engine.mito]`, written anew at every such start.
//!
//! Left as the server sizes them: the index caches and the index-creation thresholds, which
//! differ from the host's only under shapes below 2 GiB, and a cluster's datanodes (each of
//! them would size from the host; the shape holds the whole cluster).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{Error, Result};

/// The config a start under `--memory` reads, beside the workspace's `config.toml`.
pub const SHAPED_CONFIG: &str = "config.shaped.toml";

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The mito engine's sizes for a machine of `memory` bytes, as v1.0.2 works them out.
pub fn mito_sizes(memory: u64) -> [(&'static str, u64); 7] {
    let write_buffer = (memory / 8).min(GIB);
    let mem_cache = (memory / 16).min(512 * MIB);
    [
        ("global_write_buffer_size", write_buffer),
        ("global_write_buffer_reject_size", write_buffer * 2),
        ("sst_meta_cache_size", (memory / 32).min(128 * MIB)),
        ("vector_cache_size", mem_cache),
        ("page_cache_size", memory / 8),
        ("selector_result_cache_size", mem_cache),
        ("range_result_cache_size", mem_cache),
    ]
}

/// Writes `config.shaped.toml` in workspace `dir`: its `config.toml` with the sizes of a
/// machine of `memory` bytes in `[region_engine.mito]` (added, with the file engine kept,
/// when the workspace lists no engine: listing one replaces the server's default list).
pub fn write_config(dir: &Path, memory: u64) -> Result<PathBuf> {
    let (path, mut t) = super::workspace_setup::read_config(dir)?;
    let engines = t
        .entry("region_engine")
        .or_insert_with(|| {
            toml::Value::Array(vec![
                toml::Value::Table(toml::Table::from_iter([(
                    "mito".to_string(),
                    toml::Value::Table(toml::Table::new()),
                )])),
                toml::Value::Table(toml::Table::from_iter([(
                    "file".to_string(),
                    toml::Value::Table(toml::Table::new()),
                )])),
            ])
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
    for (key, bytes) in mito_sizes(memory) {
        // Bytes, unambiguous: GreptimeDB reads "MB" as MiB.
        mito.insert(key.into(), toml::Value::String(format!("{bytes}B")));
    }
    let body = toml::to_string(&t).map_err(|e| Error::failed(format!("{SHAPED_CONFIG}: {e}")))?;
    let out = format!(
        "# Written by tsbsctl at every start under --memory {}: config.toml with the write buffer\n\
         # and caches GreptimeDB sizes from the machine's memory, sized for a machine of the\n\
         # shape's size (the server would take them from the host's). Edit config.toml, not this.\n{body}",
        crate::render::bytes(minijinja::Value::from(memory))
    );
    let shaped = dir.join(SHAPED_CONFIG);
    crate::fsutil::write_atomic(&shaped, out.as_bytes())?;
    Ok(shaped)
}

/// What the running server says it sized (its `GET /config`, the options it loaded), for the
/// run's `server_settings`: the sizes in bytes, whether tsbsctl gave them (the server's
/// command line reads [`SHAPED_CONFIG`]) and the summary's words. `None` when the server
/// has no `/config` or the answer has no mito engine.
pub fn reported(endpoint: &str, pid: u32) -> Option<Value> {
    let text = crate::sampler::read_text(
        &format!("{endpoint}/config"),
        &None,
        std::time::Duration::from_secs(10),
    )?;
    let sizes = sizes_in(&text)?;
    let sized = crate::proc::argv(pid)
        .iter()
        .any(|a| a.ends_with(SHAPED_CONFIG));
    let say = |k: &str| {
        sizes
            .get(k)
            .and_then(Value::as_u64)
            .map(|b| crate::render::bytes(minijinja::Value::from(b)))
            .unwrap_or_else(|| "unknown".into())
    };
    let what = format!(
        "page cache {}, write buffer {} as the server reports them (GET /config)",
        say("page_cache_size"),
        say("global_write_buffer_size")
    );
    let note = if sized {
        format!("{what}; tsbsctl gave its write buffer and caches the sizes it takes of a machine of the --memory shape's size, which it would have taken of the host's memory")
    } else {
        format!("{what} (its defaults: shares of the memory it sees, the host's)")
    };
    Some(json!({
        "memory_sizes": sizes,
        "memory_sized_to_shape": sized,
        "memory_note": note,
    }))
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
    for (key, _) in mito_sizes(0) {
        let bytes = match mito.get(key) {
            Some(toml::Value::Integer(n)) => u64::try_from(*n).ok(),
            Some(toml::Value::String(s)) => readable_size(s),
            _ => None,
        };
        if let Some(b) = bytes {
            out.insert(key.into(), json!(b));
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

    /// The real v1.0.2's shares, as its source works them out, at three sizes.
    #[test]
    fn sizes_are_v1_0_2s_shares_of_the_shape() {
        let get = |m: u64, k: &str| mito_sizes(m).iter().find(|(n, _)| *n == k).unwrap().1;
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
        // The real server's page cache on this 24,683,772 KiB host, unshaped.
        assert_eq!(get(24_683_772 * 1024, "page_cache_size"), 3_159_522_816);
    }

    /// A `/config` answer of the real v1.0.2 (its mito part): units and plain bytes.
    #[test]
    fn reads_the_sizes_of_a_real_config_answer() {
        let text = "[[region_engine]]\n\n[region_engine.mito]\nnum_workers = 1\n\
                    global_write_buffer_size = \"1GiB\"\nglobal_write_buffer_reject_size = \"2GiB\"\n\
                    sst_meta_cache_size = \"128MiB\"\nvector_cache_size = \"512MiB\"\n\
                    page_cache_size = 3159522816\nselector_result_cache_size = \"512MiB\"\n\
                    range_result_cache_size = \"512MiB\"\n\n[[region_engine]]\n\n[region_engine.file]\n";
        let s = sizes_in(text).unwrap();
        assert_eq!(s["page_cache_size"], 3_159_522_816u64);
        assert_eq!(s["global_write_buffer_size"], GIB);
        assert_eq!(s["global_write_buffer_reject_size"], 2 * GIB);
        assert_eq!(s.as_object().unwrap().len(), 7);
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
        let p = write_config(t.path(), 2 * GIB).unwrap();
        let got: toml::Table = toml::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
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
        let p = write_config(t.path(), 2 * GIB).unwrap();
        let got: toml::Table = toml::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let engines = got["region_engine"].as_array().unwrap();
        assert_eq!(engines.len(), 2);
        let mito = &engines[0]["mito"];
        assert_eq!(mito["write_cache_size"].as_str(), Some("1024B"));
        assert_eq!(mito["enable_write_cache"].as_bool(), Some(true));
        assert_eq!(
            mito["global_write_buffer_size"].as_str(),
            Some("268435456B")
        );
    }
}
