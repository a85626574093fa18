//! One trace under many schedules (`neuron-sim race TRACE --seeds N`,
//! docs/races.md §Schedule perturbation): each seed perturbs the schedule
//! ([`soc::Device::set_schedule_seed`]); the runs go over threads, a device
//! each, as the sweep's do, and what the trace checks and dumps is compared
//! between seeds: the outcomes of its checks (`expect`, `read32 ==`) and a
//! digest of the bytes its `expect`, `read32` and `dump` statements read
//! ([`soc::exec::StepRecord::read_digest`]). A race-free trace gives the
//! same outcomes and digests under every seed. With
//! [`SeedOptions::detect_races`] every seed also runs the race detector
//! and the races found are gathered over the seeds (`race --json`,
//! [`RaceJson`]). The seeds write no files: a `dump … file=` keeps its
//! bytes in memory, for the comparison and for the seed's own later reads
//! of that path ([`OverlayFiles`]).

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;
use soc::RaceReport;
use soc::exec::{FNV_OFFSET, read_digest};
use soc_map::Hex;

use crate::files::OverlayFiles;
use crate::run::DeviceFactory;

/// How to run the seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeedOptions {
    /// Worker threads (default: the machine's).
    pub threads: Option<usize>,
    /// Run the race detector on every seed (docs/races.md).
    pub detect_races: bool,
}

/// What the seeds showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedReport {
    /// The seeds run, in order.
    pub seeds: Vec<u64>,
    /// Checks (`expect`, `read32 ==`) per run.
    pub checks: usize,
    /// Each check whose outcome differs between two seeds (the first seed
    /// and the first seed that differs from it).
    pub differences: Vec<SeedDiff>,
    /// Each run that could be made, in seed order.
    pub runs: Vec<SeedRun>,
    /// Seeds whose digests differ: the first seed run paired with the first
    /// seed of each other digest, and the trace lines that read other
    /// bytes.
    pub pairs: Vec<SeedPair>,
    /// The races found (with [`SeedOptions::detect_races`]), one per
    /// distinct pair of sources over all seeds.
    pub races: Vec<SeedRace>,
    /// Runs that could not be made (their seed and why).
    pub errors: Vec<(u64, String)>,
}

/// One check that two seeds disagree on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
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

/// One seed's run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// Simulated cycles at the end.
    pub cycles: u64,
    /// The checks: (line, outcome).
    pub checks: Vec<(u32, String)>,
    /// Checks that failed.
    pub checks_failed: usize,
    /// The statements that read memory to check or show it, in order:
    /// (line, digest of the bytes read).
    pub reads: Vec<(u32, u64)>,
    /// The digest of them all (lines and digests, in order).
    pub digest: u64,
    /// The races the detector found in this run.
    pub races: Vec<RaceReport>,
    /// Whether a wait-for graph found a deadlock.
    pub deadlock: bool,
    /// The paths the run's `dump … file=` wrote, kept in its memory.
    pub kept_files: Vec<String>,
}

/// Two seeds whose digests differ.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SeedPair {
    /// The first seed run.
    pub seed_a: u64,
    /// The first seed with another digest.
    pub seed_b: u64,
    /// Trace lines whose `expect`, `read32` or `dump` read other bytes
    /// under the two seeds.
    pub lines: Vec<u32>,
}

/// A race, and the seeds under which the detector found it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SeedRace {
    /// The race as the first seed that found it reports it.
    pub race: RaceReport,
    /// Every seed that found it.
    pub seeds: Vec<u64>,
}

