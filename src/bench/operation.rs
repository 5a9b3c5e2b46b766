//! A product's own operation (`bench <product> <operation>`, [`crate::product::ext`]): its
//! own run directory (of the kind the operation declares, else `operation`; phase the
//! operation's name) under the workspace lock, in which the product's code runs through
//! [`crate::product::OpCtx`] (implemented by [`Bench`] in `maintenance.rs`). What the
//! operation checks first, the table it needs and the workload it records are its own
//! declarations. Nothing here names a product or an operation.

use serde_json::json;

use super::target::Target;
use super::{Bench, Plan};
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::output::{Event, Outcome};
use crate::product::ext::Operation;
use crate::run::{NewRun, RunDir, RunKind};

/// `ctx`'s reporter is `early` (what it tells is written into the run once it exists) until
/// the run is created.
pub fn run(
    ctx: &Ctx,
    plan: &Plan,
    op: &'static Operation,
    target: Target,
    early: &crate::run::EarlyEvents,
) -> Result<Outcome> {
    let values = &plan.product;
    let Some(m) = target.managed() else {
        return Err(Error::invalid(format!(
            "`bench {} {}` works on a managed workspace",
            target.entry.name, op.name
        ))
        .with_hint("pass --database-id ID instead of --url"));
    };
    // Before the run exists: what the workspace's version cannot run, the table it needs.
    (op.check)(&m.ws.manifest.version, values)?;
    if let Some(t) = op.table {
        super::preflight::check_operation_table(&target, op.name, t.flag, &(t.of)(values))?;
    }
    let workload = match op.workload {
        Some(record) => record(values),
        None => {
            let mut w = serde_json::Map::new();
            w.insert("operation".into(), op.name.into());
            w.extend(values.clone());
            w
        }
    };
    let run = RunDir::create(
        &plan.root,
        NewRun {
            product: target.entry.name,
            variant: None,
            kind: RunKind::Operation(op.run_kind()),
            phase: op.name,
            run_id: plan.run_id.as_deref(),
            command: ctx.command_line(),
            flags: plan.flags.clone(),
            target: target.to_run_target()?,
            workload: serde_json::from_value(json!(workload))?,
            host_data_dir: target.data_dir(),
        },
        ctx.reporter.as_ref(),
    )?;
    let ctx = &super::recording(&ctx.with_reporter(early.inner()), &run, &target, early);
    ctx.reporter.event(&Event::RunIn {
        operation: Some(op.noun().to_string()),
        run: run.id().to_string(),
        dir: run.dir.clone(),
    });
    let mut b = Bench::maintenance(ctx, plan, target, run);
    let result = b.operation(op);
    b.conclude(result)
}

impl Bench<'_> {
    /// Runs the product's operation, its server pin and data state recorded first.
    fn operation(&mut self, op: &Operation) -> Result<()> {
        self.run.manifest.server = self.target.server_pin();
        self.run.manifest.data_state = self.target.data_state();
        self.run.save()?;
        let values = self.plan.product.clone();
        (op.run)(self, &values)
    }
}
