//! `tsbsctl quickstart` (thin: the logic is in [`crate::bench::quickstart`]).

use crate::context::Ctx;
use crate::error::Result;
use crate::output::Outcome;

#[derive(Debug, clap::Args)]
pub struct QuickstartArgs {
    /// HTTP port of the `quickstart` workspace when it is created (default 4000; gRPC, MySQL
    /// and PostgreSQL use the next three).
    #[arg(long, value_name = "P")]
    pub http_port: Option<u16>,
}

pub fn run(ctx: &Ctx, a: QuickstartArgs) -> Result<Outcome> {
    crate::bench::quickstart::run(ctx, a.http_port)
}