/// `neuron-sim race TRACE --json`: the seeds, their digests, the pairs of
/// seeds that differ and the races found (docs/races.md §Schedule
/// perturbation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RaceJson {
    /// The trace.
    pub trace: String,
    /// Checks (`expect`, `read32 ==`) per run.
    pub checks: usize,
    /// Whether any two seeds differ (a check's outcome or the bytes read).
    pub differ: bool,
    /// One entry per seed run, in seed order.
    pub seeds: Vec<SeedJson>,
    /// Seeds whose digests differ: the first seed paired with the first
    /// seed of each other digest, and the lines that read other bytes.
    pub pairs: Vec<SeedPair>,
    /// Checks whose outcome differs between two seeds.
    pub checks_differ: Vec<SeedDiff>,
    /// The races the detector found, one per distinct pair of sources over
    /// all seeds.
    pub races: Vec<SeedRace>,
    /// Seeds that could not run, and why.
    pub errors: Vec<SeedError>,
}

/// One seed in [`RaceJson`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SeedJson {
    /// The schedule seed.
    pub seed: u64,
    /// Digest (FNV-1a, 64 bits) of the bytes the trace's `expect`,
    /// `read32` and `dump` statements read, with their lines, in order:
    /// equal digests, equal bytes checked and dumped.
    pub digest: Hex,
    /// Simulated cycles at the end of the run.
    pub cycles: u64,
    /// Checks that failed under this seed.
    pub checks_failed: usize,
    /// Races the detector found under this seed.
    pub races: usize,
    /// Whether the run ended in a deadlock (docs/races.md §Deadlocks).
    pub deadlock: bool,
}

/// A seed that could not run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SeedError {
    /// The seed.
    pub seed: u64,
    /// Why.
    pub message: String,
}

impl SeedReport {
    /// Whether two seeds differ: a check's outcome, or the bytes read.
    pub fn differ(&self) -> bool {
        !self.differences.is_empty() || !self.pairs.is_empty()
    }

    /// The checks that fail under every seed run, with the same outcome:
    /// (line, outcome). Not a difference between schedules, but not a
    /// pass either: `run` of the trace exits 1 under any of them.
    pub fn failing_under_every_seed(&self) -> Vec<(u32, &str)> {
        let Some(first) = self.runs.first() else {
            return Vec::new();
        };
        first
            .checks
            .iter()
            .enumerate()
            .filter(|(_, (_, outcome))| outcome.starts_with(FAILED_OUTCOME))
            .filter(|(k, (line, outcome))| {
                !self.differences.iter().any(|d| d.line == *line)
                    && self
                        .runs
                        .iter()
                        .all(|r| r.checks.get(*k).is_some_and(|(_, o)| o == outcome))
            })
            .map(|(_, (line, outcome))| (*line, outcome.as_str()))
            .collect()
    }

    /// The exit status of `neuron-sim race`: 2 when a seed met errors, 1
    /// when seeds differ or a check fails under every seed, else 0 (races
    /// the detector found are listed, as `run --detect-races` lists them,
    /// without changing it).
    pub fn exit_code(&self) -> u8 {
        if !self.errors.is_empty() {
            2
        } else if self.differ() || !self.failing_under_every_seed().is_empty() {
            1
        } else {
            0
        }
    }

