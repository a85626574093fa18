//! `neuron-sim sweep`: run a parameterised trace over a set of points and
//! write one CSV row per point plus an SVG plot of bandwidth versus size
//! with the published figures overlaid (docs/user-guide.md "Sweeps").
//!
//! - Parameters: `--param NAME=ITEMS`, ITEMS a comma list of values
//!   (`4096`, `0x1000`, `4Ki`, a word) and ranges `A..B*F` (geometric),
//!   `A..B+S` (arithmetic), `A..B` (step 1). Several `--param` give the
//!   cartesian product, the first parameter varying slowest; `#@ param`
//!   lines in the trace give defaults.
//! - Placeholders: `{EXPR}` in the trace text, EXPR integer arithmetic
//!   (`+ - * / %`, parentheses) over the parameters, `{EXPR:x}` in hex;
//!   `{{` and `}}` are literal braces.
//! - Each point runs on its own [`Device`]; `--jobs N` points run at once
//!   (the device model itself stays single-threaded). Rows come out in
//!   point order whatever the finish order, so the CSV is deterministic
//!   (except the `host_seconds` column; `--no-host-time` leaves it empty).
//! - `--shard I/N` runs the points k with k mod N = I into a partial CSV;
//!   `sweep merge` joins the parts into exactly the CSV and SVG of a
//!   single run.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::{Failure, Maps, bad_input};

mod csv;
#[cfg(test)]
mod fuzz;
mod json;
mod params;
mod run;
mod svg;

use csv::{Csv, Row, SweepMeta, merge, render_csv};
pub(crate) use json::SweepJson;
use params::MAX_VALUES;
pub(crate) use params::{Published, Template, parse_param, payload_of};
use run::Plan;
pub(crate) use run::{DeviceFactory, Job, Measured, jobs_of, run_jobs};
use svg::render_svg;

