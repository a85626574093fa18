//! Running one target: inputs on a worker thread, each checked for panics,
//! broken invariants, time and memory (docs/fuzzing.md §2).

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::mutate::{Rng, dictionary, mutate};

/// What one input did: `Ok(true)` accepted, `Ok(false)` refused with an
/// error (both fine), `Err` an invariant broken (a finding).
pub type Outcome = Result<bool, String>;

/// One decoder or parser under test.
#[derive(Clone, Copy)]
pub struct Target {
    /// Name on the command line (`cargo xtask fuzz --target NAME`).
    pub name: &'static str,
    /// One line: what is driven and what is checked.
    pub about: &'static str,
    /// Seed inputs (read from the tree, or built).
    pub corpus: fn() -> Vec<Vec<u8>>,
    /// A fresh input made from nothing but random numbers, if the format
    /// has a useful generator.
    pub generate: Option<fn(&mut Rng) -> Vec<u8>>,
    /// Feeds one input through the library and checks it.
    pub exec: fn(&[u8]) -> Outcome,
    /// Inputs are cut to this many bytes.
    pub max_len: usize,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target").field("name", &self.name).finish()
    }
}

/// How long and how hard to run.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Wall-clock seconds for the target (corpus seeds always run).
    pub seconds: f64,
    /// Stop after this many inputs even if time is left.
    pub max_inputs: u64,
    /// One input may take this long.
    pub input_timeout: Duration,
    /// One input may grow the resident set by this many bytes.
    pub rss_growth_bytes: u64,
    /// Seed of the random sequence (mixed with the target name).
    pub seed: u64,
    /// End the process when an input is still allocating past the limit
    /// (it cannot be stopped otherwise); false reports it and abandons its
    /// worker thread.
    pub end_process_on_runaway: bool,
}

impl Budget {
    /// `seconds` per target unless `NEURON_FUZZ_SECONDS` says otherwise;
    /// `NEURON_FUZZ_SEED`, `NEURON_FUZZ_TIMEOUT_MS`, `NEURON_FUZZ_RSS_MIB`
    /// and `NEURON_FUZZ_MAX_INPUTS` override the rest.
    pub fn from_env(seconds: f64) -> Self {
        let var = |k: &str| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
        };
        Budget {
            seconds: var("NEURON_FUZZ_SECONDS").unwrap_or(seconds),
            max_inputs: var("NEURON_FUZZ_MAX_INPUTS").map_or(u64::MAX, |v| v as u64),
            input_timeout: Duration::from_millis(
                var("NEURON_FUZZ_TIMEOUT_MS").map_or(10_000, |v| v as u64),
            ),
            rss_growth_bytes: var("NEURON_FUZZ_RSS_MIB").map_or(512, |v| v as u64) << 20,
            seed: var("NEURON_FUZZ_SEED").map_or(0x5EED, |v| v as u64),
            end_process_on_runaway: true,
        }
    }
}

/// What kind of problem an input showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindingKind {
    /// The library panicked.
    Panic,
    /// `exec` found a broken invariant.
    Check,
    /// The input took longer than the budget's timeout.
    Timeout,
    /// The input grew the resident set past the budget.
    Memory,
}

/// One input that failed a check.
#[derive(Clone, Debug)]
pub struct Finding {
    /// What failed.
    pub kind: FindingKind,
    /// The panic message, the broken invariant, the time or the memory.
    pub message: String,
    /// The input (shrunk for panics and checks).
    pub input: Vec<u8>,
    /// Where the input was written.
    pub saved: Option<PathBuf>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:?}: {}", self.kind, self.message)?;
        if let Some(p) = &self.saved {
            writeln!(
                f,
                "  input ({} bytes) saved to {}",
                self.input.len(),
                p.display()
            )?;
        }
        write!(f, "  input: {}", preview(&self.input))
    }
}

/// What a campaign did.
#[derive(Clone, Debug)]
pub struct Report {
    /// The target.
    pub target: &'static str,
    /// Inputs run (seeds included).
    pub inputs: u64,
    /// Of those, inputs the target accepted.
    pub accepted: u64,
    /// Longest single input.
    pub slowest: Duration,
    /// Largest resident-set growth of one input (0 where unmeasured).
    pub max_rss_growth_bytes: u64,
    /// Wall-clock time of the campaign.
    pub elapsed: Duration,
    /// Problems found (the campaign stops at the first).
    pub findings: Vec<Finding>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fuzz {}: {} inputs ({} accepted) in {:.1} s, slowest {:.0} ms, max RSS growth {} MiB, {} finding(s)",
            self.target,
            self.inputs,
            self.accepted,
            self.elapsed.as_secs_f64(),
            self.slowest.as_secs_f64() * 1e3,
            self.max_rss_growth_bytes >> 20,
            self.findings.len()
        )?;
        for x in &self.findings {
            write!(f, "\n{x}")?;
        }
        Ok(())
    }
}

