//! The testbed binary: `testbed serve` runs the release mirror by hand; `testbed emulate
//! <tool> ...` is what the wrapper scripts inside the stand-in archives exec.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = match args.get(1).map(String::as_str) {
        _ => {
            eprintln!("usage: testbed serve | testbed emulate <tool> [args...]");
            2
        }
    };
    std::process::exit(code);
}
