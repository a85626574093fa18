//! `neuron-sim`: the command-line front end (docs/references/design.md §6). Thin: parse
//! arguments, call the library crates, print text or `--json`.
//!
//! Exit status: 0 ok, 1 a trace expectation failed, 2 bad input.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `print!` that drops its text once stdout is closed (e.g.
/// `neuron-sim map | head`) instead of panicking: the command goes on to
/// its end and its exit status.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::emit(&format!($($arg)*))
    };
}

/// `println!` counterpart of [`out!`].
macro_rules! outln {
    () => {
        $crate::emit("\n")
    };
    ($($arg:tt)*) => {
        $crate::emit(&format!("{}\n", format!($($arg)*)))
    };
}

mod asm_cmd;
mod calibrate;
mod color;
mod dap_cmd;
mod input;
mod ioctl_cmd;
mod json_out;
mod kept_files;
mod meta_cmd;
mod outputs;
mod perfetto_cmd;
mod race_cmd;
mod record_cmd;
mod run_output;
mod sorted_json;
mod step;
mod sweep_cmd;

/// Writes to stdout. Once its reader has gone (a closed pipe: `| head`),
/// what follows is dropped and the command goes on to its end and its
/// exit status (a `calibrate`, `sweep` or `race` that finds a failure
/// still exits 1; docs/user-guide.md §Standard input and output).
fn emit(text: &str) {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    static CLOSED: AtomicBool = AtomicBool::new(false);
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            CLOSED.store(true, Ordering::Relaxed);
            return;
        }
        eprintln!("neuron-sim: cannot write output: {e}");
        std::process::exit(2);
    }
}
use soc::Device;
use soc::exec::TraceFiles;

/// The process allocator: mimalloc. The simulator allocates small, short-lived
/// objects on its hot paths (events, plans, pages); measured in
/// docs/user-guide.md §14 against the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use soc_map::Hex;

/// `neuron-sim --version`: the package version, the commit built (or
/// `unknown` outside a git checkout) and the cargo profile, e.g. `0.0.0
/// (50a402b, release)` (build.rs; docs/user-guide.md §1).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("NEURON_SIM_COMMIT"),
    ", ",
    env!("NEURON_SIM_PROFILE"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "neuron-sim",
    version = VERSION,
    about = "Cycle-level simulator of the AWS Trainium2 (NeuronCore-v3) DMA subsystem"
)]
struct Cli {
    /// Use this SoC address map instead of the built-in csr-maps/soc-map.json.
    #[arg(long, global = true, value_name = "FILE")]
    soc_map: Option<PathBuf>,
    /// Load CSR block maps (*.json) from DIR over the built-in ones.
    #[arg(long, global = true, value_name = "DIR")]
    csr_maps: Option<PathBuf>,
    /// Colour FAILED, ERROR, FAULT, SKIPPED and warnings: `auto` on a
    /// terminal unless NO_COLOR is set, `always`, or `never`.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    color: clap::ColorChoice,
    #[command(subcommand)]
    cmd: Cmd,
}

/// Where the device description comes from.
#[derive(Clone)]
pub(crate) struct Maps {
    soc_map: Option<PathBuf>,
    csr_maps: Option<PathBuf>,
}

impl Maps {
    /// The `--csr-maps` directory's maps (every `*.json` but
    /// `soc-map.json`), in name order.
    fn csr_sources(&self) -> Result<Vec<soc::setup::Source>, Failure> {
        let Some(dir) = &self.csr_maps else {
            return Ok(Vec::new());
        };
        // Read here: a file that is not UTF-8 is named with line, column
        // and byte (input::read_text).
        soc::setup::csr_map_paths_in(dir)
            .map_err(|e| bad_input(format!("--csr-maps: {e}")))?
            .iter()
            .map(|p| source(p, "CSR map", input::InputKind::CsrMap))
            .collect()
    }

    /// The CSR catalog; with `--csr-maps` or `--soc-map`, also checked
    /// against the SoC map as a device build checks it (a block larger
    /// than the regions that name it, …), so every command refuses what
    /// `run` refuses (docs/csr-map-format.md).
    fn catalog(&self) -> Result<&'static csr::Catalog, Failure> {
        let catalog = soc::setup::catalog_from(&self.csr_sources()?).map_err(bad_input)?;
        if self.csr_maps.is_some() || self.soc_map.is_some() {
            self.device()?;
        }
        Ok(catalog)
    }

    pub(crate) fn device(&self) -> Result<Device, Failure> {
        self.device_with_timing(None)
    }

    fn device_with_timing(&self, timing: Option<&Path>) -> Result<Device, Failure> {
        let sources = soc::setup::DeviceSources {
            // A timing file gives only what it changes (docs/timing.md).
            timing: timing
                .map(|p| source(p, "--timing", input::InputKind::Timing))
                .transpose()?,
            soc_map: self
                .soc_map
                .as_deref()
                .map(|p| source(p, "--soc-map", input::InputKind::SocMap))
                .transpose()?,
            csr_maps: self.csr_sources()?,
        };
        soc::setup::device_from(&sources).map_err(bad_input)
    }
}

