//! `cargo xtask fuzz [--seconds N] [--target T] [--seed S] [--release]`:
//! the fuzz campaign of `docs/fuzzing.md`, each target for N seconds. A
//! target is a test that runs the `fuzz` crate's harness; this runs it
//! with `NEURON_FUZZ_SECONDS` and `NEURON_FUZZ_SEED` set, one after the
//! other, and fails at the end if any target found something.

use std::path::Path;
use std::process::Command;

/// Every target: (name, package, test arguments before `--`, test name).
pub const TARGETS: &[(&str, &str, &[&str], &str)] = &[
    ("trace", "fuzz", &["--test", "short"], "fuzz_trace"),
    ("desc", "fuzz", &["--test", "short"], "fuzz_desc"),
    ("word", "fuzz", &["--test", "short"], "fuzz_word"),
    ("asm", "fuzz", &["--test", "short"], "fuzz_asm"),
    ("disasm", "fuzz", &["--test", "short"], "fuzz_disasm"),
    ("soc-map", "fuzz", &["--test", "short"], "fuzz_soc_map"),
    ("csr-map", "fuzz", &["--test", "short"], "fuzz_csr_map"),
    ("timing", "fuzz", &["--test", "short"], "fuzz_timing"),
    (
        "ioctl-replay",
        "fuzz",
        &["--test", "short"],
        "fuzz_ioctl_replay",
    ),
    (
        "sweep-template",
        "sweep",
        &["--lib"],
        "fuzz::fuzz_sweep_template",
    ),
    ("sweep-merge", "sweep", &["--lib"], "fuzz::fuzz_sweep_merge"),
    ("step", "neuron-sim", &["--test", "fuzz_step"], "fuzz_step"),
];

/// The options of `cargo xtask fuzz`.
#[derive(Debug)]
pub struct Options {
    /// Seconds per target.
    pub seconds: f64,
    /// Only this target.
    pub target: Option<String>,
    /// Seed of the random sequence.
    pub seed: Option<u64>,
    /// Build optimised (more inputs per second).
    pub release: bool,
    /// Print the targets and stop.
    pub list: bool,
}

pub fn run(root: &Path, o: &Options) -> Result<(), String> {
    if o.list {
        for (name, package, _, test) in TARGETS {
            println!("{name:<16} {package} {test}");
        }
        return Ok(());
    }
    let chosen: Vec<_> = TARGETS
        .iter()
        .filter(|t| o.target.as_deref().is_none_or(|want| want == t.0))
        .collect();
    if chosen.is_empty() {
        let names: Vec<&str> = TARGETS.iter().map(|t| t.0).collect();
        return Err(format!(
            "fuzz: no target `{}` (targets: {})",
            o.target.as_deref().unwrap_or(""),
            names.join(", ")
        ));
    }
    let mut failed = Vec::new();
    for (name, package, args, test) in chosen {
        eprintln!("xtask fuzz: {name} for {} s", o.seconds);
        let mut cmd = Command::new(crate::cargo());
        cmd.args(["test", "-q", "-p", package]);
        if o.release {
            cmd.arg("--release");
        }
        cmd.args(*args)
            .args(["--", "--exact", test, "--nocapture"])
            .env("NEURON_FUZZ_SECONDS", o.seconds.to_string())
            .current_dir(root);
        if let Some(seed) = o.seed {
            cmd.env("NEURON_FUZZ_SEED", seed.to_string());
        }
        let status = cmd
            .status()
            .map_err(|e| format!("fuzz: cannot run cargo: {e}"))?;
        if !status.success() {
            failed.push(*name);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fuzz: findings (or a failed build) in {}; inputs are in target/fuzz-findings/",
            failed.join(", ")
        ))
    }
}
