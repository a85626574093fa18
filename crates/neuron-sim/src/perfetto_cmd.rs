//! `run --perfetto FILE`: the run's timeline as Chrome trace-event JSON
//! (crates/timeline; docs/user-guide.md, "Timelines in Perfetto").

use std::path::PathBuf;

use soc::exec::RunReport;

use crate::{Failure, bad_input};

/// The `--perfetto*` options of `run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct PerfettoArgs {
    /// Write the run's timeline to FILE as Chrome trace-event JSON (open it
    /// in ui.perfetto.dev or chrome://tracing): a process per NeuronCore,
    /// a track per engine queue, a slice per packet, doorbells, faults,
    /// counters and flows from instructions/ioctls to their packets.
    #[arg(long, value_name = "FILE")]
    perfetto: Option<PathBuf>,
    /// Timeline: keep only these engines, e.g. `0-3,128`.
    #[arg(long, value_name = "LIST", requires = "perfetto")]
    perfetto_engines: Option<String>,
    /// Timeline: keep only these queue indices (0..15), e.g. `0,2-3`.
    #[arg(long, value_name = "LIST", requires = "perfetto")]
    perfetto_queues: Option<String>,
    /// Timeline: keep only cycles START..END (either side may be empty).
    #[arg(long, value_name = "START..END", requires = "perfetto")]
    perfetto_window: Option<String>,
}

/// Where the timeline goes and what it keeps, checked before the run.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) path: PathBuf,
    filter: timeline::Filter,
}

impl PerfettoArgs {
    /// The plan, or `None` without `--perfetto`.
    pub(crate) fn plan(&self) -> Result<Option<Plan>, Failure> {
        let Some(path) = self.perfetto.clone() else {
            return Ok(None);
        };
        let bad = |opt: &str, e: String| bad_input(format!("--{opt}: {e}"));
        let engines = self
            .perfetto_engines
            .as_deref()
            .map(|t| timeline::parse_list(t, timeline::ENGINES))
            .transpose()
            .map_err(|e| bad("perfetto-engines", e))?;
        let queues = self
            .perfetto_queues
            .as_deref()
            .map(|t| timeline::parse_list(t, u16::from(timeline::QUEUES)))
            .transpose()
            .map_err(|e| bad("perfetto-queues", e))?
            .map(|s| s.into_iter().filter_map(|q| u8::try_from(q).ok()).collect());
        let window = self
            .perfetto_window
            .as_deref()
            .map(timeline::parse_window)
            .transpose()
            .map_err(|e| bad("perfetto-window", e))?;
        Ok(Some(Plan {
            path,
            filter: timeline::Filter {
                engines,
                queues,
                window,
            },
        }))
    }
}

/// Writes the timeline of a finished run.
pub(crate) fn write(
    plan: &Plan,
    report: &RunReport,
    events: &[soc::DeviceEvent],
    driver: &[(u64, kdriver::DriverEvent)],
) -> Result<(), Failure> {
    let meta = timeline::Meta {
        trace: report.trace.clone(),
        clock_ghz: report.summary.clock_ghz,
        end_cycle: report.summary.cycles,
    };
    let out = timeline::export(events, driver, &meta, &plan.filter);
    // `-`: standard output (crate::outputs).
    crate::outputs::write(&plan.path, out.json.as_bytes()).map_err(|e| {
        bad_input(format!(
            "cannot write timeline {}: {e}",
            crate::outputs::name_of(&plan.path)
        ))
    })?;
    eprintln!(
        "timeline: {} trace events ({} packets, {} flows, {} bytes) written to {}",
        out.events,
        out.packets,
        out.flows,
        out.json.len(),
        crate::outputs::name_of(&plan.path)
    );
    Ok(())
}
