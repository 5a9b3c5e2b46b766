//! The TSBS use cases tsbsctl generates, loads and queries (`--use-case`), as the fork defines
//! them (GreptimeTeam/tsbs @81d12c8, `pkg/data/usecases/`): the tables each writes, how many
//! rows a spec gives, and the query use case and types of `tsbs_generate_queries`
//! (`cmd/tsbs_generate_queries/main.go`, `useCaseMatrix`).

/// One table (measurement) a use case writes, with the metrics (fields) a row of it carries
/// in the influx format when no value is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table {
    pub name: &'static str,
    pub metrics: u64,
}

/// One TSBS use case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UseCase {
    pub name: &'static str,
    /// Tables in the order the generator writes them each interval.
    pub tables: &'static [Table],
    /// Whether the row count follows from the spec: one row per table, host and interval.
    /// IoT drops whole batches and entries at random (`pkg/data/usecases/iot/batch_config.go`),
    /// so its count is known only from the file.
    pub fixed_rows: bool,
    /// The tag naming each series' device (`hostname`, `name`). IoT clears tags at random, so
    /// lines without it may repeat another line's series and time (see `rows.rs`).
    pub device_tag: &'static str,
    /// `tsbs_generate_queries --use-case` (cpu-only and devops share the devops matrix).
    pub query_use_case: &'static str,
    /// Its query types, sorted.
    pub query_types: &'static [&'static str],
}

/// The fifteen devops query types the benchmarks run (the reference's list), sorted.
pub const DEVOPS_QUERY_TYPES: [&str; 15] = [
    "cpu-max-all-1",
    "cpu-max-all-8",
    "double-groupby-1",
    "double-groupby-5",
    "double-groupby-all",
    "groupby-orderby-limit",
    "high-cpu-1",
    "high-cpu-all",
    "lastpoint",
    "single-groupby-1-1-1",
    "single-groupby-1-1-12",
    "single-groupby-1-8-1",
    "single-groupby-5-1-1",
    "single-groupby-5-1-12",
    "single-groupby-5-8-1",
];

/// The thirteen iot query types (`cmd/tsbs_generate_queries/uses/iot/common.go`), sorted.
pub const IOT_QUERY_TYPES: [&str; 13] = [
    "avg-daily-driving-duration",
    "avg-daily-driving-session",
    "avg-load",
    "avg-vs-projected-fuel-consumption",
    "breakdown-frequency",
    "daily-activity",
    "high-load",
    "last-loc",
    "long-daily-sessions",
    "long-driving-sessions",
    "low-fuel",
    "single-last-loc",
    "stationary-trucks",
];

const CPU: Table = Table {
    name: "cpu",
    metrics: 10,
};

/// The devops tables in the generator's order (`devops/host.go` `newHostMeasurements`), with
/// the real measurement names: `postgresl` is how TSBS spells it (`devops/postgresql.go`).
const DEVOPS_TABLES: [Table; 9] = [
    CPU,
    Table {
        name: "diskio",
        metrics: 7,
    },
    Table {
        name: "disk",
        metrics: 7,
    },
    Table {
        name: "kernel",
        metrics: 6,
    },
    Table {
        name: "mem",
        metrics: 9,
    },
    Table {
        name: "net",
        metrics: 8,
    },
    Table {
        name: "nginx",
        metrics: 7,
    },
    Table {
        name: "postgresl",
        metrics: 16,
    },
    Table {
        name: "redis",
        metrics: 31,
    },
];

/// readings: 7 fields; diagnostics: 3. In the influx format the truck's three numeric tags
/// (`load_capacity`, `fuel_capacity`, `nominal_fuel_consumption`) are written as fields too
/// (`pkg/targets/influx/serializer.go`), hence 10 and 6.
const IOT_TABLES: [Table; 2] = [
    Table {
        name: "readings",
        metrics: 10,
    },
    Table {
        name: "diagnostics",
        metrics: 6,
    },
];

/// Every use case tsbsctl takes, in the order messages list them.
pub const USE_CASES: [UseCase; 3] = [
    UseCase {
        name: "cpu-only",
        tables: &[CPU],
        fixed_rows: true,
        device_tag: "hostname",
        query_use_case: "devops",
        query_types: &DEVOPS_QUERY_TYPES,
    },
    UseCase {
        name: "devops",
        tables: &DEVOPS_TABLES,
        fixed_rows: true,
        device_tag: "hostname",
        query_use_case: "devops",
        query_types: &DEVOPS_QUERY_TYPES,
    },
    UseCase {
        name: "iot",
        tables: &IOT_TABLES,
        fixed_rows: false,
        device_tag: "name",
        query_use_case: "iot",
        query_types: &IOT_QUERY_TYPES,
    },
];

/// The use case named `name`, if tsbsctl takes it.
pub fn use_case(name: &str) -> Option<&'static UseCase> {
    USE_CASES.iter().find(|u| u.name == name)
}

/// The names of the use cases, for messages.
pub fn use_case_names() -> String {
    USE_CASES
        .iter()
        .map(|u| u.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl UseCase {
    /// Table names in the generator's order.
    pub fn table_names(&self) -> Vec<&'static str> {
        self.tables.iter().map(|t| t.name).collect()
    }

    /// Metrics one host writes per interval (all tables), in the influx format.
    pub fn metrics_per_interval(&self) -> u64 {
        self.tables.iter().map(|t| t.metrics).sum()
    }

    /// The table a lone `--table` default means (compaction, flush): the first.
    pub fn first_table(&self) -> &'static str {
        self.tables[0].name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_use_cases_are_the_forks() {
        assert_eq!(use_case_names(), "cpu-only, devops, iot");
        let d = use_case("devops").unwrap();
        assert_eq!(
            d.table_names(),
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
        // cpu 10 + diskio 7 + disk 7 + kernel 5+boot_time + mem 9 + net 8 + nginx 7 +
        // postgresl 16 + redis 30+uptime_in_seconds.
        assert_eq!(d.metrics_per_interval(), 101);
        assert_eq!(use_case("cpu-only").unwrap().metrics_per_interval(), 10);
        assert_eq!(use_case("iot").unwrap().query_use_case, "iot");
        assert!(use_case("cpu-single").is_none());
        for u in USE_CASES {
            let mut sorted = u.query_types.to_vec();
            sorted.sort();
            assert_eq!(sorted, u.query_types, "{}", u.name);
        }
    }
}