    /// The report as text.
    pub fn to_text(&self) -> String {
        let verdict = if !self.errors.is_empty() {
            format!(
                "{} of them met errors (exit 2): what they would show is not known",
                self.errors.len()
            )
        } else if !self.differences.is_empty() {
            format!(
                "{} check(s) differ between schedules: a race (run --detect-races)",
                self.differences.len()
            )
        } else if !self.pairs.is_empty() {
            "the checks agree, but the bytes read differ between schedules: a race (run --detect-races)"
                .to_string()
        } else {
            match self.failing_under_every_seed().len() {
                0 => "the same outcomes under every schedule".to_string(),
                n => format!(
                    "the same outcomes under every schedule, but {n} check(s) fail under every seed"
                ),
            }
        };
        let mut out = format!(
            "{} seeds ({}..{}), {} checks each: {verdict}\n",
            self.seeds.len(),
            self.seeds.first().copied().unwrap_or(0),
            self.seeds.last().copied().unwrap_or(0),
            self.checks,
        );
        for d in &self.differences {
            out.push_str(&format!(
                "  line {}: seed {}: {}\n          seed {}: {}\n",
                d.line, d.seed_a, d.outcome_a, d.seed_b, d.outcome_b
            ));
        }
        for p in &self.pairs {
            let lines: Vec<String> = p.lines.iter().map(ToString::to_string).collect();
            out.push_str(&format!(
                "  seeds {} and {} read other bytes at line(s) {}\n",
                p.seed_a,
                p.seed_b,
                lines.join(", ")
            ));
        }
        for (line, outcome) in self.failing_under_every_seed() {
            out.push_str(&format!("  line {line}: every seed: {outcome}\n"));
        }
        if !self.races.is_empty() {
            out.push_str(&format!(
                "the race detector found {} race(s) (docs/races.md):\n",
                self.races.len()
            ));
            for r in &self.races {
                out.push_str(&race_text(r));
            }
        }
        // The same errors under every seed (bad input does not depend
        // on the schedule) are listed once.
        let mut shown: Vec<(Vec<u64>, &str)> = Vec::new();
        for (seed, e) in &self.errors {
            match shown.iter_mut().find(|(_, m)| *m == e.as_str()) {
                Some((seeds, _)) => seeds.push(*seed),
                None => shown.push((vec![*seed], e.as_str())),
            }
        }
        for (seeds, e) in shown {
            let which = match seeds.as_slice() {
                [one] => format!("seed {one}"),
                many => format!(
                    "seeds {}",
                    many.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            for line in e.lines() {
                out.push_str(&format!("  {which}: {line}\n"));
            }
        }
        out
    }

    /// The `race --json` document for the trace `trace`.
    pub fn to_json(&self, trace: &str) -> RaceJson {
        RaceJson {
            trace: trace.to_string(),
            checks: self.checks,
            differ: self.differ(),
            seeds: self
                .runs
                .iter()
                .map(|r| SeedJson {
                    seed: r.seed,
                    digest: Hex(r.digest),
                    cycles: r.cycles,
                    checks_failed: r.checks_failed,
                    races: r.races.len(),
                    deadlock: r.deadlock,
                })
                .collect(),
            pairs: self.pairs.clone(),
            checks_differ: self.differences.clone(),
            races: self.races.clone(),
            errors: self
                .errors
                .iter()
                .map(|(seed, message)| SeedError {
                    seed: *seed,
                    message: message.clone(),
                })
                .collect(),
        }
    }
}

/// How a failed check's outcome starts (`Status::Failed` in `{:?}`).
const FAILED_OUTCOME: &str = "Failed:";

/// A race of [`SeedReport::races`] as text: what, where, the seeds that
/// found it, and its two sides as the first of them saw them.
fn race_text(r: &SeedRace) -> String {
    let seeds: Vec<String> = r.seeds.iter().map(ToString::to_string).collect();
    let mut out = format!(
        "  {} race on {}{} under seed{} {}\n",
        r.race.kind,
        r.race.range,
        if r.race.addr.is_some() {
            format!(" ({} bytes)", r.race.len_bytes)
        } else {
            String::new()
        },
        if seeds.len() == 1 { "" } else { "s" },
        seeds.join(", ")
    );
    for (which, s) in [("first", &r.race.first), ("second", &r.race.second)] {
        out.push_str(&format!(
            "    {which}: {} by {} at cycle {} (seed {})\n",
            s.access,
            s.source,
            s.cycle,
            r.seeds.first().copied().unwrap_or(0)
        ));
    }
    out
}

fn run_seed(
    factory: &DeviceFactory,
    base: &Path,
    name: &str,
    text: &str,
    seed: u64,
    detect_races: bool,
) -> Result<SeedRun, String> {
    let mut dev = factory.device()?;
    dev.set_trace(false);
    dev.set_schedule_seed(Some(seed));
    if detect_races {
        dev.detect_races();
    }
    let mut files = OverlayFiles::new(base.to_path_buf());
    let (report, mut session) =
        host_exec::run_source(dev, text, name, &mut files).map_err(|errors| errors.join("\n"))?;
    // Bad input met while running (exit 2 for `run`): the seed did not
    // run the trace as written, its outcomes compare with nothing.
    if !report.errors.is_empty() {
        let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
        return Err(errors.join("\n"));
    }
    let checks: Vec<(u32, String)> = report
        .steps
        .iter()
        .filter(|s| matches!(s.directive, "expect" | "read32"))
        .map(|s| (s.line, format!("{:?}: {}", s.status, s.text)))
        .collect();
    // The bytes the trace read: `expect`, `read32` and `dump` keep a
    // digest; a host `copyout`/`batch_copy` says its bytes in its text (a
    // sha256, or its check's outcome), digested here.
    let reads: Vec<(u32, u64)> = report
        .steps
        .iter()
        .filter_map(|s| match s.read_digest {
            Some(d) => Some((s.line, d)),
            None if matches!(s.directive, "copyout" | "batch_copy") => {
                let outcome = format!("{:?}: {}", s.status, s.text);
                Some((s.line, read_digest(FNV_OFFSET, outcome.as_bytes())))
            }
            None => None,
        })
        .collect();
    let digest = reads.iter().fold(FNV_OFFSET, |h, (line, d)| {
        read_digest(read_digest(h, &line.to_le_bytes()), &d.to_le_bytes())
    });
    let summary = session.device_mut().race_summary();
    Ok(SeedRun {
        seed,
        cycles: report.summary.cycles,
        checks,
        checks_failed: report.expectations_failed,
        reads,
        digest,
        deadlock: summary.as_ref().is_some_and(soc::RaceSummary::deadlock),
        races: summary.map(|s| s.races).unwrap_or_default(),
        kept_files: files.written_paths().map(str::to_string).collect(),
    })
}

/// Runs `text` (the trace at `trace`) under `seeds`.
pub fn run_seeds(
    factory: &DeviceFactory,
    trace: &Path,
    text: &str,
    seeds: &[u64],
    options: SeedOptions,
) -> SeedReport {
    let name = trace.display().to_string();
    let base = trace.parent().map(Path::to_path_buf).unwrap_or_default();
    let threads = options
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, seeds.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, Result<SeedRun, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&seed) = seeds.get(i) else { break };
                        mine.push((
                            i,
                            run_seed(factory, &base, &name, text, seed, options.detect_races),
                        ));
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
        runs: Vec::new(),
        pairs: Vec::new(),
        races: Vec::new(),
        errors: Vec::new(),
    };
    for (i, r) in done {
        let seed = seeds.get(i).copied().unwrap_or(u64::MAX);
        match r {
            Ok(run) => report.runs.push(run),
            Err(e) => report.errors.push((seed, e)),
        }
    }
    compare(&mut report);
    report
}

