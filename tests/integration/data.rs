//! Shared datasets and query sets (`tsbsctl data ...`, `dataset`, `queryset`).
//!
//! Generation runs the TSBS generator stand-ins through wrapper scripts (what the fake `go
//! build` of `env prepare` writes as the built tools); the library is driven in-process where a
//! prepared environment would otherwise be needed, and the real binary for everything else.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::Digest as _;
use tsbsctl::dataset::{
    self, Compression, Dataset, GenerateRequest, Generator, Profile, SpecOverrides, StoredFormat,
};
use tsbsctl::output::SilentReporter;
use tsbsctl::paths::Root;
use tsbsctl::queryset::{self, QueryFormat, QuerySetRequest};

use crate::util::*;

/// Generator stand-ins installed as wrapper scripts, with a knob file and an invocation log.
struct Standins {
    knobs: PathBuf,
    data_log: PathBuf,
    query_log: PathBuf,
    data: Generator,
    queries: Generator,
}

impl Standins {
    fn new(env: &TestEnv) -> Standins {
        let _ = testbed_bin(); // built before the wrappers exec it
        let bin = env.path().join("tsbs-bin");
        fs::create_dir_all(&bin).unwrap();
        let knobs = env.path().join("knobs.json");
        let knobs_s = knobs.to_string_lossy().into_owned();
        let mk = |tool: &str| {
            let p = bin.join(tool);
            fs::write(
                &p,
                testbed::wrapper_script(tool, &[("TESTBED_KNOBS", knobs_s.as_str())]),
            )
            .unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
            Generator {
                path: p,
                sha256: "0".repeat(64),
                tsbs_repo: "https://example.invalid/tsbs.git".into(),
                tsbs_commit: "81d12c8".into(),
                go_version: "go1.21.13".into(),
                dirty: false,
            }
        };
        let s = Standins {
            knobs,
            data_log: env.path().join("data-invocations.log"),
            query_log: env.path().join("query-invocations.log"),
            data: mk("tsbs_generate_data"),
            queries: mk("tsbs_generate_queries"),
        };
        s.set(json!({}), json!({}));
        s
    }

    /// Replaces the knobs (the invocation logs are always on).
    fn set(&self, mut data: Value, mut queries: Value) {
        data["invocations_log"] = json!(self.data_log);
        queries["invocations_log"] = json!(self.query_log);
        fs::write(
            &self.knobs,
            serde_json::to_vec(
                &json!({"tsbs_generate_data": data, "tsbs_generate_queries": queries}),
            )
            .unwrap(),
        )
        .unwrap();
    }

