//! One trace under many schedules (`neuron-sim race TRACE --seeds N`,
//! docs/races.md §Schedule perturbation): each seed perturbs the packets'
//! latencies ([`soc::Device::set_schedule_seed`]); the runs go over
//! threads, a device each, as the sweep's do, and the memory the trace
//! checks (its `expect` and `read32 ==` outcomes) is compared between
//! seeds. A race-free trace gives the same outcomes under every seed.

use std::path::Path;

use serde::Serialize;

use crate::run::DeviceFactory;
use host_exec::DirFiles;

/// What the seeds showed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SeedReport {
    /// The seeds run, in order.
    pub seeds: Vec<u64>,
    /// Checks (`expect`, `read32 ==`) per run.
    pub checks: usize,
    /// Each check whose outcome differs between two seeds (the first seed
    /// and the first seed that differs from it).
    pub differences: Vec<SeedDiff>,
    /// Runs that could not be made (their seed and why).
    pub errors: Vec<(u64, String)>,
}

/// One check that two seeds disagree on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SeedDiff {
    /// Trace line of the check.
    pub line: u32,
    /// The first seed and its outcome.
    pub seed_a: u64,
    /// Its outcome text.
    pub outcome_a: String,
    /// A seed that gives another outcome.
    pub seed_b: u64,
    /// That outcome.
    pub outcome_b: String,
}

impl SeedReport {
    /// The report as text.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{} seeds ({}..{}), {} checks each: {}\n",
            self.seeds.len(),
            self.seeds.first().copied().unwrap_or(0),
            self.seeds.last().copied().unwrap_or(0),
            self.checks,
            if self.differences.is_empty() {
                "the same outcomes under every schedule".to_string()
            } else {
                format!(
                    "{} check(s) differ between schedules: a race (run --detect-races)",
                    self.differences.len()
                )
            }
        );
        for d in &self.differences {
            out.push_str(&format!(
                "  line {}: seed {}: {}\n          seed {}: {}\n",
                d.line, d.seed_a, d.outcome_a, d.seed_b, d.outcome_b
            ));
        }
        for (seed, e) in &self.errors {
            out.push_str(&format!("  seed {seed}: {e}\n"));
        }
        out
    }
}

/// The checks of one run: (line, outcome).
type Checks = Vec<(u32, String)>;

fn run_seed(
    factory: &DeviceFactory,
    base: &Path,
    name: &str,
    text: &str,
    seed: u64,
) -> Result<Checks, String> {
    let mut dev = factory.device()?;
    dev.set_trace(false);
    dev.set_schedule_seed(Some(seed));
    let mut files = DirFiles::new(base.to_path_buf());
    let (report, _session) =
        host_exec::run_source(dev, text, name, &mut files).map_err(|errors| errors.join("\n"))?;
    Ok(report
        .steps
        .iter()
        .filter(|s| matches!(s.directive, "expect" | "read32"))
        .map(|s| (s.line, format!("{:?}: {}", s.status, s.text)))
        .collect())
}

/// Runs `text` (the trace at `trace`) under `seeds`, over `threads`
/// threads (default: the machine's).
pub fn run_seeds(
    factory: &DeviceFactory,
    trace: &Path,
    text: &str,
    seeds: &[u64],
    threads: Option<usize>,
) -> SeedReport {
    let name = trace.display().to_string();
    let base = trace.parent().map(Path::to_path_buf).unwrap_or_default();
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, seeds.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, Result<Checks, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&seed) = seeds.get(i) else { break };
                        mine.push((i, run_seed(factory, &base, &name, text, seed)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec![(usize::MAX, Err("a seed thread panicked".into()))])
            })
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    let mut report = SeedReport {
        seeds: seeds.to_vec(),
        checks: 0,
        differences: Vec::new(),
        errors: Vec::new(),
    };
    let mut first: Option<(u64, Checks)> = None;
    for (i, r) in done {
        let seed = seeds.get(i).copied().unwrap_or(u64::MAX);
        let checks = match r {
            Ok(c) => c,
            Err(e) => {
                report.errors.push((seed, e));
                continue;
            }
        };
        let Some((seed_a, base_checks)) = &first else {
            report.checks = checks.len();
            first = Some((seed, checks));
            continue;
        };
        for (k, (line, outcome)) in checks.iter().enumerate() {
            let a = base_checks
                .get(k)
                .map(|(_, o)| o.as_str())
                .unwrap_or("(not run)");
            if a != outcome && !report.differences.iter().any(|d| d.line == *line) {
                report.differences.push(SeedDiff {
                    line: *line,
                    seed_a: *seed_a,
                    outcome_a: a.to_string(),
                    seed_b: seed,
                    outcome_b: outcome.clone(),
                });
            }
        }
    }
    report.differences.sort_by_key(|d| d.line);
    report
}
