//! The SQL text the real `tsbs_generate_queries` writes for `--format=greptime`
//! (`cmd/tsbs_generate_queries/databases/greptime/devops.go`) and `--format=influx3`
//! (`databases/influx3/devops.go`) of GreptimeTeam/tsbs, character for character, so the
//! stand-in servers are asked what the real ones are asked (GreptimeDB's lastpoint returns the
//! tags through `last_value(<tag> order by greptime_timestamp)` and no time; its
//! double-groupby groups by `hostname` without returning it; its queries have no `ORDER BY`
//! but groupby-orderby-limit's). The random hosts and windows are drawn by the caller.

/// What a devops query type asks.
pub enum Shape<'a> {
    /// `single-groupby-*`: max of `metrics` per minute for `hosts`.
    SingleGroupby {
        metrics: &'a [&'a str],
        hosts: &'a [String],
    },
    /// `cpu-max-all-*`: max of every metric per hour for `hosts`.
    CpuMaxAll {
        metrics: &'a [&'a str],
        hosts: &'a [String],
    },
    /// `double-groupby-*`: mean of `metrics` per hour and host.
    DoubleGroupby { metrics: &'a [&'a str] },
    /// `groupby-orderby-limit`: the last 5 minutes' max before the window's end.
    GroupbyOrderbyLimit,
    /// `high-cpu-*`: rows with usage_user > 90 (all hosts when `hosts` is empty).
    HighCpu { hosts: &'a [String] },
    /// `lastpoint`: the last row per host.
    Lastpoint,
}

