//! DML — the `dma_memory_logger` usage subsystem (tdrv-dmem §5, docs/references/wiki.md
//! §H.3/§H.4): per-MLA running counters, a fixed-size circular event log,
//! and the OOM / utilisation report rendered when the kernel says ENOMEM.
//!
//! Departures from the C original, all deliberate:
//! - the `assert`s on channel/NC (`dma_memory_logger.c:0x58/0x59/0x73`)
//!   become [`DmlError`] values;
//! - a FREE that would drive a counter below zero (or an ALLOC that would
//!   overflow one) is rejected *without any change* — no counter moves and
//!   no log entry is written — so the counters always equal the sum over
//!   live allocations;
//! - the lock is the caller's business (`&mut self`).

use std::fmt::{self, Write as _};

use serde::Serialize;

use crate::types::{DmemAction, MemLocation, USAGE_TYPES, UsageType};

/// HBM channels per device (`memory_usage[4]`; `tdram_channel < 4`).
pub const NUM_CHANNELS: usize = 4;

/// NeuronCores (TPBs) per device (`memory_usage_nc[8][..]`).
pub const NUM_NCS: usize = 8;

/// Row width of the per-NC matrix: 22 usages + the grand total (tdrv-dmem
/// §5 QUIRK: `[8][23]`, not `[8][22]`).
pub const NC_COLUMNS: usize = USAGE_TYPES + 1;

/// Column of the per-NC grand total (`memory_usage_nc[nc][22]`).
pub const NC_TOTAL_COLUMN: usize = USAGE_TYPES;

/// Why [`DmemLogger::add_entry`] refused an event. In every case the
/// logger is left exactly as it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DmlError {
    /// `tdram_channel >= 4` on a TONGA_DRAM event (C: assert at 0x58).
    InvalidChannel { channel: u32 },
    /// `nc_idx >= 8` on a TONGA_DRAM event (C: assert at 0x59).
    InvalidNc { nc: u32 },
    /// A FREE larger than what the counters hold (double free, or a free
    /// of something never allocated).
    Underflow {
        channel: u32,
        nc: u32,
        usage: UsageType,
        allocated_size: u64,
    },
    /// An ALLOC that would overflow a `u64` counter.
    Overflow {
        channel: u32,
        nc: u32,
        usage: UsageType,
        allocated_size: u64,
    },
}

impl fmt::Display for DmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidChannel { channel } => {
                write!(
                    f,
                    "invalid HBM channel {channel} (must be < {NUM_CHANNELS})"
                )
            }
            Self::InvalidNc { nc } => write!(f, "invalid NC index {nc} (must be < {NUM_NCS})"),
            Self::Underflow {
                channel,
                nc,
                usage,
                allocated_size,
            } => write!(
                f,
                "free of {allocated_size} bytes ({}) on channel {channel} NC {nc} exceeds the \
                 tracked usage",
                usage.name()
            ),
            Self::Overflow {
                channel,
                nc,
                usage,
                allocated_size,
            } => write!(
                f,
                "alloc of {allocated_size} bytes ({}) on channel {channel} NC {nc} overflows a \
                 usage counter",
                usage.name()
            ),
        }
    }
}

impl std::error::Error for DmlError {}

/// What `dml_add_entry` reads from a `dmem_t` (docs/references/wiki.md §H.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmlEntryInput {
    /// `mem_type` (+56).
    pub mem_type: MemLocation,
    /// `mem_usage_type` (+60): the matrix column (never the category byte).
    pub usage: UsageType,
    /// `tdram_channel` (+64): HBM index, `< 4` for TONGA_DRAM.
    pub tdram_channel: u32,
    /// `hint` (+136).
    pub hint: Option<String>,
    /// `pcore->device_tpb_idx`: the matrix row.
    pub nc_idx: u32,
    /// `size` (+16): the requested size (logged).
    pub size: u64,
    /// `allocated_size` (+48) = size + align_offset: what the counters move by.
    pub allocated_size: u64,
    /// `_pa` (+24).
    pub pa: u64,
    /// `align_offset` (+40).
    pub align_offset: u64,
}

/// `dma_mem_log_entry_t`, the 64-byte ring element (tdrv-dmem §5):
/// a snapshot of the `dmem_t` plus the post-update channel total.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DmlLogEntry {
    /// @0: ALLOC = 1, FREE = 2.
    pub action: DmemAction,
    /// @4.
    pub mem_loc: MemLocation,
    /// @8.
    pub mem_usage: UsageType,
    /// @12.
    pub tdram_channel: u32,
    /// @16 (a `char*` in C).
    pub hint: Option<String>,
    /// @24.
    pub nc_idx: u32,
    /// @32.
    pub size: u64,
    /// @40.
    pub pa: u64,
    /// @48.
    pub align_offset: u64,
    /// @56: `memory_usage[tdram_channel]` after this event (TONGA_DRAM);
    /// 0 for host events.
    pub total_mem_used: u64,
}

