fn main() {
    eprintln!("usage: testbed serve");
    std::process::exit(2);
}
