//! `tsbsctl workspace lock|unlock|status`: manual holds on database workspaces, and what
//! holds or locks them now.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::lock::{self, Hold, LockState};
use crate::output::Outcome;

/// A product that has database workspaces: `--product` takes the registry's names.
#[derive(Debug, Clone, Copy)]
pub struct Product(&'static str);

impl clap::ValueEnum for Product {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::OnceLock<Vec<Product>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| crate::product::names().into_iter().map(Product).collect())
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0))
    }
}

impl Product {
    fn as_str(self) -> &'static str {
        self.0
    }
}

/// Every product's name (the products that have database workspaces).
fn all_products() -> Vec<&'static str> {
    crate::product::names()
}

#[derive(Debug, clap::Subcommand)]
pub enum WorkspaceCmd {
    /// Hold a database workspace for manual work: other commands that would lock it refuse
    /// (exit 3) unless given the printed token (--hold-token-env VAR or --hold-token-stdin).
    Lock {
        /// Workspace (database) id.
        id: String,
        /// Why you hold it; shown to whoever is refused.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// The product, when both have a workspace with this id.
        #[arg(long, value_enum)]
        product: Option<Product>,
        /// Wait up to SECONDS for a running command to release the workspace.
        #[arg(long, value_name = "SECONDS")]
        wait: Option<u64>,
    },
    /// Release a manual hold.
    #[command(group(clap::ArgGroup::new("how").required(true).args(["hold_token", "hold_token_env", "hold_token_stdin", "force"])))]
    Unlock {
        /// Workspace (database) id.
        id: String,
        /// The token printed by `workspace lock` (visible in `ps`: prefer the next two).
        #[arg(long, value_name = "TOKEN")]
        hold_token: Option<String>,
        /// The token, read from environment variable VAR.
        #[arg(long, value_name = "VAR")]
        hold_token_env: Option<String>,
        /// The token, read from the first line of stdin.
        #[arg(long)]
        hold_token_stdin: bool,
        /// Release without the token (when it is lost; check with the holder first).
        #[arg(long)]
        force: bool,
        /// The product, when both have a workspace with this id.
        #[arg(long, value_enum)]
        product: Option<Product>,
    },
    /// Show holds and live locks.
    Status {
        /// Workspace id (all workspaces when omitted).
        id: Option<String>,
        /// Only this product's workspaces.
        #[arg(long, value_enum)]
        product: Option<Product>,
    },
}

pub fn run(ctx: &Ctx, cmd: WorkspaceCmd) -> Result<Outcome> {
    match cmd {
        WorkspaceCmd::Lock {
            id,
            reason,
            product,
            wait,
        } => lock_cmd(ctx, &id, reason.as_deref(), product, wait),
        WorkspaceCmd::Unlock {
            id,
            hold_token,
            hold_token_env,
            hold_token_stdin,
            force,
            product,
        } => {
            let token = lock::HoldToken::from_flags(hold_token, hold_token_env, hold_token_stdin)
                .as_ref()
                .map(lock::HoldToken::resolve)
                .transpose()?;
            unlock_cmd(ctx, &id, token.as_deref(), force, product)
        }
        WorkspaceCmd::Status { id, product } => status_cmd(ctx, id.as_deref(), product),
    }
}

/// A database workspace directory found on disk.
struct Workspace {
    product: &'static str,
    id: String,
    dir: PathBuf,
}

impl Workspace {
    fn label(&self) -> String {
        format!("workspace {}/{}", self.product, self.id)
    }
}

fn is_workspace_dir(p: &std::path::Path) -> bool {
    p.symlink_metadata().map(|m| m.is_dir()).unwrap_or(false)
}

