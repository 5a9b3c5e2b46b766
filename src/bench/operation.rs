//! A product's own operation (`bench <product> <operation>`, [`crate::product::ext`]): its
//! own run directory (kind `operation`, phase the operation's name) under the workspace lock,
//! in which the product's code runs through [`crate::product::OpCtx`] (implemented by
//! [`Bench`] in `compact.rs`). Nothing here names a product or an operation.

use serde_json::json;

use super::target::Target;
use super::{Bench, Plan};
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::output::{Event, Outcome};
use crate::product::ext::Operation;
use crate::run::{NewRun, RunDir, RunKind};

pub fn run(ctx: &Ctx, plan: &Plan, op: &Operation, target: Target) -> Result<Outcome> {
    if target.managed().is_none() {
        return Err(Error::invalid(format!(
            "`bench {} {}` works on a managed workspace",
            target.entry.name, op.name
        ))
        .with_hint("pass --database-id ID instead of --url"));
    }
    let mut workload = serde_json::Map::new();
    workload.insert("operation".into(), op.name.into());
    workload.extend(plan.product.clone());
    let run = RunDir::create(
        &plan.root,
        NewRun {
            product: target.entry.name,
            variant: None,
            kind: RunKind::Operation,
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
    let ctx = &super::recording(ctx, &run, &target);
    ctx.reporter.event(&Event::RunIn {
        operation: Some(op.name.to_string()),
        run: run.id().to_string(),
        dir: run.dir.clone(),
    });
    let mut b = Bench::maintenance(ctx, plan, target, run);
    let result = b.operation(op);
    b.conclude(result)
}

impl Bench<'_> {
    fn operation(&mut self, op: &Operation) -> Result<()> {
        self.run.manifest.server = self.target.server_pin();
        self.run.manifest.data_state = self.target.data_state();
        self.run.save()?;
        let values = self.plan.product.clone();
        (op.run)(self, &values)
    }
}
