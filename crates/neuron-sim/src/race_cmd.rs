//! `neuron-sim race TRACE --seeds N`: the trace under N perturbed schedules
//! (docs/races.md §Schedule perturbation), in parallel, through
//! `sweep::seeds`; the checks that differ between seeds are printed with
//! the two seeds.

use std::path::PathBuf;

use sweep::DeviceFactory;

use crate::{Failure, Maps, bad_input, input};

/// The options of `neuron-sim race`.
#[derive(Debug, clap::Args)]
pub(crate) struct RaceArgs {
    /// The trace file.
    trace: PathBuf,
    /// How many schedules: seeds 1 ..= N.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(2..=4096))]
    seeds: u64,
    /// Worker threads (default: one per CPU).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Timing file (JSON), as for `run`.
    #[arg(long, value_name = "FILE")]
    timing: Option<PathBuf>,
}

/// Runs the seeds; exit 1 when a check differs between two of them.
pub(crate) fn cmd_race(maps: &Maps, a: &RaceArgs) -> Result<u8, Failure> {
    if input::is_stdio(&a.trace) {
        return Err(bad_input(
            "race runs the trace many times: give a file, not standard input",
        ));
    }
    let text = input::read_text_or_stdin(&a.trace, "trace")?;
    let factory = DeviceFactory::new(&maps.device_with_timing(a.timing.as_deref())?);
    let seeds: Vec<u64> = (1..=a.seeds).collect();
    let report = sweep::seeds::run_seeds(&factory, &a.trace, &text, &seeds, a.jobs);
    print!("{}", report.to_text());
    if !report.errors.is_empty() {
        return Ok(2);
    }
    Ok(u8::from(!report.differences.is_empty()))
}
