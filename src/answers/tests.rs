use super::*;
use serde_json::json;

const PG: &str = include_str!(
    "../../tests/fixtures/tsbs-real-postgresql/run/print-responses-single-groupby-1-1-1-max1.stdout.txt"
);
const GT: &str = include_str!("../../tests/fixtures/answers/influx-greptimedb.stdout.txt");
const I3: &str = include_str!("../../tests/fixtures/answers/influx3.stdout.txt");
const SG: &str = "single-groupby-1-1-1";

#[test]
fn the_real_postgresql_runner_output_parses_to_its_rows() {
    let a = parse(PrintFormat::QueryResults, PG);
    assert_eq!(a.len(), 1, "one query, then the final report");
    assert_eq!(a[0].id, 0);
    assert_eq!(a[0].columns, ["max_usage_user", "minute"]);
    assert_eq!(a[0].rows.len(), 61);
    assert_eq!(a[0].rows[0], vec![json!(37), json!("2023-06-11T02:17:00Z")]);
    let r = normalise(SG, &a[0]);
    assert_eq!(r.columns, ["time", "max_usage_user"]);
    assert_eq!(
        r.head[0],
        vec![json!("2023-06-11T02:17:00.000Z"), json!(37.0)]
    );
    assert!(r.missing.is_empty() && r.error.is_none());
}

/// The same answer printed by the three runners (two constructed after the fork's source)
/// has one digest: rows sorted, names mapped, times and numbers normalised.
#[test]
fn three_runners_formats_of_one_answer_have_one_digest() {
    let pg = normalise(SG, &parse(PrintFormat::QueryResults, PG)[0]);
    let gt = parse(PrintFormat::JsonEnvelope, GT);
    let i3 = parse(PrintFormat::SqlThenBody, I3);
    assert_eq!(gt.len(), 2);
    assert_eq!(i3.len(), 2);
    assert_eq!((gt[1].id, i3[1].id), (1, 1));
    assert_eq!(
        gt[0].columns,
        [
            "max(cpu.usage_user)",
            "date_trunc(Utf8(\"minute\"),cpu.greptime_timestamp)"
        ]
    );
    // GreptimeDB's rows come unordered (its query has no ORDER BY).
    assert_ne!(gt[0].rows[0][0], json!(37));
    let g = normalise(SG, &gt[0]);
    let i = normalise(SG, &i3[0]);
    assert_eq!(g.rows, 61);
    assert_eq!(g.digest, pg.digest, "{g:#?}\n{pg:#?}");
    assert_eq!(i.digest, pg.digest, "{i:#?}\n{pg:#?}");
    // Empty answers: the same whatever the runner says of their columns.
    let (ge, ie) = (normalise(SG, &gt[1]), normalise(SG, &i3[1]));
    assert_eq!(ge.rows, 0);
    assert_eq!(ge.digest, ie.digest);
    assert_eq!(ge.columns, ["time", "max_usage_user"]);
}

#[test]
fn floats_are_rounded_to_the_stated_significant_digits() {
    assert_eq!(SIGNIFICANT_DIGITS, 9);
    assert_eq!(round(0.1 + 0.2), 0.3);
    assert_eq!(round(48.123456789123), 48.1234568);
    assert_eq!(round(-0.0), 0.0);
    assert!(round(-0.0).is_sign_positive());
    assert_eq!(round(1234567890123.0), 1234567890000.0);
    // A difference in the ninth digit is kept.
    assert_ne!(round(48.1234561), round(48.1234562));
    let a = |v: f64| RawAnswer {
        id: 0,
        columns: vec!["hour".into(), "avg(usage_user)".into()],
        rows: vec![vec![json!("2023-06-11T00:00:00Z"), json!(v)]],
        error: None,
    };
    let d = |v| normalise("double-groupby-1", &a(v)).digest;
    assert_eq!(d(50.000000000001), d(49.999999999999));
    assert_ne!(d(50.0), d(50.001));
}