/// `dma_mem_log_t` (1600 B in C; tdrv-dmem §5, docs/references/wiki.md §H.3).
#[derive(Clone, Debug)]
pub struct DmemLogger {
    mla_idx: u32,
    max_entries: usize,
    entry_count: usize,
    next_entry_idx: usize,
    entries_dropped: u64,
    memory_usage: [u64; NUM_CHANNELS],
    memory_usage_nc: [[u64; NC_COLUMNS]; NUM_NCS],
    /// Ring storage; grows to `max_entries`, then slots are overwritten.
    entries: Vec<DmlLogEntry>,
    verbose_log_dev_mem: bool,
}

impl DmemLogger {
    /// `dml_init`: zeroed counters, an empty ring of `max_entries` slots
    /// (0 disables logging; counters still move).
    #[must_use]
    pub fn new(mla_idx: u32, max_entries: usize, verbose: bool) -> Self {
        Self {
            mla_idx,
            max_entries,
            entry_count: 0,
            next_entry_idx: 0,
            entries_dropped: 0,
            memory_usage: [0; NUM_CHANNELS],
            memory_usage_nc: [[0; NC_COLUMNS]; NUM_NCS],
            entries: Vec::new(),
            verbose_log_dev_mem: verbose,
        }
    }

    /// `dml_add_entry` (tdrv-dmem §5): TONGA_DRAM events move
    /// `memory_usage[channel]`, `memory_usage_nc[nc][usage]` and
    /// `memory_usage_nc[nc][22]` by ±`allocated_size`; every event (host
    /// too) is appended to the ring, overwriting the oldest when full.
    ///
    /// # Errors
    /// [`DmlError`] for a bad channel/NC or an underflowing FREE /
    /// overflowing ALLOC; the logger is then unchanged (no counter, no
    /// entry).
    pub fn add_entry(&mut self, e: &DmlEntryInput, action: DmemAction) -> Result<(), DmlError> {
        let mut total_mem_used = 0;
        if e.mem_type == MemLocation::TongaDram {
            let ch = usize::try_from(e.tdram_channel)
                .ok()
                .filter(|&c| c < NUM_CHANNELS)
                .ok_or(DmlError::InvalidChannel {
                    channel: e.tdram_channel,
                })?;
            let nc = usize::try_from(e.nc_idx)
                .ok()
                .filter(|&n| n < NUM_NCS)
                .ok_or(DmlError::InvalidNc { nc: e.nc_idx })?;
            let col = e.usage.raw() as usize;
            let step = |v: u64| match action {
                DmemAction::Alloc => v.checked_add(e.allocated_size),
                DmemAction::Free => v.checked_sub(e.allocated_size),
            };
            let row = &self.memory_usage_nc[nc];
            let updated = (
                step(self.memory_usage[ch]),
                step(row[col]),
                step(row[NC_TOTAL_COLUMN]),
            );
            let (Some(chan), Some(usage), Some(total)) = updated else {
                let (channel, nc, usage, allocated_size) =
                    (e.tdram_channel, e.nc_idx, e.usage, e.allocated_size);
                return Err(match action {
                    DmemAction::Alloc => DmlError::Overflow {
                        channel,
                        nc,
                        usage,
                        allocated_size,
                    },
                    DmemAction::Free => DmlError::Underflow {
                        channel,
                        nc,
                        usage,
                        allocated_size,
                    },
                });
            };
            self.memory_usage[ch] = chan;
            self.memory_usage_nc[nc][col] = usage;
            self.memory_usage_nc[nc][NC_TOTAL_COLUMN] = total;
            total_mem_used = chan;
        }
        self.append(DmlLogEntry {
            action,
            mem_loc: e.mem_type,
            mem_usage: e.usage,
            tdram_channel: e.tdram_channel,
            hint: e.hint.clone(),
            nc_idx: e.nc_idx,
            size: e.size,
            pa: e.pa,
            align_offset: e.align_offset,
            total_mem_used,
        });
        Ok(())
    }

    /// The ring append: `next = (idx + 1) % max_entries`; full ⇒ overwrite
    /// the oldest and count a drop.
    fn append(&mut self, entry: DmlLogEntry) {
        if self.max_entries == 0 {
            return;
        }
        let idx = self.next_entry_idx;
        if let Some(slot) = self.entries.get_mut(idx) {
            *slot = entry;
        } else {
            self.entries.push(entry);
        }
        self.next_entry_idx = (idx + 1) % self.max_entries;
        if self.entry_count < self.max_entries {
            self.entry_count += 1;
        } else {
            self.entries_dropped += 1;
        }
    }

    /// `mla_idx`.
    #[must_use]
    pub fn mla_idx(&self) -> u32 {
        self.mla_idx
    }

    /// `verbose_log_dev_mem`: 22-usage table instead of the aggregate one.
    #[must_use]
    pub fn verbose(&self) -> bool {
        self.verbose_log_dev_mem
    }

    /// `memory_usage[channel]`; `None` for `channel >= 4`.
    #[must_use]
    pub fn memory_usage(&self, channel: u32) -> Option<u64> {
        self.memory_usage
            .get(usize::try_from(channel).ok()?)
            .copied()
    }

