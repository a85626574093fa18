//! `neuron-sim sweep`: the arguments and the printing; the sweep itself
//! (parameters, the point runner, CSV, shards, JSON, SVG) is the `sweep`
//! crate (docs/user-guide.md "Sweeps").

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use sweep::{DeviceFactory, Published, Sweep, SweepOptions};

use crate::{Failure, Maps, bad_input};

/// A library error as the CLI's bad input (exit 2, the same message).
fn failure(e: sweep::Error) -> Failure {
    bad_input(e.message())
}

// ------------------------------------------------------------------ CLI

/// `neuron-sim sweep`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct SweepArgs {
    #[command(subcommand)]
    cmd: Option<SweepCmd>,
    /// The parameterised trace: `{EXPR}` placeholders, `#@ param` defaults.
    #[arg(required = true)]
    trace: Option<PathBuf>,
    /// NAME=ITEMS: values `V1,V2,…` and ranges `A..B*F` (geometric),
    /// `A..B+S` (arithmetic); once per NAME, repeat with other names for
    /// the cartesian product.
    #[arg(long = "param", value_name = "NAME=ITEMS")]
    params: Vec<String>,
    /// Write the CSV to FILE (default: stdout).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the SVG plot of bandwidth versus the x parameter to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Points run at once, at least 1 (default: the host's available
    /// parallelism).
    #[arg(long, value_name = "N", value_parser = jobs_at_least_1)]
    jobs: Option<usize>,
    /// Run only the points k with k mod N = I (0 ≤ I < N) into a partial
    /// CSV for `sweep merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Timing-only mode for every point (no payload bytes; same cycles).
    #[arg(long)]
    timing_only: bool,
    /// Timing file (JSON): the parameters it changes; the rest keep their defaults (docs/timing.md).
    #[arg(long, value_name = "FILE")]
    timing: Option<PathBuf>,
    /// Leave the host_seconds column empty (byte-reproducible files).
    #[arg(long)]
    no_host_time: bool,
    /// Print the points and a summary as JSON on standard output instead
    /// of the CSV (docs/schemas/sweep.schema.json); --csv FILE still
    /// writes the CSV.
    #[arg(long, conflicts_with = "shard")]
    json: bool,
    #[command(flatten)]
    plot: PlotArgs,
}

#[derive(Debug, Subcommand)]
enum SweepCmd {
    /// Join partial CSVs of `--shard` runs into the CSV (and SVG) of one run.
    Merge {
        /// The partial CSVs, in any order.
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        /// Write the CSV to FILE (default: stdout).
        #[arg(long, value_name = "FILE")]
        csv: Option<PathBuf>,
        /// Write the SVG plot to FILE.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Print the merged sweep as JSON instead of the CSV (as `sweep
        /// --json` prints a single run); --csv FILE still writes the CSV.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        plot: PlotArgs,
    },
}

/// What the plot shows.
#[derive(Debug, Default, Args)]
struct PlotArgs {
    /// The parameter on the (log) x axis (default: the trace's `#@ x`, else
    /// the first numeric parameter with several values).
    #[arg(long, value_name = "NAME")]
    x: Option<String>,
    /// Published figures to overlay: auto, engine, core, chip or none
    /// (default: the trace's `#@ published`, else auto).
    #[arg(long, value_name = "SET")]
    published: Option<PublishedArg>,
}

/// `--published SET`: the library's [`Published`] as a clap value (names
/// and help lines from the library).
#[derive(Clone, Copy, Debug)]
struct PublishedArg(Published);

impl clap::ValueEnum for PublishedArg {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [PublishedArg; 5] = [
            PublishedArg(Published::ALL[0]),
            PublishedArg(Published::ALL[1]),
            PublishedArg(Published::ALL[2]),
            PublishedArg(Published::ALL[3]),
            PublishedArg(Published::ALL[4]),
        ];
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name()).help(self.0.help()))
    }
}