    fn data_runs(&self) -> usize {
        fs::read_to_string(&self.data_log)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn query_runs(&self) -> usize {
        fs::read_to_string(&self.query_log)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }
}

fn root(env: &TestEnv) -> Root {
    Root::at(env.root.clone())
}

/// A tiny dataset: 3 hosts, one hour, 10 s → 1,080 rows.
fn tiny() -> SpecOverrides {
    SpecOverrides {
        profile: Some(Profile::Smoke),
        scale: Some(3),
        end: Some("2023-06-11T01:00:00Z".into()),
        ..Default::default()
    }
}

const TINY_ROWS: u64 = 3 * 360;

/// Query sets need a day (the longest query window is 12 h); 3 hosts, no data.
fn day3() -> SpecOverrides {
    SpecOverrides {
        profile: Some(Profile::Smoke),
        scale: Some(3),
        ..Default::default()
    }
}

fn generate(
    env: &TestEnv,
    s: &Standins,
    id: &str,
    compression: Option<Compression>,
    regenerate: bool,
) -> tsbsctl::error::Result<StoredFormat> {
    let root = root(env);
    let ds = Dataset::resolve(&root, Some(id), &tiny())?;
    let req = GenerateRequest {
        format: "influx".into(),
        compression,
        regenerate,
        generatable: tsbsctl::product::data_formats(),
    };
    let gen = s.data.clone();
    let mut g = move || Ok(gen.clone());
    dataset::ensure_generated(&ds, &req, &mut g, "test", &SilentReporter)
}

fn sha256_of(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

fn decompress(path: &Path, c: Compression) -> Vec<u8> {
    let f = fs::File::open(path).unwrap();
    let mut out = Vec::new();
    match c {
        Compression::None => {
            let mut f = f;
            f.read_to_end(&mut out).unwrap();
        }
        Compression::Gzip => {
            flate2::read::MultiGzDecoder::new(f)
                .read_to_end(&mut out)
                .unwrap();
        }
        Compression::Xz => {
            xz2::read::XzDecoder::new(f).read_to_end(&mut out).unwrap();
        }
    }
    out
}

/// Overwrites one byte in place (same size, same inode) and optionally restores the mtime.
fn corrupt_in_place(path: &Path, restore_mtime: bool) {
    let meta = fs::metadata(path).unwrap();
    let mtime = meta.modified().unwrap();
    let mut bytes = fs::read(path).unwrap();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'7' { b'8' } else { b'7' };
    let mut f = fs::OpenOptions::new().write(true).open(path).unwrap();
    std::io::Write::write_all(&mut f, &bytes).unwrap();
    if restore_mtime {
        f.set_times(fs::FileTimes::new().set_modified(mtime))
            .unwrap();
    }
    drop(f);
    assert_eq!(fs::metadata(path).unwrap().len(), meta.len());
}

// ---------------------------------------------------------------------------------------------
// Ids and specs

#[test]
fn dataset_ids_match_the_reference_vectors() {
    let id = |o: SpecOverrides| {
        Dataset::resolve(&Root::at("/nonexistent"), None, &o)
            .unwrap()
            .id
    };
    assert_eq!(id(SpecOverrides::default()), "cpu-only-s4000-57964a838c71");
    let smoke = |scale| SpecOverrides {
        profile: Some(Profile::Smoke),
        scale,
        ..Default::default()
    };
    assert_eq!(id(smoke(None)), "cpu-only-s10-c3a7d38f3a2a");
    assert_eq!(id(smoke(Some(100))), "cpu-only-s100-003a91156529");
    assert_eq!(id(smoke(Some(1000))), "cpu-only-s1000-45c02116670b");
}

/// One dataset, spelled differently, gets one id (trial-run #29); canonical ids hold.
#[test]
fn equal_data_spelled_differently_gets_one_id() {
    let id = |start: &str, interval: &str| {
        let o = SpecOverrides {
            profile: Some(Profile::Smoke),
            start: Some(start.into()),
            log_interval: Some(interval.into()),
            ..Default::default()
        };
        let d = Dataset::resolve(&Root::at("/nonexistent"), None, &o).unwrap();
        (d.id, d.spec.start, d.spec.log_interval)
    };
    let canonical = id("2023-06-11T00:00:00Z", "10s");
    assert_eq!(canonical.0, "cpu-only-s10-c3a7d38f3a2a");
    for (start, interval) in [
        ("2023-06-11T02:00:00+02:00", "10s"),
        ("2023-06-11T00:00:00.000Z", "10s"),
        ("2023-06-10T23:00:00-01:00", "10000ms"),
    ] {
        assert_eq!(id(start, interval), canonical, "{start} {interval}");
    }
}

/// Timestamps Go's RFC 3339 refuses (the real generator then prints an error and exits 0) are
/// refused before anything exists (real finding C1).
#[test]
fn timestamps_go_refuses_are_refused_with_nothing_created() {
    let env = TestEnv::new();
    let before = all_files(&env.root);
    for bad in [
        "2023-06-11 00:00:00z",
        "2023-06-11t00:00:00Z",
        "2023-06-11T00:00:00z",
        "2016-12-31T23:59:60Z",
    ] {
        for flag in ["--start", "--end"] {
            for cmd in ["prepare", "generate"] {
                let mut args = vec!["data", cmd, "--profile", "smoke", flag, bad];
                if cmd == "generate" {
                    args.extend(["--format", "influx"]);
                }
                env.run(&args).code(2).says("upper-case T");
            }
        }
    }
    assert_eq!(all_files(&env.root), before);
    assert!(!env.root.join("datasets").exists());
}

#[test]
fn query_set_ids_match_the_reference_vectors() {
    let ds = |p: Profile| {
        Dataset::resolve(
            &Root::at("/nonexistent"),
            None,
            &SpecOverrides {
                profile: Some(p),
                ..Default::default()
            },
        )
        .unwrap()
    };
    let id = |d: &Dataset, f, counts: &BTreeMap<String, u64>| {
        queryset::query_set_id(f, &queryset::query_set_spec(d, f, counts).unwrap())
    };
    let smoke = ds(Profile::Smoke);
    let all10 = queryset::resolve_counts(Profile::Smoke, None, &[], None, &[]).unwrap();
    assert_eq!(
        id(&smoke, QueryFormat::Greptime, &all10),
        "greptime-ea4a6b593558cdfb"
    );
    assert_eq!(
        id(&smoke, QueryFormat::Influx3, &all10),
        "influx3-fe778555ef240528"
    );
    let manual = ds(Profile::Manual);
    let defaults = queryset::resolve_counts(Profile::Manual, None, &[], None, &[]).unwrap();
    assert_eq!(
        id(&manual, QueryFormat::Greptime, &defaults),
        "greptime-2220fa05b2c1ffda"
    );
    assert_eq!(
        id(&manual, QueryFormat::Influx3, &defaults),
        "influx3-0a5217a05af29920"
    );
    let last = queryset::resolve_counts(
        Profile::Smoke,
        None,
        &[],
        None,
        &["lastpoint=10".to_string()],
    )
    .unwrap();
    assert_eq!(
        id(&smoke, QueryFormat::Influx3, &last),
        "influx3-280d001243e57350"
    );
}

#[test]
fn query_count_validation_messages_reach_the_user() {
    type Case<'a> = (&'a [&'a str], Option<i64>, &'a [&'a str], &'a str);
    let cases: &[Case] = &[
        (
            &[],
            None,
            &["lastpoint"],
            "query count must use QUERY_TYPE=COUNT syntax",
        ),
        (&[], None, &["bogus=1"], "unsupported query type: bogus"),
        (
            &[],
            None,
            &["lastpoint=1.5"],
            "query count for lastpoint must be an integer",
        ),
        (
            &[],
            None,
            &["lastpoint=0"],
            "query count for lastpoint must be positive",
        ),
        (
            &[],
            None,
            &["lastpoint=1", "lastpoint=1"],
            "duplicate --query-count for lastpoint",
        ),
        (
            &["lastpoint"],
            None,
            &["high-cpu-1=2"],
            "--query-count targets query types not selected by --query-type: high-cpu-1",
        ),
        (&[], Some(-1), &[], "--queries must be positive"),
    ];
    for (types, q, counts, msg) in cases {
        let t: Vec<String> = types.iter().map(|s| s.to_string()).collect();
        let c: Vec<String> = counts.iter().map(|s| s.to_string()).collect();
        let e = queryset::resolve_counts(Profile::Smoke, None, &t, *q, &c).unwrap_err();
        assert_eq!(e.message, *msg);
        assert_eq!(e.exit_code(), 2);
        assert!(e.hint.is_some());
    }
}

// ---------------------------------------------------------------------------------------------
// Logical datasets through the CLI

#[test]
fn prepare_writes_only_dataset_json_and_named_datasets_inherit_or_conflict() {
    let env = TestEnv::new();
    let r = env.run_json(&[
        "data",
        "prepare",
        "--profile",
        "smoke",
        "--dataset-id",
        "mine",
    ]);
    r.ok();
    let v = r.json();
    assert_eq!(v["data"]["dataset_id"], "mine");
    assert_eq!(v["data"]["spec"]["scale"], 10);
    assert_eq!(v["data"]["reused"], false);
    let dir = env.root.join("datasets").join("mine");
    let files: Vec<PathBuf> = all_files(&dir)
        .into_iter()
        .filter(|p| p.file_name().unwrap() != ".lock")
        .collect();
    assert_eq!(files, vec![dir.join("dataset.json")]);
    assert!(!dir.join("formats").exists());
    let stored = fs::read(dir.join("dataset.json")).unwrap();

    // Reopened without flags: the stored smoke spec, not manual.
    let r = env.run_json(&["data", "prepare", "--dataset-id", "mine"]);
    r.ok();
    assert_eq!(r.json()["data"]["spec"]["scale"], 10);
    assert_eq!(r.json()["data"]["reused"], true);
    // A conflicting flag names the difference and changes nothing.
    env.run(&["data", "prepare", "--dataset-id", "mine", "--scale", "11"])
        .code(2)
        .says("scale: stored 10 vs requested 11");
    env.run(&[
        "data",
        "prepare",
        "--dataset-id",
        "mine",
        "--profile",
        "manual",
    ])
    .code(2)
    .says("dataset mine was created with other settings");
    assert_eq!(fs::read(dir.join("dataset.json")).unwrap(), stored);

    // Bad input: exit 2, nothing written.
    let before = all_files(&env.root);
    env.run(&["data", "prepare", "--dataset-id", "../x"])
        .code(2);
    env.run(&["data", "prepare", "--scale=0"])
        .code(2)
        .says("--scale must be positive");
    env.run(&["data", "prepare", "--start", "yesterday"])
        .code(2)
        .says("RFC 3339");
    env.run(&["data", "prepare", "--log-interval", "10"])
        .code(2)
        .says("Go duration");
    env.run(&["data", "prepare", "--seed", "0"])
        .code(2)
        .says("unreproducible");
    assert_eq!(all_files(&env.root), before);

    // Automatic id, and --dataset-root / TSBS_DATASET_ROOT.
    let r = env.run_json(&["data", "prepare", "--profile", "smoke"]);
    assert_eq!(r.json()["data"]["dataset_id"], "cpu-only-s10-c3a7d38f3a2a");
    let other = env.path().join("elsewhere");
    let r = env.run_json(&[
        "data",
        "prepare",
        "--profile",
        "smoke",
        "--dataset-root",
        other.to_str().unwrap(),
    ]);
    r.ok();
    assert!(other
        .join("cpu-only-s10-c3a7d38f3a2a/dataset.json")
        .exists());
    let mut env2 = TestEnv::new();
    env2.env("TSBS_DATASET_ROOT", other.to_str().unwrap());
    let r = env2.run_json(&["data", "list"]);
    let ids: Vec<String> = r.json()["data"]["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["dataset_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, vec!["cpu-only-s10-c3a7d38f3a2a"]);
}

// ---------------------------------------------------------------------------------------------
// Generation, reuse, verify

#[test]
fn generate_writes_exact_rows_and_reuse_never_reads_or_runs_the_generator() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    let sf = generate(&env, &s, "tiny", None, false).unwrap();
    assert!(!sf.reused);
    assert_eq!(sf.rows, TINY_ROWS);
    assert_eq!(sf.metrics, TINY_ROWS * 10);
    assert_eq!(sf.compression, Compression::None);
    let bytes = fs::read(&sf.path).unwrap();
    assert_eq!(sf.sha256, sha256_of(&bytes));
    assert_eq!(sf.bytes, bytes.len() as u64);
    assert_eq!(sf.uncompressed_sha256, sf.sha256);
    let text = String::from_utf8(bytes.clone()).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("cpu,hostname=host_0,region="), "{first}");
    assert!(first.ends_with(" 1686441600000000000"), "{first}");
    assert_eq!(s.data_runs(), 1);
    let dir = sf.path.parent().unwrap().to_path_buf();
    assert!(dir.join("generate.log").exists());
    let log = fs::read_to_string(dir.join("generate.log")).unwrap();
    assert!(log.starts_with("$ "), "{log}");
    assert!(log.contains("--timestamp-end=2023-06-11T01:00:00Z --log-interval=10s --format=influx"));
    let m: Value = serde_json::from_slice(&fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["status"], "completed");
    assert_eq!(m["rows"], TINY_ROWS);
    assert_eq!(m["generator"]["tsbs_commit"], "81d12c8");
    assert!(m["fingerprint"]["inode"].as_u64().unwrap() > 0);
    // Nothing but the published files (no temp files or working directories left).
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".lock")
        .collect();
    names.sort();
    assert_eq!(names, vec!["data", "generate.log", "manifest.json"]);

    // Reuse: the generator would fail now, and the data is changed in place with its mtime
    // restored: a reuse that read the data or ran the generator could not succeed unchanged.
    s.set(json!({"exit_code": 1}), json!({}));
    corrupt_in_place(&sf.path, true);
    let again = generate(&env, &s, "tiny", None, false).unwrap();
    assert!(again.reused);
    assert!(!again.verified);
    assert_eq!(again.sha256, sf.sha256);
    assert_eq!(s.data_runs(), 1);

    // The CLI reuses too, without a prepared TSBS environment (the generator is never needed).
    let r = env.run_json(&[
        "data",
        "generate",
        "--format",
        "influx",
        "--dataset-id",
        "tiny",
    ]);
    r.ok();
    assert_eq!(r.json()["data"]["reused"], true);
    assert_eq!(r.json()["data"]["rows"], TINY_ROWS);
    assert_eq!(s.data_runs(), 1);

