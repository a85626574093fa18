//! Parameter sweeps and the calibration table (docs/user-guide.md "Sweeps",
//! docs/timing.md): above `soc` and `host-exec`, below the CLI, which only
//! parses `neuron-sim sweep`/`calibrate` arguments and prints.
//!
//! - Parameters ([`params`]): `NAME=ITEMS`, ITEMS a comma list of values
//!   (`4096`, `0x1000`, `4Ki`, a word) and ranges `A..B*F` (geometric),
//!   `A..B+S` (arithmetic), `A..B` (step 1). Several parameters give the
//!   cartesian product, the first varying slowest; `#@ param` lines in the
//!   trace give defaults.
//! - Placeholders: `{EXPR}` in the trace text, EXPR integer arithmetic
//!   (`+ - * / %`, parentheses) over the parameters, `{EXPR:x}` in hex;
//!   `{{` and `}}` are literal braces.
//! - Each point runs on its own [`soc::Device`] ([`run`]); N points run at
//!   once on N threads (the device model itself stays single-threaded).
//!   Rows come out in point order whatever the finish order, so the CSV is
//!   deterministic (except the `host_seconds` column, left empty on request).
//!   The points write no files: each reads the trace's directory and keeps
//!   its `dump … file=` bytes in its own memory ([`files::OverlayFiles`]), as
//!   the seeds of `race` do ([`seeds`]).
//! - A shard `I/N` runs the points k with k mod N = I into a partial CSV
//!   ([`csv`]); [`csv::merge`] joins the parts into exactly the CSV of a
//!   single run, which [`svg`] plots and [`json`] turns into `sweep --json`.
//! - [`calibrate`] runs the calibration traces and judges each row against
//!   the published figures.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

pub mod calibrate;
pub mod csv;
pub mod files;
#[cfg(test)]
mod fuzz;
pub mod json;
pub mod params;
pub mod run;
pub mod seeds;
pub mod svg;

pub use calibrate::Calibration;
pub use csv::{Csv, Row, SweepMeta, merge, render_csv, skipped_note};
pub use json::SweepJson;
pub use params::{MAX_VALUES, Param, Published, Template, Value, parse_param, payload_of};
pub use run::{DeviceFactory, Job, Measured, jobs_of, run_jobs, run_jobs_until};
pub use svg::render_svg;

/// A sweep's or calibration's bad input: the message names where it is
/// (the trace, the `--param`, the point, the CSV line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(String);

