use super::*;

/// Three hosts, one row every 30 s for an hour from 2023-06-11T00:00:00Z; integer metrics.
struct T {
    rows: Vec<(i64, String, String, i64, i64)>,
    time: &'static str,
}

const T0: i64 = 1_686_441_600_000_000_000;

fn table(time: &'static str) -> T {
    let mut rows = vec![];
    for h in 0..3i64 {
        for m in 0..120i64 {
            rows.push((
                T0 + m * 30_000_000_000,
                format!("host_{h}"),
                format!("region_{}", (m / 60 + h) % 2),
                (m * 7 + h * 13) % 100,
                m % 5,
            ));
        }
    }
    T { rows, time }
}

impl Source for T {
    type Row = (i64, String, String, i64, i64);
    fn table(&self) -> &str {
        "cpu"
    }
    fn time_column(&self) -> &str {
        self.time
    }
    fn columns(&self) -> Vec<(String, ColType)> {
        vec![
            ("hostname".into(), ColType::Str),
            ("region".into(), ColType::Str),
            (self.time.into(), ColType::Time),
            ("usage_user".into(), ColType::I64),
            ("usage_system".into(), ColType::I64),
        ]
    }
    fn rows(&self) -> Vec<&Self::Row> {
        self.rows.iter().collect()
    }
    fn time(&self, r: &Self::Row) -> i64 {
        r.0
    }
    fn value(&self, r: &Self::Row, c: &str) -> Val {
        match c {
            "hostname" => Val::Str(r.1.clone()),
            "region" => Val::Str(r.2.clone()),
            "usage_user" => Val::I(r.3),
            "usage_system" => Val::I(r.4),
            _ => Val::Null,
        }
    }
}

fn run_on(t: &T, sql: &str) -> Output {
    run(t, &parse_select(sql).unwrap().unwrap()).unwrap()
}

/// The expected value by brute force over the table's rows.
fn brute<F: Fn(&(i64, String, String, i64, i64)) -> bool>(t: &T, f: F) -> Vec<i64> {
    t.rows.iter().filter(|r| f(r)).map(|r| r.3).collect()
}

#[test]
fn greptime_single_groupby_is_computed_and_unordered() {
    let t = table("greptime_timestamp");
    let q = "SELECT max(usage_user), date_trunc('minute', greptime_timestamp) from cpu where (hostname = 'host_1') and greptime_timestamp >= '2023-06-11T00:10:00Z' and greptime_timestamp < '2023-06-11T00:20:00Z' group by date_trunc('minute', greptime_timestamp)";
    let o = run_on(&t, q);
    assert_eq!(o.columns[0].name, "max(cpu.usage_user)");
    assert_eq!(o.columns[0].ty, ColType::I64);
    assert_eq!(
        o.columns[1].name,
        "date_trunc(Utf8(\"minute\"),cpu.greptime_timestamp)"
    );
    assert_eq!(o.columns[1].ty, ColType::Time);
    assert_eq!(o.rows.len(), 10);
    for row in &o.rows {
        let Val::Time(b) = row[1] else {
            panic!("{row:?}")
        };
        let want = brute(&t, |r| {
            r.1 == "host_1" && r.0 >= b && r.0 < b + 60_000_000_000
        });
        assert_eq!(row[0], Val::I(*want.iter().max().unwrap()), "{row:?}");
    }
    // No ORDER BY: not handed over sorted (a hash aggregate's order).
    let times: Vec<i64> = o
        .rows
        .iter()
        .map(|r| if let Val::Time(t) = r[1] { t } else { 0 })
        .collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_ne!(times, sorted);
}

#[test]
fn greptime_double_groupby_groups_by_a_column_it_does_not_return() {
    let t = table("greptime_timestamp");
    let q = "SELECT avg(usage_user), avg(usage_system), date_trunc('hour', greptime_timestamp) from cpu where greptime_timestamp >= '2023-06-11T00:00:00Z' and greptime_timestamp < '2023-06-11T01:00:00Z' group by date_trunc('hour', greptime_timestamp),hostname";
    let o = run_on(&t, q);
    assert_eq!(o.columns.len(), 3);
    assert_eq!(o.columns[0].ty, ColType::F64);
    // One row per host and hour, without the host.
    assert_eq!(o.rows.len(), 3);
    let mut got: Vec<f64> = o.rows.iter().map(|r| r[0].num().unwrap()).collect();
    got.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut want: Vec<f64> = (0..3)
        .map(|h| {
            let v = brute(&t, |r| r.1 == format!("host_{h}"));
            v.iter().sum::<i64>() as f64 / v.len() as f64
        })
        .collect();
    want.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(got, want);
}

