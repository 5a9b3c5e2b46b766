//! Makes `cargo test --workspace` build the `testbed` binary beside `tsbsctl`, where the
//! integration tests look for it.

#[test]
fn testbed_binary_is_built() {
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_testbed"));
    assert!(bin.exists(), "{}", bin.display());
}