impl Error {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Error(message.into())
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Points whose substituted traces are held and run at a time.
const JOB_BATCH: usize = 1024;

/// How to run a sweep.
#[derive(Clone, Debug, Default)]
pub struct SweepOptions {
    /// `NAME=ITEMS` specs over the trace's `#@ param` defaults.
    pub params: Vec<String>,
    /// Run only the points k with k mod N = I: `I/N`.
    pub shard: Option<String>,
    /// Timing-only mode for every point.
    pub timing_only: bool,
    /// Points run at once (default: the host's available parallelism).
    pub jobs: Option<usize>,
    /// Fill the host_seconds column.
    pub host_time: bool,
    /// The x parameter of the plot (default: the trace's `#@ x`).
    pub x: Option<String>,
    /// Published figures to overlay (default: the trace's `#@ published`,
    /// else auto).
    pub published: Option<Published>,
    /// The timing file, as the plot's caption names it (None: built-in).
    pub timing: Option<String>,
    /// Set non-zero by the caller to stop the sweep (the CLI: the signal
    /// number of a SIGINT/SIGTERM): no point starts after that, the points
    /// under way stop, and the rows that finished are the outcome.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

/// What a sweep produced.
#[derive(Clone, Debug)]
pub struct SweepOutcome {
    /// The parameter names, in column order.
    pub names: Vec<String>,
    /// The rows run, in point order.
    pub rows: Vec<Row>,
    /// The CSV text (a partial CSV with its header line for a shard).
    pub csv: String,
    /// What the plot and `--json` need besides the rows.
    pub meta: SweepMeta,
    /// The worst exit status of a point.
    pub worst_exit: u8,
    /// The paths the points' `dump … file=` statements wrote: kept in each
    /// point's memory, not written to disk (docs/user-guide.md §18); empty
    /// when no point dumped to a file.
    pub kept_files: BTreeSet<String>,
    /// Points selected that did not finish: [`SweepOptions::stop`] was set
    /// (0 otherwise). Their rows are missing from `rows` and `csv`.
    pub not_run: usize,
}

/// A sweep ready to run: its points and where its rows go.
#[derive(Clone, Debug)]
pub struct Sweep {
    plan: run::Plan,
    shard: Option<(usize, usize)>,
    selected: Vec<usize>,
    options: SweepOptions,
    meta: SweepMeta,
}

impl Sweep {
    /// The sweep of the trace `text` (read from `trace`): its parameters
    /// checked (`--param` names the trace's parameters, with "did you mean"),
    /// its points listed. Nothing runs yet.
    pub fn new(trace: &Path, text: &str, options: &SweepOptions) -> Result<Self, Error> {
        let template =
            Template::parse(text).map_err(|e| Error::new(format!("{}: {e}", trace.display())))?;
        let mut params = template.params.clone();
        // The `--param` given so far, by name: a second one for a name
        // would silently replace the first, as a repeated `#@ param`
        // would (which the template refuses).
        let mut given: Vec<(String, &str)> = Vec::new();
        for spec in &options.params {
            let p = parse_param(spec).map_err(|e| Error::new(format!("--param {spec}: {e}")))?;
            if let Some((_, first)) = given.iter().find(|(n, _)| *n == p.name) {
                return Err(Error::new(format!(
                    "--param {spec}: parameter `{}` given twice (first --param {first}); give all its values in one --param {}=ITEMS",
                    p.name, p.name
                )));
            }
            given.push((p.name.clone(), spec));
            if !template.params.iter().any(|q| q.name == p.name) && !template.uses(&p.name) {
                let names: Vec<&str> = template.params.iter().map(|q| q.name.as_str()).collect();
                return Err(Error::new(format!(
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
                return Err(Error::new(format!(
                    "--param {spec}: the parameters have more than {MAX_VALUES} values in all"
                )));
            }
        }
        let shard = options
            .shard
            .as_deref()
            .map(parse_shard)
            .transpose()
            .map_err(|e| Error::new(format!("--shard: {e}")))?;
        let plan = run::Plan::new(trace, &template, params)?;
        let selected: Vec<usize> = (0..plan.points.len())
            .filter(|k| shard.is_none_or(|(i, n)| k % n == i))
            .collect();
        let meta = SweepMeta {
            points: plan.points.len(),
            x: options.x.clone().or(template.x.clone()),
            published: options.published.or(template.published).unwrap_or_default(),
            trace: trace.display().to_string(),
            timing_only: options.timing_only,
            timing: options.timing.clone(),
            partition_bytes: template.partition_bytes.clone(),
            // The id needs the devices' timing: Sweep::run sets it.
            id: String::new(),
            values: csv::values_digest(&plan.names, &plan.points),
        };
        Ok(Sweep {
            plan,
            shard,
            selected,
            options: options.clone(),
            meta,
        })
    }

    /// Checks, before anything runs, what would otherwise fail only after
    /// every point ran: that the plot's x parameter (`--x`, `#@ x`) is one
    /// of the sweep's (`plotted`: a plot is asked for), and that every
    /// selected point's trace substitutes, parses and names what the
    /// devices of `factory` have. The message of a bad point names it and
    /// its values.
    pub fn check(&self, factory: &DeviceFactory, plotted: bool) -> Result<(), Error> {
        if plotted
            && let Some(x) = &self.meta.x
            && !self.plan.names.contains(x)
        {
            return Err(Error::new(format!(
                "--x {x}: no such parameter (have: {})",
                self.plan.names.join(", ")
            )));
        }
        let device = factory.device().map_err(Error::new)?;
        for &k in &self.selected {
            let job = self.plan.job(k, self.options.timing_only)?;
            let at = |errors: Vec<String>| {
                Error::new(format!(
                    "point {} ({}): {}",
                    job.point,
                    job.label,
                    errors.join("\n")
                ))
            };
            let trace = trace_format::parse(&job.source, &job.name)
                .map_err(|e| at(e.iter().map(ToString::to_string).collect()))?;
            soc::exec::link(&device, &trace, &job.name)
                .map_err(|e| at(e.iter().map(ToString::to_string).collect()))?;
        }
        Ok(())
    }

    /// The sweep stopped by `stop` ([`SweepOptions::stop`]).
    #[must_use]
    pub fn stop_when(mut self, stop: std::sync::Arc<std::sync::atomic::AtomicUsize>) -> Self {
        self.options.stop = Some(stop);
        self
    }

    /// How many points this run covers (a shard's share, or all).
    pub fn selected_points(&self) -> usize {
        self.selected.len()
    }

    /// Runs the points on devices of `factory`. `on_problem` gets `point K
    /// (LABEL): PROBLEM` for each point that failed or warned, as it finishes
    /// (a point is never a silent 0 GB/s).
    pub fn run(
        self,
        factory: &DeviceFactory,
        on_problem: &mut dyn FnMut(&str),
    ) -> Result<SweepOutcome, Error> {
        let Sweep {
            plan,
            shard,
            selected,
            options,
            mut meta,
        } = self;
        meta.id = csv::sweep_id(&plan.template, &factory.timing_fingerprint(), &meta.values);
        // Every point's trace is checked before anything runs, but only a batch
        // of substituted traces is held at a time (a million points of a long
        // template would not fit in memory).
        for &k in &selected {
            plan.job(k, options.timing_only)?;
        }
        let mut rows = Vec::new();
        let mut worst_exit = 0u8;
        let mut kept_files = BTreeSet::new();
        let mut not_run = 0;
        for batch in selected.chunks(JOB_BATCH) {
            if options
                .stop
                .as_deref()
                .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed) != 0)
            {
                not_run += batch.len();
                continue;
            }
            let jobs_list = batch
                .iter()
                .map(|&k| plan.job(k, options.timing_only))
                .collect::<Result<Vec<_>, _>>()?;
            let stop = options.stop.as_deref();
            let results = run_jobs_until(factory, &jobs_list, options.jobs, stop);
            for (job, r) in jobs_list.iter().zip(results) {
                let m = match r {
                    Some(Ok(m)) => m,
                    // A point whose run could not be made (its trace was
                    // checked before: a device that cannot be built) is a
                    // row with exit 2; the other rows are kept.
                    Some(Err(e)) => Measured::not_made(Some(e)),
                    None => {
                        not_run += 1;
                        continue;
                    }
                };
                worst_exit = worst_exit.max(m.exit);
                kept_files.extend(m.kept_files.iter().cloned());
                // A point that failed, or moved other bytes than its trace says
                // (a 64 KiB descriptor read as 0 bytes), is not a silent 0 GB/s.
                if let Some(p) = &m.problem {
                    on_problem(&format!("point {} ({}): {p}", job.point, job.label));
                }
                rows.push(Row::new(job, &m, options.host_time));
            }
        }
        let csv = render_csv(&plan.names, &rows, shard.map(|s| (s, &meta)));
        Ok(SweepOutcome {
            names: plan.names,
            rows,
            csv,
            meta,
            worst_exit,
            kept_files,
            not_run,
        })
    }
}

/// The `sweep --json` document of a CSV text and its sweep.
pub fn json_of(csv: &str, meta: &SweepMeta) -> Result<SweepJson, Error> {
    let parsed = Csv::parse(csv).map_err(Error::new)?;
    Ok(SweepJson::new(&parsed, meta))
}

/// The SVG plot of a CSV text (parsed back: a merge draws the same as a
/// single run).
pub fn svg_of(
    csv: &str,
    x: Option<&str>,
    published: Published,
    meta: &SweepMeta,
) -> Result<String, Error> {
    let parsed = Csv::parse(csv).map_err(Error::new)?;
    render_svg(&parsed, x, published, meta).map_err(Error::new)
}

/// `I/N` of a shard option.
pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
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
            timing_only: true,
            timing: Some("my timing.json".into()),
            partition_bytes: Some("bytes".into()),
            id: "0123456789abcdef".into(),
            values: "fedcba9876543210".into(),
        };
        assert_eq!(SweepMeta::parse(&m.line((1, 3))), Some((m, (1, 3))));
    }

