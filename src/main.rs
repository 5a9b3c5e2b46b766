fn main() {
    std::process::exit(tsbsctl::cli::main_with_args(std::env::args_os().collect()));
}
