//! Emulators of `tsbs_generate_data` and `tsbs_generate_queries` (protocols.md §1.1-1.2).

pub fn data_main(_args: Vec<String>) -> i32 {
    super::not_emulated("tsbs_generate_data")
}

pub fn queries_main(_args: Vec<String>) -> i32 {
    super::not_emulated("tsbs_generate_queries")
}