    // Only an explicit verify reads it: same-size corruption is an integrity error (exit 4).
    env.run(&["data", "verify", "--dataset-id", "tiny"])
        .code(4)
        .says("checksum mismatch");
}

#[test]
fn changed_fingerprint_triggers_a_full_verify_before_reuse() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    let sf = generate(&env, &s, "tiny", None, false).unwrap();

    // Touched but intact: verified once, fingerprint refreshed, then fast again.
    let f = fs::OpenOptions::new().write(true).open(&sf.path).unwrap();
    f.set_times(
        fs::FileTimes::new()
            .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)),
    )
    .unwrap();
    drop(f);
    let r = generate(&env, &s, "tiny", None, false).unwrap();
    assert!(r.reused && r.verified);
    let r = generate(&env, &s, "tiny", None, false).unwrap();
    assert!(r.reused && !r.verified);

    // Corrupted (same size, new mtime): the fingerprint path catches it.
    corrupt_in_place(&sf.path, false);
    let e = generate(&env, &s, "tiny", None, false).unwrap_err();
    assert_eq!(e.exit_code(), 4, "{e}");
    assert!(e.message.contains("checksum mismatch"), "{e}");
    assert_eq!(s.data_runs(), 1);

    // A size change is caught without hashing, through the CLI.
    let mut bytes = fs::read(&sf.path).unwrap();
    bytes.extend_from_slice(b"extra\n");
    fs::write(&sf.path, bytes).unwrap();
    env.run(&[
        "data",
        "generate",
        "--format",
        "influx",
        "--dataset-id",
        "tiny",
    ])
    .code(4)
    .says("size mismatch");

    // --regenerate repairs it.
    let r = generate(&env, &s, "tiny", None, true).unwrap();
    assert!(!r.reused);
    assert_eq!(
        r.sha256, sf.sha256,
        "the stand-in is deterministic for a seed"
    );
    env.run(&[
        "data",
        "verify",
        "--dataset-id",
        "tiny",
        "--format",
        "influx",
    ])
    .ok()
    .says("Verified tiny (influx)");
}

#[test]
fn failed_regeneration_preserves_the_completed_artifact_byte_for_byte() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    let sf = generate(&env, &s, "tiny", None, false).unwrap();
    let dir = sf.path.parent().unwrap().to_path_buf();
    let data = fs::read(&sf.path).unwrap();
    let manifest = fs::read(dir.join("manifest.json")).unwrap();
    let log = fs::read(dir.join("generate.log")).unwrap();

    s.set(
        json!({"exit_code": 1, "fail_after_rows": 500, "stderr": "disk on fire"}),
        json!({}),
    );
    let e = generate(&env, &s, "tiny", None, true).unwrap_err();
    assert_eq!(e.exit_code(), 1);
    assert!(e.message.contains("exit code 1"), "{e}");
    assert!(e.message.contains("disk on fire"), "{e}");
    assert_eq!(fs::read(&sf.path).unwrap(), data);
    assert_eq!(fs::read(dir.join("manifest.json")).unwrap(), manifest);
    assert_eq!(fs::read(dir.join("generate.log")).unwrap(), log);
    assert!(fs::read_to_string(dir.join("generate.failed.log"))
        .unwrap()
        .contains("disk on fire"));
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".data"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // And it is still reusable.
    assert!(generate(&env, &s, "tiny", None, false).unwrap().reused);
}

#[test]
fn generator_error_on_stdout_with_exit_zero_is_a_failure_and_nothing_is_published() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    s.set(
        json!({"stdout_error": "cannot allocate host", "error_after_rows": 100}),
        json!({}),
    );
    let e = generate(&env, &s, "tiny", None, false).unwrap_err();
    assert_eq!(e.exit_code(), 1);
    assert!(e.message.contains("wrote 101 rows, expected 1080"), "{e}");
    assert!(e.message.contains("error: cannot allocate host"), "{e}");
    let dir = env.root.join("datasets/tiny/formats/influx");
    assert!(!dir.join("data").exists());
    let m: Value = serde_json::from_slice(&fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["status"], "failed");
    assert!(m.get("sha256").is_none() && m.get("stored").is_none());
    assert!(dir.join("generate.log").exists());
    // list shows no completed format; verify refuses the failed variant.
    let r = env.run_json(&["data", "list"]);
    assert_eq!(r.json()["data"]["datasets"][0]["formats"], json!([]));
    env.run(&["data", "verify", "--dataset-id", "tiny"])
        .code(1)
        .says("not complete");
    // A plain retry (no --regenerate) completes once the generator behaves.
    s.set(json!({}), json!({}));
    let sf = generate(&env, &s, "tiny", None, false).unwrap();
    assert_eq!(sf.rows, TINY_ROWS);
    assert!(!sf.reused);
}

#[test]
fn concurrent_generate_of_one_variant_runs_the_generator_once() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    s.set(json!({"delay_ms": 700}), json!({}));
    let results: Vec<StoredFormat> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| generate(&env, &s, "tiny", None, false).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(s.data_runs(), 1);
    assert_eq!(results.iter().filter(|r| r.reused).count(), 1);
    assert_eq!(results[0].sha256, results[1].sha256);
}

#[test]
fn gzip_and_xz_variants_verify_and_decompress_to_the_same_data() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    let plain = generate(&env, &s, "tiny", None, false).unwrap();
    let plain_bytes = fs::read(&plain.path).unwrap();
    for c in [Compression::Gzip, Compression::Xz] {
        // Another compression of a stored format needs --regenerate.
        let e = generate(&env, &s, "tiny", Some(c), false).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        let sf = generate(&env, &s, "tiny", Some(c), true).unwrap();
        assert_eq!(sf.compression, c);
        assert_eq!(sf.uncompressed_sha256, plain.sha256);
        assert_eq!(sf.uncompressed_bytes, plain.bytes);
        assert_eq!(sf.rows, TINY_ROWS);
        assert!(sf.bytes < plain.bytes);
        assert_eq!(sf.sha256, sha256_of(&fs::read(&sf.path).unwrap()));
        assert_eq!(decompress(&sf.path, c), plain_bytes);
        let mut streamed = Vec::new();
        sf.open_uncompressed()
            .unwrap()
            .read_to_end(&mut streamed)
            .unwrap();
        assert_eq!(streamed, plain_bytes);
        // The other files are gone: one stored file per format.
        let dir = sf.path.parent().unwrap();
        for other in ["data", "data.gz", "data.xz"] {
            assert_eq!(
                dir.join(other).exists(),
                dir.join(other) == sf.path,
                "{other}"
            );
        }
        let r = env.run_json(&["data", "verify", "--dataset-id", "tiny"]);
        r.ok();
        let v = &r.json()["data"]["variants"][0];
        assert_eq!(v["compression"], c.as_str());
        assert_eq!(v["uncompressed_sha256"], plain.sha256);
        // Reuse keeps the stored compression when none is asked for.
        let again = generate(&env, &s, "tiny", None, false).unwrap();
        assert!(again.reused);
        assert_eq!(again.compression, c);
        // Corruption inside the compressed stream is caught by verify.
        let keep = fs::read(&sf.path).unwrap();
        corrupt_in_place(&sf.path, true);
        env.run(&["data", "verify", "--dataset-id", "tiny"]).code(4);
        fs::write(&sf.path, keep).unwrap();
    }
}

#[test]
fn list_and_inspect_report_variants_without_reading_data() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    let sf = generate(&env, &s, "tiny", None, false).unwrap();
    env.run(&[
        "data",
        "prepare",
        "--profile",
        "smoke",
        "--dataset-id",
        "meta-only",
    ])
    .ok();
    // Unreadable content must not matter: list and inspect read manifests only.
    fs::write(&sf.path, b"").unwrap();
    let r = env.run_json(&["data", "list"]);
    r.ok();
    let ds = r.json()["data"]["datasets"].clone();
    assert_eq!(ds[0]["dataset_id"], "meta-only");
    assert_eq!(ds[0]["formats"], json!([]));
    assert_eq!(ds[1]["dataset_id"], "tiny");
    assert_eq!(ds[1]["formats"], json!(["influx"]));
    let r = env.run(&["data", "list"]);
    r.ok().says("tiny\tinflux\t");
    let r = env.run_json(&["data", "inspect", "--dataset-id", "tiny"]);
    r.ok();
    let v = r.json()["data"].clone();
    assert_eq!(v["spec"]["scale"], 3);
    assert_eq!(v["formats"]["influx"]["status"], "completed");
    assert_eq!(v["formats"]["influx"]["stored"]["sha256"], sf.sha256);
    env.run(&["data", "inspect", "--dataset-id", "nope"])
        .code(2)
        .says("does not exist");
    env.run(&["data", "verify", "--dataset-id", "meta-only"])
        .code(2)
        .says("has no format variants")
        .says("tsbsctl data generate --format influx` (or timescaledb)");
}

