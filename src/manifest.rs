//! Manifests: typed serde structs written as pretty JSON with `schema_version` and `kind`
//! first, published atomically (temp file beside the target, fsync, rename, fsync the
//! directory). Reading rejects an unknown schema version, a wrong kind or invalid JSON as an
//! integrity error (exit 4) that names the file.

use std::path::Path;

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// A manifest type. The struct itself does not carry `schema_version` or `kind`: they are
/// added on write and checked on read.
pub trait Manifest: Serialize + DeserializeOwned {
    /// e.g. `greptimedb-installation`, `greptimedb-workspace`, `dataset`, `run`.
    const KIND: &'static str;
    /// Bumped when the shape changes incompatibly.
    const SCHEMA_VERSION: u32 = 1;
}

/// The JSON text written for `m`: an object with `schema_version` and `kind` first, pretty
/// printed (2-space indent), one trailing newline.
pub fn to_text<M: Manifest>(m: &M) -> Result<String> {
    to_text_of(m, M::KIND, M::SCHEMA_VERSION)
}

/// [`to_text`] of a value whose kind is known at run time (a product's query-set manifest).
fn to_text_of<T: Serialize>(m: &T, kind: &str, schema_version: u32) -> Result<String> {
    let value = serde_json::to_value(m)
        .map_err(|e| Error::failed(format!("could not serialize a {kind} manifest: {e}")))?;
    let Value::Object(fields) = value else {
        return Err(Error::failed(format!(
            "a {kind} manifest must serialize to a JSON object"
        )));
    };
    let mut out = Map::new();
    out.insert("schema_version".into(), Value::from(schema_version));
    out.insert("kind".into(), Value::from(kind));
    for (k, v) in fields {
        if k != "schema_version" && k != "kind" {
            out.insert(k, v);
        }
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(out))?;
    text.push('\n');
    Ok(text)
}

/// Writes `m` to `path` atomically.
pub fn write<M: Manifest>(path: &Path, m: &M) -> Result<()> {
    let text = to_text(m)?;
    crate::fsutil::write_atomic(path, text.as_bytes())
}

/// [`write`] with the kind given at run time (schema version 1): the manifests whose kind a
/// product names (its query sets).
pub fn write_kind<T: Serialize>(path: &Path, kind: &str, m: &T) -> Result<()> {
    let text = to_text_of(m, kind, 1)?;
    crate::fsutil::write_atomic(path, text.as_bytes())
}

/// [`read`] with the kind given at run time (schema version 1).
pub fn read_kind<T: DeserializeOwned>(path: &Path, kind: &str) -> Result<T> {
    read_of(path, kind, 1)
}

/// Reads and checks a manifest. Missing file: a failure naming the path; invalid JSON, an
/// unknown schema version or another kind: integrity (exit 4).
pub fn read<M: Manifest>(path: &Path) -> Result<M> {
    read_of(path, M::KIND, M::SCHEMA_VERSION)
}

fn read_of<T: DeserializeOwned>(path: &Path, kind: &str, schema_version: u32) -> Result<T> {
    match read_optional_of(path, kind, schema_version)? {
        Some(m) => Ok(m),
        None => Err(
            Error::failed(format!("missing {kind} manifest: {}", path.display())).with_hint(
                "the directory was not prepared by tsbsctl or was left unfinished; \
                     run the command that creates it (or remove the directory and run it again)",
            ),
        ),
    }
}

/// Like [`read`], but a missing file is `Ok(None)`.
pub fn read_optional<M: Manifest>(path: &Path) -> Result<Option<M>> {
    read_optional_of(path, M::KIND, M::SCHEMA_VERSION)
}

fn read_optional_of<T: DeserializeOwned>(
    path: &Path,
    kind: &str,
    schema_version: u32,
) -> Result<Option<T>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read manifest", path, e)),
    };
    parse_of(path, &bytes, kind, schema_version).map(Some)
}

fn parse_of<T: DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
    kind: &str,
    schema_version: u32,
) -> Result<T> {
    let fix = "the file was changed or damaged outside tsbsctl; restore it, or remove the \
               directory it describes and prepare it again";
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::integrity(format!("invalid JSON manifest {}: {e}", path.display())).with_hint(fix)
    })?;
    let Value::Object(mut fields) = value else {
        return Err(Error::integrity(format!(
            "manifest must be a JSON object: {}",
            path.display()
        ))
        .with_hint(fix));
    };
    match fields.remove("schema_version") {
        Some(Value::Number(n)) if n.as_u64() == Some(schema_version as u64) => {}
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v > schema_version as u64) => {
            return Err(Error::integrity(format!(
                "manifest {} has schema_version {n}, newer than this tsbsctl understands ({})",
                path.display(),
                schema_version
            ))
            .with_hint("upgrade tsbsctl to the version that wrote it"));
        }
        Some(other) => {
            return Err(Error::integrity(format!(
                "manifest {} has unknown schema_version {other} (this tsbsctl reads {})",
                path.display(),
                schema_version
            ))
            .with_hint(
                "it was written by another tool or version; remove the directory it describes \
                 and prepare it again with this tsbsctl",
            ));
        }
        None => {
            return Err(Error::integrity(format!(
                "manifest {} has no schema_version",
                path.display()
            ))
            .with_hint(
                "it was not written by tsbsctl; remove the directory it describes and prepare \
                 it again with this tsbsctl",
            ));
        }
    }
    match fields.remove("kind") {
        Some(Value::String(k)) if k == kind => {}
        other => {
            let found = match other {
                Some(Value::String(k)) => format!("kind {k:?}"),
                Some(v) => format!("kind {v}"),
                None => "no kind".to_string(),
            };
            return Err(Error::integrity(format!(
                "manifest {} has {found}, expected {:?}",
                path.display(),
                kind
            ))
            .with_hint("check that the path points at the right kind of directory"));
        }
    }
    serde_json::from_value(Value::Object(fields)).map_err(|e| {
        Error::integrity(format!(
            "manifest {} does not have the shape of a {} manifest: {e}",
            path.display(),
            kind
        ))
        .with_hint(fix)
    })
}

