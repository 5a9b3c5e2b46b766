//! Emulators of `tsbs_load_greptime` and `tsbs_load_influx3` (protocols.md §1.3-1.5).

pub fn greptime_main(_args: Vec<String>) -> i32 {
    super::not_emulated("tsbs_load_greptime")
}

pub fn influx3_main(_args: Vec<String>) -> i32 {
    super::not_emulated("tsbs_load_influx3")
}
