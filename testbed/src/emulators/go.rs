//! Emulator of `go` (see shared/reference/protocols.md).

pub fn main(_args: Vec<String>) -> i32 {
    super::not_emulated("go")
}