// ---------------------------------------------------------------------------------------------
// Query sets

fn query_request<'a>(
    ds: &'a Dataset,
    counts: &'a BTreeMap<String, u64>,
    log_dir: &'a Path,
) -> QuerySetRequest<'a> {
    QuerySetRequest {
        dataset: ds,
        format: QueryFormat::Influx3,
        counts,
        log_dir,
        pinned_manifest_sha256: None,
        full_verify: false,
        batch: None,
    }
}

#[test]
fn query_sets_generate_publish_reuse_and_detect_corruption() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    let root = root(&env);
    let ds = Dataset::resolve(&root, Some("qs"), &day3()).unwrap();
    let counts = queryset::resolve_counts(
        Profile::Smoke,
        None,
        &[],
        Some(3),
        &[
            "lastpoint=2".into(),
            "high-cpu-1=4".into(),
            "cpu-max-all-1=1".into(),
        ],
    )
    .unwrap();
    let logs = env.path().join("run-logs");
    let gen = s.queries.clone();
    let mut g = || Ok(gen.clone());
    let req = query_request(&ds, &counts, &logs);
    let set = queryset::ensure_query_set(&root, &req, &mut g, &SilentReporter).unwrap();
    assert!(!set.reused);
    assert_eq!(s.query_runs(), 3);
    assert_eq!(
        set.files.keys().cloned().collect::<Vec<_>>(),
        vec!["cpu-max-all-1", "high-cpu-1", "lastpoint"]
    );
    let lp = testbed::queryfile::read(std::io::BufReader::new(
        fs::File::open(&set.files["lastpoint"].path).unwrap(),
    ))
    .unwrap();
    assert_eq!(lp.len(), 2);
    assert_eq!(lp[0].human_label, "InfluxDB 3 last row per host");
    assert!(logs.join("generate-query-lastpoint.log").exists());
    let m: Value = serde_json::from_slice(&fs::read(&set.manifest_path).unwrap()).unwrap();
    assert_eq!(m["kind"], "influxdb3-query-set");
    assert_eq!(m["query_set_id"], set.id);
    assert_eq!(m["spec"]["timestamp_end"], "2023-06-12T00:00:01Z");
    assert_eq!(
        set.manifest_sha256,
        sha256_of(&fs::read(&set.manifest_path).unwrap())
    );
    assert!(set.path.starts_with(env.root.join("queries/qs/influx3")));

    // Reuse: no generator run, same manifest checksum, and the pin is honoured.
    let again = queryset::ensure_query_set(&root, &req, &mut g, &SilentReporter).unwrap();
    assert!(again.reused);
    assert_eq!(again.manifest_sha256, set.manifest_sha256);
    assert_eq!(s.query_runs(), 3);
    let pinned = QuerySetRequest {
        pinned_manifest_sha256: Some(&"f".repeat(64)),
        ..query_request(&ds, &counts, &logs)
    };
    let e = queryset::ensure_query_set(&root, &pinned, &mut g, &SilentReporter).unwrap_err();
    assert_eq!(e.exit_code(), 4);
    assert!(e.message.contains("pinned by this run"), "{e}");

    // Same-size corruption with a new mtime: the fingerprint sends it to a full hash.
    corrupt_in_place(&set.files["high-cpu-1"].path, false);
    let e = queryset::ensure_query_set(&root, &req, &mut g, &SilentReporter).unwrap_err();
    assert_eq!(e.exit_code(), 4);
    assert!(
        e.message.contains("query artifact checksum mismatch"),
        "{e}"
    );
    // A stray file breaks membership.
    fs::write(set.path.join("queries/high-cpu-all.dat"), b"x").unwrap();
    let e = queryset::verify_query_set(&root, &req).unwrap_err();
    assert!(e.message.contains("do not match membership"), "{e}");
}

/// A query set or dataset generated from another TSBS source (another commit, e.g. a
/// stand-in's, or a dirty checkout's other build) is not reused: exit 4 with the way out
/// (finding C5). Another build of the same clean commit (another Go, another state root) is
/// reused with a note (trial 2 N2).
#[test]
fn artifacts_from_another_generator_are_not_reused() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    let root = root(&env);
    let ds = Dataset::resolve(&root, Some("qs"), &day3()).unwrap();
    let counts =
        queryset::resolve_counts(Profile::Smoke, None, &["lastpoint".into()], Some(2), &[])
            .unwrap();
    let logs = env.path().join("run-logs");
    let req = query_request(&ds, &counts, &logs);
    let gen = s.queries.clone();
    let set =
        queryset::ensure_query_set(&root, &req, &mut || Ok(gen.clone()), &SilentReporter).unwrap();
    let other_dirty_binary = Generator {
        sha256: "1".repeat(64),
        dirty: true,
        ..s.queries.clone()
    };
    let other_commit = Generator {
        tsbs_commit: "0123456".into(),
        ..s.queries.clone()
    };
    for other in [other_dirty_binary, other_commit] {
        let e = queryset::ensure_query_set(&root, &req, &mut || Ok(other.clone()), &SilentReporter)
            .unwrap_err();
        assert_eq!(e.exit_code(), 4, "{e}");
        assert!(e.message.contains("made by another generator"), "{e}");
        assert!(
            e.hint
                .as_deref()
                .unwrap()
                .contains(set.path.to_str().unwrap()),
            "{e:?}"
        );
    }
    // Another build of the same clean commit: reused, and the difference said.
    let rebuilt = Generator {
        sha256: "3".repeat(64),
        go_version: "go1.26.8".into(),
        ..s.queries.clone()
    };
    let notes = Notes::default();
    let again =
        queryset::ensure_query_set(&root, &req, &mut || Ok(rebuilt.clone()), &notes).unwrap();
    assert!(again.reused);
    let said = notes.0.lock().unwrap().join("\n");
    assert!(
        said.contains("another build of TSBS commit 81d12c8") && said.contains("go1.26.8"),
        "{said}"
    );
    assert_eq!(s.query_runs(), 1);
    let again =
        queryset::ensure_query_set(&root, &req, &mut || Ok(gen.clone()), &SilentReporter).unwrap();
    assert!(again.reused);

    // Datasets: the same rule; without a prepared environment there is nothing to compare.
    generate(&env, &s, "tiny", None, false).unwrap();
    let ds = Dataset::resolve(&root, Some("tiny"), &tiny()).unwrap();
    let greq = GenerateRequest {
        format: "influx".into(),
        compression: None,
        regenerate: false,
        generatable: tsbsctl::product::data_formats(),
    };
    let other = Generator {
        tsbs_commit: "0123456".into(),
        ..s.data.clone()
    };
    let e = dataset::ensure_generated(&ds, &greq, &mut || Ok(other.clone()), "t", &SilentReporter)
        .unwrap_err();
    assert_eq!(e.exit_code(), 4, "{e}");
    assert!(e.hint.as_deref().unwrap().contains("--regenerate"), "{e:?}");
    // Trial 2 N2: the same commit built elsewhere (its binary embeds its paths) reuses the
    // dataset; nothing is regenerated.
    let rebuilt = Generator {
        sha256: "2".repeat(64),
        ..s.data.clone()
    };
    let notes = Notes::default();
    let sf =
        dataset::ensure_generated(&ds, &greq, &mut || Ok(rebuilt.clone()), "t", &notes).unwrap();
    assert!(sf.reused);
    assert_eq!(sf.generator.binary_sha256, s.data.sha256, "provenance kept");
    assert!(
        notes
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|n| n.contains("another build")),
        "{:?}",
        notes.0.lock().unwrap()
    );
    let mut none = || -> tsbsctl::error::Result<Generator> {
        Err(tsbsctl::error::Error::invalid("no environment"))
    };
    let sf = dataset::ensure_generated(&ds, &greq, &mut none, "t", &SilentReporter).unwrap();
    assert!(sf.reused);
    assert_eq!(s.data_runs(), 1);
}

