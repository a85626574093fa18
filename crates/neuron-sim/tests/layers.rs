//! The layer rule of ARCHITECTURE.md ("Layers point down only"), checked:
//! every crate under `crates/` has a code-map heading with its layer
//! (`### \`crates/NAME\` (Ln)`), and no crate's `[dependencies]` names a
//! workspace crate of a higher layer. Dev-dependencies are free (tests may
//! drive a crate from above). `(tools)` crates may depend on anything and
//! nothing may depend on them.

use std::collections::BTreeMap;
use std::path::PathBuf;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Crate name → layer (None for `tools`), from ARCHITECTURE.md's headings.
fn layers() -> BTreeMap<String, Option<u8>> {
    let text = std::fs::read_to_string(workspace().join("ARCHITECTURE.md"))
        .unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"));
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("### `crates/") else {
            continue;
        };
        let Some((name, tail)) = rest.split_once('`') else {
            continue;
        };
        let tag = tail.trim().trim_start_matches('(').trim_end_matches(')');
        let layer = if tag == "tools" {
            None
        } else {
            let n = tag
                .strip_prefix('L')
                .and_then(|n| n.parse::<u8>().ok())
                .unwrap_or_else(|| panic!("ARCHITECTURE.md: `crates/{name}` has layer `{tag}`"));
            Some(n)
        };
        out.insert(name.to_string(), layer);
    }
    out
}

/// The package name of `crates/DIR` and the workspace crates its
/// `[dependencies]` table names (`foo.workspace = true`, `foo = { … }`).
fn manifest(dir: &str) -> (String, Vec<String>) {
    let path = workspace().join("crates").join(dir).join("Cargo.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut name = String::new();
    let mut deps = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        if section == "[package]"
            && let Some(v) = line.strip_prefix("name")
        {
            name = v
                .trim_start_matches([' ', '='])
                .trim_matches('"')
                .to_string();
        }
        if section == "[dependencies]" && !line.is_empty() && !line.starts_with('#') {
            let key = line
                .split(['=', '.', ' '])
                .next()
                .unwrap_or_default()
                .to_string();
            deps.push(key);
        }
    }
    (name, deps)
}

#[test]
fn dependencies_point_down_the_layers_of_architecture_md() {
    let layers = layers();
    let dirs: Vec<String> = std::fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let mut problems = Vec::new();
    // Layers by package name (a folder may name its package otherwise).
    let mut by_name = BTreeMap::new();
    let mut crates = Vec::new();
    for dir in &dirs {
        let Some(&own) = layers.get(dir) else {
            problems.push(format!(
                "crates/{dir} has no `### \\`crates/{dir}\\` (Ln)` heading in ARCHITECTURE.md"
            ));
            continue;
        };
        let (name, deps) = manifest(dir);
        by_name.insert(name.clone(), own);
        crates.push((name, own, deps));
    }
    let mut checked = 0;
    for (name, own, deps) in &crates {
        for dep in deps {
            // Only workspace crates have layers; the rest are third-party.
            let Some(&theirs) = by_name.get(dep) else {
                continue;
            };
            checked += 1;
            match (own, theirs) {
                (_, None) => problems.push(format!("{name} depends on the tools crate {dep}")),
                (Some(a), Some(b)) if b > *a => problems.push(format!(
                    "{name} (L{a}) depends on {dep} (L{b}), a higher layer"
                )),
                _ => {}
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} workspace dependencies found: parsing broke"
    );
    assert!(
        problems.is_empty(),
        "layer rule broken:\n{}",
        problems.join("\n")
    );
}
