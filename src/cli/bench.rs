//! `tsbsctl bench <product> PHASE [target] [workload flags]` (thin: the logic is in
//! [`crate::bench`]): the request of a parsed bench command, built from its record. The flags
//! themselves (common and each product's) are declared once, with their record, in
//! [`crate::bench::flags`]; each product's CLI module flattens its own group and checks it,
//! or adds the flags its product declares ([`crate::product::ext`]: GreptimeDB's).

use crate::bench::flags::{Flags, ProductFlags};
use crate::bench::{Phase, Request};
use crate::context::Ctx;
use crate::error::Result;
use crate::output::Outcome;

#[derive(Debug, clap::Subcommand)]
pub enum BenchCmd {
    /// Benchmark GreptimeDB: all | load | query | compact | analyze.
    Greptimedb(Box<super::greptimedb::BenchArgs>),
    /// Benchmark InfluxDB 3 (Core or Enterprise): all | load | query.
    Influxdb3(Box<super::influxdb3::BenchArgs>),
    /// Benchmark TimescaleDB or plain PostgreSQL: all | load | query.
    Timescaledb(Box<super::timescaledb::BenchArgs>),
    // Every registry product without a CLI module (generic.rs); last, like `Command::Product`.
    #[command(flatten)]
    Product(Box<super::generic::BenchProducts>),
}

/// Target and workload flags both products share: declared once, with their record, in
/// [`crate::bench::flags`].
pub use crate::bench::flags::CommonFlags as CommonArgs;

/// The request of a parsed bench command: its record ([`Flags::record`]) and the request
/// built from that record, as `runs rerun` builds it; the lock options are the command
/// line's (the record holds no token).
pub(super) fn request(common: CommonArgs, product: ProductFlags, phase: Phase) -> Result<Request> {
    let lock = (&common.lock).into();
    let mut f = Flags::record(phase, common, product);
    let mut req = f.request(phase)?;
    // The record keeps a product's own flags as resolved (what the run used), or, recorded
    // flat, as given.
    if let Some(own) = f.product.own.as_mut() {
        own.values = own.recorded(&req.product_values)?;
    }
    req.lock = lock;
    req.flags = f.to_value();
    Ok(req)
}

