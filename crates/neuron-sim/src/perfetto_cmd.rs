//! `run --perfetto FILE`: the run's timeline as Chrome trace-event JSON
//! (crates/timeline; docs/user-guide.md, "Timelines in Perfetto"); `run
//! --profile FILE`: its DMA activity as Neuron Explorer's profile tables
//! (docs/user-guide.md, "Profile tables").

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
    /// Write the run's DMA activity to FILE as JSON in the shape of Neuron
    /// Explorer's profile tables: `DmaPacket` (a row per packet),
    /// `DmaPacketAggregated` (per instruction word or ioctl),
    /// `DmaQueuesInfo` (per engine queue) and the DMA summary metrics
    /// (`average_dma_size`, `dma_active_time`, …), in ns and bytes.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
}

/// Where the timeline and the profile go and what the timeline keeps,
/// checked before the run.
#[derive(Debug)]
pub(crate) struct Plan {
    perfetto: Option<(PathBuf, timeline::Filter)>,
    profile: Option<PathBuf>,
}

impl Plan {
    /// The `--perfetto` file, if any.
    pub(crate) fn perfetto_path(&self) -> Option<&std::path::Path> {
        self.perfetto.as_ref().map(|(p, _)| p.as_path())
    }

    /// The `--profile` file, if any.
    pub(crate) fn profile_path(&self) -> Option<&std::path::Path> {
        self.profile.as_deref()
    }
}

impl PerfettoArgs {
    /// The plan, or `None` without `--perfetto` and `--profile`.
    pub(crate) fn plan(&self) -> Result<Option<Plan>, Failure> {
        let profile = self.profile.clone();
        let Some(path) = self.perfetto.clone() else {
            return Ok(profile.map(|p| Plan {
                perfetto: None,
                profile: Some(p),
            }));
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
            perfetto: Some((
                path,
                timeline::Filter {
                    engines,
                    queues,
                    window,
                },
            )),
            profile,
        }))
    }
}

/// The name of the memory region `addr` is in (`hbm0`, `tpb0.sbuf`), empty
/// when none: the profile's source and dest.
pub(crate) fn region_of(map: &soc_map::SocMap, addr: u64) -> String {
    map.decode(addr)
        .region
        .map_or_else(String::new, |r| map.name(r).to_string())
}

/// Writes the timeline and the profile of a finished run. `region` names
/// the memory region of an address (the profile's source and dest).
pub(crate) fn write(
    plan: &Plan,
    report: &RunReport,
    events: &[soc::DeviceEvent],
    driver: &[(u64, kdriver::DriverEvent)],
    region: &dyn Fn(u64) -> String,
) -> Result<(), Failure> {
    write_with_races(plan, report, events, driver, region, &[])
}

/// The races between two packets of a race section, as timeline marks
/// (docs/races.md): sides on other agents (the host, a core) are not
/// queue tracks and are left out.
pub(crate) fn race_marks(summary: &soc::RaceSummary) -> Vec<timeline::RaceMark> {
    let queue = |agent: &str| {
        let (e, q) = agent.strip_prefix("eng")?.split_once(".q")?;
        Some((e.parse::<u16>().ok()?, q.parse::<u8>().ok()?))
    };
    summary
        .races
        .iter()
        .filter_map(|r| {
            let (e1, q1) = queue(&r.first.agent)?;
            let (e2, q2) = queue(&r.second.agent)?;
            Some(timeline::RaceMark {
                name: format!("race {}", r.kind),
                text: format!(
                    "{} race on {}: {} by {} / {} by {}",
                    r.kind,
                    r.range,
                    r.first.access,
                    r.first.source,
                    r.second.access,
                    r.second.source
                ),
                first: (r.first.cycle, e1, q1),
                second: (r.second.cycle, e2, q2),
            })
        })
        .collect()
}

/// [`write`] with races flagged on the Perfetto timeline.
pub(crate) fn write_with_races(
    plan: &Plan,
    report: &RunReport,
    events: &[soc::DeviceEvent],
    driver: &[(u64, kdriver::DriverEvent)],
    region: &dyn Fn(u64) -> String,
    races: &[timeline::RaceMark],
) -> Result<(), Failure> {
    let meta = timeline::Meta {
        trace: report.trace.clone(),
        clock_ghz: report.summary.clock_ghz,
        end_cycle: report.summary.cycles,
    };
    if let Some((path, filter)) = &plan.perfetto {
        let out = timeline::export_with_races(events, driver, &meta, filter, races);
        // `-`: standard output (crate::outputs).
        crate::outputs::write(path, out.json.as_bytes()).map_err(|e| {
            bad_input(format!(
                "cannot write timeline {}: {e}",
                crate::outputs::name_of(path)
            ))
        })?;
        eprintln!(
            "timeline: {} trace events ({} packets, {} flows, {} bytes) written to {}",
            out.events,
            out.packets,
            out.flows,
            out.json.len(),
            crate::outputs::name_of(path)
        );
    }
    if let Some(path) = &plan.profile {
        let p = timeline::profile(events, driver, &meta, region);
        let mut json = serde_json::to_string_pretty(&crate::json_out::Doc::new(&p))
            .map_err(|e| bad_input(e.to_string()))?;
        json.push('\n');
        crate::outputs::write(path, json.as_bytes()).map_err(|e| {
            bad_input(format!(
                "cannot write profile {}: {e}",
                crate::outputs::name_of(path)
            ))
        })?;
        eprintln!(
            "profile: {} DMA packets, {} instructions, {} queues, average_dma_size {:.0} bytes, written to {}",
            p.summary.dma_packets,
            p.dma_packet_aggregated.len(),
            p.dma_queues_info.len(),
            p.summary.average_dma_size,
            crate::outputs::name_of(path)
        );
    }
    Ok(())
}