    /// `memory_usage_nc[nc][column]` (column 0..=21 a usage, 22 the NC
    /// total); `None` when out of range.
    #[must_use]
    pub fn memory_usage_nc(&self, nc: u32, column: usize) -> Option<u64> {
        self.memory_usage_nc
            .get(usize::try_from(nc).ok()?)?
            .get(column)
            .copied()
    }

    /// The logged events, oldest first.
    #[must_use]
    pub fn entries(&self) -> Vec<&DmlLogEntry> {
        let len = self.entries.len();
        if len == 0 {
            return Vec::new();
        }
        // Oldest = next slot once the ring has wrapped, else slot 0.
        let start = if self.entry_count == self.max_entries {
            self.next_entry_idx
        } else {
            0
        };
        (0..self.entry_count)
            .filter_map(|i| self.entries.get((start + i) % len))
            .collect()
    }

    /// `entry_count`: live ring entries (≤ `max_entries`).
    #[must_use]
    pub fn entry_count(&self) -> usize {
        self.entry_count
    }

    /// `entries_dropped`: events overwritten by the ring.
    #[must_use]
    pub fn entries_dropped(&self) -> u64 {
        self.entries_dropped
    }

    /// `max_entries`: ring capacity.
    #[must_use]
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// The `MEM_USAGE` trace line (tdrv-dmem §2 step 7 / §4). `Some(hint)`
    /// gives the alloc form `"MEM_USAGE: %lu bytes, channel: %u, total
    /// usage: (%lu/%lu), hint:%s"`; `None` the free form (no hint). An alloc
    /// with a NULL hint printed `(null)` under glibc: pass `Some("(null)")`.
    /// Total usage is `memory_usage[channel]` (0 for an invalid channel).
    #[must_use]
    pub fn mem_usage_line(
        &self,
        size: u64,
        channel: u32,
        hbm_capacity_bytes: u64,
        hint: Option<&str>,
    ) -> String {
        let used = self.memory_usage(channel).unwrap_or(0);
        let mut s = format!(
            "MEM_USAGE: {size} bytes, channel: {channel}, total usage: ({used}/{hbm_capacity_bytes})"
        );
        if let Some(h) = hint {
            let _ = write!(s, ", hint:{h}");
        }
        s
    }

