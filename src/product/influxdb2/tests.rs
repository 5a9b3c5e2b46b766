use super::*;
use crate::platform::Platform;
use crate::product::{Distribution, Driver, ReleaseAsset, ToolOptions};

#[test]
fn release_paths_follow_influxdatas_moves() {
    let sources = crate::product::default_sources();
    let p = Platform::host().unwrap();
    let a = InfluxDb2::default()
        .release_asset(&sources, "2.7.7", &p)
        .unwrap();
    let file = format!("influxdb2-2.7.7_{}.tar.gz", p.underscored());
    assert_eq!(
        a.url,
        format!("https://dl.influxdata.com/influxdb/releases/{file}")
    );
    assert_eq!(
        a.checksum_url,
        "https://dl.influxdata.com/influxdb/releases/influxdb.2.7.7.sha256"
    );
    let b = InfluxDb2::default()
        .release_asset(&sources, "2.7.12", &p)
        .unwrap();
    assert!(
        b.url
            .starts_with("https://dl.influxdata.com/influxdb/releases/v2.7.12/influxdb2-2.7.12_"),
        "{}",
        b.url
    );
    assert!(b.checksum_url.ends_with("/v2.7.12/influxdb.2.7.12.sha256"));
}

#[test]
fn versions_it_takes() {
    let p = InfluxDb2::default();
    for ok in ["2.7.0", "2.7.7", "2.7.12", "2.9.1"] {
        assert_eq!(p.normalize_version(ok).unwrap(), ok);
    }
    for bad in [
        "2.8.0",
        "2.6.1",
        "3.0.0",
        "1.8.10",
        "v2.7.7",
        "2.7.7-rc.1",
        "2.7",
    ] {
        assert_eq!(
            p.normalize_version(bad).unwrap_err().exit_code(),
            2,
            "{bad}"
        );
    }
    assert_eq!(DEFAULT_VERSION, "2.7.7");
}

#[test]
fn the_pin_and_the_published_checksum_must_agree() {
    let p = InfluxDb2::default();
    let asset = ReleaseAsset {
        url: String::new(),
        checksum_url: String::new(),
        file_name: "influxdb2-2.7.7_linux_amd64.tar.gz".into(),
        top_dir: None,
    };
    let pin = pinned("2.7.7", "linux_amd64").unwrap();
    let good = format!(
        "{}  x.rpm\n{pin}  influxdb2-2.7.7_linux_amd64.tar.gz\n",
        "a".repeat(64)
    );
    assert_eq!(p.parse_checksum(&good, &asset).unwrap(), pin);
    let bad = format!("{}  influxdb2-2.7.7_linux_amd64.tar.gz\n", "b".repeat(64));
    assert_eq!(p.parse_checksum(&bad, &asset).unwrap_err().exit_code(), 4);
    // Unpinned: the published line decides.
    let other = ReleaseAsset {
        file_name: "influxdb2-2.7.12_linux_amd64.tar.gz".into(),
        ..asset
    };
    let text = format!("{}  influxdb2-2.7.12_linux_amd64.tar.gz\n", "c".repeat(64));
    assert_eq!(p.parse_checksum(&text, &other).unwrap(), "c".repeat(64));
}

#[test]
fn version_output_of_influxd_version() {
    let p = InfluxDb2::default();
    let out = "InfluxDB v2.7.12 (git: ec9dcde5d6) build_date: 2025-05-20T00:00:00Z\n";
    assert!(p.check_version_output("2.7.12", out).is_ok());
    assert_eq!(
        p.check_version_output("2.7.1", out)
            .unwrap_err()
            .exit_code(),
        4
    );
    assert_eq!(p.version_args(), ["version"]);
}

#[test]
fn the_footprint_is_tsm_wal_index_and_metadata() {
    let c = |s: &str| classify(Path::new(s));
    assert_eq!(
        c("engine/data/0a1b/autogen/1/000000001-000000001.tsm"),
        FilePart::Data
    );
    assert_eq!(c("engine/wal/0a1b/autogen/1/_00001.wal"), FilePart::Wal);
    assert_eq!(
        c("engine/data/0a1b/autogen/1/index/0/L0-00000001.tsl"),
        FilePart::Index
    );
    assert_eq!(c("engine/data/0a1b/_series/00/0000"), FilePart::Index);
    assert_eq!(c("engine/data/0a1b/autogen/1/fields.idx"), FilePart::Index);
    assert_eq!(c("influxd.bolt"), FilePart::Metadata);
    assert_eq!(c("influxd.sqlite"), FilePart::Metadata);
    assert_eq!(c("engine/replicationq/x"), FilePart::Other);
}

#[test]
fn log_lines_are_read_as_influxd_writes_them() {
    use crate::logscan::Severity;
    assert_eq!(
        classify_log("ts=2024-07-11T18:45:02.1Z lvl=error msg=\"write failed\" log_id=0"),
        Some(Severity::Error)
    );
    assert_eq!(classify_log("ts=x lvl=info msg=Listening"), None);
    assert_eq!(classify_log("panic: runtime error"), Some(Severity::Panic));
}

#[test]
fn the_tools_get_the_token_in_config_json_only() {
    let p = InfluxDb2::default();
    p.remember_token(Some(&Secret::new("s3cr3t-i2")));
    p.session.lock().unwrap().org = Some("0123456789abcdef".into());
    let o = ToolOptions::default();
    let mut target = p.load_target(&o);
    target.connection = p
        .load_connection(&["http://127.0.0.1:8086".into()])
        .unwrap();
    let c = crate::tsbs::load_command(&crate::tsbs::LoadSpec {
        binary: "/t/bin/tsbs_load_influx2".into(),
        target,
        urls: vec!["http://127.0.0.1:8086".into()],
        input: crate::tsbs::LoadInput::Stdin,
        database: "benchmark".into(),
        batch_size: 3000,
        workers: 8,
        results_file: "/r/load.json".into(),
        mode: crate::tsbs::DatabaseMode::Reuse,
        confirm_reset: None,
    })
    .unwrap();
    let line = c.redacted();
    assert!(line.contains("--gzip=true"), "{line}");
    assert!(!line.contains("--gzip=false"), "{line}");
    assert!(line.contains("--org-id=0123456789abcdef"), "{line}");
    assert!(line.contains("--do-create-db=false"), "{line}");
    assert!(!line.contains("s3cr3t"), "{line}");
    assert_eq!(c.secret_keys(), ["auth-token"]);
    let mut q = p.query_target(&o);
    q.connection = p
        .query_connection(&["http://127.0.0.1:8086".into()], Some(3), 1)
        .unwrap();
    let c = crate::tsbs::query_command(&crate::tsbs::QuerySpec {
        binary: "/t/bin/tsbs_run_queries_influx".into(),
        target: q,
        file: "/q/lastpoint.dat".into(),
        database: "benchmark".into(),
        urls: vec!["http://127.0.0.1:8086".into()],
        workers: 1,
        results_file: "/r/q.json".into(),
    })
    .unwrap();
    assert!(c.redacted().contains("--is-v2=true"));
    assert_eq!(c.secret_keys(), ["auth-token"]);
}

#[test]
fn without_a_token_nothing_runs() {
    let p = InfluxDb2::default();
    let e = p
        .load_connection(&["http://127.0.0.1:8086".into()])
        .unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.hint.unwrap().contains(TOKEN_ENV));
}
