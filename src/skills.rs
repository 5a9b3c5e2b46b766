//! The agent skills: canonical minijinja sources in `skills/` (embedded at build time), rendered
//! into `.agents/skills/` for this repository or into a user-level skills directory for Codex or
//! Claude Code. Shared fragments (`skills/_shared/`) are written once and included.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::{context, Environment};

use crate::error::{Error, Result};
use crate::fsutil;

include!(concat!(env!("OUT_DIR"), "/skill_sources.rs"));

/// Directory of shared fragments: included by skills, never rendered on their own.
const SHARED_DIR: &str = "_shared/";

/// Who will read the rendered skills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `.agents/skills` inside a tsbsctl checkout: the tool is `./target/release/tsbsctl`.
    Repo,
    /// A user-level install: `tsbsctl` is on PATH.
    User,
}

/// The names of the skills (directories under `skills/` other than `_shared`).
pub fn skill_names() -> Vec<String> {
    let mut names: Vec<String> = SKILL_SOURCES
        .iter()
        .filter(|(p, _)| !p.starts_with(SHARED_DIR))
        .filter_map(|(p, _)| p.split('/').next().map(str::to_string))
        .collect();
    names.dedup();
    names
}

/// Renders every skill file: relative path under the skills directory -> contents.
pub fn render(flavor: Flavor) -> Result<BTreeMap<String, String>> {
    let mut env = Environment::new();
    env.set_keep_trailing_newline(true);
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    for (path, src) in SKILL_SOURCES {
        env.add_template(path, src)
            .map_err(|e| Error::failed(format!("skill template {path} does not parse: {e}")))?;
    }
    let tsbsctl = match flavor {
        Flavor::Repo => "./target/release/tsbsctl",
        Flavor::User => "tsbsctl",
    };
    let ctx = context! { tsbsctl => tsbsctl, repo => flavor == Flavor::Repo };
    let mut out = BTreeMap::new();
    for (path, _) in SKILL_SOURCES
        .iter()
        .filter(|(p, _)| !p.starts_with(SHARED_DIR))
    {
        let tmpl = env
            .get_template(path)
            .map_err(|e| Error::failed(e.to_string()))?;
        let text = tmpl
            .render(&ctx)
            .map_err(|e| Error::failed(format!("could not render skill {path}: {e}")))?;
        out.insert(path.to_string(), text);
    }
    Ok(out)
}

/// Files under `dest` that differ from, are missing from, or are extra to the rendering.
pub fn drift(dest: &Path, rendered: &BTreeMap<String, String>) -> Vec<String> {
    let mut problems = Vec::new();
    for (rel, text) in rendered {
        match std::fs::read_to_string(dest.join(rel)) {
            Ok(on_disk) if &on_disk == text => {}
            Ok(_) => problems.push(format!("{rel} differs")),
            Err(_) => problems.push(format!("{rel} is missing")),
        }
    }
    for name in skill_names() {
        for f in list_files(&dest.join(&name)) {
            let rel = format!("{name}/{f}");
            if !rendered.contains_key(&rel) {
                problems.push(format!("{rel} is not rendered from skills/"));
            }
        }
    }
    problems
}

/// Writes the rendered skills under `dest`, one skill directory at a time: each is staged beside
/// its final place and swapped in by rename, so an agent never reads a half-written skill.
pub fn write(dest: &Path, rendered: &BTreeMap<String, String>) -> Result<Vec<PathBuf>> {
    fs_err::create_dir_all(dest)?;
    let mut written = Vec::new();
    for name in skill_names() {
        let target = dest.join(&name);
        fsutil::clean_staging(&target, "render")?;
        fsutil::clean_staging(&target, "old")?;
        let staging = fsutil::staging_path(&target, "render")?;
        for (rel, text) in rendered
            .iter()
            .filter(|(r, _)| r.starts_with(&format!("{name}/")))
        {
            let path = staging.join(rel.strip_prefix(&format!("{name}/")).unwrap_or(rel));
            if let Some(parent) = path.parent() {
                fs_err::create_dir_all(parent)?;
            }
            fs_err::write(&path, text)?;
        }
        if target.exists() {
            let old = fsutil::staging_path(&target, "old")?;
            fsutil::rename_durable(&target, &old)?;
            fsutil::rename_durable(&staging, &target)?;
            fs_err::remove_dir_all(&old)?;
        } else {
            fsutil::rename_durable(&staging, &target)?;
        }
        written.push(target);
    }
    Ok(written)
}

/// The files under `dir` as sorted relative paths (symlinks are not followed).
fn list_files(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .flatten()
        .filter(|e| !e.file_type().is_dir())
        .filter_map(|e| {
            e.path()
                .strip_prefix(dir)
                .ok()
                .map(|r| r.to_string_lossy().into_owned())
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_skill_has_frontmatter_naming_its_directory() {
        let rendered = render(Flavor::Repo).unwrap();
        let names = skill_names();
        assert_eq!(names.len(), 12, "{names:?}");
        for name in &names {
            let skill = &rendered[&format!("{name}/SKILL.md")];
            assert!(skill.starts_with(&format!("---\nname: {name}\n")), "{name}");
            assert!(
                !skill.contains("{{"),
                "{name} has an unrendered placeholder"
            );
        }
    }
}
