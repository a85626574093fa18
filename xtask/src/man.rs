//! `cargo xtask man [--check]`: the man pages in `docs/man/` (one per
//! command, `neuron-sim.1`, `neuron-sim-run.1`, …), rendered by the
//! binary itself (`neuron-sim man --out-dir DIR`, clap_mangen) so that they
//! follow its command-line definition. `--check` writes nothing and fails
//! when a page is stale, missing or orphaned (the test
//! `crates/neuron-sim/tests/conventions.rs` checks the same).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

/// Where the pages live, from the workspace root.
pub const DIR: &str = "docs/man";

/// Renders the pages into a scratch directory, then updates `docs/man/`
/// (or, with `check`, only compares).
pub fn run(root: &Path, check: bool) -> Result<(), String> {
    let scratch = std::env::temp_dir().join(format!("xtask-man-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    let status = Command::new(super::cargo())
        .args(["run", "-q", "-p", "neuron-sim", "--", "man", "--out-dir"])
        .arg(&scratch)
        .current_dir(root)
        .status()
        .map_err(|e| format!("man: cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("man: `neuron-sim man` failed ({status})"));
    }
    let rendered = pages(&scratch)?;
    let _ = fs::remove_dir_all(&scratch);
    let dir = root.join(DIR);
    let existing = if dir.is_dir() {
        pages(&dir)?
    } else {
        BTreeMap::new()
    };
    let mut stale = Vec::new();
    for (name, roff) in &rendered {
        if existing.get(name) != Some(roff) {
            stale.push(format!("{DIR}/{name}"));
            if !check {
                fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                let p = dir.join(name);
                fs::write(&p, roff).map_err(|e| format!("{}: {e}", p.display()))?;
            }
        }
    }
    for name in existing.keys().filter(|n| !rendered.contains_key(*n)) {
        stale.push(format!("{DIR}/{name} (no such command)"));
        if !check {
            let p = dir.join(name);
            fs::remove_file(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    if check && !stale.is_empty() {
        return Err(format!(
            "stale man pages (run `cargo xtask man`):\n  {}",
            stale.join("\n  ")
        ));
    }
    if !check {
        for s in &stale {
            eprintln!("xtask man: updated {s}");
        }
    }
    Ok(())
}

/// The `*.1` files of `dir` by name.
fn pages(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".1") {
            let bytes = fs::read(entry.path()).map_err(|e| format!("{name}: {e}"))?;
            out.insert(name, bytes);
        }
    }
    Ok(out)
}
