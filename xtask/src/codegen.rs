//! `cargo xtask codegen`: `docs/csr/*.md` from the built-in CSR maps.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Renders every page; writes the changed ones, or (with `check`) reports
/// stale, missing and orphaned files without writing.
pub fn run(root: &Path, check: bool) -> Result<(), String> {
    let catalog = csr::catalog().map_err(|e| e.to_string())?;
    let dir = root.join(csr::docgen::DOCS_DIR);
    let expected = csr::docgen::render_all(catalog);

    let mut stale = Vec::new();
    for (name, contents) in &expected {
        let path = dir.join(name);
        if fs::read_to_string(&path).ok().as_deref() != Some(contents.as_str()) {
            stale.push(format!("{}/{name}", csr::docgen::DOCS_DIR));
            if !check {
                fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                fs::write(&path, contents).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
    }
    // Generated pages whose map no longer exists.
    let wanted: BTreeSet<&str> = expected.keys().map(String::as_str).collect();
    if let Ok(entries) = fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".md") && !wanted.contains(name.as_str()) {
                stale.push(format!("{}/{name} (no map)", csr::docgen::DOCS_DIR));
                if !check {
                    fs::remove_file(entry.path()).map_err(|e| format!("{name}: {e}"))?;
                }
            }
        }
    }

    if check && !stale.is_empty() {
        return Err(format!(
            "stale generated files (run `cargo xtask codegen`):\n  {}",
            stale.join("\n  ")
        ));
    }
    if !check {
        for s in &stale {
            eprintln!("xtask codegen: updated {s}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn committed_docs_are_fresh() {
        run(&crate::project_root(), true).unwrap();
    }

    #[test]
    fn check_reports_then_write_fixes() {
        let root = scratch("codegen");
        let err = run(&root, true).unwrap_err();
        assert!(err.contains("docs/csr/udma_m2s_q.md"), "{err}");
        assert!(err.contains("run `cargo xtask codegen`"), "{err}");
        assert!(!root.join("docs/csr").exists(), "--check must not write");

        run(&root, false).unwrap();
        run(&root, true).unwrap();

        let page = root.join("docs/csr/evt_sem.md");
        fs::write(&page, "edited by hand\n").unwrap();
        fs::write(root.join("docs/csr/old_block.md"), "gone\n").unwrap();
        let err = run(&root, true).unwrap_err();
        assert!(err.contains("evt_sem.md"), "{err}");
        assert!(err.contains("old_block.md (no map)"), "{err}");

        run(&root, false).unwrap();
        run(&root, true).unwrap();
        assert!(!root.join("docs/csr/old_block.md").exists());
        fs::remove_dir_all(&root).unwrap();
    }
}