#[test]
fn failed_query_generation_publishes_nothing() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    s.set(
        json!({}),
        json!({"exit_code": 1, "fail_types": ["lastpoint"]}),
    );
    let root = root(&env);
    let ds = Dataset::resolve(&root, Some("qs"), &day3()).unwrap();
    let counts = queryset::resolve_counts(
        Profile::Smoke,
        None,
        &["high-cpu-1".into(), "lastpoint".into()],
        Some(2),
        &[],
    )
    .unwrap();
    let logs = env.path().join("run-logs");
    let gen = s.queries.clone();
    let mut g = || Ok(gen.clone());
    let e = queryset::ensure_query_set(
        &root,
        &query_request(&ds, &counts, &logs),
        &mut g,
        &SilentReporter,
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 1);
    assert!(e.message.contains("lastpoint"), "{e}");
    let dats: Vec<_> = all_files(&env.root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "dat"))
        .collect();
    assert!(dats.is_empty(), "{dats:?}");
    let left: Vec<_> = fs::read_dir(env.root.join("queries/qs/influx3"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// More hosts than the scale or a span shorter than the type's window would make the real
/// generator panic (finding C3): refused with exit 2, naming each type and its need, before
/// the generator runs or any directory exists.
#[test]
fn query_types_the_dataset_is_too_small_for_are_refused_first() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    let root = root(&env);
    let logs = env.path().join("run-logs");
    let refuse = |ds: &Dataset, types: &[&str]| {
        let counts = queryset::resolve_counts(
            Profile::Smoke,
            None,
            &types.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            Some(1),
            &[],
        )
        .unwrap();
        let mut g = || Ok(s.queries.clone());
        queryset::ensure_query_set(
            &root,
            &query_request(ds, &counts, &logs),
            &mut g,
            &SilentReporter,
        )
    };
    // 3 hosts, one day
    let day = Dataset::resolve(&root, Some("qs"), &day3()).unwrap();
    let e = refuse(
        &day,
        &["cpu-max-all-8", "single-groupby-5-8-1", "lastpoint"],
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
    assert!(
        e.message.contains("cpu-max-all-8 needs at least 8 hosts"),
        "{e}"
    );
    assert!(
        e.message
            .contains("single-groupby-5-8-1 needs at least 8 hosts"),
        "{e}"
    );
    assert!(!e.message.contains("lastpoint needs"), "{e}");
    // 3 hosts, one hour
    let hour = Dataset::resolve(&root, Some("tiny"), &tiny()).unwrap();
    let e = refuse(
        &hour,
        &[
            "double-groupby-1",
            "high-cpu-all",
            "cpu-max-all-1",
            "single-groupby-1-1-12",
        ],
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
    for need in [
        "double-groupby-1 needs a span of at least 12h",
        "high-cpu-all needs a span of at least 12h",
        "cpu-max-all-1 needs a span of at least 8h",
        "single-groupby-1-1-12 needs a span of at least 12h",
    ] {
        assert!(e.message.contains(need), "{need}: {e}");
    }
    assert_eq!(s.query_runs(), 0);
    assert!(!env.root.join("queries").exists());
    assert!(!logs.exists());
    // What fits is generated: an hour is enough for the 1 h types (the generator gets end+1s).
    let set = refuse(
        &hour,
        &["single-groupby-1-1-1", "groupby-orderby-limit", "lastpoint"],
    )
    .unwrap();
    assert_eq!(set.files.len(), 3);
}

#[test]
fn concurrent_query_set_publish_has_one_winner_and_both_use_it() {
    let env = TestEnv::new();
    let s = Standins::new(&env);
    s.set(json!({}), json!({"delay_ms": 400}));
    let root = root(&env);
    let ds = Dataset::resolve(&root, Some("qs"), &day3()).unwrap();
    let counts = queryset::resolve_counts(
        Profile::Smoke,
        None,
        &["lastpoint".into(), "high-cpu-all".into()],
        Some(2),
        &[],
    )
    .unwrap();
    let sets: Vec<_> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..2)
            .map(|i| {
                let logs = env.path().join(format!("logs-{i}"));
                let (root, ds, counts, s) = (&root, &ds, &counts, &s);
                scope.spawn(move || {
                    let gen = s.queries.clone();
                    let mut g = || Ok(gen.clone());
                    queryset::ensure_query_set(
                        root,
                        &query_request(ds, counts, &logs),
                        &mut g,
                        &SilentReporter,
                    )
                    .unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(sets[0].id, sets[1].id);
    assert_eq!(sets[0].manifest_sha256, sets[1].manifest_sha256);
    assert_eq!(sets.iter().filter(|s| !s.reused).count(), 1);
    let entries: Vec<_> = fs::read_dir(env.root.join("queries/qs/influx3"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        entries,
        vec![sets[0].id.clone()],
        "one set, no staging left"
    );
}

// ---------------------------------------------------------------------------------------------
// Through the CLI with a TSBS environment prepared by `tsbsctl env prepare`

/// Runs `tsbsctl env prepare` against a fake TSBS repository and a stand-in system Go, whose
/// `go build` writes generator wrapper scripts steered by the returned knob file.
fn prepare_env(env: &mut TestEnv) -> (PathBuf, testbed::mirror::Mirror) {
    let _ = testbed_bin();
    let mirror = testbed::mirror::Mirror::start().expect("mirror");
    for (k, v) in mirror.env() {
        env.env(k, v);
    }
    crate::world::use_tsbs_repo(env);
    let fakebin = env.path().join("fakebin");
    fs::create_dir_all(&fakebin).unwrap();
    env.env(
        "PATH",
        format!("{}:{}:/bin", fakebin.display(), crate::world::git_dir()),
    );
    let knobs = env.path().join("knobs").join("knobs.json");
    fs::create_dir_all(knobs.parent().unwrap()).unwrap();
    fs::write(&knobs, "{}").unwrap();
    let go = fakebin.join("go");
    let knobs_s = knobs.display().to_string();
    fs::write(
        &go,
        testbed::wrapper_script(
            "go",
            &[
                ("TESTBED_EMULATED_VERSION", "1.22.7"),
                ("TESTBED_KNOBS", &knobs_s),
            ],
        ),
    )
    .unwrap();
    fs::set_permissions(&go, fs::Permissions::from_mode(0o755)).unwrap();
    env.run(&["env", "prepare"]).ok();
    (knobs, mirror)
}

/// Replaces one tool's section of a shared knob file.
/// `data generate` of a small influx dataset (2 hosts, ten minutes: 120 rows) as `id`.
fn generate_small(id: &'static str) -> [&'static str; 12] {
    [
        "data",
        "generate",
        "--format",
        "influx",
        "--profile",
        "smoke",
        "--scale",
        "2",
        "--end",
        "2023-06-11T00:10:00Z",
        "--dataset-id",
        id,
    ]
}

fn set_knob_section(knobs: &Path, tool: &str, value: Value) {
    let mut all: Value = serde_json::from_slice(&fs::read(knobs).unwrap()).unwrap();
    all[tool] = value;
    fs::write(knobs, serde_json::to_vec(&all).unwrap()).unwrap();
}

#[test]
fn cli_generate_uses_the_prepared_environment_then_reuses() {
    let mut env = TestEnv::new();
    // Without a prepared environment: exit 2 (trial-run #23), a hint, and nothing written.
    env.run(&[
        "data",
        "generate",
        "--format",
        "influx",
        "--profile",
        "smoke",
    ])
    .code(2)
    .says("env prepare");
    assert!(all_files(&env.root.join("datasets")).is_empty());

    let (knobs, _mirror) = prepare_env(&mut env);
    let calls = env.path().join("data-calls.log");
    set_knob_section(
        &knobs,
        "tsbs_generate_data",
        json!({"invocations_log": calls}),
    );
    // A config file where tsbsctl is started must not reach the generator (TSBS would merge
    // it; the stand-in refuses to run beside one).
    fs::write(env.path().join("cwd").join("config.yaml"), "scale: 99\n").unwrap();
    let args = generate_small("small");
    let r = env.run_json(&args);
    r.ok();
    let d = r.json()["data"].clone();
    assert_eq!(d["reused"], false);
    assert_eq!(d["rows"], 2 * 60);
    assert_eq!(d["dataset_id"], "small");
    let data_path = PathBuf::from(d["data_path"].as_str().unwrap());
    assert_eq!(d["sha256"], sha256_of(&fs::read(&data_path).unwrap()));
    let m: Value = serde_json::from_slice(
        &fs::read(data_path.parent().unwrap().join("manifest.json")).unwrap(),
    )
    .unwrap();
    let tsbs = tsbsctl::environment::TsbsEnv::load(&root(&env), None).unwrap();
    let built = tsbs.binary("tsbs_generate_data").unwrap();
    assert_eq!(m["generator"]["binary_sha256"], built.sha256);
    assert_eq!(m["generator"]["tsbs_commit"], tsbs.commit);
    assert_eq!(m["generator"]["go_version"], tsbs.go_version);
    let invocations = fs::read_to_string(&calls).unwrap();
    assert_eq!(invocations.lines().count(), 1);
    assert!(invocations.contains(
        "--use-case=cpu-only --seed=123 --scale=2 --timestamp-start=2023-06-11T00:00:00Z \
         --timestamp-end=2023-06-11T00:10:00Z --log-interval=10s --format=influx"
    ));

    // Selected again by id: the stored spec is inherited, the data reused, nothing run.
    let r = env.run(&[
        "data",
        "generate",
        "--format",
        "influx",
        "--dataset-id",
        "small",
    ]);
    r.ok().says("Dataset reused: small (influx, none)");
    assert_eq!(fs::read_to_string(&calls).unwrap().lines().count(), 1);
    env.run(&[
        "data",
        "generate",
        "--format",
        "influx",
        "--dataset-id",
        "small",
        "--scale",
        "3",
    ])
    .code(2)
    .says("scale: stored 2 vs requested 3");
    // A bad format name is invalid input.
    env.run(&[
        "data",
        "generate",
        "--format",
        "Influx!",
        "--dataset-id",
        "small",
    ])
    .code(2)
    .says("--format must contain only lowercase letters")
    .says("use --format influx or --format timescaledb");

    // The stdout-error quirk through the real command: failed, named, nothing published.
    set_knob_section(
        &knobs,
        "tsbs_generate_data",
        json!({"invocations_log": calls, "stdout_error": "out of hosts"}),
    );
    env.run(&[
        "data",
        "generate",
        "--format",
        "influx",
        "--dataset-id",
        "small",
        "--regenerate",
    ])
    .code(1)
    .says("error: out of hosts")
    .says("previously generated data is untouched");
    env.run(&["data", "verify", "--dataset-id", "small"]).ok();
}

#[test]
fn a_killed_generate_publishes_nothing_and_the_next_run_cleans_up() {
    let mut env = TestEnv::new();
    let (knobs, _mirror) = prepare_env(&mut env);
    set_knob_section(&knobs, "tsbs_generate_data", json!({"delay_ms": 5_000}));
    let args = generate_small("killed");
    let mut child = env
        .cmd(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let dir = env.root.join("datasets/killed/formats/influx");
    let staged = || -> Vec<String> {
        fs::read_dir(&dir)
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(".data.") || n.starts_with(".work."))
                    .collect()
            })
            .unwrap_or_default()
    };
    let t0 = std::time::Instant::now();
    while staged().len() < 2 && t0.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(staged().len(), 2, "the generation never started");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!dir.join("data").exists());
    assert!(!dir.join("manifest.json").exists());

    set_knob_section(&knobs, "tsbs_generate_data", json!({}));
    let r = env.run_json(&args);
    r.ok();
    assert_eq!(r.json()["data"]["rows"], 120);
    assert!(staged().is_empty(), "leftovers: {:?}", staged());
}

/// Trial: after `kill -9` of a first generation, `data list` and `data verify --dataset-id`
/// left the staged data, its log and the generator's directory behind.
#[test]
fn list_and_verify_sweep_what_a_killed_generation_left() {
    let mut env = TestEnv::new();
    let (knobs, _mirror) = prepare_env(&mut env);
    let leftovers = |dir: &Path| -> Vec<String> {
        fs::read_dir(dir)
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| n.contains(".gen-") || n.contains(".cwd-"))
                    .collect()
            })
            .unwrap_or_default()
    };
    // Killed before the generator wrote (list) and while it was writing (verify).
    for (id, sweeper, knob) in [
        ("killed1", "list", json!({"delay_ms": 5_000})),
        ("killed2", "verify", json!({"rows_per_sec": 20})),
    ] {
        set_knob_section(&knobs, "tsbs_generate_data", knob);
        let args = generate_small(id);
        let mut child = env
            .cmd(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let dir = env.root.join(format!("datasets/{id}/formats/influx"));
        let t0 = std::time::Instant::now();
        while leftovers(&dir).len() < 3 && t0.elapsed() < std::time::Duration::from_secs(20) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(leftovers(&dir).len(), 3, "the generation never started");
        // SIGKILL, and not reaped yet: a killed tsbsctl stays a zombie until its parent
        // waits for it (a shell's `kill -9 $!` without `wait`), and a zombie owns nothing.
        child.kill().unwrap();
        let zombie = || {
            fs::read_to_string(format!("/proc/{}/stat", child.id())).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        };
        let t0 = std::time::Instant::now();
        while !zombie() && t0.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(zombie(), "tsbsctl did not die");
        let r = match sweeper {
            "list" => env.run(&["data", "list"]),
            _ => env.run(&["data", "verify", "--dataset-id", id]),
        };
        child.wait().unwrap();
        assert!(
            leftovers(&dir).is_empty(),
            "{sweeper} left {:?}\n{}",
            leftovers(&dir),
            r.describe()
        );
        r.says("left by an interrupted generation");
    }
}

#[test]
fn an_interrupted_generate_exits_130_stops_the_generator_and_publishes_nothing() {
    let mut env = TestEnv::new();
    let (knobs, _mirror) = prepare_env(&mut env);
    let calls = env.path().join("data-calls.log");
    set_knob_section(
        &knobs,
        "tsbs_generate_data",
        json!({"delay_ms": 60_000, "invocations_log": calls}),
    );
    let args = generate_small("stopped");
    let child = env
        .cmd(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !calls.exists() && t0.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(calls.exists(), "the generator never started");
    // SAFETY: signalling the tsbsctl we spawned (only it, not its process group).
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = Run::from_output(
        &args,
        wait_bounded(child, std::time::Duration::from_secs(20)),
    );
    run.code(130);
    let dir = env.root.join("datasets/stopped/formats/influx");
    assert!(!dir.join("data").exists());
    let m: Value = serde_json::from_slice(&fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["status"], "failed");
    assert!(t0.elapsed() < std::time::Duration::from_secs(30));
}

/// `data generate --format timescaledb`: the same logical dataset as influx (one id, one row
/// count), its rows counted as the layout the manifest records, recounted by `data verify`;
/// a row line removed from the file is an integrity failure (exit 4).
#[test]
fn timescaledb_is_a_format_of_the_same_dataset_and_verifies() {
    let mut env = TestEnv::new();
    let (_knobs, _mirror) = prepare_env(&mut env);
    let gen = |format: &str| -> Value {
        let r = env.run_json(&["data", "generate", "--format", format, "--profile", "smoke"]);
        r.ok();
        r.json()["data"].clone()
    };
    let influx = gen("influx");
    let ts = gen("timescaledb");
    assert_eq!(ts["format"], "timescaledb");
    assert_eq!(ts["reused"], false);
    assert_eq!(ts["dataset_id"], influx["dataset_id"]);
    assert_eq!(ts["rows"], influx["rows"]);
    assert_eq!(ts["metrics"], influx["metrics"]);
    assert_ne!(ts["sha256"], influx["sha256"]);
    let id = ts["dataset_id"].as_str().unwrap().to_string();
    let rows = influx["rows"].as_u64().unwrap();
    assert_eq!(rows, 86_400, "the smoke profile: 10 hosts, one day, 10 s");

    // The file as the real generator lays it out: 3 header lines, then a tags line and a
    // values line per row; counted here without the product's counter.
    let ts_path = PathBuf::from(ts["data_path"].as_str().unwrap());
    assert!(ts_path.starts_with(
        env.root
            .join("datasets")
            .join(&id)
            .join("formats")
            .join("timescaledb")
    ));
    let text = fs::read_to_string(&ts_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("tags,"), "{}", lines[0]);
    assert!(lines[1].starts_with("cpu,usage_user"), "{}", lines[1]);
    assert_eq!(lines[2], "");
    let value_lines = lines
        .iter()
        .filter(|l| {
            l.strip_prefix("cpu,")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count() as u64;
    assert_eq!(value_lines, rows);
    assert_eq!(lines.len() as u64, 3 + 2 * rows);

    // Both manifests record the rows; the timescaledb one records how they were counted.
    let manifest = |format: &str| -> Value {
        let p = env
            .root
            .join("datasets")
            .join(&id)
            .join("formats")
            .join(format)
            .join("manifest.json");
        serde_json::from_slice(&fs::read(p).unwrap()).unwrap()
    };
    let (mi, mt) = (manifest("influx"), manifest("timescaledb"));
    assert_eq!(mi["rows"], json!(rows));
    assert_eq!(mt["rows"], json!(rows));
    assert_eq!(
        mt["layout"],
        json!({"header_lines": 3, "lines_per_row": 2, "row_line": "<measurement>,<digit>"})
    );
    assert_eq!(mi["layout"]["lines_per_row"], 1);
    assert!(mt["command"]
        .as_array()
        .unwrap()
        .contains(&json!("--format=timescaledb")));

    // Verify recounts both formats.
    let r = env.run_json(&["data", "verify", "--dataset-id", &id]);
    r.ok();
    let variants = r.json()["data"]["variants"].as_array().unwrap().clone();
    assert_eq!(variants.len(), 2);
    for v in &variants {
        assert_eq!(v["rows"], json!(rows), "{}", v["format"]);
        assert_eq!(v["verified"], true);
    }
    env.run(&[
        "data",
        "verify",
        "--dataset-id",
        &id,
        "--format",
        "timescaledb",
    ])
    .ok()
    .says(&format!("Verified {id} (timescaledb): {rows} rows"));

    // Stored compressed, the rows are recounted through the decompressor.
    let r = env.run_json(&[
        "data",
        "generate",
        "--format",
        "timescaledb",
        "--dataset-id",
        &id,
        "--compression",
        "gzip",
        "--regenerate",
    ]);
    r.ok();
    assert_eq!(r.json()["data"]["rows"], json!(rows));
    assert_eq!(r.json()["data"]["uncompressed_sha256"], ts["sha256"]);
    env.run(&[
        "data",
        "verify",
        "--dataset-id",
        &id,
        "--format",
        "timescaledb",
    ])
    .ok();
    env.run(&[
        "data",
        "generate",
        "--format",
        "timescaledb",
        "--dataset-id",
        &id,
        "--compression",
        "none",
        "--regenerate",
    ])
    .ok();

    // The recount uses the recorded layout: a manifest claiming one row more is caught.
    let mp = ts_path.parent().unwrap().join("manifest.json");
    let good = fs::read(&mp).unwrap();
    let mut bad: Value = serde_json::from_slice(&good).unwrap();
    bad["rows"] = json!(rows + 1);
    fs::write(&mp, serde_json::to_vec(&bad).unwrap()).unwrap();
    env.run(&[
        "data",
        "verify",
        "--dataset-id",
        &id,
        "--format",
        "timescaledb",
    ])
    .code(4)
    .says(&format!(
        "holds {rows} rows, its manifest records {}",
        rows + 1
    ));
    // Nor can an edited layout steer the recount (every line a row would count 2 x rows + 3).
    let mut bad: Value = serde_json::from_slice(&good).unwrap();
    bad["rows"] = json!(3 + 2 * rows);
    bad["layout"] = json!({"header_lines": 0, "lines_per_row": 1, "row_line": "every line"});
    fs::write(&mp, serde_json::to_vec(&bad).unwrap()).unwrap();
    env.run(&[
        "data",
        "verify",
        "--dataset-id",
        &id,
        "--format",
        "timescaledb",
    ])
    .code(4)
    .says("but the format is laid out as");
    // A manifest from before layouts were recorded is counted with the layout the product
    // that loads the format declares (an influx layout would find 3 + 2 x rows rows).
    let mut old: Value = serde_json::from_slice(&good).unwrap();
    old.as_object_mut().unwrap().remove("layout");
    fs::write(&mp, serde_json::to_vec(&old).unwrap()).unwrap();
    env.run(&[
        "data",
        "verify",
        "--dataset-id",
        &id,
        "--format",
        "timescaledb",
    ])
    .ok()
    .says(&format!("Verified {id} (timescaledb): {rows} rows"));
    fs::write(&mp, &good).unwrap();
    env.run(&[
        "data",
        "verify",
        "--dataset-id",
        &id,
        "--format",
        "timescaledb",
    ])
    .ok();

    // One row line removed: verify fails with exit 4, the influx variant is untouched.
    let cut = lines.iter().rposition(|l| l.starts_with("cpu,1")).unwrap();
    let mut kept: Vec<&str> = lines.clone();
    kept.remove(cut);
    fs::write(&ts_path, kept.join("\n") + "\n").unwrap();
    env.run(&[
        "data",
        "verify",
        "--dataset-id",
        &id,
        "--format",
        "timescaledb",
    ])
    .code(4)
    .says("mismatch");
    env.run(&["data", "verify", "--dataset-id", &id, "--format", "influx"])
        .ok();

    // A format no product loads cannot be generated; the message names the ones that can.
    env.run(&["data", "generate", "--format", "csv", "--dataset-id", &id])
        .code(2)
        .says("cannot be generated")
        .says("influx, timescaledb")
        .says("use --format influx or --format timescaledb");
}

/// A reporter that keeps what it is told.
#[derive(Default)]
struct Notes(std::sync::Mutex<Vec<String>>);

impl tsbsctl::output::Reporter for Notes {
    fn info(&self, msg: &str) {
        self.0.lock().unwrap().push(msg.to_string());
    }
    fn warn(&self, msg: &str) {
        self.0.lock().unwrap().push(msg.to_string());
    }
    fn progress(
        &self,
        _: &str,
        _: Option<u64>,
        _: tsbsctl::output::Unit,
    ) -> Box<dyn tsbsctl::output::Progress> {
        Box::new(tsbsctl::output::NoProgress)
    }
}

// ---------------------------------------------------------------------------------------------
// Adopting what the reference tool left in `.benchmarks/` (issue 22)

/// Writes a dataset as the reference tool leaves it (benchmark.md §1.4): `dataset.json` with
/// `schema_version`, `dataset_id`, `created_at` and the spec; `formats/<format>/` with `data`,
/// its manifest (bytes, sha256, the generator's git revision, no row count) and `generate.log`.
fn write_reference_dataset(
    root: &Path,
    id: &str,
    spec: &Value,
    format: &str,
    data: &[u8],
    commit: &str,
    status: &str,
) -> PathBuf {
    let dir = root.join(id);
    let fdir = dir.join("formats").join(format);
    fs::create_dir_all(&fdir).unwrap();
    fs::write(
        dir.join("dataset.json"),
        serde_json::to_vec_pretty(&json!({
            "schema_version": 1, "dataset_id": id, "created_at": "2026-01-02T03:04:05Z", "spec": spec,
        }))
        .unwrap(),
    )
    .unwrap();
    fs::write(fdir.join("data"), data).unwrap();
    fs::write(
        fdir.join("manifest.json"),
        serde_json::to_vec_pretty(&json!({
            "schema_version": 1, "format": format, "status": status, "artifact": "data",
            "bytes": data.len(), "sha256": sha256_of(data),
            "started_at": "2026-01-02T03:04:06Z", "finished_at": "2026-01-02T03:04:09Z",
            "log": "generate.log",
            "generator": {"binary": "bin/tsbs_generate_data", "binary_sha256": "ab".repeat(32),
                          "git_revision": commit, "go_toolchain": {"version": "go1.21.13"}},
        }))
        .unwrap(),
    )
    .unwrap();
    fs::write(
        fdir.join("generate.log"),
        format!("$ bin/tsbs_generate_data --use-case cpu-only --format {format}\n"),
    )
    .unwrap();
    dir
}

/// Content and metadata of every file under `dir`: adoption must leave the source alone.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (String, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    all_files(dir)
        .into_iter()
        .map(|p| {
            let m = fs::metadata(&p).unwrap();
            let h = sha256_of(&fs::read(&p).unwrap());
            (p, (h, m.mtime(), m.mtime_nsec()))
        })
        .collect()
}

#[test]
fn adopt_takes_in_reference_datasets_read_only_and_they_are_reused_not_regenerated() {
    use std::os::unix::fs::MetadataExt;
    let mut env = TestEnv::new();
    let (knobs, mirror) = prepare_env(&mut env);
    for v in ["1.2.0", "1.2.0-beta.1"] {
        use testbed::releases::greptime::{publish, GreptimeRelease};
        publish(&mirror, &GreptimeRelease::new(v));
    }
    let calls = env.path().join("data-calls.log");
    set_knob_section(
        &knobs,
        "tsbs_generate_data",
        json!({"invocations_log": calls}),
    );
    let tsbs = tsbsctl::environment::TsbsEnv::load(&root(&env), None).unwrap();

    // Real data for the spec, made by the stand-in generator in a scratch root.
    let scratch = env.path().join("scratch");
    let mut args = generate_small("x").to_vec();
    args.truncate(10); // without --dataset-id: the automatic id
    args.extend(["--dataset-root", scratch.to_str().unwrap()]);
    let r = env.run_json(&args);
    r.ok();
    let made = r.json()["data"].clone();
    let auto_id = made["dataset_id"].as_str().unwrap().to_string();
    let data = fs::read(made["data_path"].as_str().unwrap()).unwrap();
    let spec = made["spec"].clone();
    assert_eq!(fs::read_to_string(&calls).unwrap().lines().count(), 1);

    // The reference's .benchmarks: one good dataset (automatic id), one whose data was damaged
    // after its manifest was written, one failed variant, one format no product loads, and
    // one whose id does not derive from its spec.
    let bench = env.path().join("ref").join(".benchmarks");
    let refs = bench.join("datasets");
    let good = write_reference_dataset(
        &refs,
        &auto_id,
        &spec,
        "influx",
        &data,
        &tsbs.commit,
        "completed",
    );
    let damaged = write_reference_dataset(
        &refs,
        "damaged",
        &spec,
        "influx",
        &data,
        &tsbs.commit,
        "completed",
    );
    let mut bad = data.clone();
    bad[10] ^= 1;
    fs::write(damaged.join("formats/influx/data"), &bad).unwrap();
    write_reference_dataset(
        &refs,
        "failed",
        &spec,
        "influx",
        b"",
        &tsbs.commit,
        "failed",
    );
    write_reference_dataset(
        &refs,
        "other-format",
        &spec,
        "questdb",
        &data,
        &tsbs.commit,
        "completed",
    );
    write_reference_dataset(
        &refs,
        "cpu-only-s2-000000000000",
        &spec,
        "influx",
        &data,
        &tsbs.commit,
        "completed",
    );
    // Its installations: GreptimeDB 1.2.0 from the very archive tsbsctl would download, the
    // beta from another archive, and one for another platform.
    let scratch_root = env.path().join("scratch-root");
    env.run(&[
        "--root",
        scratch_root.to_str().unwrap(),
        "greptimedb",
        "install",
        "--version",
        "1.2.0",
    ])
    .ok();
    let served: Value = serde_json::from_slice(
        &fs::read(scratch_root.join("greptimedb/installations/1.2.0/linux-amd64/manifest.json"))
            .unwrap(),
    )
    .unwrap();
    let ref_install = |version: &str, tag: &str, archive: &str| {
        let d = bench
            .join("greptimedb/installations")
            .join(version)
            .join(tag);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("greptime"), b"not run by tsbsctl").unwrap();
        fs::write(
            d.join("manifest.json"),
            serde_json::to_vec(&json!({
                "schema_version": 1, "kind": "greptimedb-installation", "version": version,
                "version_source": "explicit", "platform": tag, "archive_sha256": archive,
                "binary": "greptime", "binary_sha256": "cd".repeat(32), "distribution_sha256": "ef".repeat(32),
            }))
            .unwrap(),
        )
        .unwrap();
    };
    ref_install(
        "1.2.0",
        "linux_amd64",
        served["archive_sha256"].as_str().unwrap(),
    );
    ref_install("1.2.0-beta.1", "linux_amd64", &"0".repeat(64));
    ref_install(
        "1.2.0",
        "darwin_arm64",
        served["archive_sha256"].as_str().unwrap(),
    );
    let before = snapshot(&bench);
    let datasets = env.root.join("datasets");

    // Bad input: exit 2 and nothing written.
    env.run(&[
        "adopt",
        "--from",
        env.path().join("nowhere").to_str().unwrap(),
    ])
    .code(2)
    .says(".benchmarks");
    assert!(all_files(&datasets).is_empty());

    // The damaged dataset makes it exit 4; the good one is adopted all the same.
    let r = env.run(&["adopt", "--from", bench.to_str().unwrap()]);
    r.code(4)
        .says("damaged")
        .says(&format!("Adopted {auto_id} (influx): 120 rows"))
        .says("status failed")
        .says("format questdb is not one a tsbsctl product loads")
        .says("does not derive from its spec");
    assert_eq!(
        snapshot(&bench),
        before,
        "adoption changed the reference's files"
    );
    // The reference's installations: 1.2.0 installed from the release source (the archive the
    // reference recorded), the beta refused as an integrity error and NOT left installed, the
    // other platform's skipped.
    let served_sha = served["archive_sha256"].as_str().unwrap();
    let installs = env.root.join("greptimedb/installations");
    r.says(&format!(
        "Installed greptimedb 1.2.0: the archive the reference installed (SHA-256 {served_sha})"
    ))
    .says("darwin_arm64 (greptimedb 1.2.0): it is for another platform")
    .says(&format!(
        "1.2.0-beta.1/linux_amd64 (the reference installed an archive with SHA-256 {}",
        "0".repeat(64)
    ))
    .says("3 items under");
    let ours_120: Value = serde_json::from_slice(
        &fs::read(installs.join("1.2.0/linux-amd64/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(ours_120["archive_sha256"], served_sha);
    assert_eq!(ours_120["version_source"], "adopted-from-reference");
    assert!(
        !installs.join("1.2.0-beta.1").exists(),
        "an archive other than the reference's was left installed: {:?}",
        all_files(&installs)
    );
    // Adopting again: 1.2.0 is already there, the beta is refused again and still not
    // installed, and --datasets-only leaves the installations alone (exit 4 is the damaged
    // dataset's then).
    let r = env.run(&["adopt", "--from", bench.to_str().unwrap()]);
    r.code(4)
        .says("Already installed greptimedb 1.2.0: the archive the reference installed")
        .says("1.2.0-beta.1/linux_amd64 (the reference installed an archive");
    assert!(!installs.join("1.2.0-beta.1").exists());
    let r = env.run(&[
        "adopt",
        "--from",
        bench.to_str().unwrap(),
        "--datasets-only",
    ]);
    r.code(4).says("2 items under").says("damaged");
    assert!(!r.stderr.contains("beta"), "{}", r.describe());
    assert!(!r.stdout.contains("beta"), "{}", r.describe());
    // tsbsctl's own beta, installed from its source: kept, and the difference said.
    env.run(&["greptimedb", "install", "--version", "1.2.0-beta.1"])
        .ok();
    env.run(&["adopt", "--from", bench.to_str().unwrap()])
        .code(4)
        .says("tsbsctl already has 1.2.0-beta.1 installed from another one");
    assert!(installs
        .join("1.2.0-beta.1/linux-amd64/manifest.json")
        .is_file());
    assert!(!datasets
        .join("damaged")
        .join("formats/influx/data")
        .exists());
    let ours = datasets.join(&auto_id).join("formats/influx");
    assert_eq!(
        fs::metadata(ours.join("data")).unwrap().ino(),
        fs::metadata(good.join("formats/influx/data"))
            .unwrap()
            .ino(),
        "on one filesystem the data is hard-linked, not copied"
    );
    let m: Value = serde_json::from_slice(&fs::read(ours.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["rows"], 120);
    assert_eq!(m["generator"]["tsbs_commit"], tsbs.commit.as_str());
    assert_eq!(m["adopted_from"]["method"], "link");
    assert_eq!(
        m["adopted_from"]["path"],
        good.join("formats/influx").to_str().unwrap()
    );

    // tsbsctl verifies it and reuses it: the generator does not run again.
    env.run(&["data", "verify", "--dataset-id", &auto_id]).ok();
    let mut again = generate_small("x").to_vec();
    again.truncate(10);
    env.run(&again)
        .ok()
        .says(&format!("Dataset reused: {auto_id}"));
    assert_eq!(fs::read_to_string(&calls).unwrap().lines().count(), 1);

    // A second adoption finds it present; only the good one, into another root, by copy.
    env.run(&["adopt", "--from", good.to_str().unwrap()])
        .ok()
        .says(&format!("Already present {auto_id} (influx)"));
    let other = env.path().join("copied");
    env.run(&[
        "adopt",
        "--from",
        good.to_str().unwrap(),
        "--copy",
        "--dataset-root",
        other.to_str().unwrap(),
    ])
    .ok()
    .says("copied");
    let copied = other.join(&auto_id).join("formats/influx/data");
    assert_eq!(fs::read(&copied).unwrap(), data);
    assert_ne!(
        fs::metadata(&copied).unwrap().ino(),
        fs::metadata(good.join("formats/influx/data"))
            .unwrap()
            .ino()
    );
    assert_eq!(snapshot(&bench), before);

    // What a killed adoption leaves is swept by the next command that looks.
    let leftover = ours.join(".data.adopt-999999-1");
    fs::write(&leftover, b"partial").unwrap();
    env.run(&["data", "list"]).ok();
    assert!(!leftover.exists());
}
