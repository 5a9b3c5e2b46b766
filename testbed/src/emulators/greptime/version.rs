//! The emulated GreptimeDB version and what depends on it.

use sha2::{Digest, Sha256};

/// A GreptimeDB release version (`1.2.0`, `1.2.0-beta.2`; a leading `v` is accepted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Option<String>,
}

impl Version {
    pub fn parse(text: &str) -> Option<Version> {
        let t = text.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        let (core, pre) = match t.split_once('-') {
            Some((c, p)) if !p.is_empty() => (c, Some(p.to_string())),
            Some(_) => return None,
            None => (t, None),
        };
        let mut parts = core.split('.');
        let mut num = || -> Option<u64> {
            let p = parts.next()?;
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            p.parse().ok()
        };
        let (major, minor, patch) = (num()?, num()?, num()?);
        if parts.next().is_some() {
            return None;
        }
        Some(Version {
            major,
            minor,
            patch,
            pre,
        })
    }

    /// `x.y.z[-pre]`, without the `v`.
    pub fn text(&self) -> String {
        match &self.pre {
            Some(p) => format!("{}.{}.{}-{p}", self.major, self.minor, self.patch),
            None => format!("{}.{}.{}", self.major, self.minor, self.patch),
        }
    }

    /// Release order on (major, minor, patch) only.
    pub fn at_least(&self, major: u64, minor: u64, patch: u64) -> bool {
        (self.major, self.minor, self.patch) >= (major, minor, patch)
    }

    /// clap's `<name>`: `greptime` up to v0.17.x, `GreptimeDB` from v1.0.0.
    pub fn product_name(&self) -> &'static str {
        if self.major >= 1 {
            "GreptimeDB"
        } else {
            "greptime"
        }
    }

    /// `ADMIN compact_table(.., 'swcs', 'window=7200')` (key=value options) exists from
    /// v1.0.0-beta.1; earlier versions take only a bare number of seconds.
    pub fn compaction_key_value_options(&self) -> bool {
        if self.major == 1 && self.minor == 0 && self.patch == 0 {
            return match &self.pre {
                None => true,
                Some(p) => p.as_str() >= "beta.1",
            };
        }
        self.major >= 1
    }

    /// `information_schema.ssts_manifest` and `ssts_storage` appeared in v1.0.0-beta.1.
    pub fn has_ssts_tables(&self) -> bool {
        self.compaction_key_value_options()
    }

    /// `information_schema.region_statistics` appeared in v0.10.
    pub fn has_region_statistics(&self) -> bool {
        self.at_least(0, 10, 0)
    }

    /// Columns of `information_schema.region_statistics` for this version (docs 0.10–0.17,
    /// 1.0, 1.2).
    pub fn region_statistics_columns(&self) -> Vec<(&'static str, &'static str)> {
        let mut cols = vec![
            ("region_id", "UInt64"),
            ("table_id", "UInt32"),
            ("region_number", "UInt32"),
            ("region_rows", "UInt64"),
        ];
        if self.major >= 1 {
            cols.push(("written_bytes_since_open", "UInt64"));
        }
        if self.at_least(1, 2, 0) {
            cols.push(("query_cpu_time_millis", "UInt64"));
            cols.push(("query_scanned_bytes", "UInt64"));
        }
        cols.extend([
            ("disk_size", "UInt64"),
            ("memtable_size", "UInt64"),
            ("manifest_size", "UInt64"),
            ("sst_size", "UInt64"),
        ]);
        if self.major >= 1 {
            cols.push(("sst_num", "UInt64"));
        }
        cols.extend([
            ("index_size", "UInt64"),
            ("engine", "String"),
            ("region_role", "String"),
        ]);
        cols
    }

    /// The `[grpc]` address key: `addr` before v0.12, `bind_addr` from v0.12 (inferred).
    pub fn grpc_addr_key(&self) -> &'static str {
        if self.at_least(0, 12, 0) {
            "bind_addr"
        } else {
            "addr"
        }
    }

    /// Default `--data-home`: `/tmp/greptimedb/` in v0.9, `./greptimedb_data` later.
    pub fn default_data_home(&self) -> &'static str {
        if self.at_least(0, 10, 0) {
            "./greptimedb_data"
        } else {
            "/tmp/greptimedb/"
        }
    }

    /// A stable, fake 40-hex commit id for this version.
    pub fn commit(&self) -> String {
        hex::encode(&Sha256::digest(format!("greptimedb {}", self.text()))[..20])
    }

    /// clap's long version (after `<name> `): starts with a newline.
    pub fn long_version(&self) -> String {
        format!(
            "\nbranch: \ncommit: {}\nclean: true\nversion: {}",
            self.commit(),
            self.text()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        let v = Version::parse("v1.2.0").unwrap();
        assert_eq!(v.text(), "1.2.0");
        assert!(v.compaction_key_value_options());
        assert_eq!(v.product_name(), "GreptimeDB");
        let old = Version::parse("0.17.2").unwrap();
        assert!(!old.compaction_key_value_options());
        assert_eq!(old.product_name(), "greptime");
        assert!(Version::parse("1.0.0-beta.1")
            .unwrap()
            .compaction_key_value_options());
        assert!(!Version::parse("1.0.0-alpha.3")
            .unwrap()
            .compaction_key_value_options());
        assert!(Version::parse("1.2").is_none());
        assert!(Version::parse("1.2.x").is_none());
        assert!(!Version::parse("0.9.5").unwrap().has_region_statistics());
        let cols = Version::parse("1.2.0").unwrap().region_statistics_columns();
        assert_eq!(cols.len(), 15);
        assert_eq!(
            Version::parse("0.15.0")
                .unwrap()
                .region_statistics_columns()
                .len(),
            11
        );
    }
}