/// Campaigns in one process run one at a time, so that the resident set
/// measured is theirs.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The worker thread that runs inputs, and the way to talk to it.
struct Worker {
    send: mpsc::Sender<Vec<u8>>,
    recv: mpsc::Receiver<Result<Outcome, String>>,
}

impl Worker {
    fn start(exec: fn(&[u8]) -> Outcome) -> Self {
        quiet_workers();
        let (send, inputs) = mpsc::channel::<Vec<u8>>();
        let (results, recv) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name(WORKER.into())
            .spawn(move || {
                for input in inputs {
                    let r = std::panic::catch_unwind(AssertUnwindSafe(|| exec(&input)))
                        .map_err(|p| panic_message(p.as_ref()));
                    if results.send(r).is_err() {
                        break;
                    }
                }
            });
        // Without a thread every send fails and the input is reported.
        drop(spawned);
        Worker { send, recv }
    }
}

/// The worker threads' name: their panics are findings, reported with the
/// input, not printed by the panic hook.
const WORKER: &str = "fuzz-worker";

/// Installs (once) a panic hook that is silent on worker threads and the
/// previous hook everywhere else.
fn quiet_workers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() != Some(WORKER) {
                previous(info);
            }
        }));
    });
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_string()))
        .unwrap_or_else(|| "panic with a non-text payload".into())
}

/// One input's result as the campaign sees it.
enum Ran {
    Done(Outcome, Duration, u64),
    Failed(FindingKind, String),
}

struct Runner {
    worker: Worker,
    exec: fn(&[u8]) -> Outcome,
    budget: Budget,
    hwm_resettable: bool,
}

