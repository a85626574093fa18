//! Repository automation, run as `cargo xtask <command>` (alias in
//! `.cargo/config.toml`).
//!
//! - `codegen [--check]`: render `docs/csr/*.md` from `csr-maps/*.json`;
//!   `--check` writes nothing and fails when a file is stale.
//! - `ci`: the checks CI runs (fmt, clippy, tests).
//! - `test [--python-only] [-- PYTEST_ARGS]`: the README's test command:
//!   `cargo test --workspace`, then the Python package's pytest suite in a
//!   virtual environment under the target directory (`pytest.rs`).
//! - `bench [ARGS..]`: the speed benchmarks, one after the other, each given
//!   `-- ARGS..`: `cargo bench -p soc --bench dma` (the DMA model,
//!   `crates/soc/benches/dma/`), then `cargo bench -p host-exec --bench
//!   host` (ioctl bus and runtime copy-in, `crates/host-exec/benches/host.rs`),
//!   then `cargo bench -p timeline --bench export` (the Perfetto export of a
//!   1 M-descriptor run, `crates/timeline/benches/export.rs`), then `cargo
//!   bench -p neuron-sim --bench run` (the whole `neuron-sim run` process on
//!   the chip trace, `crates/neuron-sim/benches/run.rs`).
//! - `fuzz [--seconds N] [--target T] [--seed S] [--release] [--list]`: the
//!   fuzz campaign (`docs/fuzzing.md`), every target (or T) for N seconds.
//! - `rss [--gib-per-stack N]`: peak RSS of `neuron-sim run` on a
//!   generated chip trace with N GiB (default 1) of payload per HBM stack,
//!   under `/usr/bin/time -v`, against the bytes it touches (`rss.rs`).
//! - `man [--check]`: the man pages in `docs/man/`, rendered by `neuron-sim
//!   man --out-dir` (`man.rs`); `--check` fails when one is stale.
//! - `schemas [--check]`: the JSON Schemas in `docs/schemas/`, rendered by
//!   `neuron-sim schema --out-dir` (`schemas.rs`); `--check` fails when one
//!   is stale.
//! - `calibrate [ARGS..]`: run the calibration traces (`traces/calib/`) and
//!   rewrite the calibration table of `docs/timing.md`
//!   (`cargo run --release -p neuron-sim -- calibrate --write docs/timing.md ARGS..`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

mod codegen;
mod fuzz;
mod man;
mod pytest;
mod rss;
mod schemas;