/// Finds the workspace `id` under one product or both.
fn find(ctx: &Ctx, id: &str, product: Option<Product>) -> Result<Workspace> {
    crate::ids::validate_id("workspace ID", id)?;
    let candidates: Vec<&'static str> = match product {
        Some(p) => vec![p.as_str()],
        None => all_products(),
    };
    let found: Vec<Workspace> = candidates
        .into_iter()
        .map(|p| Workspace {
            product: p,
            id: id.to_string(),
            dir: ctx.root.database(p, id),
        })
        .filter(|w| is_workspace_dir(&w.dir))
        .collect();
    match found.len() {
        1 => Ok(found.into_iter().next().expect("one")),
        0 => {
            let under = match product {
                Some(p) => format!("{}", ctx.root.databases(p.as_str()).display()),
                None => all_products()
                    .iter()
                    .map(|p| ctx.root.databases(p).display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            let lists: Vec<String> = all_products()
                .iter()
                .map(|p| format!("`tsbsctl {p} list`"))
                .collect();
            Err(
                Error::invalid(format!("no workspace {id:?} under {under}")).with_hint(format!(
                    "list workspaces with `tsbsctl workspace status` (or {}), and check --root",
                    lists.join(", ")
                )),
            )
        }
        _ => {
            let names: Vec<&str> = found.iter().map(|w| w.product).collect();
            let flags: Vec<String> = names.iter().map(|p| format!("--product {p}")).collect();
            let who = if names.len() == 2 {
                format!("both {}", names.join(" and "))
            } else {
                names.join(", ")
            };
            Err(Error::invalid(format!("{who} have a workspace {id:?}"))
                .with_hint(format!("say which one with {}", flags.join(" or "))))
        }
    }
}

fn lock_cmd(
    ctx: &Ctx,
    id: &str,
    reason: Option<&str>,
    product: Option<Product>,
    wait: Option<u64>,
) -> Result<Outcome> {
    let ws = find(ctx, id, product)?;
    let (hold, token) = lock::place_hold(
        &ws.dir,
        &ws.label(),
        &ctx.command_line(),
        reason,
        wait.map(Duration::from_secs),
        ctx.reporter.as_ref(),
    )?;
    let mut data = hold_json(&hold);
    data["product"] = json!(ws.product);
    data["workspace"] = json!(ws.id);
    data["path"] = json!(ws.dir);
    data["token"] = json!(token);
    let human = format!(
        "Holding {label} for {holder}{reason}.\n\
         Token: {token}\n\
         Commands that would lock this workspace now refuse (exit 3) without this token. \
         Give it to them out of sight of `ps`: `export {var}={token}` in your shell, then \
         add --hold-token-env {var} (or pipe it to --hold-token-stdin).\n\
         Release it with: tsbsctl workspace unlock {id} --hold-token-env {var}{product}\n",
        var = lock::HOLD_TOKEN_VAR,
        label = ws.label(),
        holder = hold.holder,
        reason = hold
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default(),
        product = product_flag(ctx, &ws),
    );
    Ok(Outcome::new(data, human))
}

/// ` --product X` when the id exists under both products, so the printed command works.
fn product_flag(ctx: &Ctx, ws: &Workspace) -> String {
    let both = all_products()
        .iter()
        .filter(|p| is_workspace_dir(&ctx.root.database(p, &ws.id)))
        .count()
        > 1;
    if both {
        format!(" --product {}", ws.product)
    } else {
        String::new()
    }
}

fn unlock_cmd(
    ctx: &Ctx,
    id: &str,
    token: Option<&str>,
    force: bool,
    product: Option<Product>,
) -> Result<Outcome> {
    let ws = find(ctx, id, product)?;
    let released = lock::release_hold(&ws.dir, &ws.label(), token, force)?;
    let (data_hold, human) = match &released {
        Some(h) => (
            hold_json(h),
            format!(
                "Released{} the hold on {} (held by {}).\n",
                if force { " (forced)" } else { "" },
                ws.label(),
                h.describe()
            ),
        ),
        None => (
            Value::Null,
            format!("Removed the damaged hold file of {}.\n", ws.label()),
        ),
    };
    Ok(Outcome::new(
        json!({
            "product": ws.product,
            "workspace": ws.id,
            "path": ws.dir,
            "forced": force,
            "released": data_hold,
        }),
        human,
    ))
}

fn status_cmd(ctx: &Ctx, id: Option<&str>, product: Option<Product>) -> Result<Outcome> {
    let workspaces = match id {
        Some(id) => vec![find(ctx, id, product)?],
        None => list_all(ctx, product)?,
    };
    let mut rows = Vec::new();
    let mut items = Vec::new();
    for ws in &workspaces {
        let (hold_v, hold_h) = match lock::read_hold(&ws.dir) {
            Ok(Some(h)) => (
                hold_json(&h),
                format!(
                    "held by {} since {}{}",
                    h.holder,
                    h.since,
                    h.reason
                        .as_deref()
                        .map(|r| format!(": {}", lock::printable(r)))
                        .unwrap_or_default()
                ),
            ),
            Ok(None) => (Value::Null, "-".to_string()),
            Err(e) => (
                json!({"error": e.message}),
                format!("damaged: {}", e.message),
            ),
        };
        let state = lock::probe(&lock::lock_path_of(&ws.dir))?;
        let (lock_v, lock_h) = lock_json(&state);
        items.push(json!({
            "product": ws.product,
            "workspace": ws.id,
            "path": ws.dir,
            "hold": hold_v,
            "lock": lock_v,
        }));
        rows.push([format!("{}/{}", ws.product, ws.id), hold_h, lock_h]);
    }
    let human = if rows.is_empty() {
        format!(
            "No database workspaces under {}.\n",
            ctx.root.path().display()
        )
    } else {
        table(&["WORKSPACE", "HOLD", "LOCK"], &rows)
    };
    Ok(Outcome::new(json!({ "workspaces": items }), human))
}

fn list_all(ctx: &Ctx, product: Option<Product>) -> Result<Vec<Workspace>> {
    let products: Vec<&'static str> = match product {
        Some(p) => vec![p.as_str()],
        None => all_products(),
    };
    let mut out = Vec::new();
    for p in products {
        let dir = ctx.root.databases(p);
        let rd = match fs_err::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        let mut ids: Vec<String> = rd
            .flatten()
            .filter(|e| is_workspace_dir(&e.path()))
            .filter_map(|e| e.file_name().into_string().ok())
            // Staging leftovers and other non-ids (".x.copy-...") are not workspaces.
            .filter(|n| crate::ids::validate_id("id", n).is_ok())
            .collect();
        ids.sort();
        out.extend(ids.into_iter().map(|id| Workspace {
            product: p,
            dir: ctx.root.database(p, &id),
            id,
        }));
    }
    Ok(out)
}