impl Runner {
    fn run(&mut self, input: &[u8]) -> Ran {
        let before = rss_bytes().unwrap_or(0);
        if self.hwm_resettable {
            self.hwm_resettable = reset_hwm();
        }
        let started = Instant::now();
        if self.worker.send.send(input.to_vec()).is_err() {
            self.worker = Worker::start(self.exec);
            return Ran::Failed(FindingKind::Panic, "the worker thread died".into());
        }
        let limit = before.saturating_add(self.budget.rss_growth_bytes);
        loop {
            match self.worker.recv.recv_timeout(Duration::from_millis(5)) {
                Ok(r) => {
                    let took = started.elapsed();
                    let peak = if self.hwm_resettable {
                        hwm_bytes().unwrap_or(0)
                    } else {
                        rss_bytes().unwrap_or(0)
                    };
                    let growth = peak.saturating_sub(before);
                    if growth > self.budget.rss_growth_bytes {
                        return Ran::Failed(
                            FindingKind::Memory,
                            format!("resident set grew by {} MiB", growth >> 20),
                        );
                    }
                    return match r {
                        Ok(Err(check)) => Ran::Failed(FindingKind::Check, check),
                        Err(panic) => Ran::Failed(FindingKind::Panic, panic),
                        Ok(ok) => Ran::Done(ok, took, growth),
                    };
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.worker = Worker::start(self.exec);
                    return Ran::Failed(FindingKind::Panic, "the worker thread died".into());
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let took = started.elapsed();
            if took > self.budget.input_timeout {
                // The stuck worker is abandoned; a new one takes over.
                self.worker = Worker::start(self.exec);
                return Ran::Failed(
                    FindingKind::Timeout,
                    format!("no result after {:.1} s", took.as_secs_f64()),
                );
            }
            if rss_bytes().is_some_and(|now| now > limit) {
                self.worker = Worker::start(self.exec);
                // Still allocating: it cannot be stopped from here, so the
                // input is saved and the process ends before the machine
                // runs out of memory.
                return Ran::Failed(
                    FindingKind::Memory,
                    format!(
                        "resident set grew past {} MiB while the input ran",
                        self.budget.rss_growth_bytes >> 20
                    ),
                );
            }
        }
    }
}

/// Runs `target` within `budget`: every corpus seed, then generated and
/// mutated inputs until the time or input budget is spent or a problem is
/// found.
pub fn campaign(target: &Target, budget: &Budget) -> Report {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut runner = Runner {
        worker: Worker::start(target.exec),
        exec: target.exec,
        budget: budget.clone(),
        hwm_resettable: true,
    };
    let mut report = Report {
        target: target.name,
        inputs: 0,
        accepted: 0,
        slowest: Duration::ZERO,
        max_rss_growth_bytes: 0,
        elapsed: Duration::ZERO,
        findings: Vec::new(),
    };
    let mut seed = budget.seed;
    for b in target.name.bytes() {
        seed = seed.rotate_left(5) ^ u64::from(b);
    }
    let mut rng = Rng::new(seed);
    let seeds: Vec<Vec<u8>> = (target.corpus)()
        .into_iter()
        .map(|mut s| {
            s.truncate(target.max_len);
            s
        })
        .collect();
    let dict = dictionary(&seeds);
    // Accepted mutants join the pool (a poor man's coverage feedback).
    let mut pool = seeds.clone();
    let mut queue: std::collections::VecDeque<Vec<u8>> = seeds.iter().cloned().collect();
    // The budget is for inputs, not for building the corpus.
    let started = Instant::now();
    let time = Duration::from_secs_f64(budget.seconds.max(0.0));
    loop {
        let input = match queue.pop_front() {
            Some(i) => i,
            None => {
                if started.elapsed() >= time || report.inputs >= budget.max_inputs {
                    break;
                }
                match (target.generate, rng.one_in(5) || pool.is_empty()) {
                    (Some(g), true) => g(&mut rng),
                    _ => {
                        let base = rng.pick(&pool).cloned().unwrap_or_default();
                        mutate(&mut rng, &base, &dict, &seeds, target.max_len)
                    }
                }
            }
        };
        report.inputs += 1;
        match runner.run(&input) {
            Ran::Done(ok, took, growth) => {
                report.slowest = report.slowest.max(took);
                report.max_rss_growth_bytes = report.max_rss_growth_bytes.max(growth);
                if ok == Ok(true) {
                    report.accepted += 1;
                    if pool.len() < 512 {
                        pool.push(input);
                    } else {
                        let i = rng.below(pool.len());
                        pool[i] = input;
                    }
                }
            }
            Ran::Failed(kind, message) => {
                let memory_runaway = kind == FindingKind::Memory && message.contains("while");
                let input = if matches!(kind, FindingKind::Panic | FindingKind::Check) {
                    shrink(&mut runner, input, kind)
                } else {
                    input
                };
                let mut finding = Finding {
                    kind,
                    message,
                    saved: save(target.name, kind, &input),
                    input,
                };
                if memory_runaway && budget.end_process_on_runaway {
                    eprintln!("fuzz {}: {finding}", target.name);
                    eprintln!(
                        "fuzz {}: ending the process to stop the allocation",
                        target.name
                    );
                    std::process::exit(3);
                }
                finding.message = finding.message.trim_end().to_string();
                report.findings.push(finding);
                break;
            }
        }
    }
    report.elapsed = started.elapsed();
    report
}

/// A smaller input with the same kind of failure (greedy chunk removal,
/// at most two seconds or 400 tries).
fn shrink(runner: &mut Runner, mut input: Vec<u8>, kind: FindingKind) -> Vec<u8> {
    let started = Instant::now();
    let mut tries = 0;
    let mut chunk = input.len() / 2;
    while chunk >= 1 {
        let mut at = 0;
        while at < input.len() {
            if tries >= 400 || started.elapsed() > Duration::from_secs(2) {
                return input;
            }
            tries += 1;
            let end = (at + chunk).min(input.len());
            let mut candidate = input[..at].to_vec();
            candidate.extend_from_slice(&input[end..]);
            match runner.run(&candidate) {
                Ran::Failed(k, _) if k == kind => input = candidate,
                _ => at += chunk,
            }
        }
        chunk /= 2;
    }
    input
}

/// Writes a finding's input to `target/fuzz-findings/TARGET/`.
fn save(target: &str, kind: FindingKind, input: &[u8]) -> Option<PathBuf> {
    let root = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let dir = root.join("fuzz-findings").join(target);
    std::fs::create_dir_all(&dir).ok()?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in input {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    let p = dir.join(format!("{kind:?}-{h:016x}.bin").to_lowercase());
    std::fs::write(&p, input).ok()?;
    Some(p)
}

/// At most 600 characters of `input`, escaped.
fn preview(input: &[u8]) -> String {
    let text = String::from_utf8_lossy(input);
    let mut s: String = text
        .chars()
        .take(600)
        .flat_map(char::escape_default)
        .collect();
    if text.chars().count() > 600 {
        s.push('…');
    }
    s
}

/// A `/proc/self/status` value in bytes.
fn status_bytes(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The resident set now.
pub fn rss_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// The resident set's high-water mark.
pub fn hwm_bytes() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// Resets the high-water mark to the current resident set (Linux
/// `clear_refs` 5); false where that is not allowed.
fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}
