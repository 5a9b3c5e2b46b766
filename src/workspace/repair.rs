//! Which repair to offer (trial-run defect #20): the one that works, and never a command that
//! deletes data when a safer one exists.

use std::path::Path;

use crate::platform::Platform;
use crate::product::Product;
use crate::workspace::Workspace;

/// A workspace whose bound binary checksum (`binary_sha256`) disagrees with its installation,
/// where `file_sha` is the checksum of the installed binary file when known. Reinstalling
/// helps only when the installation itself is damaged (its file or its manifest no longer
/// the release's); when the workspace is bound to another binary, it cannot.
pub fn binary_mismatch(
    root: &crate::paths::Root,
    product: &dyn Product,
    ws: &Workspace,
    file_sha: Option<&str>,
) -> String {
    let m = &ws.manifest;
    let cli = product.cli();
    let id = ws.id();
    let inst = Platform::from_parts(
        m.platform.split_once('-').map(|p| p.0).unwrap_or(""),
        m.platform.split_once('-').map(|p| p.1).unwrap_or(""),
    )
    .ok()
    .map(|p| (crate::install::installed(root, product, &p), p));
    let recorded = inst.as_ref().and_then(|(all, _)| {
        all.iter()
            .find(|i| i.manifest.version == m.version)
            .map(|i| i.manifest.binary_sha256.clone())
    });
    let reinstall = product.install_command(&m.version, true);
    // The file is what the workspace was bound to: the installation's manifest changed.
    if file_sha == Some(m.binary_sha256.as_str()) {
        return format!("the installation's record was changed; {reinstall} (verifies the release again and rewrites it)");
    }
    // The installation still says what the workspace expects: its file was damaged.
    if recorded.as_deref() == Some(m.binary_sha256.as_str()) {
        return reinstall;
    }
    // The workspace is bound to another binary: name the installed version that has it.
    if let Some(other) = inst.as_ref().and_then(|(all, _)| {
        all.iter().find(|i| {
            i.manifest.binary_sha256 == m.binary_sha256 && i.manifest.version != m.version
        })
    }) {
        return format!(
            "workspace {id} is bound to the binary of the installed {} {}, but its manifest says version {}; if {} was edited, set \"version\" back to \"{}\" (reinstalling {} cannot help)",
            product.display_name(),
            other.manifest.version,
            m.version,
            ws.dir.join("manifest.json").display(),
            other.manifest.version,
            m.version
        );
    }
    let copy = if product.has_copy() {
        format!(
            ", or copy its data: {cli} copy --source-database-id {id} --database-id NEW --version {}",
            m.version
        )
    } else {
        String::new()
    };
    format!(
        "workspace {id} is bound to a binary no installed version has; reinstalling {} cannot change that: prepare a new workspace{copy}",
        m.version
    )
}

/// A workspace manifest that cannot be read: the data beside it is untouched, so the repair
/// is the manifest, never `remove` (which deletes the data).
pub fn unreadable_manifest(dir: &Path) -> String {
    format!(
        "restore {} from a backup, or fix it by hand; the data in {} is untouched",
        dir.join("manifest.json").display(),
        dir.join("data").display()
    )
}
