//! A product's own operation (`bench <product> <operation>`, [`crate::product::ext`]): its
//! own run directory (kind `operation`, phase the operation's name) under the workspace lock,
//! in which the product's code runs through [`crate::product::OpCtx`] (implemented by
//! [`Bench`] in `compact.rs`). Nothing here names a product or an operation.

use serde_json::json;

use super::target::Target;
use super::{Bench, Phase, Request};
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::output::{Event, Outcome};
use crate::paths::Root;
use crate::product::ext::Operation;
use crate::run::{NewRun, RunDir, RunKind};

pub fn run(ctx: &Ctx, root: Root, target: Target, req: &Request) -> Result<Outcome> {
    let op = operation_of(&target, req)?;
    if target.managed().is_none() {
        return Err(Error::invalid(format!(
            "`bench {} {}` works on a managed workspace",
            target.entry.name, op.name
        ))
        .with_hint("pass --database-id ID instead of --url"));
    }
    let mut workload = serde_json::Map::new();
    workload.insert("operation".into(), op.name.into());
    workload.extend(req.product_values.clone());
    let run = RunDir::create(
        &root,
        NewRun {
            product: target.entry.name,
            edition: None,
            kind: RunKind::Operation,
            phase: op.name,
            run_id: req.run_id.as_deref(),
            command: ctx.command_line(),
            flags: req.flags.clone(),
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
    let mut b = Bench::maintenance(ctx, root, Phase::Operation, req, target, run);
    let result = b.operation(op);
    b.conclude(result)
}

/// The operation the request names, of the target's product (exit 2 when it has none).
fn operation_of(target: &Target, req: &Request) -> Result<&'static Operation> {
    let name = req.operation.unwrap_or_default();
    target
        .product
        .bench_ext()
        .and_then(|x| x.operation(name))
        .ok_or_else(|| {
            Error::invalid(format!(
                "{} has no operation {name:?}",
                target.entry.display
            ))
            .with_hint(format!("see `tsbsctl bench {} --help`", target.entry.name))
        })
}

impl Bench<'_> {
    fn operation(&mut self, op: &Operation) -> Result<()> {
        self.run.manifest.server = self.target.server_pin();
        self.run.manifest.data_state = self.target.data_state();
        self.run.save()?;
        let values = self.req.product_values.clone();
        (op.run)(self, &values)
    }
}
