//! `cargo xtask test`: the README's test command. `cargo test --workspace`,
//! then the Python package (crates/py, docs/python.md): a virtual
//! environment under the target directory (`py-venv`), the package built
//! into it by maturin with the `dev` profile (it reuses the crates the Rust
//! tests just built, so CI pays only for the extension itself), numpy,
//! ml_dtypes, pytest and mypy (the type stubs' tests) from the package
//! index, then pytest on `crates/py/tests`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `program args` in `dir`; an error names the step.
fn run(step: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask test: {step}");
    let status = cmd
        .status()
        .map_err(|e| format!("{step}: cannot start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status})"))
    }
}

/// The cargo target directory (`CARGO_TARGET_DIR` or `<root>/target`).
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// The Python 3 to make the environment with: `$PYTHON`, else `python3`.
fn python() -> std::ffi::OsString {
    std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into())
}

pub(crate) fn test(root: &Path, rust: bool, pytest_args: &[String]) -> Result<(), String> {
    if rust {
        run(
            "cargo test --workspace",
            Command::new(crate::cargo())
                .args(["test", "--workspace"])
                .env("INSTA_UPDATE", "no")
                .current_dir(root),
        )?;
    }
    let target = target_dir(root);
    let venv = target.join("py-venv");
    let bin = venv.join("bin");
    if !bin.join("python").exists() {
        run(
            "python3 -m venv",
            Command::new(python()).arg("-m").arg("venv").arg(&venv),
        )?;
    }
    let py = bin.join("python");
    run(
        "pip install maturin numpy ml_dtypes pytest mypy",
        Command::new(&py).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "maturin>=1.5,<2",
            "numpy",
            "ml_dtypes",
            "pytest",
            // The stubs' checks (tests/test_stubs.py: stubtest, --strict).
            "mypy",
        ]),
    )?;
    // `maturin develop` installs into the environment named by
    // VIRTUAL_ENV; the dev profile shares the test build's crates.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.clone()];
    paths.extend(std::env::split_paths(&path));
    let path = std::env::join_paths(paths).map_err(|e| e.to_string())?;
    run(
        "maturin develop --profile dev",
        Command::new(bin.join("maturin"))
            .args(["develop", "--profile", "dev", "--quiet"])
            .env("VIRTUAL_ENV", &venv)
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(root.join("crates/py")),
    )?;
    run(
        "pytest crates/py/tests",
        Command::new(&py)
            .args(["-m", "pytest", "crates/py/tests", "-q"])
            .args(pytest_args)
            .env("NEURON_SIM_CLI", target.join("debug").join("neuron-sim"))
            .current_dir(root),
    )
}
