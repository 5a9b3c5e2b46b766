//! `tsbs_generate_data --use-case=devops|iot` of the stand-in (see `tsbs_generate.rs`), in the
//! real tool's layout (GreptimeTeam/tsbs @81d12c8, `pkg/data/usecases/`; checked against the
//! real generator's output, see the report of issue 22):
//!
//! * **devops**: per interval, the nine measurements in the real order (`cpu`, `diskio`,
//!   `disk`, `kernel`, `mem`, `net`, `nginx`, `postgresl` — TSBS's spelling — and `redis`),
//!   each for every host (measurement-major, host-minor, as `DevopsSimulator.Next`), with the
//!   host's ten tags, the measurement's own tags (`serial`; `path`, `fstype`; `interface`;
//!   `port`, `server`) and its fields in the real order and types (integers with `i`, the
//!   three `mem` percentages as floats). Exactly `9 × scale × intervals` rows.
//! * **iot**: per interval `readings` then `diagnostics`, each for every truck, with the
//!   truck's tags (`name`, `fleet`, `driver`, `model`, `device_version` and the float tags
//!   `load_capacity`, `fuel_capacity`, `nominal_fuel_consumption`, written as fields in line
//!   protocol), passed through the real batch simulator (`iot/simulator.go`,
//!   `iot/batch_config.go`): batches of 10, 1 % of batches dropped, 5 % held back and
//!   inserted later, per entry 10 % dropped, 30 % held back, 10 % lose a field, 1 % a tag. So
//!   fewer rows than `2 × scale × intervals`, rows out of time order, missing fields (empty
//!   columns in the timescaledb layout), and, as in the real tool, a final batch may run a
//!   few points past `--timestamp-end`.
//!
//! Values are the stand-in's own random walks (deterministic for the seed), not the real
//! distributions.

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Write};

/// A value of a point.
#[derive(Debug, Clone)]
enum V {
    Int(i64),
    Float(f64),
    Str(String),
}

impl V {
    /// As TSBS's `FastFormatAppend` writes it (floats: Go's shortest `'f'` form).
    fn text(&self) -> String {
        match self {
            V::Int(i) => i.to_string(),
            V::Float(f) => {
                let s = format!("{f}");
                s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
            }
            V::Str(s) => s.clone(),
        }
    }
}

/// One point: measurement, tags and fields (a `None` value was cleared), time.
#[derive(Debug, Clone)]
struct Point {
    measurement: &'static str,
    tags: Vec<(&'static str, Option<V>)>,
    fields: Vec<(&'static str, Option<V>)>,
    ts: i128,
}

impl Point {
    /// `pkg/targets/influx/serializer.go`: string tags as tags, other tags as the first
    /// fields, cleared values left out; a point with no field left is not written.
    fn influx(&self, out: &mut Vec<u8>) {
        let mut line = String::from(self.measurement);
        let mut fields: Vec<String> = Vec::new();
        for (k, v) in &self.tags {
            match v {
                Some(V::Str(s)) => line.push_str(&format!(",{k}={s}")),
                Some(other) => fields.push(format!("{k}={}", other.text())),
                None => {}
            }
        }
        for (k, v) in &self.fields {
            match v {
                Some(V::Int(i)) => fields.push(format!("{k}={i}i")),
                Some(v) => fields.push(format!("{k}={}", v.text())),
                None => {}
            }
        }
        if fields.is_empty() {
            return;
        }
        out.extend_from_slice(format!("{line} {} {}\n", fields.join(","), self.ts).as_bytes());
    }

    /// `pkg/targets/timescaledb/serializer.go`: a tags line, then the values line; cleared
    /// values are empty.
    fn timescaledb(&self, out: &mut Vec<u8>) {
        let tags: Vec<String> = self
            .tags
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_ref().map(V::text).unwrap_or_default()))
            .collect();
        let values: Vec<String> = self
            .fields
            .iter()
            .map(|(_, v)| v.as_ref().map(V::text).unwrap_or_default())
            .collect();
        out.extend_from_slice(
            format!(
                "tags,{}\n{},{},{}\n",
                tags.join(","),
                self.measurement,
                self.ts,
                values.join(",")
            )
            .as_bytes(),
        );
    }
}

