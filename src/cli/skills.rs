//! `tsbsctl skills render|install`.

use std::path::PathBuf;

use serde_json::json;

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::output::Outcome;
use crate::skills::{self, Flavor};

#[derive(Debug, clap::Subcommand)]
pub enum SkillsCmd {
    /// Render skills/ into .agents/skills of this checkout (what Codex and Claude Code read).
    Render {
        /// Where to write (default: .agents/skills under the current directory).
        #[arg(long, value_name = "DIR")]
        dest: Option<PathBuf>,
        /// Write nothing; exit 4 if the destination differs from what skills/ renders.
        #[arg(long)]
        check: bool,
    },
    /// Install the skills into a user-level skills directory, for use outside this repository.
    Install {
        /// Which agent: codex (~/.agents/skills) or claude (~/.claude/skills).
        #[arg(long, value_enum)]
        agent: Agent,
        /// Install here instead of the agent's user-level directory.
        #[arg(long, value_name = "DIR")]
        dest: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Agent {
    Codex,
    Claude,
}

pub fn run(_ctx: &Ctx, cmd: SkillsCmd) -> Result<Outcome> {
    match cmd {
        SkillsCmd::Render { dest, check } => {
            let dest = match dest {
                Some(d) => d,
                None => default_repo_dest()?,
            };
            let rendered = skills::render(Flavor::Repo)?;
            if check {
                let drift = skills::drift(&dest, &rendered);
                if !drift.is_empty() {
                    return Err(Error::integrity(format!(
                        "{} differs from what skills/ renders: {}",
                        dest.display(),
                        drift.join("; ")
                    ))
                    .with_hint("run `tsbsctl skills render` and commit the result"));
                }
                return Ok(Outcome::new(
                    json!({"dest": dest, "in_sync": true, "skills": skills::skill_names()}),
                    format!("{} is in sync with skills/", dest.display()),
                ));
            }
            let written = skills::write(&dest, &rendered)?;
            Ok(Outcome::new(
                json!({"dest": dest, "skills": skills::skill_names(), "files": rendered.len()}),
                format!("rendered {} skills into {}", written.len(), dest.display()),
            ))
        }
        SkillsCmd::Install { agent, dest } => {
            let dest = match dest {
                Some(d) => d,
                None => {
                    let home = std::env::var_os("HOME").map(PathBuf::from).ok_or_else(|| {
                        Error::invalid("HOME is not set").with_hint("pass --dest DIR")
                    })?;
                    match agent {
                        Agent::Codex => home.join(".agents").join("skills"),
                        Agent::Claude => home.join(".claude").join("skills"),
                    }
                }
            };
            let rendered = skills::render(Flavor::User)?;
            let written = skills::write(&dest, &rendered)?;
            Ok(Outcome::new(
                json!({"dest": dest, "agent": format!("{agent:?}").to_lowercase(), "skills": skills::skill_names()}),
                format!(
                    "installed {} skills into {} (they call `tsbsctl` on PATH)",
                    written.len(),
                    dest.display()
                ),
            ))
        }
    }
}

/// `.agents/skills` of the checkout around the current directory: the nearest ancestor that
/// holds `skills/_shared` (the canonical sources); else the current directory.
fn default_repo_dest() -> Result<PathBuf> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::failed(format!("could not read the current directory: {e}")))?;
    let top = cwd
        .ancestors()
        .find(|d| d.join("skills").join("_shared").is_dir())
        .unwrap_or(&cwd)
        .to_path_buf();
    Ok(top.join(".agents").join("skills"))
}
