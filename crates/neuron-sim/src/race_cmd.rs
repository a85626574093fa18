//! `neuron-sim race TRACE --seeds N`: the trace under N perturbed schedules
//! (docs/races.md §Schedule perturbation), in parallel, through
//! `sweep::seeds`; the checks and bytes that differ between seeds are
//! printed with the two seeds, or the whole comparison as JSON (`--json`:
//! per-seed digests, the pairs of seeds that differ, the races found).

use std::path::PathBuf;

use sweep::DeviceFactory;

use crate::{Failure, Maps, bad_input, input, json_out};

/// The options of `neuron-sim race`.
#[derive(Debug, clap::Args)]
pub(crate) struct RaceArgs {
    /// The trace file.
    trace: PathBuf,
    /// How many schedules: seeds 1 ..= N.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(2..=4096))]
    seeds: u64,
    /// Worker threads, at least 1 (default: one per CPU).
    #[arg(long, value_name = "N", value_parser = crate::sweep_cmd::jobs_at_least_1)]
    jobs: Option<usize>,
    /// Timing file (JSON), as for `run`.
    #[arg(long, value_name = "FILE")]
    timing: Option<PathBuf>,
    /// Print one JSON document: each seed's digest of the bytes checked
    /// and dumped, the pairs of seeds that differ, and the races the
    /// detector found (docs/schemas/race.schema.json).
    #[arg(long)]
    json: bool,
}

/// Runs the seeds; exit 1 when a check or the bytes read differ between
/// two of them, or a check fails under every seed (as `run` would exit).
pub(crate) fn cmd_race(maps: &Maps, a: &RaceArgs) -> Result<u8, Failure> {
    if input::is_stdio(&a.trace) {
        return Err(bad_input(
            "race runs the trace many times: give a file, not standard input",
        ));
    }
    let text = input::read_text_or_stdin(&a.trace, "trace", input::InputKind::Trace)?;
    // A trace that does not parse runs under no seed: said once, as `run`
    // says it (docs/user-guide.md §3).
    if let Err(errors) = trace_format::parse(&text, &a.trace.display().to_string()) {
        let mut msg = String::new();
        for e in &errors {
            msg.push_str(&format!("{e}\n"));
        }
        msg.push_str(&format!("{} error(s); nothing was run", errors.len()));
        return Err(bad_input(msg));
    }
    let factory = DeviceFactory::new(&maps.device_with_timing(a.timing.as_deref())?);
    let seeds: Vec<u64> = (1..=a.seeds).collect();
    // The detector runs on every seed: the races it finds are in the text
    // as in the JSON.
    let options = sweep::seeds::SeedOptions {
        threads: a.jobs,
        detect_races: true,
    };
    let report = sweep::seeds::run_seeds(&factory, &a.trace, &text, &seeds, options);
    // On stderr, so that stdout (text or JSON) stays the report.
    let kept: std::collections::BTreeSet<String> = report
        .runs
        .iter()
        .flat_map(|r| r.kept_files.iter().cloned())
        .collect();
    if let Some(note) = crate::kept_files::note(
        "race",
        "seed",
        "one seed's files: `neuron-sim run TRACE --schedule-seed N`; docs/races.md",
        &kept,
    ) {
        eprintln!("{note}");
    }
    if a.json {
        json_out::print(report.to_json(&a.trace.display().to_string()))?;
    } else {
        print!("{}", report.to_text());
    }
    Ok(report.exit_code())
}
