//! `neuron-sim calibrate`: the arguments and the printing; the calibration
//! (traces, rows, checks, the Markdown table) is `sweep::calibrate`
//! (docs/timing.md). Prints the table, or rewrites it between the markers
//! of docs/timing.md (`--write`, what `cargo xtask calibrate` does), or
//! checks that the file is current (`--check`). A row outside its check
//! makes the command exit 1; so does a calibration trace that fails its
//! own check (its rows are failed, the others still reported; 2 when the
//! trace met an error, as `run` exits).

use std::path::{Path, PathBuf};

use clap::Args;
use sweep::DeviceFactory;
use sweep::calibrate::{calibrate, render_markdown, replace_between};

use crate::{Failure, Maps, bad_input};

/// `neuron-sim calibrate`.
#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// The calibration traces (`traces/calib` of the repository; row (a)
    /// uses `calib-32k-hbm-sbuf.trace` in its parent directory).
    #[arg(long, value_name = "DIR", default_value = "traces/calib")]
    dir: PathBuf,
    /// Rewrite the table between the calibration markers of FILE
    /// (docs/timing.md).
    #[arg(long, value_name = "FILE", conflicts_with = "check")]
    write: Option<PathBuf>,
    /// Exit 1 when the table in FILE differs from the regenerated one.
    #[arg(long, value_name = "FILE")]
    check: Option<PathBuf>,
    /// Print the rows as JSON instead of the Markdown table.
    #[arg(long)]
    json: bool,
    /// Traces run at once (default: the host's available parallelism).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
}

/// `neuron-sim calibrate …`.
pub(crate) fn cmd_calibrate(maps: &Maps, args: &CalibrateArgs) -> Result<u8, Failure> {
    // The files the table goes into are read (and their markers found)
    // before the traces run: a bad path is bad input at once.
    let write = args.write.as_deref().map(read_doc).transpose()?;
    let check = args.check.as_deref().map(read_doc).transpose()?;
    let factory = DeviceFactory::new(&maps.device()?);
    let cal = calibrate(&factory, &args.dir, args.jobs).map_err(|e| bad_input(e.message()))?;
    let table = render_markdown(&cal);
    // A trace that failed its own check is named here; its rows say
    // "not judged" in the table.
    for f in cal.failed_traces() {
        let point = if f.point == f.trace {
            String::new()
        } else {
            format!(" ({})", f.point)
        };
        eprintln!(
            "neuron-sim: {}{point}: exit {}: {}",
            f.trace, f.exit, f.problem
        );
    }
    if args.json {
        crate::json_out::print(&cal)?;
    } else {
        out!("{table}");
    }
    if let Some((path, doc)) = write {
        let new = replace_between(&doc, &table)
            .map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
        if new != doc {
            std::fs::write(path, new)
                .map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))?;
            eprintln!(
                "neuron-sim: calibration table written to {}",
                path.display()
            );
        }
    }
    if let Some((path, doc)) = check {
        let new = replace_between(&doc, &table)
            .map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
        if new != doc {
            eprintln!(
                "neuron-sim: the calibration table in {} is stale: run `cargo xtask calibrate`",
                path.display()
            );
            return Ok(cal.exit_code().max(1));
        }
    }
    Ok(cal.exit_code())
}

/// The text of the file the table goes into, with its markers checked
/// (`replace_between` with an empty table), at most
/// `InputKind::CalibrationDoc`'s size.
fn read_doc(path: &Path) -> Result<(&Path, String), Failure> {
    let doc = crate::input::read_text(
        path,
        "calibration table file",
        crate::input::InputKind::CalibrationDoc,
    )?;
    replace_between(&doc, "").map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
    Ok((path, doc))
}