/// Fills the differences, pairs and races of `report` from its runs.
fn compare(report: &mut SeedReport) {
    let Some((first, rest)) = report.runs.split_first() else {
        return;
    };
    report.checks = first.checks.len();
    for run in rest {
        for (k, (line, outcome)) in run.checks.iter().enumerate() {
            let a = first
                .checks
                .get(k)
                .map(|(_, o)| o.as_str())
                .unwrap_or("(not run)");
            if a != outcome && !report.differences.iter().any(|d| d.line == *line) {
                report.differences.push(SeedDiff {
                    line: *line,
                    seed_a: first.seed,
                    outcome_a: a.to_string(),
                    seed_b: run.seed,
                    outcome_b: outcome.clone(),
                });
            }
        }
        let seen = run.digest == first.digest
            || report.pairs.iter().any(|p| {
                report
                    .runs
                    .iter()
                    .any(|r| r.seed == p.seed_b && r.digest == run.digest)
            });
        if !seen {
            report.pairs.push(SeedPair {
                seed_a: first.seed,
                seed_b: run.seed,
                lines: lines_that_differ(&first.reads, &run.reads),
            });
        }
    }
    report.differences.sort_by_key(|d| d.line);
    // One race per distinct pair of sources (either order) and kind.
    let mut races: BTreeMap<(String, String, String), SeedRace> = BTreeMap::new();
    let mut order = Vec::new();
    for run in &report.runs {
        for r in &run.races {
            let (a, b) = if r.first.source <= r.second.source {
                (r.first.source.clone(), r.second.source.clone())
            } else {
                (r.second.source.clone(), r.first.source.clone())
            };
            let key = (r.kind.clone(), a, b);
            match races.get_mut(&key) {
                Some(seen) => {
                    if seen.seeds.last() != Some(&run.seed) {
                        seen.seeds.push(run.seed);
                    }
                }
                None => {
                    order.push(key.clone());
                    races.insert(
                        key,
                        SeedRace {
                            race: r.clone(),
                            seeds: vec![run.seed],
                        },
                    );
                }
            }
        }
    }
    report.races = order.iter().filter_map(|k| races.remove(k)).collect();
}

