//! Emulators of `tsbs_run_queries_influx` and `tsbs_run_queries_influx3` (protocols.md §1.6-1.8).

pub fn influx_main(_args: Vec<String>) -> i32 {
    super::not_emulated("tsbs_run_queries_influx")
}

pub fn influx3_main(_args: Vec<String>) -> i32 {
    super::not_emulated("tsbs_run_queries_influx3")
}