#[test]
fn row_order_does_not_matter_but_rows_do() {
    let a = |rows: Vec<Vec<Value>>| RawAnswer {
        id: 3,
        columns: vec!["minute".into(), "max_usage_user".into()],
        rows,
        error: None,
    };
    let r1 = vec![json!("2023-06-11T00:01:00Z"), json!(1.5)];
    let r2 = vec![json!("2023-06-11T00:00:00Z"), json!(2.5)];
    let x = normalise(SG, &a(vec![r1.clone(), r2.clone()]));
    let y = normalise(SG, &a(vec![r2.clone(), r1.clone()]));
    assert_eq!(x.digest, y.digest);
    assert_eq!(x.head[0][0], json!("2023-06-11T00:00:00.000Z"));
    let z = normalise(SG, &a(vec![r1.clone(), r1]));
    assert_ne!(x.digest, z.digest);
}

#[test]
fn column_names_of_the_dialects_map_to_one_name() {
    for (t, raw, want) in [
        (SG, "max(cpu.usage_user)", "max_usage_user"),
        (SG, "max_usage_user", "max_usage_user"),
        (
            SG,
            "date_trunc(Utf8(\"minute\"),cpu.greptime_timestamp)",
            "time",
        ),
        (SG, "minute", "time"),
        ("double-groupby-1", "mean_usage_user", "avg_usage_user"),
        ("double-groupby-1", "avg(cpu.usage_user)", "avg_usage_user"),
        ("double-groupby-1", "hour", "time"),
        (
            "lastpoint",
            "last_value(cpu.region ORDER BY cpu.greptime_timestamp ASC NULLS LAST)",
            "region",
        ),
        // GreptimeDB (DataFusion) names an aggregate with ORDER BY so.
        (
            "lastpoint",
            "last_value(cpu.region) ORDER BY [cpu.greptime_timestamp ASC NULLS LAST]",
            "region",
        ),
        (
            "lastpoint",
            "last_value(cpu.usage_guest_nice) ORDER BY [cpu.greptime_timestamp ASC NULLS LAST]",
            "usage_guest_nice",
        ),
        ("lastpoint", "t.hostname", "hostname"),
        ("high-cpu-1", "greptime_timestamp", "time"),
        ("groupby-orderby-limit", "max", "max_usage_user"),
        ("cpu-max-all-1", "MAX(usage_idle)", "max_usage_idle"),
    ] {
        assert_eq!(map_column(t, raw), want, "{t}: {raw}");
    }
    assert_eq!(
        compared_columns("double-groupby-5").unwrap(),
        [
            "time",
            "avg_usage_user",
            "avg_usage_system",
            "avg_usage_idle",
            "avg_usage_nice",
            "avg_usage_iowait"
        ]
    );
    assert_eq!(compared_columns("lastpoint").unwrap().len(), 20);
    assert_eq!(compared_columns("high-cpu-all").unwrap().len(), 11);
    assert!(compared_columns("no-such-type").is_none());
    // A column a type compares that the answer lacks is named, and changes the digest.
    let a = RawAnswer {
        id: 0,
        columns: vec!["minute".into()],
        rows: vec![vec![json!("2023-06-11T00:00:00Z")]],
        error: None,
    };
    let r = normalise(SG, &a);
    assert_eq!(r.missing, ["max_usage_user"]);
}

#[test]
fn times_of_every_dialect_meet() {
    let want = "2023-06-11T02:17:00.000Z";
    for v in [
        json!("2023-06-11T02:17:00Z"),
        json!("2023-06-11T02:17:00"),
        json!("2023-06-11 02:17:00"),
        json!("2023-06-11T02:17:00.000000000"),
        json!("2023-06-11T04:17:00+02:00"),
        json!(1686449820),
        json!(1686449820000_i64),
        json!(1686449820000000_i64),
        json!(1686449820000000000_i64),
    ] {
        assert_eq!(time_value(&v).as_deref(), Some(want), "{v}");
    }
    assert_eq!(time_value(&json!("host_1")), None);
}