#[derive(Debug, Parser)]
#[command(name = "xtask", about = "neuron-sim repository automation")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Regenerate docs/csr/*.md from csr-maps/*.json.
    Codegen {
        /// Do not write; exit non-zero listing the stale files.
        #[arg(long)]
        check: bool,
    },
    /// Regenerate the man pages in docs/man/ (`neuron-sim man --out-dir`).
    Man {
        /// Do not write; exit non-zero listing the stale pages.
        #[arg(long)]
        check: bool,
    },
    /// Regenerate the JSON Schemas in docs/schemas/ (`neuron-sim schema
    /// --out-dir`).
    Schemas {
        /// Do not write; exit non-zero listing the stale schemas.
        #[arg(long)]
        check: bool,
    },
    /// Run the CI checks: fmt, clippy (deny warnings), tests.
    Ci,
    /// Run the tests: `cargo test --workspace`, then the Python package's
    /// pytest suite (a virtual environment in the target directory, the
    /// package built by maturin, numpy, ml_dtypes, pytest).
    Test {
        /// Skip `cargo test --workspace`.
        #[arg(long)]
        python_only: bool,
        /// Passed to pytest.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        pytest_args: Vec<String>,
    },
    /// Run the speed benchmarks: `cargo bench -p soc --bench dma -- ARGS`,
    /// `cargo bench -p host-exec --bench host -- ARGS`, `cargo bench -p
    /// timeline --bench export -- ARGS`, then `cargo bench -p neuron-sim
    /// --bench run -- ARGS`.
    Bench {
        /// Passed to each benchmark binary (divan: a name filter, `--list`,
        /// `--sample-count N`, ...).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the fuzz campaign (docs/fuzzing.md): every target, or one, for
    /// N seconds each; findings are saved under target/fuzz-findings/.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Only this target (`--list` names them).
        #[arg(long)]
        target: Option<String>,
        /// Seed of the random sequence (default: the short run's).
        #[arg(long)]
        seed: Option<u64>,
        /// Optimised build: more inputs per second.
        #[arg(long)]
        release: bool,
        /// List the targets.
        #[arg(long)]
        list: bool,
    },
    /// Peak RSS of `neuron-sim run` on a generated chip trace with N GiB of
    /// payload per HBM stack (under /usr/bin/time -v) against the bytes it
    /// touches; the budget is touched bytes + 10 %.
    Rss {
        /// GiB of source per HBM stack (4 stacks, 8 cores).
        #[arg(long, default_value_t = 1)]
        gib_per_stack: u64,
    },
    /// Run the calibration traces and rewrite the table in docs/timing.md
    /// (`neuron-sim calibrate --write docs/timing.md`, release build).
    Calibrate {
        /// Passed to `neuron-sim calibrate` (e.g. `--json`, `--jobs 1`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Codegen { check } => codegen::run(&project_root(), check),
        Cmd::Man { check } => man::run(&project_root(), check),
        Cmd::Schemas { check } => schemas::run(&project_root(), check),
        Cmd::Ci => ci(&project_root()),
        Cmd::Test {
            python_only,
            pytest_args,
        } => pytest::test(&project_root(), !python_only, &pytest_args),
        Cmd::Bench { args } => bench(&project_root(), &args),
        Cmd::Calibrate { args } => calibrate(&project_root(), &args),
        Cmd::Rss { gib_per_stack } => rss::run(&project_root(), gib_per_stack),
        Cmd::Fuzz {
            seconds,
            target,
            seed,
            release,
            list,
        } => fuzz::run(
            &project_root(),
            &fuzz::Options {
                seconds,
                target,
                seed,
                release,
                list,
            },
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate's directory).
fn project_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The `cargo` that invoked us, or `cargo` from PATH.
fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// One CI step: a cargo invocation with extra environment.
struct Step {
    name: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

const CI_STEPS: &[Step] = &[
    Step {
        name: "fmt",
        args: &["fmt", "--all", "--", "--check"],
        env: &[],
    },
    Step {
        name: "clippy",
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
    },
];

/// `neuron-sim calibrate --write docs/timing.md ARGS` from the workspace
/// root (release build: under a second; the debug binary takes ~5 s).
fn calibrate(root: &Path, args: &[String]) -> Result<(), String> {
    let status = Command::new(cargo())
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            "neuron-sim",
            "--",
            "calibrate",
        ])
        .args(["--dir", "traces/calib", "--write", "docs/timing.md"])
        .args(args)
        .current_dir(root)
        .status()
        .map_err(|e| format!("calibrate: cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "calibrate: a row is outside its check or a trace failed ({status})"
        ))
    }
}

/// The benchmark targets `bench` runs, in order: (package, bench target).
const BENCH_TARGETS: &[(&str, &str)] = &[
    ("soc", "dma"),
    ("host-exec", "host"),
    ("timeline", "export"),
    ("neuron-sim", "run"),
];

/// Runs every target of [`BENCH_TARGETS`] with `args`; stops at the first
/// that fails.
fn bench(root: &Path, args: &[String]) -> Result<(), String> {
    for (package, target) in BENCH_TARGETS {
        eprintln!("xtask bench: cargo bench -p {package} --bench {target}");
        let status = Command::new(cargo())
            .args(["bench", "-p", package, "--bench", target, "--"])
            .args(args)
            .current_dir(root)
            .status()
            .map_err(|e| format!("bench: cannot run cargo: {e}"))?;
        if !status.success() {
            return Err(format!("bench {package}/{target} failed ({status})"));
        }
    }
    Ok(())
}

fn ci(root: &Path) -> Result<(), String> {
    for step in CI_STEPS {
        eprintln!("xtask ci: cargo {}", step.args.join(" "));
        let status = Command::new(cargo())
            .args(step.args)
            .envs(step.env.iter().copied())
            .current_dir(root)
            .status()
            .map_err(|e| format!("{}: cannot run cargo: {e}", step.name))?;
        if !status.success() {
            return Err(format!("{} failed ({status})", step.name));
        }
    }
    pytest::test(root, true, &[])
}