/// The lines whose reads differ between two runs (reads matched in order;
/// a read one run has and the other not differs).
fn lines_that_differ(a: &[(u32, u64)], b: &[(u32, u64)]) -> Vec<u32> {
    let mut lines: Vec<u32> = (0..a.len().max(b.len()))
        .filter_map(|k| match (a.get(k), b.get(k)) {
            (Some(x), Some(y)) if x == y => None,
            (Some((line, _)), _) | (None, Some((line, _))) => Some(*line),
            (None, None) => None,
        })
        .collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64, reads: &[(u32, u64)], checks: &[(u32, &str)]) -> SeedRun {
        SeedRun {
            seed,
            cycles: 100,
            checks: checks.iter().map(|(l, o)| (*l, o.to_string())).collect(),
            checks_failed: 0,
            reads: reads.to_vec(),
            digest: reads.iter().fold(FNV_OFFSET, |h, (l, d)| {
                read_digest(read_digest(h, &l.to_le_bytes()), &d.to_le_bytes())
            }),
            races: Vec::new(),
            deadlock: false,
            kept_files: Vec::new(),
        }
    }

    #[test]
    fn one_pair_per_other_digest_naming_the_lines_read_differently() {
        let mut report = SeedReport {
            seeds: vec![1, 2, 3, 4],
            checks: 0,
            differences: Vec::new(),
            runs: vec![
                run(1, &[(10, 1), (12, 5)], &[(10, "Ok")]),
                run(2, &[(10, 2), (12, 5)], &[(10, "Failed")]),
                run(3, &[(10, 1), (12, 5)], &[(10, "Ok")]),
                run(4, &[(10, 2), (12, 6)], &[(10, "Failed")]),
            ],
            pairs: Vec::new(),
            races: Vec::new(),
            errors: Vec::new(),
        };
        compare(&mut report);
        assert_eq!(report.checks, 1);
        assert_eq!(
            report.pairs,
            vec![
                SeedPair {
                    seed_a: 1,
                    seed_b: 2,
                    lines: vec![10]
                },
                SeedPair {
                    seed_a: 1,
                    seed_b: 4,
                    lines: vec![10, 12]
                },
            ]
        );
        assert_eq!(report.differences.len(), 1);
        assert_eq!(report.differences[0].seed_b, 2);
        assert!(report.differ());
        let text = report.to_text();
        assert!(
            text.contains("seeds 1 and 4 read other bytes at line(s) 10, 12"),
            "{text}"
        );
    }

    #[test]
    fn equal_digests_make_no_pair() {
        let mut report = SeedReport {
            seeds: vec![1, 2],
            checks: 0,
            differences: Vec::new(),
            runs: vec![run(1, &[(3, 7)], &[]), run(2, &[(3, 7)], &[])],
            pairs: Vec::new(),
            races: Vec::new(),
            errors: Vec::new(),
        };
        compare(&mut report);
        assert!(!report.differ());
        assert!(
            report
                .to_text()
                .contains("the same outcomes under every schedule")
        );
    }
}