    /// `dml_dump`: counters then log entries, one line each (stable text;
    /// the C layout is not in the sources, so this one is ours).
    #[must_use]
    pub fn dump(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "DML mla {}: entries {}/{}, dropped {}",
            self.mla_idx, self.entry_count, self.max_entries, self.entries_dropped
        );
        for (ch, used) in self.memory_usage.iter().enumerate() {
            let _ = writeln!(s, "memory_usage[{ch}] = {used}");
        }
        for (nc, row) in self.memory_usage_nc.iter().enumerate() {
            let _ = write!(s, "memory_usage_nc[{nc}]: total {}", row[NC_TOTAL_COLUMN]);
            for u in UsageType::ALL {
                let v = row[u.raw() as usize];
                if v != 0 {
                    let _ = write!(s, " {}={v}", u.name());
                }
            }
            s.push('\n');
        }
        for (i, e) in self.entries().into_iter().enumerate() {
            let _ = writeln!(
                s,
                "entry {i}: {} {} {} ch {} nc {} size {} pa {:#x} align_offset {} total {} hint {}",
                match e.action {
                    DmemAction::Alloc => "ALLOC",
                    DmemAction::Free => "FREE",
                },
                match e.mem_loc {
                    MemLocation::HostDram => "HOST_DRAM",
                    MemLocation::TongaDram => "TONGA_DRAM",
                },
                e.mem_usage.name(),
                e.tdram_channel,
                e.nc_idx,
                e.size,
                e.pa,
                e.align_offset,
                e.total_mem_used,
                e.hint.as_deref().unwrap_or("(null)"),
            );
        }
        s
    }

    /// `dml_log_dev_mem` (docs/references/wiki.md §H.4): the device-OOM report for a
    /// failed `size`/`align` allocation of `usage` on ND`nd`:NC`nc`, then the
    /// utilisation table for HBM `channel` (NCs `2·channel` and
    /// `2·channel+1`, docs/references/driver.md §6.3; NCs ≥ 8 are skipped). The table is
    /// the 13 aggregate columns of [`REPORT_COLUMNS`] or, when verbose, the
    /// 22 usage columns. "ND n Overall" is the sum of the NC rows. The
    /// trailing "HBM … capacity" line is a simulator addition.
    #[allow(clippy::too_many_arguments)]
    #[must_use]
    pub fn log_dev_mem(
        &self,
        nd: u32,
        nc: u32,
        channel: u32,
        size: u64,
        align: u64,
        usage: UsageType,
        hbm_capacity_bytes: u64,
    ) -> String {
        let alignment = if align == 0 {
            "none".to_owned()
        } else {
            human_readable_byte_size(align)
        };
        let mut lines = vec![
            format!(
                "Failed to allocate {} (alignment: {alignment}, usage: {}) on ND{nd:2}:NC{nc:2}",
                human_readable_byte_size(size),
                usage_human_name(usage)
            ),
            "Displaying Current Memory Utilization:".to_owned(),
            "(NOTE: the lines are LONG, and NEFF id to name mapping is printed after)".to_owned(),
        ];
        let first = u64::from(channel) * 2;
        lines.push(format!(
            "LNC size is 1. Neuron Cores using this HBM: NC {first} and NC {}",
            first + 1
        ));
        let ncs: Vec<usize> = [first, first + 1]
            .into_iter()
            .filter_map(|n| usize::try_from(n).ok())
            .filter(|&n| n < NUM_NCS)
            .collect();

        let (headers, nc_rows): (Vec<&str>, Vec<(String, Vec<u64>)>) = if self.verbose_log_dev_mem {
            let mut h = vec!["TOTAL"];
            h.extend(UsageType::ALL.iter().map(|u| u.name()));
            let rows = ncs
                .iter()
                .map(|&n| {
                    let row = &self.memory_usage_nc[n];
                    let mut v = vec![row[NC_TOTAL_COLUMN]];
                    v.extend_from_slice(&row[..USAGE_TYPES]);
                    (format!("_NC {n}"), v)
                })
                .collect();
            (h, rows)
        } else {
            let rows = ncs
                .iter()
                .map(|&n| {
                    let row = &self.memory_usage_nc[n];
                    let mut v = vec![0u64; REPORT_COLUMNS.len()];
                    v[0] = row[NC_TOTAL_COLUMN];
                    for u in UsageType::ALL {
                        let c = 1 + report_column(u) as usize;
                        v[c] = v[c].saturating_add(row[u.raw() as usize]);
                    }
                    (format!("_NC {n}"), v)
                })
                .collect();
            (REPORT_COLUMNS.to_vec(), rows)
        };
        let mut overall = vec![0u64; headers.len()];
        for (_, v) in &nc_rows {
            for (o, x) in overall.iter_mut().zip(v) {
                *o = o.saturating_add(*x);
            }
        }
        let mut rows = vec![(format!("ND {nd} Overall"), overall)];
        rows.extend(nc_rows);
        lines.extend(render_table(&headers, &rows));
        lines.push("NEFF id to name mapping:".to_owned());
        lines.push(format!(
            "HBM {channel} capacity: {}, in use: {}",
            human_readable_byte_size(hbm_capacity_bytes),
            human_readable_byte_size(self.memory_usage(channel).unwrap_or(0))
        ));
        let mut out = lines.join("\n");
        out.push('\n');
        out
    }
}

/// Right-aligned `| a | b |` table; the label column (empty header) is
/// left-aligned; every column as wide as its widest cell.
fn render_table(headers: &[&str], rows: &[(String, Vec<u64>)]) -> Vec<String> {
    let cells: Vec<(String, Vec<String>)> = rows
        .iter()
        .map(|(l, v)| {
            (
                l.clone(),
                v.iter().map(|&b| human_readable_byte_size(b)).collect(),
            )
        })
        .collect();
    let label_w = cells.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            cells
                .iter()
                .filter_map(|(_, v)| v.get(i).map(String::len))
                .fold(h.len(), usize::max)
        })
        .collect();
    let line = |label: &str, vals: &mut dyn Iterator<Item = &str>| {
        let mut s = format!("| {label:<label_w$} |");
        for (v, w) in vals.zip(&widths) {
            let _ = write!(s, " {v:>w$} |");
        }
        s
    };
    let mut out = vec![line("", &mut headers.iter().copied())];
    for (l, v) in &cells {
        out.push(line(l, &mut v.iter().map(String::as_str)));
    }
    out
}

/// The aggregate (non-verbose) report's columns, AWS docs header order
/// (docs/references/wiki.md §H.2). Index 0 is the per-NC grand total.
pub const REPORT_COLUMNS: [&str; 14] = [
    "TOTAL",
    "Model Code",
    "Model Constants",
    "Tensors",
    "Shared Scratchpad",
    "Scratchpad",
    "Runtime",
    "DMA Rings IO",
    "DMA Rings Spill",
    "DMA Rings Collectives",
    "DMA Rings Runtime",
    "Collectives",
    "XT CC",
    "Profiler Buffers",
];

/// An aggregate report category (the 13 non-TOTAL [`REPORT_COLUMNS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[repr(u8)]
pub enum ReportColumn {
    ModelCode = 0,
    ModelConstants = 1,
    Tensors = 2,
    SharedScratchpad = 3,
    Scratchpad = 4,
    Runtime = 5,
    DmaRingsIo = 6,
    DmaRingsSpill = 7,
    DmaRingsCollectives = 8,
    DmaRingsRuntime = 9,
    Collectives = 10,
    XtCc = 11,
    /// Never fed by a dmem usage type: always 0 here.
    ProfilerBuffers = 12,
}

