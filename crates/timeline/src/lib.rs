//! Timelines of a run as Chrome trace-event JSON, the format
//! ui.perfetto.dev and chrome://tracing open (docs/references/figures.md §D.1).
//!
//! [`export`] is a pure function from the events a run recorded — the
//! device's ([`soc::DeviceEvent`]: engine and firmware events, cycle
//! stamped) and the kernel driver's ([`kdriver::DriverEvent`]) — and the DMA
//! clock to the JSON text. It never touches a device.
//!
//! Layout (`docs/user-guide.md`, "Timelines in Perfetto"):
//! - one process per NeuronCore (`pid` = TPB + 1) holding its 16 engines
//!   and its Q7 firmware (a slice per instruction on `Q7 instructions`, its
//!   steps as instants on `Q7 events`); one process "host / driver" (`pid`
//!   9) holding the H2T engines 128..131, the driver's ioctls, its H2T
//!   batches and its log;
//! - per engine queue, its packets as async slices (`b`/`e`, one `id`
//!   each) named `engN qQ` from start to landing: packets of one queue
//!   overlap (the next starts while the previous one's writes are in
//!   flight), and Perfetto stacks a process's same-name async slices on one
//!   track; the queue's thread track `engN qQ` holds its instants and
//!   counters (other overlapping slices, an instruction's or a lost
//!   packet's, go to extra lanes `… (2)` right below);
//! - instants (`i`) for doorbells, faults, state changes and firmware
//!   steps; counters (`C`) for each queue's posted-but-not-completed
//!   descriptors and each engine's bytes in flight;
//! - bound flows (`bind_id`, `flow_in`/`flow_out`) from a zero-length
//!   `doorbell` slice inside the instruction or ioctl that rang a doorbell
//!   to the first and the last packet of the descriptors it rang (the last
//!   is the completion semaphore write of a firmware word's engine share).
//!
//! Times: cycles → integer nanoseconds (`cycle / clock_ghz`, rounded), `ts`
//! and `dur` in µs with up to three decimals, `displayTimeUnit: "ns"`.
//! Output is deterministic: events sorted by time, then by the order they
//! were built.

mod model;
mod profile;
mod render;

pub use profile::{DmaPacket, DmaPacketAggregated, DmaQueuesInfo, DmaSummary, Profile};

use std::collections::BTreeSet;

use kdriver::DriverEvent;
use soc::DeviceEvent;

/// Engines of the device (TPB engines 0..128, H2T engines 128..132).
pub const ENGINES: u16 = 132;
/// First H2T (host-to-device) engine.
pub const FIRST_H2T_ENGINE: u16 = 128;
/// Engines per NeuronCore.
pub const ENGINES_PER_CORE: u16 = 16;
/// Queues per engine.
pub const QUEUES: u8 = 16;
/// The `pid` of the host / driver process.
pub const HOST_PID: u32 = 9;

/// What the run was.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// Trace file name (goes to `otherData`).
    pub trace: String,
    /// DMA clock, GHz (cycles → ns).
    pub clock_ghz: f64,
    /// Simulated cycles at the end of the run (unfinished slices end here).
    pub end_cycle: u64,
}

/// An inclusive window of cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// First cycle.
    pub start: u64,
    /// Last cycle.
    pub end: u64,
}

impl Window {
    /// Whether `[start, end]` overlaps the window.
    #[must_use]
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        start <= self.end && end >= self.start
    }

    /// Whether `cycle` is in the window.
    #[must_use]
    pub fn contains(&self, cycle: u64) -> bool {
        self.start <= cycle && cycle <= self.end
    }
}

/// What to keep. The default keeps everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Engines to keep (their queue tracks and counters; a core's firmware
    /// track stays when one of its engines does, the driver's tracks when
    /// an H2T engine does).
    pub engines: Option<BTreeSet<u16>>,
    /// Queue indices to keep on every kept engine.
    pub queues: Option<BTreeSet<u8>>,
    /// Cycles to keep: slices overlapping it, instants and counter
    /// changes inside it (each counter starts at its value at `start`).
    pub window: Option<Window>,
}

impl Filter {
    fn engine(&self, e: u16) -> bool {
        self.engines.as_ref().is_none_or(|s| s.contains(&e))
    }