    /// A parameter named like a column of the CSV (`cycles`, `exit`, …)
    /// gave a header with that name twice, and a CSV reader kept one of
    /// them (probe report sweep-etc.md finding 10): such a name is refused,
    /// from `#@ param` (naming the line) and from `--param`.
    #[test]
    fn a_parameter_named_like_a_column_is_refused() {
        let options = |params: &[&str]| SweepOptions {
            params: params.iter().map(ToString::to_string).collect(),
            ..SweepOptions::default()
        };
        let e = Sweep::new(
            Path::new("t.trace"),
            "#@ param n=1\n#@ param cycles=1,2\nrun cycles={cycles}\n",
            &options(&[]),
        )
        .err()
        .map(|e| e.message().to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "t.trace: line 2: parameter `cycles` is named like a column of the sweep CSV \
                 (point, cycles, ns, payload_bytes, gbps, descriptors, exit, \
                 expectations_skipped, host_seconds): \
                 give it another name"
            )
        );
        let e = Sweep::new(
            Path::new("t.trace"),
            "run cycles={exit}\n",
            &options(&["exit=3,4"]),
        )
        .err()
        .map(|e| e.message().to_string());
        assert!(
            e.as_deref().is_some_and(|e| e.starts_with(
                "--param exit=3,4: parameter `exit` is named like a column of the sweep CSV"
            )),
            "{e:?}"
        );
    }

    /// A repeated `--param NAME` is an error, as a repeated `#@ param` is;
    /// it used to keep only the last. Found by a review.
    #[test]
    fn a_repeated_param_is_refused() {
        let text = "#@ param n=1\nrun cycles={n}\n";
        let options = |params: &[&str]| SweepOptions {
            params: params.iter().map(ToString::to_string).collect(),
            ..SweepOptions::default()
        };
        let e = Sweep::new(Path::new("t.trace"), text, &options(&["n=1", "n=2,3"]))
            .err()
            .map(|e| e.message().to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "--param n=2,3: parameter `n` given twice (first --param n=1); give all its \
                 values in one --param n=ITEMS"
            )
        );
        let ok = Sweep::new(Path::new("t.trace"), text, &options(&["n=1,2,3"]));
        assert!(ok.is_ok());
        // Overriding the trace's `#@ param` default once is fine.
        assert!(Sweep::new(Path::new("t.trace"), text, &options(&["n=2"])).is_ok());
    }
}
