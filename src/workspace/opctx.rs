//! [`WorkspaceOpCtx`] on a managed workspace: what a product's own operation on one of its
//! workspaces (outside a benchmark run) reaches of the workspace bookkeeping. The operation
//! decides when to take the lock; the lock is released when the context is dropped.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::context::Ctx;
use crate::error::Result;
use crate::lock::{LockGuard, LockOptions};
use crate::output::SharedReporter;
use crate::product::{Product, ServerStart, WorkspaceOpCtx};
use crate::server::ServerSpec;

use super::{load, lock_workspace, server_spec, Workspace, WorkspaceManifest};

/// Workspace `id` of `product`, opened for one operation.
pub struct OpContext<'a> {
    ctx: &'a Ctx,
    product: &'a dyn Product,
    id: String,
    lock_opts: LockOptions,
    ws: Workspace,
    guard: Option<LockGuard>,
}

impl<'a> OpContext<'a> {
    /// Loads the workspace (a missing one is exit 2); no lock is taken yet.
    pub fn open(
        ctx: &'a Ctx,
        product: &'a dyn Product,
        id: &str,
        lock_opts: &LockOptions,
    ) -> Result<OpContext<'a>> {
        let ws = load(&ctx.root, product, id)?;
        Ok(OpContext {
            ctx,
            product,
            id: id.to_string(),
            lock_opts: lock_opts.clone(),
            ws,
            guard: None,
        })
    }
}

impl WorkspaceOpCtx for OpContext<'_> {
    fn reporter(&self) -> SharedReporter {
        self.ctx.reporter.clone()
    }

    fn lock(&mut self) -> Result<()> {
        if self.guard.is_none() {
            self.guard = Some(lock_workspace(
                self.ctx,
                self.product,
                &self.ws.dir,
                &self.id,
                &self.lock_opts,
            )?);
            self.ws = load(&self.ctx.root, self.product, &self.id)?;
        }
        Ok(())
    }

    fn manifest(&self) -> &WorkspaceManifest {
        &self.ws.manifest
    }

    fn dir(&self) -> &Path {
        &self.ws.dir
    }

    fn logs_dir(&self) -> PathBuf {
        self.ws.logs_dir()
    }

    fn data_dir(&self) -> PathBuf {
        self.ws.data_dir()
    }

    fn record(&mut self, key: &str, value: Value) -> Result<()> {
        self.ws.manifest.extra.insert(key.to_string(), value);
        self.ws.save()
    }

    fn server_spec(&self, start: ServerStart) -> Result<ServerSpec> {
        let mut as_if = self.ws.clone();
        for (k, v) in start.fields {
            as_if.manifest.extra.insert(k, v);
        }
        let mut spec = server_spec(
            &self.ctx.root,
            self.product,
            &as_if,
            start.log,
            start.timing,
            start.kill_orphan,
        )?;
        spec.env.extend(start.env);
        spec.output_filter = Some(start.output_filter);
        Ok(spec)
    }
}