/// `neuron-sim sweep …`.
pub(crate) fn cmd_sweep(maps: &Maps, args: SweepArgs) -> Result<u8, Failure> {
    if let Some(SweepCmd::Merge {
        parts,
        csv,
        svg,
        json,
        plot,
    }) = args.cmd
    {
        let inputs: Vec<_> = parts.iter().map(|p| ("PART", Some(p.as_path()))).collect();
        crate::outputs::check_distinct(
            &[("--csv", csv.as_deref()), ("--svg", svg.as_deref())],
            &inputs,
            crate::outputs::Dash::File,
        )?;
        return cmd_merge(&parts, csv.as_deref(), svg.as_deref(), json, &plot);
    }
    let Some(trace) = args.trace else {
        return Err(bad_input(
            "sweep needs a TRACE (or `sweep merge PART.csv…`)",
        ));
    };
    crate::outputs::check_distinct(
        &[
            ("--csv", args.csv.as_deref()),
            ("--svg", args.svg.as_deref()),
        ],
        &[
            ("TRACE", Some(trace.as_path())),
            ("--timing", args.timing.as_deref()),
        ],
        crate::outputs::Dash::File,
    )?;
    let text = crate::input::read_text(&trace, "trace", crate::input::InputKind::Trace)?;
    let options = SweepOptions {
        params: args.params,
        shard: args.shard,
        timing_only: args.timing_only,
        jobs: args.jobs,
        host_time: !args.no_host_time,
        x: args.plot.x,
        published: args.plot.published.map(|p| p.0),
        timing: args.timing.as_ref().map(|p| p.display().to_string()),
        stop: None,
    };
    // SIGINT/SIGTERM stop the points (from here: one during the checks
    // below stops the sweep before its first point); the rows that
    // finished are written as usual, then the interruption is named (as
    // `run` reports what ran).
    let interrupt = crate::run_output::install_interrupt();
    let planned = Sweep::new(&trace, &text, &options).map_err(failure)?;
    let factory = DeviceFactory::new(&maps.device_with_timing(args.timing.as_deref())?);
    // What would fail only once every point ran is checked first, as `run`
    // checks its outputs: "nothing was run".
    for (path, what) in [(&args.csv, "CSV"), (&args.svg, "SVG")] {
        if let Some(p) = path {
            crate::check_writable(p, what)?;
        }
    }
    planned
        .check(&factory, args.svg.is_some())
        .map_err(|e| bad_input(format!("{}; nothing was run", e.message())))?;
    let planned = planned.stop_when(std::sync::Arc::clone(&interrupt));
    let selected = planned.selected_points();
    // On stderr, so a CSV on stdout stays clean.
    let out = planned
        .run(&factory, &mut |p| eprintln!("{p}"))
        .map_err(failure)?;
    let signal = interrupt.load(std::sync::atomic::Ordering::Relaxed);
    if let Some(note) = kept_files_note(&out.kept_files) {
        eprintln!("{note}");
    }
    if let Some(note) = sweep::skipped_note(&out.rows) {
        eprintln!("sweep: {note}");
    }
    if args.json {
        if let Some(p) = args.csv.as_deref() {
            write_file(p, &out.csv)?;
        }
        crate::json_out::print(sweep::json_of(&out.csv, &out.meta).map_err(failure)?)?;
    } else {
        write_or_print(args.csv.as_deref(), &out.csv)?;
    }
    if args.csv.is_some() && !args.json {
        for r in &out.rows {
            outln!(
                "point {} {}: {} cycles, {} ns, {} bytes, {} GB/s, exit {}{}",
                r.point,
                r.label(&out.names),
                r.cycles,
                r.ns,
                r.payload,
                r.gbps,
                r.exit,
                if r.expectations_skipped > 0 {
                    format!(", {} expectation(s) skipped", r.expectations_skipped)
                } else {
                    String::new()
                }
            );
        }
    }
    if let Some(svg) = args.svg.as_deref() {
        let text = sweep::svg_of(
            &out.csv,
            out.meta.x.as_deref(),
            out.meta.published,
            &out.meta,
        )
        .map_err(failure)?;
        write_file(svg, &text)?;
    }
    if signal != 0 {
        eprintln!(
            "sweep: interrupted by {}: {} of {selected} points ran; the rows of the other {} are missing",
            crate::run_output::signal_name(signal),
            selected - out.not_run,
            out.not_run
        );
        return Ok(u8::try_from(128 + signal).unwrap_or(130));
    }
    Ok(out.worst_exit)
}

/// The line on stderr when points dumped to files: the files stay in each
/// point's memory, none is written (docs/user-guide.md §18). None when no
/// point dumped to a file.
fn kept_files_note(paths: &std::collections::BTreeSet<String>) -> Option<String> {
    crate::kept_files::note(
        "sweep",
        "point",
        "one point's files: `neuron-sim run` the trace with its values substituted; docs/user-guide.md §18",
        paths,
    )
}

fn cmd_merge(
    parts: &[PathBuf],
    csv_out: Option<&Path>,
    svg_out: Option<&Path>,
    json: bool,
    plot: &PlotArgs,
) -> Result<u8, Failure> {
    let mut texts = Vec::new();
    for p in parts {
        let t = crate::input::read_text(p, "CSV", crate::input::InputKind::SweepCsv)?;
        texts.push((p.display().to_string(), t));
    }
    let (merged, meta) = sweep::merge(&texts).map_err(bad_input)?;
    let rows = sweep::Csv::parse(&merged).map_err(bad_input)?.rows;
    if let Some(note) = sweep::skipped_note(&rows) {
        eprintln!("sweep merge: {note}");
    }
    if json {
        if let Some(p) = csv_out {
            write_file(p, &merged)?;
        }
        crate::json_out::print(sweep::json_of(&merged, &meta).map_err(failure)?)?;
    } else {
        write_or_print(csv_out, &merged)?;
    }
    if let Some(svg) = svg_out {
        let x = plot.x.clone().or(meta.x.clone());
        let published = plot.published.map_or(meta.published, |p| p.0);
        let text = sweep::svg_of(&merged, x.as_deref(), published, &meta).map_err(failure)?;
        write_file(svg, &text)?;
    }
    // The worst point's exit status, as the sweep in one piece gives it.
    Ok(rows.iter().map(|r| r.exit).max().unwrap_or(0))
}

/// `--jobs N`: a count of threads, at least 1.
pub(crate) fn jobs_at_least_1(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("0 threads would run nothing: at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text)
        .map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))
}

fn write_or_print(path: Option<&Path>, text: &str) -> Result<(), Failure> {
    match path {
        Some(p) => write_file(p, text),
        None => {
            out!("{text}");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_files_note_names_at_most_three_paths() {
        assert_eq!(kept_files_note(&Default::default()), None);
        let one = ["out/x.bin".to_string()].into_iter().collect();
        let note = kept_files_note(&one).unwrap();
        assert!(
            note.starts_with(
                "sweep: dump files kept in each point's memory, not written: out/x.bin ("
            ),
            "{note}"
        );
        let five = (0..5).map(|i| format!("d{i}.bin")).collect();
        let note = kept_files_note(&five).unwrap();
        assert!(
            note.contains("not written: d0.bin, d1.bin, d2.bin and 2 more ("),
            "{note}"
        );
        assert_eq!(note.lines().count(), 1);
    }
}