/// A text input file with its path as its name in messages.
fn source(path: &Path, what: &str, kind: input::InputKind) -> Result<soc::setup::Source, Failure> {
    Ok(soc::setup::Source {
        text: input::read_text(path, what, kind)?,
        name: path.display().to_string(),
    })
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Print the SoC address map, or decode one address.
    Map {
        /// Address to decode (0x-prefixed hex or decimal). Without it, print the region table.
        addr: Option<Hex>,
        /// List every concrete region instead of the compact table (not
        /// with an address: that decodes one).
        #[arg(long, conflicts_with = "addr")]
        expand: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Print the map file itself (the built-in one, or --soc-map's): a
        /// starting point for a custom map.
        #[arg(long, conflicts_with_all = ["addr", "expand", "json"])]
        dump: bool,
    },
    /// CSR register maps.
    Csr {
        #[command(subcommand)]
        cmd: CsrCmd,
    },
    /// The doorbell debugger: run a trace, stopping at doorbells,
    /// breakpoints and watchpoints, stepping at any granularity.
    ///
    /// Exit status as `run` once the trace has run to its end; 3 when the
    /// session was quit before.
    Step(step::StepArgs),
    /// The debugger as a Debug Adapter Protocol server on standard input
    /// and output, for VS Code and other DAP clients: the `launch` request
    /// names the trace as `program` (docs/user-guide.md §12).
    ///
    /// Exit status: the run's once the trace ran to its end; 3 when the
    /// client disconnected before.
    Dap,
    /// Decode a 16-byte hardware descriptor (--desc) or a 64-byte DMA instruction word (--word).
    #[command(group(clap::ArgGroup::new("what").required(true).args(["desc", "word"])))]
    Decode {
        /// The descriptor: 32 hex digits, the 16 bytes in memory order.
        #[arg(long, value_name = "HEX")]
        desc: Option<String>,
        /// The instruction word: 128 hex digits, the 64 bytes in memory order.
        #[arg(long, value_name = "HEX")]
        word: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Disassemble a binary stream of 64-byte DMA instruction words into text, one per line.
    Disasm {
        /// The binary stream (its length must be a multiple of 64; `-`:
        /// standard input).
        file: PathBuf,
        /// Write the text to OUT instead of standard output (`-`: standard
        /// output).
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Show every field, not only those that differ from their default.
        #[arg(long)]
        full: bool,
    },
    /// Assemble instruction-word text (KIND key=value ..., one per line) into a binary stream.
    Asm {
        /// The text file (`-`: standard input).
        file: PathBuf,
        /// The binary output file (`-`: standard output).
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
    },
    /// The driver's ioctl ABI: list the supported ioctls, decode a number.
    Ioctl {
        #[command(subcommand)]
        cmd: ioctl_cmd::IoctlCmd,
    },
    /// Print the timing parameters (built-in, or with --timing FILE laid
    /// over them): value, unit and source of each.
    Timing {
        /// A timing file to lay over the defaults, as `run --timing` does.
        #[arg(long, value_name = "FILE")]
        timing: Option<PathBuf>,
        /// Print JSON in the timing-file format (a complete file to edit).
        #[arg(long)]
        json: bool,
    },
    /// Run a parameterised trace over a set of points: CSV and an SVG
    /// bandwidth plot (`sweep merge` joins `--shard` parts). The points
    /// write no files: `dump … file=` bytes stay in each point's memory
    /// (docs/user-guide.md §18).
    Sweep(sweep_cmd::SweepArgs),
    /// Run a trace under many perturbed schedules (seeds 1 ..= N, in
    /// parallel) and report the checks whose outcome differs (exit 1):
    /// a race the deterministic run hides (docs/races.md); a check that
    /// fails under every seed also exits 1, and the races the detector
    /// found are listed. The seeds
    /// write no files: `dump … file=` bytes are compared in memory
    /// (`run --schedule-seed N` writes one seed's).
    Race(race_cmd::RaceArgs),
    /// Run the calibration traces and compare with the published figures
    /// (the table of docs/timing.md).
    Calibrate(calibrate::CalibrateArgs),
    /// Print the JSON Schema of a JSON output (`run`, `sweep`, …; without
    /// KIND, list them); with --out-dir, write every schema (or KIND's) as
    /// DIR/KIND.schema.json (docs/schemas/ holds them).
    Schema {
        /// The output kind, e.g. `run` or `decode-desc`.
        kind: Option<String>,
        /// Write KIND.schema.json files into DIR.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Print a shell completion script: `neuron-sim completions bash >
    /// ~/.local/share/bash-completion/completions/neuron-sim`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `neuron-sim man | man -l -`; with
    /// --out-dir, write one page per command (neuron-sim-run.1, …) to DIR.
    Man {
        /// Write neuron-sim.1 and a page per subcommand into DIR.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Execute a trace: registers, memory, descriptors, doorbells, run/wait.
    Run {
        /// The trace file (`-`: standard input).
        trace: PathBuf,
        /// Write every CSR that differs from the value the device starts
        /// with (its reset value; the SENG engines' boot masks, user guide
        /// §10) to FILE (YAML, or JSON if FILE ends in .json; `-`: YAML on
        /// standard output).
        #[arg(long, value_name = "FILE")]
        csr_snapshot: Option<PathBuf>,
        /// Print the run report as JSON (docs/schemas/run.schema.json).
        #[arg(long)]
        json: bool,
        /// Leave out the host wall-clock figures (the `host_timing` block
        /// of --json, the `host time` line of the text): the output is then
        /// the same bytes on every run of the same trace.
        #[arg(long)]
        no_host_timing: bool,
        /// Timing file (JSON): the parameters it changes, as numbers or
        /// {value, unit, source}; the rest keep their defaults (docs/timing.md).
        #[arg(long, value_name = "FILE")]
        timing: Option<PathBuf>,
        /// Record every ioctl the host runtime issues to FILE (JSON lines;
        /// `neuron-sim ioctl replay FILE` re-issues them on a fresh driver;
        /// `-`: standard output).
        #[arg(long, value_name = "FILE")]
        ioctl_record: Option<PathBuf>,
        /// Timing-only mode: bulk DMA copies move no payload (cycles, faults
        /// and registers as in data mode). Checks of bytes a copy should
        /// have written are skipped, not passed, and a skip does not change
        /// the exit status; from the first time the device acts on such
        /// bytes (a descriptor, an index vector, a register written from
        /// them) every later check is skipped (docs/user-guide.md §11).
        #[arg(long)]
        timing_only: bool,
        /// Log every CSR access to FILE, one stable line each (cycle, master,
        /// R/W, address, register.field, old -> new; docs/user-guide.md;
        /// `-`: standard output).
        #[arg(long, value_name = "FILE")]
        reg_log: Option<PathBuf>,
        /// Write a VCD waveform (GTKWave, Surfer) of queue head/tail/ring id,
        /// engine state, error causes and semaphores to FILE (`-`: standard
        /// output).
        #[arg(long, value_name = "FILE")]
        vcd: Option<PathBuf>,
        /// `--perfetto FILE` and its filters.
        #[command(flatten)]
        perfetto: perfetto_cmd::PerfettoArgs,
        /// Print only failed statements, errors and the summary.
        #[arg(short, long, conflicts_with = "verbose")]
        quiet: bool,
        /// Also print every device event under its statement (DMA
        /// doorbells, prefetches, packets, faults, firmware micro-ops).
        #[arg(short, long)]
        verbose: bool,
        /// Show at most N device events in all (`-v`, `--json`); the rest
        /// are counted, not shown, and each statement says how many it
        /// left out (`events_omitted` in JSON). Events wait on disk until
        /// their statement ends, so a run that never idles cannot fill it.
        #[arg(long, value_name = "N", default_value_t = run_output::DEFAULT_EVENTS_LIMIT)]
        events_limit: u64,
        /// Run the file as a binary stream of 64-byte instruction words (as
        /// `asm` writes them) on this core's Q7 firmware (tpb0 … tpb7), with
        /// the default DGE configuration; a file ending in .bin needs it.
        #[arg(long, value_name = "tpbN", value_parser = parse_core)]
        core: Option<u8>,
        /// Exit 1 when the run raised a fault no `expect_fault` claimed
        /// (masked causes excepted), or the firmware refused a word no
        /// `expect_refusal` claimed (for CI, docs/user-guide.md §Faults).
        #[arg(long)]
        fail_on_fault: bool,
        /// Check every DMA and host data access against happens-before and
        /// report unordered conflicting accesses in a `race` section
        /// (docs/races.md).
        #[arg(long)]
        detect_races: bool,
        /// Exit 1 when the race detector found a race or a wait-for graph
        /// found a deadlock (implies --detect-races; for CI).
        #[arg(long)]
        fail_on_race: bool,
        /// Write the wait-for graph (the first with a deadlock, else the
        /// last taken) to FILE as Graphviz DOT (implies --detect-races;
        /// docs/races.md §Deadlocks).
        #[arg(long, value_name = "FILE")]
        deadlock_graph: Option<PathBuf>,
        /// What never-written memory reads as for the DMA engines: `zero`
        /// (the default), `nan` (the NaN of the element type the reader
        /// uses, 0xFF bytes where it has none or is unknown) or
        /// `pattern=0xAB` (docs/races.md §Uninitialised memory).
        #[arg(long, value_name = "MODE", value_parser = parse_uninit)]
        uninit: Option<UninitFill>,
        /// Report every DMA read of bytes nothing wrote (distinguishing
        /// bytes the trace or host set up) in the race section.
        #[arg(long)]
        check_uninit: bool,
        /// Perturb the schedule: every packet's latency grows by a
        /// reproducible pseudo-random 0..=64 cycles drawn from N, and the
        /// arbitration ties between engines and between queues are drawn
        /// from N (docs/races.md §Schedule perturbation).
        #[arg(long, value_name = "N")]
        schedule_seed: Option<u64>,
    },
}

/// `--uninit MODE`: what never-written memory reads as (`None`: zero).
#[derive(Clone, Copy, Debug)]
struct UninitFill(Option<soc::UninitFill>);

fn parse_uninit(text: &str) -> Result<UninitFill, String> {
    match text {
        "zero" => Ok(UninitFill(None)),
        "nan" => Ok(UninitFill(Some(soc::UninitFill::Nan))),
        _ => text
            .strip_prefix("pattern=")
            .and_then(|v| {
                v.strip_prefix("0x")
                    .map_or_else(|| v.parse::<u8>().ok(), |h| u8::from_str_radix(h, 16).ok())
            })
            .map(|b| UninitFill(Some(soc::UninitFill::Byte(b))))
            .ok_or_else(|| {
                format!("`{text}` is not an uninit mode (expected zero, nan or pattern=0xAB)")
            }),
    }
}

/// `--core tpbN`.
fn parse_core(text: &str) -> Result<u8, String> {
    text.strip_prefix("tpb")
        .and_then(|n| n.parse::<u8>().ok())
        .filter(|&n| n < 8 && text == format!("tpb{n}"))
        .ok_or_else(|| format!("`{text}` is not a core (expected tpb0 … tpb7)"))
}

#[derive(Debug, Subcommand)]
enum CsrCmd {
    /// Print a block's built-in map file (JSON, as --csr-maps DIR reads it).
    Dump {
        /// Block name, e.g. udma_m2s_q.
        block: String,
    },
    /// List a block's registers (or, without BLOCK, the blocks).
    List {
        /// Block name, e.g. udma_m2s_q.
        block: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Decode a register value into its fields.
    Decode {
        /// Block name, e.g. udma_m2s_q.
        block: String,
        /// Register name, e.g. Q_CFG or SEM_INC[3].
        register: String,
        /// The value (0x-prefixed hex or decimal).
        value: Hex,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// A command's failure: message and exit status.
struct Failure {
    code: u8,
    message: String,
}

fn bad_input(message: impl Into<String>) -> Failure {
    Failure {
        code: 2,
        message: message.into(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    color::set_choice(cli.color);
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("neuron-sim: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn dispatch(cli: Cli) -> Result<u8, Failure> {
    let maps = Maps {
        soc_map: cli.soc_map,
        csr_maps: cli.csr_maps,
    };
    match cli.cmd {
        Cmd::Map { dump: true, .. } => cmd_map_dump(&maps),
        Cmd::Map {
            addr, expand, json, ..
        } => cmd_map(&maps, addr, expand, json),
        Cmd::Csr { cmd } => match cmd {
            CsrCmd::Dump { block } => cmd_csr_dump(&block),
            CsrCmd::List { block, json } => cmd_csr_list(&maps, block.as_deref(), json),
            CsrCmd::Decode {
                block,
                register,
                value,
                json,
            } => cmd_csr_decode(&maps, &block, &register, value, json),
        },
        Cmd::Decode { desc, word, json } => match (desc, word) {
            (_, Some(word)) => asm_cmd::cmd_decode_word(&word, json),
            (desc, None) => cmd_decode_desc(&desc.unwrap_or_default(), json),
        },
        Cmd::Disasm { file, output, full } => asm_cmd::cmd_disasm(&file, output.as_deref(), full),
        Cmd::Asm { file, output } => asm_cmd::cmd_asm(&file, &output),
        Cmd::Timing { timing, json } => cmd_timing(timing.as_deref(), json),
        Cmd::Sweep(args) => sweep_cmd::cmd_sweep(&maps, args),
        Cmd::Race(args) => race_cmd::cmd_race(&maps, &args),
        Cmd::Calibrate(args) => calibrate::cmd_calibrate(&maps, &args),
        Cmd::Schema { kind, out_dir } => json_out::cmd_schema(kind.as_deref(), out_dir.as_deref()),
        Cmd::Completions { shell } => meta_cmd::cmd_completions(shell),
        Cmd::Man { out_dir } => meta_cmd::cmd_man(out_dir.as_deref()),
        Cmd::Ioctl { cmd } => ioctl_cmd::run(cmd, &maps),
        Cmd::Step(args) => step::cmd_step(&maps, args),
        Cmd::Dap => dap_cmd::cmd_dap(&maps),
        Cmd::Run {
            trace,
            csr_snapshot,
            json,
            timing,
            ioctl_record,
            timing_only,
            reg_log,
            vcd,
            perfetto,
            quiet,
            verbose,
            events_limit,
            core,
            fail_on_fault,
            no_host_timing,
            detect_races,
            fail_on_race,
            deadlock_graph,
            uninit,
            check_uninit,
            schedule_seed,
        } => cmd_run(
            &maps,
            &trace,
            &RunOpts {
                core,
                fail_on_fault,
                detect_races: detect_races || fail_on_race || deadlock_graph.is_some(),
                fail_on_race,
                deadlock_graph: deadlock_graph.as_deref(),
                uninit: uninit.and_then(|u| u.0),
                check_uninit,
                schedule_seed,
                host_timing: !no_host_timing,
                snapshot: csr_snapshot.as_deref(),
                json,
                timing: timing.as_deref(),
                ioctl_record: ioctl_record.as_deref(),
                timing_only,
                reg_log: reg_log.as_deref(),
                vcd: vcd.as_deref(),
                perfetto: &perfetto,
                level: if quiet {
                    run_output::Level::Quiet
                } else if verbose {
                    run_output::Level::Verbose
                } else {
                    run_output::Level::Normal
                },
                events_limit,
            },
        ),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, Failure> {
    serde_json::to_string_pretty(v).map_err(|e| Failure {
        code: 2,
        message: format!("cannot render JSON: {e}"),
    })
}

/// `map --dump`: the map file as the device loads it.
fn cmd_map_dump(maps: &Maps) -> Result<u8, Failure> {
    match &maps.soc_map {
        None => out!("{}", soc_map::TRN2_MAP_JSON),
        Some(p) => out!(
            "{}",
            input::read_text(p, "--soc-map", input::InputKind::SocMap)?
        ),
    }
    Ok(0)
}

/// `csr dump BLOCK`: the built-in map file of one block.
fn cmd_csr_dump(block: &str) -> Result<u8, Failure> {
    let lower = block.to_ascii_lowercase();
    match csr::BUILTIN_MAPS.iter().find(|m| m.block == lower) {
        Some(m) => {
            out!("{}", m.json);
            Ok(0)
        }
        None => {
            let names: Vec<&str> = csr::BUILTIN_MAPS.iter().map(|m| m.block).collect();
            Err(bad_input(format!(
                "unknown CSR block `{block}` (blocks: {}){}",
                names.join(", "),
                trace_format::closest_name(block, names.iter().copied())
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default()
            )))
        }
    }
}

fn cmd_map(maps: &Maps, addr: Option<Hex>, expand: bool, json: bool) -> Result<u8, Failure> {
    let dev = maps.device()?;
    match addr {
        Some(a) => {
            let info = soc::describe(&dev, a.0);
            if json {
                json_out::print(info)?;
            } else {
                outln!("{}", info.to_text());
            }
        }
        None if expand => {
            let rows = soc_map::table::expanded(dev.map());
            if json {
                json_out::print(json_out::MapExpanded { regions: rows })?;
            } else {
                for r in rows {
                    let kind = serde_json::to_value(r.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    outln!(
                        "{:<28} {:>18} {:>14}  {:<9} {}",
                        r.name,
                        r.base.to_string(),
                        r.size.to_string(),
                        kind,
                        r.block.unwrap_or_default()
                    );
                }
            }
        }
        None => {
            let rows = soc_map::table::region_table(dev.map());
            if json {
                json_out::print(json_out::MapTable { regions: rows })?;
            } else {
                out!("{}", soc_map::table::render_table(&rows));
            }
        }
    }
    Ok(0)
}

fn cmd_csr_list(maps: &Maps, block: Option<&str>, json: bool) -> Result<u8, Failure> {
    let catalog = maps.catalog()?;
    let Some(name) = block else {
        let names: Vec<&str> = catalog.block_names().collect();
        if json {
            let blocks = names
                .iter()
                .map(|n| json_out::CsrBlock {
                    name: (*n).to_string(),
                    description: catalog
                        .block(n)
                        .map(|m| m.description().to_string())
                        .unwrap_or_default(),
                })
                .collect();
            json_out::print(json_out::CsrBlocks { blocks })?;
        } else {
            for n in names {
                let desc = catalog.block(n).map(|m| m.description()).unwrap_or("");
                outln!("{n:<16} {desc}");
            }
        }
        return Ok(0);
    };
    let map = catalog.block(name).ok_or_else(|| {
        let names: Vec<&str> = catalog.block_names().collect();
        bad_input(format!(
            "unknown CSR block `{name}` (blocks: {})",
            names.join(", ")
        ))
    })?;
    let listing = csr::listing::list(map);
    if json {
        json_out::print(json_out::CsrRegisters {
            block: name.to_string(),
            description: map.description().to_string(),
            registers: listing,
        })?;
    } else {
        out!("{}", csr::listing::render_text(map, &listing));
    }
    Ok(0)
}

fn cmd_csr_decode(
    maps: &Maps,
    block: &str,
    register: &str,
    value: Hex,
    json: bool,
) -> Result<u8, Failure> {
    let catalog = maps.catalog()?;
    let map = catalog
        .block(block)
        .ok_or_else(|| bad_input(format!("unknown CSR block `{block}`")))?;
    let value = u32::try_from(value.0)
        .map_err(|_| bad_input(format!("value {value} does not fit in 32 bits")))?;
    let reg = map
        .try_lookup(register)
        .map_err(|e| bad_input(format!("block {block}: {e}")))?;
    let fields: Vec<json_out::FieldValue> = reg
        .spec()
        .decode(value)
        .into_iter()
        .map(|(n, v)| json_out::FieldValue {
            name: n.to_string(),
            value: Hex(u64::from(v)),
        })
        .collect();
    if json {
        json_out::print(json_out::CsrDecode {
            block: block.to_string(),
            register: reg.name(),
            offset: Hex(reg.offset()),
            value: soc_map::Hex32(value),
            fields,
        })?;
    } else {
        outln!("{}.{} = {value:#010x}", block, reg.name());
        for f in fields {
            outln!("  {:<24} {}", f.name, f.value);
        }
    }
    Ok(0)
}

/// `neuron-sim timing [--timing FILE] [--json]`.
fn cmd_timing(timing: Option<&Path>, json: bool) -> Result<u8, Failure> {
    let t = match timing {
        None => sim_core::TimingConfig::default_config().map_err(|e| bad_input(e.to_string()))?,
        Some(p) => {
            let text = input::read_text(p, "--timing", input::InputKind::Timing)?;
            let name = p.display().to_string();
            sim_core::TimingConfig::from_json_over_defaults(&text, &name)
                .map_err(|e| bad_input(format!("{name}: {e}")))?
        }
    };
    if json {
        json_out::print(json_out::Timing {
            description: "neuron-sim timing parameters (neuron-sim timing --json); docs/timing.md"
                .to_string(),
            parameters: t.params,
        })?;
    } else {
        for (name, p) in &t.params {
            outln!("{name:<32} {:>10} {:<22} {}", p.value, p.unit, p.source);
        }
    }
    Ok(0)
}

fn cmd_decode_desc(hex: &str, json: bool) -> Result<u8, Failure> {
    let desc = dma_abi::parse_hex_descriptor(hex).map_err(|e| bad_input(format!("--desc: {e}")))?;
    let decoded = desc.decode();
    if json {
        json_out::print(&decoded)?;
    } else {
        out!("{}", dma_abi::render_text(&decoded));
    }
    Ok(0)
}

/// The files of a `run`: [`host_exec::DirFiles`] (relative to the trace's
/// directory, the current one for a trace on standard input), and `<stdin>` for `run --core tpbN
/// -` (the instruction stream read from standard input before the run).
struct RunFiles {
    dir: host_exec::DirFiles,
    stdin_stream: Option<std::sync::Arc<dyn soc::exec::FileRange>>,
}

impl TraceFiles for RunFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        self.dir.read(path)
    }
    fn write(&mut self, path: &str, data: &[u8]) -> std::io::Result<()> {
        self.dir.write(path, data)
    }
    fn open(&mut self, path: &str) -> std::io::Result<std::sync::Arc<dyn soc::exec::FileRange>> {
        match &self.stdin_stream {
            Some(stream) if path == input::STDIN_NAME => Ok(std::sync::Arc::clone(stream)),
            _ => self.dir.open(path),
        }
    }
}

/// The options of `neuron-sim run` (one field per flag).
struct RunOpts<'a> {
    /// `--csr-snapshot FILE`.
    snapshot: Option<&'a Path>,
    /// `--json`.
    json: bool,
    /// `--timing FILE`.
    timing: Option<&'a Path>,
    /// `--ioctl-record FILE`.
    ioctl_record: Option<&'a Path>,
    /// `--timing-only`.
    timing_only: bool,
    /// `--reg-log FILE`.
    reg_log: Option<&'a Path>,
    /// `--vcd FILE`.
    vcd: Option<&'a Path>,
    /// `--perfetto FILE` and its filters.
    perfetto: &'a perfetto_cmd::PerfettoArgs,
    /// `--core tpbN`: the file is a binary instruction stream for this core.
    core: Option<u8>,
    /// `-q` / `-v`.
    level: run_output::Level,
    /// `--events-limit N`: device events shown in all.
    events_limit: u64,
    /// `--fail-on-fault`.
    fail_on_fault: bool,
    /// `--detect-races` (or `--fail-on-race`).
    detect_races: bool,
    /// `--fail-on-race`.
    fail_on_race: bool,
    /// `--deadlock-graph FILE`.
    deadlock_graph: Option<&'a Path>,
    /// `--uninit`: what never-written memory reads as (`None`: zero).
    uninit: Option<soc::UninitFill>,
    /// `--check-uninit`.
    check_uninit: bool,
    /// `--schedule-seed N`.
    schedule_seed: Option<u64>,
    /// Not `--no-host-timing`: report the host wall-clock figures.
    host_timing: bool,
}

/// What `run` runs.
enum Input {
    /// A text trace.
    Text(String),
    /// A binary instruction stream on this core (`--core`).
    Stream(u8),
}

fn cmd_run(maps: &Maps, trace: &Path, o: &RunOpts<'_>) -> Result<u8, Failure> {
    let RunOpts {
        snapshot,
        json,
        timing,
        ioctl_record,
        timing_only,
        reg_log,
        vcd,
        perfetto,
        level,
        events_limit,
        core,
        fail_on_fault,
        detect_races,
        fail_on_race,
        deadlock_graph,
        uninit,
        check_uninit,
        schedule_seed,
        host_timing,
    } = *o;
    let timeline = perfetto.plan()?;
    // Two outputs on one file, or an output on an input, would silently
    // lose one of them: refused before anything runs.
    outputs::check_distinct(
        &[
            ("--csr-snapshot", snapshot),
            ("--reg-log", reg_log),
            ("--vcd", vcd),
            (
                "--perfetto",
                timeline.as_ref().and_then(|t| t.perfetto_path()),
            ),
            (
                "--profile",
                timeline.as_ref().and_then(|t| t.profile_path()),
            ),
            ("--ioctl-record", ioctl_record),
            ("--deadlock-graph", deadlock_graph),
        ],
        &[
            ("TRACE", Some(trace)),
            ("--timing", timing),
            ("--soc-map", maps.soc_map.as_deref()),
        ],
        outputs::Dash::Stdio,
    )?;
    // Output files are checked before anything runs: a path that cannot be
    // written is found now, not after a long run. One of them may be `-`,
    // standard output; the report then goes to standard error.
    let mut to_stdout: Vec<&str> = Vec::new();
    for (path, what, option) in [
        (snapshot, "CSR snapshot", "--csr-snapshot"),
        (reg_log, "register-access log", "--reg-log"),
        (vcd, "VCD", "--vcd"),
        (
            timeline.as_ref().and_then(|t| t.perfetto_path()),
            "Perfetto trace",
            "--perfetto",
        ),
        (
            timeline.as_ref().and_then(|t| t.profile_path()),
            "profile",
            "--profile",
        ),
        (ioctl_record, "ioctl recording", "--ioctl-record"),
        (deadlock_graph, "deadlock graph", "--deadlock-graph"),
    ] {
        match path {
            Some(p) if input::is_stdio(p) => to_stdout.push(option),
            Some(p) => check_writable(p, what)?,
            None => {}
        }
    }
    if let [first, second, ..] = to_stdout[..] {
        return Err(bad_input(format!(
            "{first} - and {second} - both name standard output; only one output can go there (give the other a file); nothing was run"
        )));
    }
    if let (true, [option]) = (json, &to_stdout[..]) {
        return Err(bad_input(format!(
            "--json prints the report on standard output, so {option} cannot write there too (give it a file); nothing was run"
        )));
    }
    let report_to_stderr = !to_stdout.is_empty();
    let mut opts = host_exec::SessionOptions {
        keep_driver_events: timeline.is_some(),
        ..host_exec::SessionOptions::default()
    };
    if let Some(p) = ioctl_record {
        let w = outputs::create(p).map_err(|e| {
            bad_input(format!(
                "cannot create ioctl recording {}: {e}",
                outputs::name_of(p)
            ))
        })?;
        opts.record = Some(w);
    }
    let name = input::name_of(trace);
    let mut stdin_stream: Option<std::sync::Arc<dyn soc::exec::FileRange>> = None;
    let what = match core {
        Some(core) => {
            // A bad stream is bad input before anything runs.
            let bytes = input::read_bytes_or_stdin(
                trace,
                "instruction stream",
                input::InputKind::InstructionStream,
            )?;
            let stream = soc::exec::InMemoryFile(bytes);
            soc::exec::read_stream(&stream)
                .map_err(|m| bad_input(format!("{name}: {m}; nothing was run")))?;
            if input::is_stdio(trace) {
                // Standard input cannot be read twice: the run reads these bytes.
                stdin_stream = Some(std::sync::Arc::new(stream));
            }
            Input::Stream(core)
        }
        None if input::has_ext(trace, "bin") => {
            return Err(bad_input(format!(
                "{}: a .bin file is a binary instruction stream: name the core whose firmware runs it (--core tpb0 … tpb7)",
                trace.display()
            )));
        }
        None => Input::Text(input::read_text_or_stdin(
            trace,
            "trace",
            input::InputKind::Trace,
        )?),
    };
    let mut dev = maps.device_with_timing(timing)?;
    dev.set_timing_only(timing_only);
    if detect_races {
        dev.detect_races();
    }
    if uninit.is_some() || check_uninit {
        dev.set_uninit(uninit, check_uninit);
    }
    if schedule_seed.is_some() {
        dev.set_schedule_seed(schedule_seed);
    }
    record_cmd::start(&mut dev, reg_log, vcd)?;
    let mut files = RunFiles {
        dir: host_exec::DirFiles::new(trace.parent().map(Path::to_path_buf).unwrap_or_default()),
        stdin_stream,
    };
    // Statements and events go to the output as they happen
    // (docs/user-guide.md §Output); SIGINT/SIGTERM stop the run, which
    // still reports what it did.
    let interrupt = run_output::install_interrupt();
    let format = if json {
        run_output::Format::Json
    } else {
        run_output::Format::Text
    };
    let out = std::sync::Arc::new(std::sync::Mutex::new(run_output::RunOutput::new(
        format,
        level,
        name.clone(),
        timeline.is_some(),
        std::sync::Arc::clone(&interrupt),
        report_to_stderr,
        events_limit,
    )));
    // Engines build event records only for a consumer that shows them.
    let wants_events = json || timeline.is_some() || level == run_output::Level::Verbose;
    dev.set_trace(wants_events);
    dev.set_event_sink(Some(run_output::event_sink(&out)));
    let mut hooks = run_output::RunHooks::new(
        std::sync::Arc::clone(&out),
        std::sync::Arc::clone(&interrupt),
        !json && level != run_output::Level::Quiet,
    );
    let started = std::time::Instant::now();
    let ran = match &what {
        Input::Text(source) => {
            host_exec::run_source_observed(dev, source, &name, &mut files, opts, &mut hooks)
        }
        Input::Stream(tpb) => {
            let file_name = if input::is_stdio(trace) {
                input::STDIN_NAME.into()
            } else {
                trace.file_name().unwrap_or_default().to_string_lossy()
            };
            let statements = soc::exec::stream_trace(*tpb, &file_name);
            host_exec::run_trace_observed(dev, &statements, &name, &mut files, opts, &mut hooks)
        }
    };
    let (report, mut session) = match ran {
        Ok(r) => r,
        Err(errors) => {
            let mut msg = String::new();
            for e in &errors {
                msg.push_str(&format!("{e}\n"));
            }
            msg.push_str(&format!("{} error(s); nothing was run", errors.len()));
            return Err(bad_input(msg));
        }
    };
    hooks.finish();
    let host = session.used().then(|| session.report());
    let race = session.device_mut().race_summary();
    let events = session.device_mut().events_processed();
    let speed = json_out::HostTiming::measure(started.elapsed(), &report, events);
    let signal = interrupt.load(std::sync::atomic::Ordering::Relaxed);
    let mut out = out
        .lock()
        .map_err(|_| bad_input("the run output is unusable (a thread panicked)"))?;
    // A failed output is reported after the run's report, which is
    // printed in any case.
    let mut output_errors: Vec<Failure> = Vec::new();
    if let Err(e) = record_cmd::finish(session.device_mut(), reg_log, vcd) {
        output_errors.push(e);
    }
    if let Some(path) = deadlock_graph {
        let graphs = race.as_ref().map_or(&[][..], |r| &r.wait_graphs[..]);
        let dot = graphs
            .iter()
            .find(|g| g.deadlock)
            .or(graphs.last())
            .map_or_else(
                || "digraph waitfor {\n  label=\"nothing waited\";\n}\n".to_string(),
                soc::WaitGraph::to_dot,
            );
        if let Err(e) = outputs::write(path, dot.as_bytes()) {
            output_errors.push(bad_input(format!(
                "cannot write deadlock graph {}: {e}",
                outputs::name_of(path)
            )));
        }
    }
    if let Some(plan) = &timeline {
        let events = out.take_timeline();
        let map = session.device_mut().map().clone();
        let region = |addr: u64| perfetto_cmd::region_of(&map, addr);
        let marks = race
            .as_ref()
            .map(perfetto_cmd::race_marks)
            .unwrap_or_default();
        if let Err(e) = perfetto_cmd::write_with_races(
            plan,
            &report,
            &events,
            session.driver_events(),
            &region,
            &marks,
        ) {
            output_errors.push(e);
        }
    }
    let interrupted = (signal != 0).then(|| {
        format!(
            "interrupted by {} at cycle {}: the statements after the last one shown did not run",
            run_output::signal_name(signal),
            report.summary.cycles
        )
    });
    if json {
        // Through a Value: the streamed `steps` are spliced in where the
        // (ordered) map puts the key.
        let doc = json_out::Doc::new(json_out::Run {
            run: host_exec::RunDocument {
                report: &report,
                host_runtime: host,
                interrupted: interrupted.clone(),
            },
            host_timing: host_timing.then_some(speed),
            race: race.clone(),
        });
        let v = serde_json::to_value(&doc).map_err(|e| bad_input(e.to_string()))?;
        out.finish_json(&v);
    } else {
        let mut tail = report.tail_text_with(level != run_output::Level::Quiet);
        if let Some(h) = &host {
            tail.push_str(&h.to_text());
        }
        if let Some(r) = &race {
            tail.push_str(&r.to_text());
        }
        if host_timing {
            tail.push_str(&format!(
                "host time {:.3} s: {:.0} simulated cycles per host second, {:.0} descriptors per host second, {} events ({:.0} per host second), slowdown {:.1}x vs real time\n",
                speed.host_seconds,
                speed.cycles_per_host_second,
                speed.descriptors_per_host_second,
                speed.event_count,
                speed.events_per_host_second,
                speed.slowdown
            ));
        }
        if let Some(i) = &interrupted {
            tail.push_str(i);
            tail.push('\n');
        }
        out.finish_text(&tail);
    }
    if out.events_omitted_total > 0 {
        eprintln!(
            "warning: {} device events were not shown: --events-limit {} (each statement says how many it left out)",
            out.events_omitted_total, events_limit
        );
    }
    drop(out);
    if let Some(p) = ioctl_record
        && let Some(e) = session.finish_recording()
    {
        output_errors.push(bad_input(format!(
            "cannot write ioctl recording {}: {e}",
            outputs::name_of(p)
        )));
    }
    if let Some(path) = snapshot {
        let snap = session.device_mut().csr_snapshot();
        // `.json` in any case; `-` (standard output) is YAML.
        let text = if input::has_ext(path, "json") {
            to_json(&json_out::Doc::new(json_out::CsrSnapshot {
                snapshot: &snap,
            }))
            .map(|t| t + "\n")
        } else {
            Ok(snap.to_yaml())
        };
        if let Err(e) = text.and_then(|t| {
            outputs::write(path, t.as_bytes()).map_err(|e| {
                bad_input(format!(
                    "cannot write CSR snapshot {}: {e}",
                    outputs::name_of(path)
                ))
            })
        }) {
            output_errors.push(e);
        }
    }
    // Every output is written and flushed by now: the device, driver and
    // runtime go back to the system with the process instead of being
    // torn down one allocation at a time (~0.45 M instructions on a chip
    // run). An ioctl recording's writer flushes when dropped, so a session
    // streaming one is dropped as before.
    if ioctl_record.is_none() {
        std::mem::forget(session);
    }
    if !output_errors.is_empty() {
        let message = output_errors
            .into_iter()
            .map(|f| f.message)
            .collect::<Vec<_>>()
            .join("\n");
        return Err(bad_input(format!(
            "{message}\n(the run completed; its report is above)"
        )));
    }
    if signal != 0 {
        return Ok(u8::try_from(128 + signal).unwrap_or(130));
    }
    let code = report.exit_code();
    // Unexpected faults and refusals (docs/user-guide.md §11 for the
    // timing-only split); `neuron_sim.run_trace(fail_on_fault=True)` too.
    if fail_on_fault {
        let verdict = report.summary.fail_on_fault();
        if let Some(note) = verdict.uncounted_note(code) {
            eprintln!("{note}");
        }
        if let (failed, Some(why)) = verdict.verdict(code) {
            eprintln!("{why}");
            return Ok(failed);
        }
    }
    if code == 0
        && fail_on_race
        && let Some(r) = race
            .as_ref()
            .filter(|r| !r.races.is_empty() || r.deadlock())
    {
        if !r.races.is_empty() {
            eprintln!(
                "--fail-on-race: {} race(s) (listed under `race:`; docs/races.md)",
                r.races.len()
            );
        }
        if r.deadlock() {
            eprintln!(
                "--fail-on-race: the run ended in a deadlock (the wait-for graph under `race:`; docs/races.md §Deadlocks)"
            );
        }
        return Ok(1);
    }
    Ok(code)
}

/// Fails when `path` cannot be written (its directory is missing, it is a
/// directory, or it is not writable), before a run spends time on it. A
/// file this check creates is removed again.
pub(crate) fn check_writable(path: &Path, what: &str) -> Result<(), Failure> {
    let existed = path.exists();
    if path.is_dir() {
        return Err(bad_input(format!(
            "cannot write {what} {}: it is a directory; nothing was run",
            path.display()
        )));
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| {
            bad_input(format!(
                "cannot write {what} {}: {e}; nothing was run",
                path.display()
            ))
        })?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
