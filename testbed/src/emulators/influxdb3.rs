//! Emulator of `influxdb3` (see shared/reference/protocols.md).

pub fn main(_args: Vec<String>) -> i32 {
    super::not_emulated("influxdb3")
}