impl ReportColumn {
    /// The column header, e.g. `Tensors`.
    #[must_use]
    pub fn header(self) -> &'static str {
        REPORT_COLUMNS[1 + self as usize]
    }
}

/// `dmem_usage_type_to_aggr_index` (@0x9b9e80) as INFERRED in docs/references/wiki.md
/// §H.2's caveat: the dumped byte k is read as belonging to usage k+1, and
/// aggregate index k names header k. Deviations: GENERIC (no byte in the
/// dump) → Runtime; XT_CC (byte 0x05) → XT CC; NOTIFICATION (byte 0x0b,
/// positionally "XT CC") → Runtime. INSTR_PE gets byte 0x05 → Runtime.
#[must_use]
pub const fn report_column(usage: UsageType) -> ReportColumn {
    use ReportColumn as C;
    match usage {
        UsageType::Generic => C::Runtime,
        UsageType::InstrPe => C::Runtime,
        UsageType::InstrAct => C::ModelCode,
        UsageType::InstrPool => C::ModelCode,
        UsageType::Io => C::Runtime,
        UsageType::DramSpill => C::Runtime,
        UsageType::Weight => C::ModelConstants,
        UsageType::Notification => C::Runtime,
        UsageType::ActTable => C::Runtime,
        UsageType::InstrDve => C::ModelCode,
        UsageType::InstrSp => C::ModelCode,
        UsageType::Scratchpad => C::SharedScratchpad,
        UsageType::Tensor => C::Tensors,
        UsageType::UcodeLib => C::ModelCode,
        UsageType::PoolStdio => C::Runtime,
        UsageType::Cc => C::Collectives,
        UsageType::ScratchpadNotShared => C::Scratchpad,
        UsageType::XtCc => C::XtCc,
        UsageType::DmaRing => C::DmaRingsRuntime,
        UsageType::DmaRingSpill => C::DmaRingsSpill,
        UsageType::DmaRingIo => C::DmaRingsIo,
        UsageType::DmaRingCollectives => C::DmaRingsCollectives,
    }
}

/// The `usage: %s` name in the OOM line: the lower-cased report column of
/// the usage (TENSOR → `tensors`, as in the public example; docs/references/wiki.md
/// §H.4). Our mapping, not recovered from the binary.
#[must_use]
pub fn usage_human_name(usage: UsageType) -> String {
    report_column(usage).header().to_lowercase()
}