/// Points whose substituted traces are held and run at a time.
const JOB_BATCH: usize = 1024;

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
    /// `A..B+S` (arithmetic); repeat for the cartesian product.
    #[arg(long = "param", value_name = "NAME=ITEMS")]
    params: Vec<String>,
    /// Write the CSV to FILE (default: stdout).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the SVG plot of bandwidth versus the x parameter to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Points run at once (default: the host's available parallelism).
    #[arg(long, value_name = "N")]
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
    published: Option<Published>,
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
        return cmd_merge(&parts, csv.as_deref(), svg.as_deref(), json, &plot);
    }
    let Some(trace) = args.trace else {
        return Err(bad_input(
            "sweep needs a TRACE (or `sweep merge PART.csv…`)",
        ));
    };
    let text = crate::input::read_text(&trace, "trace")?;
    let template =
        Template::parse(&text).map_err(|e| bad_input(format!("{}: {e}", trace.display())))?;
    let mut params = template.params.clone();
    for spec in &args.params {
        let p = parse_param(spec).map_err(|e| bad_input(format!("--param {spec}: {e}")))?;
        if !template.params.iter().any(|q| q.name == p.name) && !template.uses(&p.name) {
            let names: Vec<&str> = template.params.iter().map(|q| q.name.as_str()).collect();
            return Err(bad_input(format!(
                "--param {spec}: {} has no parameter `{}` (no `#@ param {}` and no {{…}} naming it; its parameters: {}){}",
                trace.display(),
                p.name,
                p.name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                },
                trace_format::closest_name(&p.name, names.iter().copied())
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default()
            )));
        }
        match params.iter_mut().find(|q| q.name == p.name) {
            Some(q) => *q = p,
            None => params.push(p),
        }
        if params.iter().map(|p| p.values.len()).sum::<usize>() > MAX_VALUES {
            return Err(bad_input(format!(
                "--param {spec}: the parameters have more than {MAX_VALUES} values in all"
            )));
        }
    }
    let shard = args
        .shard
        .as_deref()
        .map(parse_shard)
        .transpose()
        .map_err(|e| bad_input(format!("--shard: {e}")))?;
    let plan = Plan::new(&trace, &template, params)?;
    let factory = DeviceFactory::new(maps, args.timing.as_deref())?;
    let selected: Vec<usize> = (0..plan.points.len())
        .filter(|k| shard.is_none_or(|(i, n)| k % n == i))
        .collect();
    // Every point's trace is checked before anything runs, but only a batch
    // of substituted traces is held at a time (a million points of a long
    // template would not fit in memory).
    for &k in &selected {
        plan.job(k, args.timing_only)?;
    }
    let mut rows = Vec::new();
    let mut worst = 0u8;
    for batch in selected.chunks(JOB_BATCH) {
        let jobs_list = batch
            .iter()
            .map(|&k| plan.job(k, args.timing_only))
            .collect::<Result<Vec<_>, _>>()?;
        let results = run_jobs(&factory, &jobs_list, args.jobs);
        for (job, r) in jobs_list.iter().zip(results) {
            let m =
                r.map_err(|e| bad_input(format!("point {} ({}): {e}", job.point, job.label)))?;
            worst = worst.max(m.exit);
            // On stderr, so a CSV on stdout stays clean: a point that
            // failed, or moved other bytes than its trace says (a 64 KiB
            // descriptor read as 0 bytes), is not a silent 0 GB/s.
            if let Some(p) = &m.problem {
                eprintln!("point {} ({}): {p}", job.point, job.label);
            }
            rows.push(Row::new(job, &m, !args.no_host_time));
        }
    }
    let x = args.plot.x.clone().or(template.x.clone());
    let published = args
        .plot
        .published
        .or(template.published)
        .unwrap_or_default();
    let meta = SweepMeta {
        points: plan.points.len(),
        x: x.clone(),
        published,
        trace: trace.display().to_string(),
    };
    let csv = render_csv(&plan.names, &rows, shard.map(|s| (s, &meta)));
    if args.json {
        if let Some(p) = args.csv.as_deref() {
            write_file(p, &csv)?;
        }
        let parsed = Csv::parse(&csv).map_err(bad_input)?;
        crate::json_out::print(SweepJson::new(&parsed, &meta))?;
    } else {
        write_or_print(args.csv.as_deref(), &csv)?;
    }
    if args.csv.is_some() && !args.json {
        for r in &rows {
            outln!(
                "point {} {}: {} cycles, {} ns, {} bytes, {} GB/s, exit {}",
                r.point,
                r.label(&plan.names),
                r.cycles,
                r.ns,
                r.payload,
                r.gbps,
                r.exit
            );
        }
    }
    if let Some(svg) = args.svg.as_deref() {
        // Plot what the CSV says, parsed back: a merge draws the same.
        let parsed = Csv::parse(&csv).map_err(bad_input)?;
        let text = render_svg(&parsed, x.as_deref(), published, &meta.trace).map_err(bad_input)?;
        write_file(svg, &text)?;
    }
    Ok(worst)
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
        let t = crate::input::read_text(p, "CSV")?;
        texts.push((p.display().to_string(), t));
    }
    let (merged, meta) = merge(&texts).map_err(bad_input)?;
    if json {
        if let Some(p) = csv_out {
            write_file(p, &merged)?;
        }
        let parsed = Csv::parse(&merged).map_err(bad_input)?;
        crate::json_out::print(SweepJson::new(&parsed, &meta))?;
    } else {
        write_or_print(csv_out, &merged)?;
    }
    if let Some(svg) = svg_out {
        let parsed = Csv::parse(&merged).map_err(bad_input)?;
        let x = plot.x.clone().or(meta.x.clone());
        let published = plot.published.unwrap_or(meta.published);
        let text = render_svg(&parsed, x.as_deref(), published, &meta.trace).map_err(bad_input)?;
        write_file(svg, &text)?;
    }
    Ok(0)
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

fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}`: expected I/N, e.g. 0/4"))?;
    let i: usize = i
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: I is not a number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: N is not a number"))?;
    if n == 0 || i >= n {
        return Err(format!("`{s}`: need 0 ≤ I < N"));
    }
    Ok((i, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_and_meta_round_trip() {
        assert_eq!(parse_shard("2/5").unwrap(), (2, 5));
        for bad in ["5/5", "1/0", "x/2", "3"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
        let m = SweepMeta {
            points: 10,
            x: Some("bytes".into()),
            published: Published::Core,
            trace: "traces/calib/a b.trace".into(),
        };
        assert_eq!(SweepMeta::parse(&m.line((1, 3))), Some((m, (1, 3))));
    }
}