const TAGS: [&str; 10] = [
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
const METRICS: [&str; 10] = [
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
];

/// `--format=greptime`; `start`/`end` are the window's RFC 3339 texts.
pub fn greptime(shape: &Shape, start: &str, end: &str) -> String {
    let hosts_where = |hosts: &[String]| {
        let c: Vec<String> = hosts.iter().map(|h| format!("hostname = '{h}'")).collect();
        format!("({})", c.join(" or "))
    };
    let agg =
        |f: &str, ms: &[&str]| -> Vec<String> { ms.iter().map(|m| format!("{f}({m})")).collect() };
    match shape {
        Shape::SingleGroupby { metrics, hosts } => format!(
            "SELECT {}, date_trunc('minute', greptime_timestamp) from cpu where {} and greptime_timestamp >= '{start}' and greptime_timestamp < '{end}' group by date_trunc('minute', greptime_timestamp)",
            agg("max", metrics).join(", "),
            hosts_where(hosts)
        ),
        // The real generator joins these with "," (no space).
        Shape::CpuMaxAll { metrics, hosts } => format!(
            "SELECT {}, date_trunc('hour', greptime_timestamp) from cpu where {} and greptime_timestamp >= '{start}' and greptime_timestamp < '{end}' group by date_trunc('hour', greptime_timestamp)",
            agg("max", metrics).join(","),
            hosts_where(hosts)
        ),
        Shape::DoubleGroupby { metrics } => format!(
            "SELECT {}, date_trunc('hour', greptime_timestamp) from cpu where greptime_timestamp >= '{start}' and greptime_timestamp < '{end}' group by date_trunc('hour', greptime_timestamp),hostname",
            agg("avg", metrics).join(", ")
        ),
        Shape::GroupbyOrderbyLimit => format!(
            "SELECT max(usage_user), date_trunc('minute', greptime_timestamp) from cpu WHERE greptime_timestamp < '{end}' group by date_trunc('minute', greptime_timestamp) order by date_trunc('minute', greptime_timestamp) desc limit 5"
        ),
        Shape::HighCpu { hosts } => {
            let h = if hosts.is_empty() {
                String::new()
            } else {
                format!("and {}", hosts_where(hosts))
            };
            format!(
                "SELECT * from cpu where usage_user > 90.0 {h} and greptime_timestamp >= '{start}' and greptime_timestamp < '{end}'"
            )
        }
        Shape::Lastpoint => {
            let c: Vec<String> = TAGS
                .iter()
                .chain(METRICS.iter())
                .map(|c| format!("last_value({c} order by greptime_timestamp)"))
                .collect();
            format!("select {} from cpu group by hostname", c.join(", "))
        }
    }
}

/// `--format=influx3`; `start`/`end` are the window's RFC 3339 texts.
pub fn influx3(shape: &Shape, start: &str, end: &str) -> String {
    let hosts_where = |hosts: &[String]| {
        let q: Vec<String> = hosts
            .iter()
            .map(|h| format!("'{}'", h.replace('\'', "''")))
            .collect();
        format!("hostname IN ({})", q.join(", "))
    };
    let agg = |f: &str, ms: &[&str]| -> String {
        ms.iter()
            .map(|m| format!("{f}({m}) AS {f}_{m}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match shape {
        Shape::SingleGroupby { metrics, hosts } => format!(
            "SELECT date_bin(INTERVAL '1 minute', time) AS minute,\n       {}\nFROM cpu\nWHERE {} AND time >= '{start}' AND time < '{end}'\nGROUP BY 1\nORDER BY 1 ASC",
            agg("max", metrics),
            hosts_where(hosts)
        ),
        Shape::CpuMaxAll { metrics, hosts } => format!(
            "SELECT date_bin(INTERVAL '1 hour', time) AS hour,\n       {}\nFROM cpu\nWHERE {} AND time >= '{start}' AND time < '{end}'\nGROUP BY 1\nORDER BY 1 ASC",
            agg("max", metrics),
            hosts_where(hosts)
        ),
        Shape::DoubleGroupby { metrics } => format!(
            "SELECT date_bin(INTERVAL '1 hour', time) AS hour,\n       hostname,\n       {}\nFROM cpu\nWHERE time >= '{start}' AND time < '{end}'\nGROUP BY 1, hostname\nORDER BY 1 ASC, hostname ASC",
            agg("avg", metrics)
        ),
        Shape::GroupbyOrderbyLimit => format!(
            "SELECT date_bin(INTERVAL '1 minute', time) AS minute,\n       max(usage_user) AS max_usage_user\nFROM cpu\nWHERE time < '{end}'\nGROUP BY 1\nORDER BY 1 DESC\nLIMIT 5"
        ),
        Shape::HighCpu { hosts } => {
            let mut p = vec![
                "usage_user > 90.0".to_string(),
                format!("time >= '{start}'"),
                format!("time < '{end}'"),
            ];
            if !hosts.is_empty() {
                p.push(hosts_where(hosts));
            }
            format!(
                "SELECT *\nFROM cpu\nWHERE {}\nORDER BY time ASC, hostname ASC",
                p.join(" AND ")
            )
        }
        Shape::Lastpoint => {
            let mut c = vec![
                "hostname".to_string(),
                "last_value(time ORDER BY time) AS time".to_string(),
            ];
            for col in TAGS.iter().skip(1).chain(METRICS.iter()) {
                c.push(format!("last_value({col} ORDER BY time) AS {col}"));
            }
            format!(
                "SELECT {}\nFROM cpu\nGROUP BY hostname\nORDER BY hostname ASC",
                c.join(",\n       ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queryfile::read;

    fn real(bytes: &[u8]) -> Vec<String> {
        read(bytes)
            .unwrap()
            .into_iter()
            .map(|q| q.raw_query)
            .collect()
    }

    /// Character for character the real generator's (the gob files it wrote).
    #[test]
    fn the_text_is_the_real_generators() {
        let g = real(include_bytes!(
            "../../../tests/fixtures/tsbs-real/queries-greptime-lastpoint.gob"
        ));
        assert_eq!(greptime(&Shape::Lastpoint, "", ""), g[0]);
        let i = real(include_bytes!(
            "../../../tests/fixtures/tsbs-real/queries-influx3-lastpoint.gob"
        ));
        assert_eq!(influx3(&Shape::Lastpoint, "", ""), i[0]);
        // single-groupby-1-1-1, query 0: host_9 from 2023-06-11T20:16:22Z.
        let hosts = vec!["host_9".to_string()];
        let s = Shape::SingleGroupby {
            metrics: &METRICS[..1],
            hosts: &hosts,
        };
        let (a, b) = ("2023-06-11T20:16:22Z", "2023-06-11T21:16:22Z");
        let g = real(include_bytes!(
            "../../../tests/fixtures/tsbs-real/queries-greptime-single-groupby-1-1-1.gob"
        ));
        assert_eq!(greptime(&s, a, b), g[0]);
        let i = real(include_bytes!(
            "../../../tests/fixtures/tsbs-real/queries-influx3-single-groupby-1-1-1.gob"
        ));
        assert_eq!(influx3(&s, a, b), i[0]);
    }
}
