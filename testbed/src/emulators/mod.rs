//! The emulated programs. `testbed emulate <tool> args...` lands in [`run`]; every emulator
//! takes its own arguments (without the tool name) and returns its exit code.

pub mod exampledb;
pub mod go;
pub mod greptime;
pub mod influxdb3;
pub mod tsbs_generate;
pub mod tsbs_load;
pub mod tsbs_run;
pub mod tsbs_timescaledb;

/// Runs emulator `tool` with `args`; returns the exit code.
pub fn run(tool: &str, args: Vec<String>) -> i32 {
    match tool {
        "exampledb" => exampledb::main(args),
        "go" => go::main(args),
        "greptime" => greptime::main(args),
        "influxdb3" => influxdb3::main(args),
        "tsbs_generate_data" => tsbs_generate::data_main(args),
        "tsbs_generate_queries" => tsbs_generate::queries_main(args),
        "tsbs_load_greptime" => tsbs_load::greptime_main(args),
        "tsbs_load_influx3" => tsbs_load::influx3_main(args),
        "tsbs_run_queries_influx" => tsbs_run::influx_main(args),
        "tsbs_run_queries_influx3" => tsbs_run::influx3_main(args),
        "tsbs_load_timescaledb" => tsbs_timescaledb::load::main(args),
        "tsbs_run_queries_timescaledb" => tsbs_timescaledb::run::main(args),
        other => {
            eprintln!("testbed: no emulator named {other:?}");
            2
        }
    }
}

/// What an emulator not built yet answers.
#[allow(dead_code)] // kept for emulators still being written
pub(crate) fn not_emulated(tool: &str) -> i32 {
    eprintln!("testbed: the {tool} emulator is not built yet");
    2
}