/// UTC now as RFC 3339 with a `Z` suffix and always six fractional digits
/// (`2026-11-29T18:37:22.880743Z`).
pub fn now_rfc3339() -> String {
    format_rfc3339(time::OffsetDateTime::now_utc())
}

fn format_rfc3339(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Demo {
        name: String,
        count: u32,
    }
    impl Manifest for Demo {
        const KIND: &'static str = "demo";
    }

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct DemoV2 {
        name: String,
    }
    impl Manifest for DemoV2 {
        const KIND: &'static str = "demo";
        const SCHEMA_VERSION: u32 = 2;
    }

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Other {
        name: String,
        count: u32,
    }
    impl Manifest for Other {
        const KIND: &'static str = "other";
    }

    fn demo() -> Demo {
        Demo {
            name: "é x".into(),
            count: 3,
        }
    }

    #[test]
    fn write_puts_version_and_kind_first_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a").join("manifest.json");
        write(&p, &demo()).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.starts_with("{\n  \"schema_version\": 1,\n  \"kind\": \"demo\",\n  \"name\""),
            "{text}"
        );
        assert!(text.ends_with("}\n") && !text.ends_with("\n\n"));
        assert_eq!(read::<Demo>(&p).unwrap(), demo());
        // Nothing but the manifest in the directory.
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn missing_is_a_failure_naming_the_path_and_none_when_optional() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("manifest.json");
        let e = read::<Demo>(&p).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Failed);
        assert!(
            e.message.contains(&p.display().to_string()),
            "{}",
            e.message
        );
        assert!(e.hint.is_some());
        assert!(read_optional::<Demo>(&p).unwrap().is_none());
    }

    fn integrity(p: &Path, body: &str) -> Error {
        std::fs::write(p, body).unwrap();
        let e = read::<Demo>(p).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Integrity, "{body}: {}", e.message);
        assert!(
            e.message.contains(&p.display().to_string()),
            "{}",
            e.message
        );
        assert!(e.hint.is_some());
        e
    }

    #[test]
    fn bad_manifests_are_integrity_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("manifest.json");
        integrity(&p, "{not json");
        integrity(&p, "");
        integrity(&p, "[1, 2]");
        integrity(&p, r#"{"kind": "demo", "name": "x", "count": 1}"#);
        integrity(
            &p,
            r#"{"schema_version": "1", "kind": "demo", "name": "x", "count": 1}"#,
        );
        integrity(
            &p,
            r#"{"schema_version": 0, "kind": "demo", "name": "x", "count": 1}"#,
        );
        let e = integrity(
            &p,
            r#"{"schema_version": 2, "kind": "demo", "name": "x", "count": 1}"#,
        );
        assert!(e.message.contains("newer"), "{}", e.message);
        let e = integrity(
            &p,
            r#"{"schema_version": 1, "kind": "other", "name": "x", "count": 1}"#,
        );
        assert!(e.message.contains("\"other\""), "{}", e.message);
        integrity(&p, r#"{"schema_version": 1, "name": "x", "count": 1}"#);
        integrity(&p, r#"{"schema_version": 1, "kind": "demo", "name": "x"}"#);
    }

    #[test]
    fn kind_and_version_are_checked_against_the_reader_type() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("manifest.json");
        write(&p, &demo()).unwrap();
        assert_eq!(read::<Other>(&p).unwrap_err().kind, ErrorKind::Integrity);
        // A newer reader refuses an older file too: versions must match exactly.
        assert_eq!(read::<DemoV2>(&p).unwrap_err().kind, ErrorKind::Integrity);
        write(&p, &DemoV2 { name: "n".into() }).unwrap();
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains("\"schema_version\": 2"));
        assert_eq!(read::<DemoV2>(&p).unwrap().name, "n");
    }

    #[test]
    fn timestamps_have_microseconds_and_z() {
        let t = time::macros::datetime!(2025-01-01 00:00:00 UTC);
        assert_eq!(format_rfc3339(t), "2025-01-01T00:00:00.000000Z");
        let t = time::macros::datetime!(2026-11-29 18:37:22.880743 UTC);
        assert_eq!(format_rfc3339(t), "2026-11-29T18:37:22.880743Z");
        let now = now_rfc3339();
        assert_eq!(now.len(), 27, "{now}");
        assert!(now.ends_with('Z'));
        assert!(
            time::OffsetDateTime::parse(&now, &time::format_description::well_known::Rfc3339)
                .is_ok()
        );
    }
}