    fn queue(&self, q: u8) -> bool {
        self.queues.as_ref().is_none_or(|s| s.contains(&q))
    }

    fn any_engine(&self, range: std::ops::Range<u16>) -> bool {
        self.engines
            .as_ref()
            .is_none_or(|s| s.range(range).next().is_some())
    }
}

/// The exported timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Export {
    /// The JSON text.
    pub json: String,
    /// Trace events written (metadata included).
    pub events: usize,
    /// Packet slices written (landed packets; `cat` = `packet`).
    pub packets: usize,
    /// Flows written.
    pub flows: usize,
}

/// Builds the timeline of a run.
///
/// `device` are the device's events in the order the run recorded them
/// (e.g. every `RunReport.steps[].events` in turn); events without a cycle
/// stamp (semaphore, pulse and ignored-write side effects of register
/// writes) are not shown. `driver` are the kernel driver's events, each
/// with the cycle it began (`host_exec::HostSession::driver_events`).
pub fn export<'a>(
    device: impl IntoIterator<Item = &'a DeviceEvent>,
    driver: &[(u64, DriverEvent)],
    meta: &Meta,
    filter: &Filter,
) -> Export {
    export_with_races(device, driver, meta, filter, &[])
}

/// A race between two packets (docs/races.md), to flag on the timeline:
/// each side's (cycle, engine, queue).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceMark {
    /// The slices' name (`race write/write`).
    pub name: String,
    /// The report line (the `race` arg).
    pub text: String,
    /// The earlier access.
    pub first: (u64, u16, u8),
    /// The later access.
    pub second: (u64, u16, u8),
}

/// [`export`] with races flagged: a zero-length `race` slice on each
/// side's queue track and a flow arrow from the first to the second.
pub fn export_with_races<'a>(
    device: impl IntoIterator<Item = &'a DeviceEvent>,
    driver: &[(u64, DriverEvent)],
    meta: &Meta,
    filter: &Filter,
    races: &[RaceMark],
) -> Export {
    let model = model::build(device, driver, meta);
    render::render(&model, meta, filter, races)
}

/// The run's DMA activity as Neuron Explorer's profile tables
/// ([`Profile`]; docs/user-guide.md §Profile tables), from the same events
/// as [`export`]. `region` names the memory region of an address (`hbm0`,
/// `tpb3.sbuf`).
pub fn profile<'a>(
    device: impl IntoIterator<Item = &'a DeviceEvent>,
    driver: &[(u64, DriverEvent)],
    meta: &Meta,
    region: &dyn Fn(u64) -> String,
) -> Profile {
    let model = model::build(device, driver, meta);
    profile::build(&model, meta, region)
}

/// Parses a list of numbers and ranges, `0-3,128`, each below `limit`.
///
/// # Errors
///
/// A message naming the bad item.
pub fn parse_list(text: &str, limit: u16) -> Result<BTreeSet<u16>, String> {
    let mut out = BTreeSet::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("`{text}`: empty item in the list"));
        }
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(item)?;
                (n, n)
            }
        };
        if a > b {
            return Err(format!("`{item}`: range runs backwards"));
        }
        if b >= u64::from(limit) {
            return Err(format!("`{item}`: must be below {limit}"));
        }
        // Both fit in u16: below `limit`.
        for n in a..=b {
            out.insert(u16::try_from(n).map_err(|_| format!("`{item}`: too large"))?);
        }
    }
    Ok(out)
}

/// Parses a cycle window `START..END` (either side may be left out).
///
/// # Errors
///
/// A message when it is not two numbers around `..`, or runs backwards.
pub fn parse_window(text: &str) -> Result<Window, String> {
    let Some((a, b)) = text.split_once("..") else {
        return Err(format!("`{text}`: expected START..END (cycles)"));
    };
    let start = if a.trim().is_empty() { 0 } else { number(a)? };
    let end = if b.trim().is_empty() {
        u64::MAX
    } else {
        number(b)?
    };
    if start > end {
        return Err(format!("`{text}`: the window ends before it starts"));
    }
    Ok(Window { start, end })
}

/// A decimal or `0x` hex number, `_` separators allowed.
fn number(text: &str) -> Result<u64, String> {
    let t: String = text.trim().chars().filter(|c| *c != '_').collect();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|_| format!("`{}` is not a number", text.trim()))
}

#[cfg(test)]
mod tests;