/// The generator's options.
pub struct UseCaseGen {
    pub use_case: String,
    pub timescaledb: bool,
    pub scale: u64,
    pub seed: u64,
    pub start_ns: i128,
    pub interval: i128,
    pub epochs: u64,
    pub max_points: u64,
}

/// splitmix64, as the cpu-only stand-in.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// Uniform in [0, 1).
    fn float(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

// ---- devops ----------------------------------------------------------------------------------

const REGIONS: &[(&str, &[&str])] = &[
    (
        "us-east-1",
        &["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    ),
    ("us-west-1", &["us-west-1a", "us-west-1b"]),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("ap-southeast-1", &["ap-southeast-1a", "ap-southeast-1b"]),
    ("sa-east-1", &["sa-east-1a", "sa-east-1b", "sa-east-1c"]),
];

/// The devops measurements in the real order, with their field names.
pub const DEVOPS: [(&str, &[&str]); 9] = [
    (
        "cpu",
        &[
            "usage_user",
            "usage_system",
            "usage_idle",
            "usage_nice",
            "usage_iowait",
            "usage_irq",
            "usage_softirq",
            "usage_steal",
            "usage_guest",
            "usage_guest_nice",
        ],
    ),
    (
        "diskio",
        &[
            "reads",
            "writes",
            "read_bytes",
            "write_bytes",
            "read_time",
            "write_time",
            "io_time",
        ],
    ),
    (
        "disk",
        &[
            "total",
            "free",
            "used",
            "used_percent",
            "inodes_total",
            "inodes_free",
            "inodes_used",
        ],
    ),
    (
        "kernel",
        &[
            "boot_time",
            "interrupts",
            "context_switches",
            "processes_forked",
            "disk_pages_in",
            "disk_pages_out",
        ],
    ),
    (
        "mem",
        &[
            "total",
            "available",
            "used",
            "free",
            "cached",
            "buffered",
            "used_percent",
            "available_percent",
            "buffered_percent",
        ],
    ),
    (
        "net",
        &[
            "bytes_sent",
            "bytes_recv",
            "packets_sent",
            "packets_recv",
            "err_in",
            "err_out",
            "drop_in",
            "drop_out",
        ],
    ),
    (
        "nginx",
        &[
            "accepts", "active", "handled", "reading", "requests", "waiting", "writing",
        ],
    ),
    (
        "postgresl",
        &[
            "numbackends",
            "xact_commit",
            "xact_rollback",
            "blks_read",
            "blks_hit",
            "tup_returned",
            "tup_fetched",
            "tup_inserted",
            "tup_updated",
            "tup_deleted",
            "conflicts",
            "temp_files",
            "temp_bytes",
            "deadlocks",
            "blk_read_time",
            "blk_write_time",
        ],
    ),
    (
        "redis",
        &[
            "uptime_in_seconds",
            "total_connections_received",
            "expired_keys",
            "evicted_keys",
            "keyspace_hits",
            "keyspace_misses",
            "instantaneous_ops_per_sec",
            "instantaneous_input_kbps",
            "instantaneous_output_kbps",
            "connected_clients",
            "used_memory",
            "used_memory_rss",
            "used_memory_peak",
            "used_memory_lua",
            "rdb_changes_since_last_save",
            "sync_full",
            "sync_partial_ok",
            "sync_partial_err",
            "pubsub_channels",
            "pubsub_patterns",
            "latest_fork_usec",
            "connected_slaves",
            "master_repl_offset",
            "repl_backlog_active",
            "repl_backlog_size",
            "repl_backlog_histlen",
            "mem_fragmentation_ratio",
            "used_cpu_sys",
            "used_cpu_user",
            "used_cpu_sys_children",
            "used_cpu_user_children",
        ],
    ),
];

const HOST_TAGS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

struct Host {
    tags: Vec<(&'static str, Option<V>)>,
    /// Per measurement: its own tags.
    own: [Vec<(&'static str, Option<V>)>; 9],
    /// Per measurement: the walking field values.
    state: [Vec<i64>; 9],
}

fn new_host(h: u64, rng: &mut Rng) -> Host {
    let (region, dcs) = REGIONS[rng.below(REGIONS.len() as u64) as usize];
    let pick = |rng: &mut Rng, xs: &[&str]| xs[rng.below(xs.len() as u64) as usize].to_string();
    let values = [
        format!("host_{h}"),
        region.to_string(),
        pick(rng, dcs),
        rng.below(100).to_string(),
        pick(rng, &["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]),
        pick(rng, &["x64", "x86"]),
        pick(rng, &["SF", "NYC", "LON", "CHI"]),
        rng.below(20).to_string(),
        rng.below(2).to_string(),
        pick(rng, &["production", "staging", "test"]),
    ];
    let tags = HOST_TAGS
        .iter()
        .zip(values)
        .map(|(k, v)| (*k, Some(V::Str(v))))
        .collect();
    let s = |v: String| Some(V::Str(v));
    let own = [
        vec![],
        vec![(
            "serial",
            s(format!(
                "{:03}-{:03}-{:03}",
                rng.below(1000),
                rng.below(1000),
                rng.below(1000)
            )),
        )],
        vec![
            ("path", s(format!("/dev/sda{}", rng.below(10)))),
            ("fstype", s(pick(rng, &["ext3", "ext4", "btrfs"]))),
        ],
        vec![],
        vec![],
        vec![("interface", s(format!("eth{}", rng.below(4))))],
        vec![
            ("port", s((rng.below(20000) + 1024).to_string())),
            ("server", s(format!("nginx_{}", rng.below(100000)))),
        ],
        vec![],
        vec![
            ("port", s((rng.below(20000) + 1024).to_string())),
            ("server", s(format!("redis_{}", rng.below(100000)))),
        ],
    ];
    let state = DEVOPS.map(|(_, f)| f.iter().map(|_| rng.below(100) as i64).collect());
    Host { tags, own, state }
}

fn devops_point(host: &mut Host, m: usize, ts: i128, rng: &mut Rng) -> Point {
    let (name, fields) = DEVOPS[m];
    for v in host.state[m].iter_mut() {
        *v = (*v + rng.below(5) as i64 - 2).clamp(0, 100);
    }
    let st = &host.state[m];
    let vals: Vec<Option<V>> = match name {
        // total, free, used, used_percent, inodes: 1 TiB disks, 4 KiB inodes.
        "disk" => {
            let total: i64 = 1 << 40;
            let free = total / 100 * st[1].max(1);
            vec![
                V::Int(total),
                V::Int(free),
                V::Int(total - free),
                V::Int(100 * (total - free) / total),
                V::Int(total / 4096),
                V::Int(free / 4096),
                V::Int((total - free) / 4096),
            ]
            .into_iter()
            .map(Some)
            .collect()
        }
        // Six byte counts, then three percentages as floats.
        "mem" => {
            let total: i64 = 8 << 30;
            let used = total / 100 * st[2];
            let mut v: Vec<Option<V>> = [
                total,
                total - used,
                used,
                total - used,
                total / 100 * st[4],
                total / 100 * st[5],
            ]
            .into_iter()
            .map(|x| Some(V::Int(x)))
            .collect();
            v.push(Some(V::Float(used as f64 * 100.0 / total as f64)));
            v.push(Some(V::Float((total - used) as f64 * 100.0 / total as f64)));
            v.push(Some(V::Float(st[5] as f64 + 0.5)));
            v
        }
        _ => st.iter().map(|x| Some(V::Int(*x))).collect(),
    };
    let mut tags = host.tags.clone();
    tags.extend(host.own[m].iter().cloned());
    Point {
        measurement: name,
        tags,
        fields: fields.iter().copied().zip(vals).collect(),
        ts,
    }
}

// ---- iot -------------------------------------------------------------------------------------

const READINGS: [&str; 7] = [
    "latitude",
    "longitude",
    "elevation",
    "velocity",
    "heading",
    "grade",
    "fuel_consumption",
];
const DIAGNOSTICS: [&str; 3] = ["fuel_state", "current_load", "status"];
/// The models: name, load, fuel capacity, nominal consumption (`iot/truck.go`).
const MODELS: [(&str, f64, f64, f64); 3] = [
    ("F-150", 2000.0, 200.0, 15.0),
    ("G-2000", 5000.0, 300.0, 19.0),
    ("H-2", 1500.0, 150.0, 12.0),
];

struct Truck {
    tags: Vec<(&'static str, Option<V>)>,
    readings: [f64; 7],
    diagnostics: [f64; 3],
}

fn new_truck(i: u64, rng: &mut Rng) -> Truck {
    let pick = |rng: &mut Rng, xs: &[&str]| xs[rng.below(xs.len() as u64) as usize].to_string();
    let (model, load, fuel, cons) = MODELS[rng.below(3) as usize];
    let tags = vec![
        ("name", Some(V::Str(format!("truck_{i}")))),
        (
            "fleet",
            Some(V::Str(pick(rng, &["East", "West", "North", "South"]))),
        ),
        (
            "driver",
            Some(V::Str(pick(
                rng,
                &["Derek", "Rodney", "Albert", "Andy", "Seth", "Trish"],
            ))),
        ),
        ("model", Some(V::Str(model.into()))),
        (
            "device_version",
            Some(V::Str(pick(rng, &["v1.0", "v1.5", "v2.0", "v2.3"]))),
        ),
        ("load_capacity", Some(V::Float(load))),
        ("fuel_capacity", Some(V::Float(fuel))),
        ("nominal_fuel_consumption", Some(V::Float(cons))),
    ];
    Truck {
        tags,
        readings: [
            (rng.float() * 90.0 * 1e5).round() / 1e5,
            (rng.float() * 180.0 * 1e5).round() / 1e5,
            (rng.float() * 500.0).round(),
            0.0,
            (rng.float() * 360.0).round(),
            0.0,
            25.0,
        ],
        diagnostics: [1.0, 0.0, 0.0],
    }
}

fn iot_point(t: &mut Truck, readings: bool, ts: i128, rng: &mut Rng) -> Point {
    fn step(rng: &mut Rng, v: &mut f64, lo: f64, hi: f64, d: f64, digits: i32) {
        let p = 10f64.powi(digits);
        *v = ((*v + (rng.float() * 2.0 - 1.0) * d).clamp(lo, hi) * p).round() / p;
    }
    if readings {
        let r = &mut t.readings;
        step(rng, &mut r[0], -90.0, 90.0, 0.005, 5);
        step(rng, &mut r[1], -180.0, 180.0, 0.005, 5);
        step(rng, &mut r[2], 0.0, 5000.0, 10.0, 0);
        step(rng, &mut r[3], 0.0, 100.0, 10.0, 0);
        step(rng, &mut r[4], 0.0, 360.0, 5.0, 0);
        step(rng, &mut r[5], 0.0, 100.0, 5.0, 0);
        step(rng, &mut r[6], 0.0, 50.0, 5.0, 1);
        let fields = READINGS
            .iter()
            .zip(t.readings)
            .map(|(k, v)| (*k, Some(V::Float(v))))
            .collect();
        Point {
            measurement: "readings",
            tags: t.tags.clone(),
            fields,
            ts,
        }
    } else {
        let d = &mut t.diagnostics;
        step(rng, &mut d[0], 0.0, 1.0, 0.001, 1);
        if d[0] == 0.0 {
            d[0] = 1.0;
        }
        if rng.float() < 0.05 {
            d[1] = (rng.float() * 5000.0).round();
        }
        step(rng, &mut d[2], 0.0, 5.0, 1.0, 0);
        let (f, l, s) = (d[0], d[1], d[2]);
        Point {
            measurement: "diagnostics",
            tags: t.tags.clone(),
            fields: vec![
                ("fuel_state", Some(V::Float(f))),
                ("current_load", Some(V::Float(l))),
                ("status", Some(V::Int(s as i64))),
            ],
            ts,
        }
    }
}

/// The base simulator (`common/simulator.go`): per interval each measurement for every
/// device; `finished` after `max` points, though `next` goes on (as the real one does when
/// the batch simulator keeps asking).
struct Base {
    trucks: Vec<Truck>,
    made: u64,
    max: u64,
    index: usize,
    measurement: usize,
    epoch: i128,
    start_ns: i128,
    interval: i128,
}

impl Base {
    fn finished(&self) -> bool {
        self.made >= self.max
    }
    fn next(&mut self, rng: &mut Rng) -> Point {
        if self.index == self.trucks.len() {
            self.index = 0;
            self.measurement += 1;
        }
        if self.measurement == 2 {
            self.measurement = 0;
            self.epoch += 1;
        }
        let ts = self.start_ns + self.interval * self.epoch;
        let p = iot_point(&mut self.trucks[self.index], self.measurement == 0, ts, rng);
        self.made += 1;
        self.index += 1;
        p
    }
}

/// `iot/batch_config.go`.
#[derive(Default)]
struct BatchConfig {
    insert_previous: bool,
    missing: bool,
    out_of_order: bool,
    zero_fields: BTreeMap<usize, usize>,
    zero_tags: BTreeMap<usize, usize>,
    insert_previous_entry: BTreeMap<usize, bool>,
    missing_entries: BTreeMap<usize, bool>,
    out_of_order_entries: BTreeMap<usize, bool>,
}

const BATCH: usize = 10;

fn batch_config(rng: &mut Rng, ooo_batches: usize, mut ooo_entries: usize) -> BatchConfig {
    if rng.float() < 0.01 {
        return BatchConfig {
            missing: true,
            ..Default::default()
        };
    }
    let mut bc = BatchConfig {
        out_of_order: rng.float() < 0.05,
        ..Default::default()
    };
    if ooo_batches > 0 {
        bc.insert_previous = rng.float() < 0.5;
    }
    for i in 0..BATCH {
        if ooo_entries > 0 && rng.float() < 0.5 {
            bc.insert_previous_entry.insert(i, true);
            ooo_entries -= 1;
        }
        if rng.float() < 0.1 {
            bc.missing_entries.insert(i, true);
            continue;
        }
        // Field count: the most any measurement has (readings: 7); tags: 8.
        if rng.float() < 0.1 {
            bc.zero_fields.insert(i, rng.below(7) as usize);
        }
        if rng.float() < 0.01 {
            bc.zero_tags.insert(i, rng.below(8) as usize);
        }
        if rng.float() < 0.3 {
            bc.out_of_order_entries.insert(i, true);
        }
    }
    bc
}

/// `iot/simulator.go`.
struct Iot {
    base: Base,
    curr: VecDeque<Point>,
    ooo_batches: VecDeque<Vec<Point>>,
    ooo_entries: VecDeque<Point>,
    offset: usize,
}

impl Iot {
    fn pending(&self) -> bool {
        !self.ooo_batches.is_empty() || !self.ooo_entries.is_empty()
    }

    fn finished(&self) -> bool {
        self.base.finished() && self.curr.is_empty() && !self.pending()
    }

    fn next(&mut self, rng: &mut Rng) -> Option<Point> {
        if self.curr.is_empty() && !self.simulate_next_batch(rng) {
            return None;
        }
        self.curr.pop_front()
    }

    fn batch_pending(&mut self) -> Vec<Point> {
        if let Some(b) = self.ooo_batches.pop_front() {
            return b;
        }
        let n = self.ooo_entries.len().min(BATCH);
        self.ooo_entries.drain(..n).collect()
    }

    fn simulate_next_batch(&mut self, rng: &mut Rng) -> bool {
        loop {
            if self.base.finished() {
                if self.pending() {
                    self.curr = self.batch_pending().into();
                    return true;
                }
                return false;
            }
            let bc = batch_config(rng, self.ooo_batches.len(), self.ooo_entries.len());
            if bc.insert_previous {
                self.curr = self.ooo_batches.pop_front().unwrap_or_default().into();
                return true;
            }
            if bc.missing {
                // flushBatch: a batch of points the base makes and nobody writes.
                for _ in 0..BATCH {
                    self.base.next(rng);
                }
                continue;
            }
            let batch = self.generate_batch(&bc, rng);
            if bc.out_of_order {
                if !batch.is_empty() {
                    self.ooo_batches.push_back(batch);
                }
                continue;
            }
            if batch.is_empty() {
                continue;
            }
            self.curr = batch.into();
            return true;
        }
    }

    fn generate_batch(&mut self, bc: &BatchConfig, rng: &mut Rng) -> Vec<Point> {
        let mut batch = Vec::with_capacity(BATCH);
        self.offset = 0;
        for i in 0..BATCH {
            if self.base.finished() {
                break;
            }
            let mut entry = self.next_entry(i, bc, rng);
            if let Some(&f) = bc.zero_fields.get(&i) {
                let n = entry.fields.len();
                entry.fields[f % n].1 = None;
            }
            if let Some(&t) = bc.zero_tags.get(&i) {
                entry.tags[t].1 = None;
            }
            batch.push(entry);
        }
        batch
    }

    fn next_entry(&mut self, index: usize, bc: &BatchConfig, rng: &mut Rng) -> Point {
        loop {
            let k = index + self.offset;
            let entry = match bc.insert_previous_entry.get(&k) {
                Some(true) => match self.ooo_entries.pop_front() {
                    Some(e) => e,
                    None => self.base.next(rng),
                },
                _ => self.base.next(rng),
            };
            if bc.missing_entries.contains_key(&k) {
                self.offset += 1;
                continue;
            }
            if bc.out_of_order_entries.contains_key(&k) {
                self.ooo_entries.push_back(entry);
                self.offset += 1;
                continue;
            }
            return entry;
        }
    }
}

impl UseCaseGen {
    /// The timescaledb header (`internal/inputs/generator_data.go` `writeHeader`): the tag
    /// schema with types, one line per measurement (sorted) with its fields, a blank line.
    fn header(&self) -> String {
        type Schema<'a> = (Vec<(&'a str, &'a str)>, Vec<(&'a str, Vec<&'a str>)>);
        let (tags, mut tables): Schema = if self.use_case == "iot" {
            (
                vec![
                    ("name", "string"),
                    ("fleet", "string"),
                    ("driver", "string"),
                    ("model", "string"),
                    ("device_version", "string"),
                    ("load_capacity", "float32"),
                    ("fuel_capacity", "float32"),
                    ("nominal_fuel_consumption", "float32"),
                ],
                vec![
                    ("readings", READINGS.to_vec()),
                    ("diagnostics", DIAGNOSTICS.to_vec()),
                ],
            )
        } else {
            (
                HOST_TAGS.iter().map(|t| (*t, "string")).collect(),
                DEVOPS.iter().map(|(m, f)| (*m, f.to_vec())).collect(),
            )
        };
        tables.sort();
        let mut s = String::from("tags");
        for (k, t) in tags {
            s.push_str(&format!(",{k} {t}"));
        }
        s.push('\n');
        for (m, f) in tables {
            s.push_str(&format!("{m},{}\n", f.join(",")));
        }
        s.push('\n');
        s
    }

    /// Writes the data; `limit` rows at most (the knobs' failure points), 0: all.
    pub fn write(&self, out: &mut dyn Write, limit: Option<u64>) -> io::Result<u64> {
        let mut rng = Rng(self.seed ^ 0x005E_ED0F_15C0);
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
        if self.timescaledb {
            buf.extend_from_slice(self.header().as_bytes());
        }
        let mut written = 0u64;
        let mut emit = |p: &Point, buf: &mut Vec<u8>, out: &mut dyn Write| -> io::Result<bool> {
            if limit == Some(written) || (self.max_points > 0 && written >= self.max_points) {
                return Ok(false);
            }
            let before = buf.len();
            if self.timescaledb {
                p.timescaledb(buf);
            } else {
                p.influx(buf);
            }
            if buf.len() > before {
                written += 1;
            }
            if buf.len() >= 1 << 20 {
                out.write_all(buf)?;
                buf.clear();
            }
            Ok(true)
        };
        if self.use_case == "devops" {
            let mut hosts: Vec<Host> = (0..self.scale).map(|h| new_host(h, &mut rng)).collect();
            'outer: for e in 0..self.epochs {
                let ts = self.start_ns + self.interval * e as i128;
                for m in 0..DEVOPS.len() {
                    for host in hosts.iter_mut() {
                        let p = devops_point(host, m, ts, &mut rng);
                        if !emit(&p, &mut buf, out)? {
                            break 'outer;
                        }
                    }
                }
            }
        } else {
            let trucks = (0..self.scale).map(|i| new_truck(i, &mut rng)).collect();
            let mut sim = Iot {
                base: Base {
                    trucks,
                    made: 0,
                    max: self.epochs * self.scale * 2,
                    index: 0,
                    measurement: 0,
                    epoch: 0,
                    start_ns: self.start_ns,
                    interval: self.interval,
                },
                curr: VecDeque::new(),
                ooo_batches: VecDeque::new(),
                ooo_entries: VecDeque::new(),
                offset: 0,
            };
            while !sim.finished() {
                match sim.next(&mut rng) {
                    Some(p) => {
                        if !emit(&p, &mut buf, out)? {
                            break;
                        }
                    }
                    None => break,
                }
            }
        }
        out.write_all(&buf)?;
        out.flush()?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(use_case: &str, timescaledb: bool) -> String {
        let g = UseCaseGen {
            use_case: use_case.into(),
            timescaledb,
            scale: 3,
            seed: 7,
            start_ns: 1_686_441_600_000_000_000,
            interval: 60_000_000_000,
            epochs: 60,
            max_points: 0,
        };
        let mut out = Vec::new();
        g.write(&mut out, None).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn devops_is_nine_measurements_per_host_and_interval() {
        let text = gen("devops", false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 9 * 3 * 60);
        let order: Vec<&str> = lines[..27]
            .iter()
            .step_by(3)
            .map(|l| l.split(',').next().unwrap())
            .collect();
        assert_eq!(
            order,
            [
                "cpu",
                "diskio",
                "disk",
                "kernel",
                "mem",
                "net",
                "nginx",
                "postgresl",
                "redis"
            ]
        );
        // Each line's field count is the measurement's.
        for l in &lines {
            let m = l.split(',').next().unwrap();
            let fields = l.split(' ').nth(1).unwrap().split(',').count();
            let want = DEVOPS.iter().find(|(n, _)| *n == m).unwrap().1.len();
            assert_eq!(fields, want, "{l}");
        }
        assert!(
            lines[6].starts_with("disk,hostname=host_0,"),
            "{}",
            lines[6]
        );
        assert!(lines[6].contains(",path=/dev/sda"), "{}", lines[6]);
        let ts = gen("devops", true);
        assert!(ts.starts_with("tags,hostname string,"));
        assert_eq!(ts.lines().count(), 11 + 2 * 9 * 3 * 60);
        assert_eq!(ts.lines().nth(6).unwrap().split(',').next(), Some("net"));
    }

    #[test]
    fn iot_drops_reorders_and_clears_as_the_real_simulator() {
        let text = gen("iot", false);
        let lines: Vec<&str> = text.lines().collect();
        let bound = 2 * 3 * 60;
        assert!(
            lines.len() < bound && lines.len() > bound / 2,
            "{}",
            lines.len()
        );
        let times: Vec<i128> = lines
            .iter()
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert!(
            times.windows(2).any(|w| w[1] < w[0]),
            "nothing out of order"
        );
        // A cleared field: a readings line with fewer than 3 + 7 fields.
        assert!(lines
            .iter()
            .any(|l| l.starts_with("readings")
                && l.split(' ').nth(1).unwrap().split(',').count() < 10));
        // The same rows in the timescaledb layout, cleared values empty.
        let ts = gen("iot", true);
        assert!(ts.starts_with(
            "tags,name string,fleet string,driver string,model string,device_version string,load_capacity float32,"
        ));
        assert_eq!(
            ts.lines().nth(1),
            Some("diagnostics,fuel_state,current_load,status")
        );
        assert_eq!((ts.lines().count() - 4) / 2, lines.len());
        assert!(ts
            .lines()
            .any(|l| l.starts_with("readings,") && l.contains(",,")));
    }
}