pub fn run(ctx: &Ctx, cmd: BenchCmd) -> Result<Outcome> {
    match cmd {
        BenchCmd::Greptimedb(a) => a.bench(ctx, super::greptimedb::bench_request),
        BenchCmd::Influxdb3(a) => a.bench(ctx, super::influxdb3::bench_request),
        BenchCmd::Timescaledb(a) => a.bench(ctx, super::timescaledb::bench_request),
        BenchCmd::Product(b) => super::generic::bench(ctx, *b),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// The request `tsbsctl bench <product> ARGS` builds (its record in `flags`).
    fn request_of(product: &str, args: &str) -> Request {
        let argv = ["tsbsctl", "bench", product]
            .into_iter()
            .chain(args.split_whitespace());
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        let crate::cli::Command::Bench(cmd) = cli.command else {
            panic!("not a bench command: {product} {args}")
        };
        match cmd {
            BenchCmd::Greptimedb(a) => super::super::greptimedb::bench_request(*a),
            BenchCmd::Influxdb3(a) => super::super::influxdb3::bench_request(*a),
            BenchCmd::Timescaledb(a) => super::super::timescaledb::bench_request(*a),
            BenchCmd::Product(b) => super::super::generic::bench_request(*b),
        }
        .unwrap()
    }

    /// Each product's record of a representative command line, byte for byte as the flags
    /// were recorded before they were declared once (the literals were captured from that
    /// code): key order, the stall defaults applied, the hold token redacted, only the
    /// product's own keys. And the round trip `runs rerun` makes: record, `from_value`,
    /// `request` gives the request the command built.
    #[test]
    fn each_products_record_is_byte_compatible_and_round_trips() {
        // A registry product without a CLI module of its own (the generic bench command),
        // found in the registry so no product outside src/product/ is named for it.
        let generic = crate::product::all()
            .iter()
            .map(|e| e.name)
            .find(|n| !["greptimedb", "influxdb3", "timescaledb"].contains(n))
            .expect("the test registry has a product without a CLI module");
        let cases: [(&str, &str, Phase, &str); 5] = [
            (
                "greptimedb",
                "compact --database-id ws1 --profile smoke --scale 20 --seed 7 --dataset-root /data/ds --compression gzip --query-type lastpoint --query-type high-cpu-1 --query-count lastpoint=5 --load-workers 3 --startup-timeout 30 --hold-token s3cret --wait 10 --table cpu --strategy swcs --window 3600 --parallelism 2 --flush-before-queries --hot-runs 4 --greptime-version v1.0.0 --confirm-version-override ws1",
                Phase::Operation("compact"),
                concat!(
                r#"{"phase":"compact","database_id":"ws1","urls":[],"database":null,"#,
                r#""database_mode":null,"confirm_reset":null,"profile":"smoke","use_case":null,"#,
                r#""start":null,"end":null,"scale":20,"seed":7,"log_interval":null,"#,
                r#""dataset_id":null,"dataset_root":"/data/ds","compression":"gzip","#,
                r#""query_types":["lastpoint","high-cpu-1"],"queries":null,"#,
                r#""query_counts":["lastpoint=5"],"load_workers":3,"batch_size":null,"#,
                r#""query_workers":null,"run_id":null,"startup_timeout":30.0,"stop_timeout":null,"#,
                r#""stall_timeout":300.0,"on_stall":"warn","wait":10,"hold_token":"<redacted>","#,
                r#""hold_token_env":null,"hold_token_stdin":false,"table":"cpu","strategy":"swcs","#,
                r#""window":3600,"confirm_timeout":null,"parallelism":2,"flush_before_queries":true,"#,
                r#""hot_runs":4,"greptime_version":"v1.0.0","confirm_version_override":"ws1"}"#,
            ),
            ),
            (
                "influxdb3",
                "load --url http://127.0.0.1:8181 --database bench --database-mode reset --confirm-reset bench --use-case cpu-only --start 2023-06-11T00:00:00Z --end 2023-06-12T00:00:00Z --log-interval 10s --dataset-id d1 --queries 9 --batch-size 500 --query-workers 2 --run-id r1 --stop-timeout 5 --stall-timeout 60 --on-stall stop --hold-token-env HT --edition enterprise --no-sync --accept-partial --auth-token-env AT --admin-token-env ADT --count-timeout 120",
                Phase::Load,
                concat!(
                r#"{"phase":"load","database_id":null,"urls":["http://127.0.0.1:8181"],"#,
                r#""database":"bench","database_mode":"reset","confirm_reset":"bench","#,
                r#""profile":null,"use_case":"cpu-only","start":"2023-06-11T00:00:00Z","#,
                r#""end":"2023-06-12T00:00:00Z","scale":null,"seed":null,"log_interval":"10s","#,
                r#""dataset_id":"d1","dataset_root":null,"compression":null,"query_types":[],"#,
                r#""queries":9,"query_counts":[],"load_workers":null,"batch_size":500,"#,
                r#""query_workers":2,"run_id":"r1","startup_timeout":null,"stop_timeout":5.0,"#,
                r#""stall_timeout":60.0,"on_stall":"stop","wait":null,"hold_token":null,"#,
                r#""hold_token_env":"HT","hold_token_stdin":false,"edition":"enterprise","#,
                r#""no_sync":true,"accept_partial":true,"auth_token_env":"AT","#,
                r#""admin_token_env":"ADT","count_timeout":120.0}"#,
            ),
            ),
            (
                "timescaledb",
                "all --url postgres://bench@10.0.0.5:5432/tsbs --mode postgresql --password-env PGPW --chunk-time 6h --partitions 4 --hold-token-stdin",
                Phase::All,
                concat!(
                r#"{"phase":"all","database_id":null,"urls":["postgres://bench@10.0.0.5:5432/tsbs"],"#,
                r#""database":null,"database_mode":null,"confirm_reset":null,"profile":null,"#,
                r#""use_case":null,"start":null,"end":null,"scale":null,"seed":null,"#,
                r#""log_interval":null,"dataset_id":null,"dataset_root":null,"compression":null,"#,
                r#""query_types":[],"queries":null,"query_counts":[],"load_workers":null,"#,
                r#""batch_size":null,"query_workers":null,"run_id":null,"startup_timeout":null,"#,
                r#""stop_timeout":null,"stall_timeout":300.0,"on_stall":"warn","wait":null,"#,
                r#""hold_token":null,"hold_token_env":null,"hold_token_stdin":true,"#,
                r#""mode":"postgresql","password_env":"PGPW","chunk_time":"6h","partitions":4}"#,
            ),
            ),
            (
                generic,
                "query --database-id e1 --profile smoke",
                Phase::Query,
                concat!(
                r#"{"phase":"query","database_id":"e1","urls":[],"database":null,"#,
                r#""database_mode":null,"confirm_reset":null,"profile":"smoke","use_case":null,"#,
                r#""start":null,"end":null,"scale":null,"seed":null,"log_interval":null,"#,
                r#""dataset_id":null,"dataset_root":null,"compression":null,"query_types":[],"#,
                r#""queries":null,"query_counts":[],"load_workers":null,"batch_size":null,"#,
                r#""query_workers":null,"run_id":null,"startup_timeout":null,"stop_timeout":null,"#,
                r#""stall_timeout":300.0,"on_stall":"warn","wait":null,"hold_token":null,"#,
                r#""hold_token_env":null,"hold_token_stdin":false}"#,
            ),
            ),
            // The generic `--token-env VAR`: the variable's name under `auth_token_env`, after
            // the common keys, and no other product's keys.
            (
                generic,
                "load --url http://127.0.0.1:8086 --token-env I2_TOK",
                Phase::Load,
                concat!(
                r#"{"phase":"load","database_id":null,"urls":["http://127.0.0.1:8086"],"#,
                r#""database":null,"database_mode":null,"confirm_reset":null,"profile":null,"#,
                r#""use_case":null,"start":null,"end":null,"scale":null,"seed":null,"#,
                r#""log_interval":null,"dataset_id":null,"dataset_root":null,"compression":null,"#,
                r#""query_types":[],"queries":null,"query_counts":[],"load_workers":null,"#,
                r#""batch_size":null,"query_workers":null,"run_id":null,"startup_timeout":null,"#,
                r#""stop_timeout":null,"stall_timeout":300.0,"on_stall":"warn","wait":null,"#,
                r#""hold_token":null,"hold_token_env":null,"hold_token_stdin":false,"#,
                r#""auth_token_env":"I2_TOK"}"#,
            ),
            ),
        ];
        for (product, args, phase, recorded) in cases {
            let req = request_of(product, args);
            let text = serde_json::to_string(&req.flags).unwrap();
            assert_eq!(text, recorded, "{product} {args}");
            assert!(!text.contains("s3cret"), "{text}");
            let mut back = Flags::from_value(&req.flags, product)
                .unwrap()
                .request(phase)
                .unwrap();
            // The lock options are the command line's, never the record's (no token there).
            back.lock = req.lock.clone();
            back.flags = req.flags.clone();
            assert_eq!(format!("{back:?}"), format!("{req:?}"), "{product} {args}");
            // Read back and written again: the same bytes (no other product's keys: a
            // record's `partitions` or `password_env` is its own product's only).
            let again = Flags::from_value(&req.flags, product).unwrap().to_value();
            assert_eq!(
                serde_json::to_string(&again).unwrap(),
                text,
                "{product} {args}"
            );
        }
        let generic_req = request_of(
            generic,
            "load --url http://127.0.0.1:8086 --token-env I2_TOK",
        );
        assert_eq!(generic_req.auth_token_env.as_deref(), Some("I2_TOK"));
    }

    /// A stored run of `product` (`text`, its manifest): its command line, parsed again,
    /// records the same `flags` byte for byte, and the record reads back into the same
    /// request (`runs rerun`). The manifest and the request.
    fn fixture_records_the_same_flags(product: &str, text: &str) -> (serde_json::Value, Request) {
        let m: serde_json::Value = serde_json::from_str(text).unwrap();
        let command = m["command"].as_str().unwrap();
        let args = command
            .strip_prefix(&format!("tsbsctl bench {product} "))
            .unwrap()
            .replace(" --json", "");
        let req = request_of(product, &args);
        assert_eq!(
            serde_json::to_string(&req.flags).unwrap(),
            serde_json::to_string(&m["flags"]).unwrap(),
            "{command}"
        );
        let mut back = Flags::from_value(&m["flags"], product)
            .unwrap()
            .request(req.phase.unwrap())
            .unwrap();
        back.lock = req.lock.clone();
        back.flags = req.flags.clone();
        assert_eq!(format!("{back:?}"), format!("{req:?}"), "{command}");
        (m, req)
    }

    /// The recorded runs of GreptimeDB kept as fixtures (written before its flags were
    /// declared by the product): their command lines, parsed again, record the same `flags`
    /// byte for byte, and the record reads back into the same request (`runs rerun`), its
    /// declared flags resolved by the product (compaction defaults, hot runs).
    #[test]
    fn greptimedb_fixture_runs_record_the_same_flags() {
        let fixtures = [
            include_str!("../../tests/fixtures/run-data-v1/run-greptimedb-all-failed.json"),
            include_str!("../../tests/fixtures/run-data-v1/run-greptimedb-analyze.json"),
            include_str!(
                "../../tests/fixtures/run-data-v1/run-greptimedb-compaction-completed.json"
            ),
            include_str!("../../tests/fixtures/run-data-v1/run-greptimedb-compaction-failed.json"),
            include_str!("../../tests/fixtures/run-data-v1/run-greptimedb-external-all.json"),
            include_str!(
                "../../tests/fixtures/run-data-v1/run-greptimedb-query-after-compaction.json"
            ),
            include_str!("../../tests/fixtures/run-data-v1/run-greptimedb-query-interrupted.json"),
            include_str!(
                "../../tests/fixtures/run-data-v1/run-greptimedb-query-version-override.json"
            ),
        ];
        for text in fixtures {
            let (m, req) = fixture_records_the_same_flags("greptimedb", text);
            let command = m["command"].as_str().unwrap();
            let phase = req.phase.unwrap();
            let v = |k: &str| req.product_values.get(k).cloned();
            match phase {
                Phase::Operation("compact") => {
                    let want_window = if m["flags"]["strategy"] == "twcs" {
                        serde_json::Value::Null
                    } else {
                        7200.into()
                    };
                    assert_eq!(v("window"), Some(want_window), "{command}");
                    assert_eq!(v("table"), Some("cpu".into()), "{command}");
                    assert_eq!(v("confirm_timeout"), Some(5.0.into()), "{command}");
                }
                Phase::Analyze => assert_eq!(v("hot_runs"), Some(2.into())),
                _ => {}
            }
            if phase != Phase::Operation("compact") {
                // What the workload records of it (`null` for a phase that did not flush).
                assert_eq!(
                    v("flush_before_queries").as_ref(),
                    Some(&m["workload"]["flush_before_queries"]),
                    "{command}"
                );
            }
        }
    }

    /// The recorded runs of InfluxDB 3 kept as fixtures (written before its flags were
    /// declared by the product): their command lines, parsed again, record the same `flags`
    /// byte for byte, and the record reads back into the same request (`runs rerun`): the
    /// edition, durability and the workload's write settings.
    #[test]
    fn influxdb3_fixture_runs_record_the_same_flags() {
        let fixtures = [
            include_str!("../../tests/fixtures/run-data-v1/run-influxdb3-core-all.json"),
            include_str!(
                "../../tests/fixtures/run-data-v1/run-influxdb3-external-enterprise-all.json"
            ),
        ];
        for text in fixtures {
            let (m, req) = fixture_records_the_same_flags("influxdb3", text);
            let command = m["command"].as_str().unwrap();
            assert_eq!(
                req.variant.as_ref(),
                m["flags"]["edition"].as_str().map(String::from).as_ref()
            );
            assert_eq!(serde_json::Value::from(req.no_sync), m["flags"]["no_sync"]);
            for k in ["no_sync", "accept_partial"] {
                assert_eq!(
                    req.write_settings().get(k),
                    Some(&m["workload"][k]),
                    "{command}: {k}"
                );
            }
        }
        // Its `--auth-token-env` names the token's variable, as the generic `--token-env`
        // does for other products (both are recorded as `auth_token_env`).
        let req = request_of("influxdb3", "query --url http://h:8181 --auth-token-env AT");
        assert_eq!(req.auth_token_env.as_deref(), Some("AT"));
        let argv = "tsbsctl bench influxdb3 query --url http://h:8181 --edition cloud";
        let e = crate::cli::Cli::try_parse_from(argv.split_whitespace()).unwrap_err();
        assert!(e.to_string().contains("core, enterprise"), "{e}");
    }

    /// GreptimeDB's regions (`--partitions` with `--partition-column`, its declared flags):
    /// recorded after its other flags only when given, as before, and back into the same
    /// request (`runs rerun` makes the same table).
    #[test]
    fn greptimedb_regions_record_and_round_trip() {
        let req = request_of(
            "greptimedb",
            "all --database-id g1 --partitions 8 --partition-column hostname --user u --password-env PW",
        );
        let text = serde_json::to_string(&req.flags).unwrap();
        assert!(
            text.ends_with(r#""confirm_version_override":null,"partitions":8,"partition_column":"hostname","user":"u","password_env":"PW"}"#),
            "{text}"
        );
        let p = crate::bench::flags::tests::partitioning("greptimedb", &req).unwrap();
        assert_eq!((p.partitions, p.column.as_str()), (8, "hostname"));
        assert_eq!(req.product_values["partitions"], 8);
        let mut back = Flags::from_value(&req.flags, "greptimedb")
            .unwrap()
            .request(Phase::All)
            .unwrap();
        back.lock = req.lock.clone();
        back.flags = req.flags.clone();
        assert_eq!(format!("{back:?}"), format!("{req:?}"));
        // Its `partitions` and `password_env` are not read into TimescaleDB's flags: written
        // again, the record is the same.
        let again = Flags::from_value(&req.flags, "greptimedb")
            .unwrap()
            .to_value();
        assert_eq!(serde_json::to_string(&again).unwrap(), text);
        // The pair goes together (clap says so on the command line; a record, the product).
        let argv = "tsbsctl bench greptimedb load --database-id g1 --partitions 8";
        let e = crate::cli::Cli::try_parse_from(argv.split_whitespace()).unwrap_err();
        assert!(e.to_string().contains("--partition-column"), "{e}");
        let plain = request_of("greptimedb", "load --database-id g1");
        assert!(crate::bench::flags::tests::partitioning("greptimedb", &plain).is_none());
        assert!(!plain.product_values.contains_key("partitions"));
    }

    /// A record the generic `--token-env` wrote before the variable had a field of its own
    /// (it was carried in InfluxDB 3's group, whose other keys came with it) still reads back
    /// into the same request (`runs rerun`).
    #[test]
    fn an_old_generic_token_record_still_reads() {
        let old = serde_json::json!({
            "phase": "load", "urls": ["http://127.0.0.1:8086"], "hold_token_stdin": false,
            "edition": null, "no_sync": false, "accept_partial": false,
            "auth_token_env": "I2_TOK", "admin_token_env": null, "count_timeout": null,
        });
        let req = Flags::from_value(&old, "influxdb3")
            .unwrap()
            .request(Phase::Load)
            .unwrap();
        assert_eq!(req.auth_token_env.as_deref(), Some("I2_TOK"));
        assert!(!req.no_sync && req.variant.is_none());
        assert_eq!(req.product_values["accept_partial"], false);
        assert!(req.admin_token_env.is_none() && req.count_timeout.is_none());
    }

    /// A product's own flags (declared by the product, `product::ext`): parsed by the generic
    /// bench command, resolved by the product, recorded under its name after every other key,
    /// and read back to the same values (`runs rerun`); a bad value is exit 2.
    #[test]
    fn a_products_own_flags_are_recorded_under_its_name_and_round_trip() {
        // Found in the registry: no product is named outside src/product/ for it.
        let (name, ext) = crate::product::all()
            .iter()
            .filter_map(|e| Some((e.name, (e.make)(None).ok()?.bench_ext()?)))
            .find(|(_, x)| !x.flags.is_empty() && x.record == crate::product::ext::Record::Nested)
            .expect("the test registry has a product with flags of its own");
        let flag = ext.flags[0];
        let value = flag.default.unwrap_or("1");
        let req = request_of(
            name,
            &format!("load --database-id x1 --{} {value}", flag.long),
        );
        let recorded = &req.flags[name];
        assert!(recorded.is_object(), "{}", req.flags);
        assert_eq!(recorded.as_object().unwrap(), &req.product_values);
        assert!(req.product_values.contains_key(&flag.key()), "{req:?}");
        // Last in the record.
        let keys: Vec<&String> = req.flags.as_object().unwrap().keys().collect();
        assert_eq!(keys.last().map(|k| k.as_str()), Some(name));
        let back = Flags::from_value(&req.flags, name)
            .unwrap()
            .request(Phase::Load)
            .unwrap();
        assert_eq!(back.product_values, req.product_values);
        // Given nothing, the product's defaults are what is recorded.
        let plain = request_of(name, "load --database-id x1");
        assert_eq!(
            plain.flags[name],
            serde_json::Value::Object(plain.product_values.clone())
        );
        if flag.kind == crate::product::ext::FlagKind::Number {
            let argv = format!(
                "tsbsctl bench {name} load --database-id x1 --{} nope",
                flag.long
            );
            let cli = crate::cli::Cli::try_parse_from(argv.split_whitespace()).unwrap();
            let crate::cli::Command::Bench(BenchCmd::Product(b)) = cli.command else {
                panic!("not the generic bench");
            };
            let e = super::super::generic::bench_request(*b).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{}", e.message);
        }
    }
}
