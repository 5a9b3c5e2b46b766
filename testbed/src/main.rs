//! The testbed binary: `testbed serve` runs the release mirror by hand; `testbed emulate
//! <tool> ...` is what the wrapper scripts inside the stand-in archives exec.

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let code = if args.first().map(String::as_str) == Some("emulate") && args.len() >= 2 {
        args.remove(0);
        let tool = args.remove(0);
        testbed::emulators::run(&tool, args)
    } else if args.first().map(String::as_str) == Some("serve") {
        args.remove(0);
        testbed::catalog::serve_main(args)
    } else {
        eprintln!("usage: testbed serve | testbed emulate <tool> [args...]");
        2
    };
    std::process::exit(code);
}