#[test]
fn error_bodies_and_influxql_series_are_read() {
    let body = |resp: Value| {
        let doc = json!({"influxql": "SELECT 1", "response": resp});
        let text = serde_json::to_string_pretty(&doc).unwrap();
        let mut lines = text.lines();
        let mut out = format!("{}\n", lines.next().unwrap());
        for l in lines {
            out.push_str(&format!("ID 4: {l}\n"));
        }
        out + "\n"
    };
    let a = parse(
        PrintFormat::JsonEnvelope,
        &body(json!({"code": 3000, "error": "Failed to plan SQL"})),
    );
    assert_eq!(a[0].id, 4);
    assert!(a[0]
        .error
        .as_deref()
        .unwrap()
        .contains("Failed to plan SQL"));
    let a = parse(
        PrintFormat::JsonEnvelope,
        &body(json!({"results": [{"statement_id": 0, "series": [
            {"name": "cpu", "tags": {"hostname": "host_1"}, "columns": ["time", "max_usage_user"], "values": [["2023-06-11T00:00:00Z", 3]]},
            {"name": "cpu", "tags": {"hostname": "host_2"}, "columns": ["time", "max_usage_user"], "values": [["2023-06-11T00:00:00Z", 4]]}
        ]}]})),
    );
    assert_eq!(a[0].columns, ["hostname", "time", "max_usage_user"]);
    assert_eq!(a[0].rows.len(), 2);
    assert_eq!(a[0].rows[1][0], json!("host_2"));
    // InfluxDB 3's raw body when it is not JSON.
    let a = parse(PrintFormat::SqlThenBody, "ID 2 SQL: SELECT 1\nnot json\n");
    assert_eq!(a[0].id, 2);
    assert!(a[0].error.is_some());
}

fn rec(t: &str, i: u64, rows: Vec<Vec<Value>>) -> AnswerRecord {
    normalise(
        t,
        &RawAnswer {
            id: i,
            columns: vec!["minute".into(), "max_usage_user".into()],
            rows,
            error: None,
        },
    )
}

#[test]
fn compare_says_same_or_names_the_first_difference() {
    let row = |m: u32, v: f64| vec![json!(format!("2023-06-11T00:{m:02}:00Z")), json!(v)];
    let run = |vals: [f64; 3]| {
        let mut m = BTreeMap::new();
        for (i, v) in vals.iter().enumerate() {
            m.insert(i as u64, rec(SG, i as u64, vec![row(0, 1.0), row(1, *v)]));
        }
        Some(BTreeMap::from([(SG.to_string(), m)]))
    };
    let same = compare(&[
        ("A".into(), run([1.0, 2.0, 3.0])),
        ("B".into(), run([1.0, 2.0, 3.0])),
    ]);
    assert_eq!(same[0].verdict, "same");
    assert_eq!(same[0].queries, 3);
    assert!(same[0].first_difference.is_none());
    let diff = compare(&[
        ("A".into(), run([1.0, 2.0, 3.0])),
        ("B".into(), run([1.0, 2.5, 7.0])),
    ]);
    assert_eq!(diff[0].verdict, "different");
    let d = diff[0].first_difference.as_deref().unwrap();
    assert_eq!(
        d,
        "query 1: sorted row 2, column max_usage_user: A (time=2023-06-11T00:01:00.000Z, max_usage_user=2.0) vs B (time=2023-06-11T00:01:00.000Z, max_usage_user=2.5)"
    );
    // A run that did not check answers leaves the type unchecked.
    let one = compare(&[("A".into(), run([1.0, 2.0, 3.0])), ("B".into(), None)]);
    assert_eq!(one[0].verdict, "unchecked");
    // Row counts differ.
    let mut short = run([1.0, 2.0, 3.0]).unwrap();
    short
        .get_mut(SG)
        .unwrap()
        .insert(0, rec(SG, 0, vec![row(0, 1.0)]));
    let c = compare(&[
        ("A".into(), run([1.0, 2.0, 3.0])),
        ("B".into(), Some(short)),
    ]);
    assert!(
        c[0].first_difference
            .as_deref()
            .unwrap()
            .starts_with("query 0: A returned 2 rows, B 1 rows"),
        "{c:?}"
    );
}

#[test]
fn records_round_trip_through_the_run_file() {
    let dir = tempfile::tempdir().unwrap();
    let r = rec(SG, 0, vec![vec![json!("2023-06-11T00:00:00Z"), json!(1)]]);
    append(dir.path(), std::slice::from_ref(&r)).unwrap();
    append(dir.path(), &[rec("lastpoint", 0, Vec::new())]).unwrap();
    let back = read(dir.path()).unwrap();
    assert_eq!(back[SG][&0], r);
    assert_eq!(back.len(), 2);
    assert!(read(&dir.path().join("nope")).is_none());
}