fn hold_json(h: &Hold) -> Value {
    // The token digest stays in the hold file; it is of no use to a reader.
    json!({
        "holder": h.holder,
        "host": h.host,
        "pid": h.pid,
        "reason": h.reason,
        "since": h.since,
    })
}

fn lock_json(state: &LockState) -> (Value, String) {
    match state {
        LockState::Free => (json!({"state": "free"}), "free".to_string()),
        LockState::Live(Some(info)) => (
            json!({"state": "live", "holder": info}),
            format!("held by {}", info.describe()),
        ),
        LockState::Live(None) => (
            json!({"state": "live", "holder": null}),
            "held by a process that has not recorded itself".to_string(),
        ),
        LockState::Stale { info, pid_alive } => (
            json!({"state": "stale", "holder": info, "pid_alive": pid_alive}),
            format!(
                "stale lock file (not held): pid {} {} on host {}, `{}` since {}",
                info.pid,
                if *pid_alive {
                    "now belongs to another process"
                } else {
                    "is gone"
                },
                info.host,
                info.command,
                info.started_at
            ),
        ),
    }
}

/// A plain aligned table (last column unpadded).
fn table<const N: usize>(headers: &[&str; N], rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for (i, h) in headers.iter().enumerate() {
        widths[i] = h.chars().count();
    }
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 < N {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            } else {
                s.push_str(c);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(headers.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}