/// `human_readable_byte_size` (docs/references/wiki.md §H.4): divide by 1024 while
/// ≥ 1024 (up to TB), print with 3 decimals (`%.3f`, ties to even like
/// glibc): `20.188GB`, `82.344KB`, `0.000B`.
#[must_use]
pub fn human_readable_byte_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    #[allow(clippy::cast_precision_loss)]
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.3}{}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GIB: u64 = 1 << 30;

    fn dev(channel: u32, nc: u32, usage: UsageType, allocated_size: u64) -> DmlEntryInput {
        DmlEntryInput {
            mem_type: MemLocation::TongaDram,
            usage,
            tdram_channel: channel,
            hint: Some("h".to_owned()),
            nc_idx: nc,
            size: allocated_size,
            allocated_size,
            pa: 0x1000,
            align_offset: 0,
        }
    }

    fn host(usage: UsageType, allocated_size: u64) -> DmlEntryInput {
        DmlEntryInput {
            mem_type: MemLocation::HostDram,
            ..dev(0, 0, usage, allocated_size)
        }
    }

    fn all_zero(l: &DmemLogger) -> bool {
        (0..4).all(|c| l.memory_usage(c) == Some(0))
            && (0..8).all(|n| (0..NC_COLUMNS).all(|c| l.memory_usage_nc(n, c) == Some(0)))
    }

    #[test]
    fn human_readable_examples() {
        // docs/references/wiki.md §H.4 examples.
        assert_eq!(
            human_readable_byte_size(20 * GIB + 192 * (1 << 20)),
            "20.188GB"
        );
        assert_eq!(human_readable_byte_size(84_320), "82.344KB");
        assert_eq!(human_readable_byte_size(0), "0.000B");
        assert_eq!(human_readable_byte_size(4 * GIB), "4.000GB");
        assert_eq!(human_readable_byte_size(1023), "1023.000B");
        assert_eq!(human_readable_byte_size(1024), "1.000KB");
        assert_eq!(human_readable_byte_size(5 << 40), "5.000TB");
        assert_eq!(human_readable_byte_size(2048 << 40), "2048.000TB");
    }

    #[test]
    fn alloc_then_free_returns_to_zero() {
        let mut l = DmemLogger::new(0, 16, false);
        let e = dev(1, 3, UsageType::Tensor, 4096);
        l.add_entry(&e, DmemAction::Alloc).unwrap();
        assert_eq!(l.memory_usage(1), Some(4096));
        assert_eq!(l.memory_usage_nc(3, 12), Some(4096));
        assert_eq!(l.memory_usage_nc(3, NC_TOTAL_COLUMN), Some(4096));
        l.add_entry(&e, DmemAction::Free).unwrap();
        assert!(all_zero(&l));
        assert_eq!(l.entry_count(), 2);
    }

    #[test]
    fn host_allocations_only_log() {
        let mut l = DmemLogger::new(0, 4, false);
        let mut e = host(UsageType::Io, 1 << 20);
        e.tdram_channel = 9; // not checked for host events
        e.nc_idx = 42;
        l.add_entry(&e, DmemAction::Alloc).unwrap();
        assert!(all_zero(&l));
        let ents = l.entries();
        assert_eq!(ents.len(), 1);
        assert_eq!(ents[0].mem_loc, MemLocation::HostDram);
        assert_eq!(ents[0].total_mem_used, 0);
        // A host free of something never counted is fine too.
        l.add_entry(&e, DmemAction::Free).unwrap();
        assert_eq!(l.entry_count(), 2);
    }

    #[test]
    fn ring_wraps_and_counts_drops() {
        let mut l = DmemLogger::new(0, 3, false);
        for i in 1..=5u64 {
            let mut e = dev(0, 0, UsageType::Weight, i);
            e.pa = i;
            l.add_entry(&e, DmemAction::Alloc).unwrap();
        }
        assert_eq!(
            (l.entry_count(), l.entries_dropped(), l.max_entries()),
            (3, 2, 3)
        );
        let pas: Vec<u64> = l.entries().iter().map(|e| e.pa).collect();
        assert_eq!(pas, [3, 4, 5]);
        // Totals snapshot after each event: 1+2+3, +4, +5.
        let totals: Vec<u64> = l.entries().iter().map(|e| e.total_mem_used).collect();
        assert_eq!(totals, [6, 10, 15]);
    }

    #[test]
    fn zero_capacity_disables_logging_only() {
        let mut l = DmemLogger::new(0, 0, false);
        l.add_entry(&dev(2, 5, UsageType::Cc, 7), DmemAction::Alloc)
            .unwrap();
        assert_eq!((l.entry_count(), l.entries_dropped()), (0, 0));
        assert!(l.entries().is_empty());
        assert_eq!(l.memory_usage(2), Some(7));
    }

    #[test]
    fn grand_total_column_is_independent_per_nc() {
        // tdrv-dmem §5 QUIRK: [8][23]; NC n's total must not alias NC n+1's
        // column 0 (GENERIC).
        let mut l = DmemLogger::new(0, 8, false);
        l.add_entry(
            &dev(0, 0, UsageType::DmaRingCollectives, 100),
            DmemAction::Alloc,
        )
        .unwrap();
        l.add_entry(&dev(0, 1, UsageType::Generic, 5), DmemAction::Alloc)
            .unwrap();
        assert_eq!(l.memory_usage_nc(0, NC_TOTAL_COLUMN), Some(100));
        assert_eq!(l.memory_usage_nc(0, 21), Some(100));
        assert_eq!(l.memory_usage_nc(1, 0), Some(5));
        assert_eq!(l.memory_usage_nc(1, NC_TOTAL_COLUMN), Some(5));
        assert_eq!(l.memory_usage_nc(0, NC_COLUMNS), None);
        assert_eq!(l.memory_usage_nc(8, 0), None);
        // NC 7's total is in range too.
        l.add_entry(&dev(3, 7, UsageType::Tensor, 9), DmemAction::Alloc)
            .unwrap();
        assert_eq!(l.memory_usage_nc(7, NC_TOTAL_COLUMN), Some(9));
    }

    #[test]
    fn total_mem_used_is_post_update_channel_total() {
        let mut l = DmemLogger::new(0, 8, false);
        l.add_entry(&dev(2, 4, UsageType::Tensor, 10), DmemAction::Alloc)
            .unwrap();
        l.add_entry(&dev(2, 5, UsageType::Weight, 30), DmemAction::Alloc)
            .unwrap();
        l.add_entry(&dev(1, 2, UsageType::Weight, 1), DmemAction::Alloc)
            .unwrap();
        l.add_entry(&dev(2, 4, UsageType::Tensor, 10), DmemAction::Free)
            .unwrap();
        let t: Vec<_> = l.entries().iter().map(|e| e.total_mem_used).collect();
        assert_eq!(t, [10, 40, 1, 30]);
        assert_eq!(l.entries()[3].action, DmemAction::Free);
    }

    #[test]
    fn invalid_channel_nc_and_underflow_leave_state_unchanged() {
        let mut l = DmemLogger::new(0, 8, false);
        l.add_entry(&dev(0, 0, UsageType::Tensor, 64), DmemAction::Alloc)
            .unwrap();
        let before = l.dump();
        assert_eq!(
            l.add_entry(&dev(4, 0, UsageType::Tensor, 1), DmemAction::Alloc),
            Err(DmlError::InvalidChannel { channel: 4 })
        );
        assert_eq!(
            l.add_entry(&dev(0, 8, UsageType::Tensor, 1), DmemAction::Alloc),
            Err(DmlError::InvalidNc { nc: 8 })
        );
        // Channel total (64) could absorb it, but the NC-1 row cannot.
        assert!(matches!(
            l.add_entry(&dev(0, 1, UsageType::Tensor, 64), DmemAction::Free),
            Err(DmlError::Underflow { nc: 1, .. })
        ));
        assert!(matches!(
            l.add_entry(&dev(0, 0, UsageType::Tensor, 65), DmemAction::Free),
            Err(DmlError::Underflow { .. })
        ));
        assert!(matches!(
            l.add_entry(&dev(0, 0, UsageType::Tensor, u64::MAX), DmemAction::Alloc),
            Err(DmlError::Overflow { .. })
        ));
        assert_eq!(l.dump(), before);
        assert_eq!(l.entry_count(), 1);
    }

    #[test]
    fn mem_usage_lines() {
        let mut l = DmemLogger::new(0, 8, false);
        l.add_entry(&dev(1, 2, UsageType::Tensor, 4096), DmemAction::Alloc)
            .unwrap();
        assert_eq!(
            l.mem_usage_line(4096, 1, 24 * GIB, Some("input0")),
            "MEM_USAGE: 4096 bytes, channel: 1, total usage: (4096/25769803776), hint:input0"
        );
        assert_eq!(
            l.mem_usage_line(4096, 1, 24 * GIB, None),
            "MEM_USAGE: 4096 bytes, channel: 1, total usage: (4096/25769803776)"
        );
    }

    #[test]
    fn dump_is_stable() {
        let mut l = DmemLogger::new(3, 2, false);
        let mut e = dev(1, 2, UsageType::Tensor, 4096);
        e.pa = 0xabc0;
        l.add_entry(&e, DmemAction::Alloc).unwrap();
        let d = l.dump();
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines[0], "DML mla 3: entries 1/2, dropped 0");
        assert_eq!(lines[2], "memory_usage[1] = 4096");
        assert_eq!(lines[7], "memory_usage_nc[2]: total 4096 TENSOR=4096");
        assert_eq!(
            lines[13],
            "entry 0: ALLOC TONGA_DRAM TENSOR ch 1 nc 2 size 4096 pa 0xabc0 align_offset 0 \
             total 4096 hint h"
        );
        assert_eq!(lines.len(), 14);
    }

    #[test]
    fn column_mapping_and_usage_names() {
        assert_eq!(usage_human_name(UsageType::Tensor), "tensors");
        assert_eq!(usage_human_name(UsageType::Weight), "model constants");
        assert_eq!(usage_human_name(UsageType::XtCc), "xt cc");
        assert_eq!(
            report_column(UsageType::DmaRing).header(),
            "DMA Rings Runtime"
        );
        assert_eq!(report_column(UsageType::DmaRingIo).header(), "DMA Rings IO");
        assert_eq!(ReportColumn::ProfilerBuffers.header(), "Profiler Buffers");
        assert!(
            UsageType::ALL
                .iter()
                .all(|&u| report_column(u) != ReportColumn::ProfilerBuffers)
        );
    }

    /// The public example: NC 4 OOMs on HBM 2 asking for 4 GiB of tensors.
    fn oom_scenario(verbose: bool) -> DmemLogger {
        let mut l = DmemLogger::new(0, 64, verbose);
        let allocs = [
            (4, UsageType::Tensor, 20 * GIB),
            (4, UsageType::Weight, 3 * GIB / 2),
            (4, UsageType::InstrAct, 96 << 20),
            (4, UsageType::XtCc, 84_320),
            (5, UsageType::Scratchpad, 2 * GIB),
            (5, UsageType::DmaRingIo, 1 << 20),
            (5, UsageType::Notification, 4096),
            (0, UsageType::Tensor, GIB), // other HBM: not in the table
        ];
        for (nc, u, sz) in allocs {
            let ch = if nc == 0 { 0 } else { 2 };
            l.add_entry(&dev(ch, nc, u, sz), DmemAction::Alloc).unwrap();
        }
        l
    }

    #[test]
    fn oom_report_line_by_line() {
        let l = oom_scenario(false);
        let r = l.log_dev_mem(0, 4, 2, 4 * GIB, 0, UsageType::Tensor, 24 * GIB);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(
            lines[0],
            "Failed to allocate 4.000GB (alignment: none, usage: tensors) on ND 0:NC 4"
        );
        assert_eq!(lines[1], "Displaying Current Memory Utilization:");
        assert_eq!(
            lines[2],
            "(NOTE: the lines are LONG, and NEFF id to name mapping is printed after)"
        );
        assert_eq!(
            lines[3],
            "LNC size is 1. Neuron Cores using this HBM: NC 4 and NC 5"
        );
        let cells = |s: &str| -> Vec<String> {
            s.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_owned())
                .collect()
        };
        let mut hdr = vec![String::new()];
        hdr.extend(REPORT_COLUMNS.iter().map(|s| (*s).to_owned()));
        assert_eq!(cells(lines[4]), hdr);
        // TOTAL, Code, Const, Tensors, ShScr, Scr, Runtime, IO, Spill, Coll,
        // RingsRt, Collectives, XT CC, Profiler.
        let z = "0.000B";
        assert_eq!(
            cells(lines[5]),
            [
                "ND 0 Overall",
                "23.595GB",
                "96.000MB",
                "1.500GB",
                "20.000GB",
                "2.000GB",
                z,
                "4.000KB",
                "1.000MB",
                z,
                z,
                z,
                z,
                "82.344KB",
                z
            ]
        );
        assert_eq!(
            cells(lines[6]),
            [
                "_NC 4", "21.594GB", "96.000MB", "1.500GB", "20.000GB", z, z, z, z, z, z, z, z,
                "82.344KB", z
            ]
        );
        assert_eq!(
            cells(lines[7]),
            [
                "_NC 5", "2.001GB", z, z, z, "2.000GB", z, "4.000KB", "1.000MB", z, z, z, z, z, z
            ]
        );
        assert_eq!(lines[8], "NEFF id to name mapping:");
        assert_eq!(lines[9], "HBM 2 capacity: 24.000GB, in use: 23.595GB");
        assert_eq!(lines.len(), 10);
        // All table lines share one width (aligned columns).
        assert!(lines[4..8].iter().all(|s| s.len() == lines[4].len()));
        assert!(lines[5].starts_with("| ND 0 Overall | "));
        assert!(lines[6].starts_with("| _NC 4        | "));
    }

    #[test]
    fn oom_report_alignment_and_verbose_table() {
        let l = oom_scenario(true);
        let r = l.log_dev_mem(0, 5, 2, 1 << 20, 4096, UsageType::DmaRingIo, 24 * GIB);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(
            lines[0],
            "Failed to allocate 1.000MB (alignment: 4.000KB, usage: dma rings io) on ND 0:NC 5"
        );
        let hdr: Vec<&str> = lines[4]
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(hdr.len(), 1 + 1 + USAGE_TYPES);
        assert_eq!(
            (hdr[1], hdr[2], hdr[23]),
            ("TOTAL", "GENERIC", "DMA_RING_COLLECTIVES")
        );
        let nc5: Vec<&str> = lines[7]
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(nc5[0], "_NC 5");
        assert_eq!(nc5[1], "2.001GB");
        assert_eq!(nc5[2 + UsageType::Notification.raw() as usize], "4.000KB");
        assert_eq!(nc5[2 + UsageType::Scratchpad.raw() as usize], "2.000GB");
        assert_eq!(nc5[2 + UsageType::DmaRingIo.raw() as usize], "1.000MB");
    }

    #[derive(Clone, Debug)]
    enum Op {
        Alloc {
            host: bool,
            channel: u32,
            nc: u32,
            usage: usize,
            size: u64,
        },
        Free(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (
                any::<bool>(),
                0u32..4,
                0u32..8,
                0usize..USAGE_TYPES,
                0u64..(1 << 40)
            )
                .prop_map(|(host, channel, nc, usage, size)| Op::Alloc {
                    host,
                    channel,
                    nc,
                    usage,
                    size
                }),
            any::<usize>().prop_map(Op::Free),
        ]
    }

    proptest! {
        #[test]
        fn counters_equal_sum_of_live_allocations(ops in prop::collection::vec(op(), 0..64)) {
            let mut l = DmemLogger::new(0, 5, false);
            let mut live: Vec<DmlEntryInput> = Vec::new();
            for o in ops {
                match o {
                    Op::Alloc { host, channel, nc, usage, size } => {
                        let mut e = dev(channel, nc, UsageType::ALL[usage], size);
                        if host {
                            e.mem_type = MemLocation::HostDram;
                        }
                        l.add_entry(&e, DmemAction::Alloc).unwrap();
                        live.push(e);
                    }
                    Op::Free(i) if !live.is_empty() => {
                        let e = live.swap_remove(i % live.len());
                        l.add_entry(&e, DmemAction::Free).unwrap();
                    }
                    Op::Free(_) => {}
                }
                let dev_live = || live.iter().filter(|e| e.mem_type == MemLocation::TongaDram);
                for ch in 0..4u32 {
                    let s: u64 = dev_live().filter(|e| e.tdram_channel == ch).map(|e| e.allocated_size).sum();
                    prop_assert_eq!(l.memory_usage(ch), Some(s));
                }
                for nc in 0..8u32 {
                    for u in UsageType::ALL {
                        let s: u64 = dev_live().filter(|e| e.nc_idx == nc && e.usage == u).map(|e| e.allocated_size).sum();
                        prop_assert_eq!(l.memory_usage_nc(nc, u.raw() as usize), Some(s));
                    }
                    let t: u64 = dev_live().filter(|e| e.nc_idx == nc).map(|e| e.allocated_size).sum();
                    prop_assert_eq!(l.memory_usage_nc(nc, NC_TOTAL_COLUMN), Some(t));
                }
                prop_assert!(l.entry_count() <= 5);
            }
        }
    }
}