#[test]
fn lastpoint_both_dialects_return_the_tags_of_the_last_row() {
    let t = table("greptime_timestamp");
    let q = "select last_value(hostname order by greptime_timestamp), last_value(region order by greptime_timestamp), last_value(usage_user order by greptime_timestamp) from cpu group by hostname";
    let o = run_on(&t, q);
    assert_eq!(
        o.columns[1].name,
        "last_value(cpu.region) ORDER BY [cpu.greptime_timestamp ASC NULLS LAST]"
    );
    assert_eq!(o.rows.len(), 3);
    for row in &o.rows {
        let Val::Str(h) = &row[0] else { panic!() };
        let last = t
            .rows
            .iter()
            .filter(|r| &r.1 == h)
            .max_by_key(|r| r.0)
            .unwrap();
        assert_eq!(row[1], Val::Str(last.2.clone()));
        assert_eq!(row[2], Val::I(last.3));
    }
    let t = table("time");
    let q = "SELECT hostname,\n       last_value(time ORDER BY time) AS time,\n       last_value(region ORDER BY time) AS region,\n       last_value(usage_user ORDER BY time) AS usage_user\nFROM cpu\nGROUP BY hostname\nORDER BY hostname ASC";
    let o = run_on(&t, q);
    let names: Vec<&str> = o.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["hostname", "time", "region", "usage_user"]);
    assert_eq!(o.rows[0][0], Val::Str("host_0".into()));
    assert_eq!(o.rows[2][1], Val::Time(T0 + 119 * 30_000_000_000));
}

#[test]
fn influx3_positional_group_and_order_limit() {
    let t = table("time");
    let q = "SELECT date_bin(INTERVAL '1 minute', time) AS minute,\n       max(usage_user) AS max_usage_user\nFROM cpu\nWHERE time < '2023-06-11T00:30:00Z'\nGROUP BY 1\nORDER BY 1 DESC\nLIMIT 5";
    let o = run_on(&t, q);
    assert_eq!(o.rows.len(), 5);
    assert_eq!(o.rows[0][0], Val::Time(T0 + 29 * 60_000_000_000));
    assert_eq!(o.rows[4][0], Val::Time(T0 + 25 * 60_000_000_000));
    let b = T0 + 29 * 60_000_000_000;
    let want = brute(&t, |r| r.0 >= b && r.0 < b + 60_000_000_000);
    assert_eq!(o.rows[0][1], Val::I(*want.iter().max().unwrap()));
    // The greptime spelling: ORDER BY the bucket expression.
    let t = table("greptime_timestamp");
    let o = run_on(&t, "SELECT max(usage_user), date_trunc('minute', greptime_timestamp) from cpu WHERE greptime_timestamp < '2023-06-11T00:30:00Z' group by date_trunc('minute', greptime_timestamp) order by date_trunc('minute', greptime_timestamp) desc limit 5");
    assert_eq!(o.rows[0][1], Val::Time(T0 + 29 * 60_000_000_000));
}

#[test]
fn high_cpu_rows_and_errors() {
    let t = table("time");
    let o = run_on(&t, "SELECT *\nFROM cpu\nWHERE usage_user > 90.0 AND time >= '2023-06-11T00:00:00Z' AND time < '2023-06-11T01:00:00Z' AND hostname IN ('host_2')\nORDER BY time ASC, hostname ASC");
    assert_eq!(o.columns.len(), 5);
    let want = brute(&t, |r| r.3 > 90 && r.1 == "host_2");
    assert_eq!(o.rows.len(), want.len());
    assert!(!want.is_empty());
    let e = run(&t, &parse_select("SELECT nope FROM cpu").unwrap().unwrap()).unwrap_err();
    assert_eq!(e, EvalError::NoField("nope".into()));
    let e = run(
        &t,
        &parse_select("SELECT max(usage_user) FROM cpu WHERE usage_nope > 90.0")
            .unwrap()
            .unwrap(),
    )
    .unwrap_err();
    assert_eq!(e, EvalError::NoField("usage_nope".into()));
    assert!(parse_select("SELECT 1").unwrap().is_none());
    let o = run_on(&t, "SELECT count(*) FROM cpu WHERE hostname = 'host_1'");
    assert_eq!(o.rows, vec![vec![Val::I(120)]]);
}
