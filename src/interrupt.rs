//! Ctrl-C and SIGTERM. The handler only sets a flag; long operations poll [`check`] and
//! unwind through their normal cleanup (stop servers, mark runs interrupted), and `main`
//! exits 130.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;

use crate::error::{Error, Result};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn flag() -> &'static Arc<AtomicBool> {
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Installs the SIGINT/SIGTERM handlers. Called once by `main`.
pub fn install() {
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // Registration fails only for forbidden signals; these are all allowed.
        let _ = signal_hook::flag::register(sig, Arc::clone(flag()));
    }
}

/// True once Ctrl-C or SIGTERM arrived.
pub fn requested() -> bool {
    flag().load(Ordering::SeqCst)
}

/// Returns an `Interrupted` error once Ctrl-C or SIGTERM arrived.
pub fn check() -> Result<()> {
    if requested() {
        Err(Error::interrupted("interrupted").with_hint("run the command again to continue"))
    } else {
        Ok(())
    }
}

/// Sets the flag by hand (tests, and code that must unwind as if interrupted).
pub fn trigger() {
    flag().store(true, Ordering::SeqCst);
}
