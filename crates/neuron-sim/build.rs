//! Build facts for `neuron-sim --version` (docs/user-guide.md §1):
//! `NEURON_SIM_COMMIT`, the short hash of the checked-out commit, or
//! `unknown` when the crate is not built from its own git checkout (a
//! source archive, no `git` on PATH); `NEURON_SIM_PROFILE`, the cargo
//! profile's base (`debug` or `release`). Never fails the build.
//!
//! On Linux the `neuron-sim` binary is linked as a position-dependent
//! executable (`-no-pie`): the dynamic loader then has no relative
//! relocations to apply at every start (about 6,300 of them, and a
//! copy-on-write page fault per page of `.data.rel.ro`), which was about a
//! quarter of `neuron-sim --version` (docs/user-guide.md §14, process
//! start-up). Only the binaries are linked so; the libraries, the Python
//! extension and the tests are unchanged.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".to_string());
    let commit = commit(&manifest_dir).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=NEURON_SIM_COMMIT={commit}");
    println!("cargo:rustc-env=NEURON_SIM_PROFILE={profile}");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}

/// Output of `git ARGS` run in `dir`, trimmed; `None` when git is missing
/// or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_string())
}

/// The short commit hash, when this crate's manifest is tracked by the
/// repository around it (a source tree unpacked inside some other
/// repository reports `unknown`, not that repository's commit). Also asks
/// cargo to rebuild when HEAD or the branch it names moves.
fn commit(dir: &Path) -> Option<String> {
    git(dir, &["ls-files", "--error-unmatch", "Cargo.toml"])?;
    for what in ["HEAD", "packed-refs"] {
        watch(dir, what);
    }
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watch(dir, &branch);
    }
    let hash = git(dir, &["rev-parse", "--short=7", "HEAD"])?;
    hash.bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then_some(hash)
        .filter(|h| !h.is_empty())
}

/// `cargo:rerun-if-changed` for a file of the git directory (HEAD, a
/// branch's ref), when it exists: a missing path would rerun this script
/// on every build.
fn watch(dir: &Path, name: &str) {
    if let Some(p) = git(dir, &["rev-parse", "--git-path", name]) {
        let p = dir.join(p);
        if p.is_file() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}
