//! The user path: 64-byte DMA instruction words on the Q7 firmware
//! (docs/firmware.md), as `neuron-sim run` takes them from a trace.
//!
//! Each case builds its workload as trace text (`inst` words, DGE
//! configuration, fills), parses, links and runs those set-up statements
//! with `soc::exec::run_linked` — which queues the words and boots the
//! firmware but lets no simulated time pass — outside the timed section,
//! then times `Device::run(None)`: the firmware plans and expands the
//! words, writes the descriptors into the DGE carve-out, rings the
//! doorbells and polls the completion heads, the engines move the data,
//! until nothing is left. A sanity run first checks that every word was
//! issued (none rejected, nothing left queued or stalled), the semaphores
//! and, with payload, the bytes that landed.
//!
//! Descriptors counted (items) are the M2S (TX) descriptors the engines
//! completed — each with its S2M partner, the firmware's semaphore writes
//! included — as the raw cases count them (`neuron-sim run` counts both
//! directions, twice this).
//!
//! Cases (DGE configuration of `traces/calib/chip-8-cores-hbm.trace`
//! unless said: MEMCOPY_CARVEOUT_CFG = 256 descriptors per ring at offset
//! 0, MEMCOPY_DMA_CFG = all 16 engines, queue 0):
//! - `tile{512,4K,64K}xW-16e[-t]`: W DIRECT2D words on TPB 0, each a
//!   [128 partitions, N bytes] bf16 tile from its own HBM range into SBUF
//!   partitions 0..127 (one descriptor per partition, 8 per engine, plus
//!   16 semaphore writes per word), destinations cycling over the
//!   partition's 224 KiB.
//! - `chip-8-cores`: the statements of `traces/calib/chip-8-cores-hbm.trace`
//!   (8 cores × 4 words of [128, 8192] bf16 from their HBM stacks, 16 KiB
//!   descriptors) up to its first `wait`; the waits and checks after the run.
//! - `gather256xR`: INDIRECT1D gathers (SRC_INDIRECTION) of R 256-byte rows
//!   from a 4096-row HBM table by a permutation index vector in SBUF
//!   partition 0, into HBM (4096 indices per word, dealt round robin over
//!   the 16 engines; carve-out 1024 descriptors per ring).
//! - `xpose128x128xW`: W DIRECT2D_XPOSE words, [128, 128] bf16 HBM → SBUF
//!   on the cross-bar path (8 tiles of 16 row descriptors of 256 B per
//!   word; carve-out 4096 as `traces/calib/xpose-hbm-sbuf.trace`).
//! - `allgather-rdma-8c`: the statements of `traces/fw-allgather-rdma.trace`
//!   (a 7-step ring all-gather of 32 KiB chunks between the 8 cores with
//!   RDMA_DESC_GEN / RDMA_DESC_START, 256 B per partition) up to its first
//!   `wait`; the waits and checks after the run.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::io;
use std::sync::Mutex;
use std::time::Instant;

use divan::counter::{BytesCount, ItemsCount};
use divan::{Bencher, black_box};
use soc::Device;
use soc::device::RunStop;
use soc::exec::{NoHooks, RunReport, Summary, TraceFiles};
use soc::workload::SRC_BYTE;

use crate::{CYCLES, addr, record, size_name};

/// The chip stream of calibration row (e).
const CHIP_TRACE: &str = include_str!("../../../../traces/calib/chip-8-cores-hbm.trace");
/// The RDMA ring all-gather.
const ALLGATHER_TRACE: &str = include_str!("../../../../traces/fw-allgather-rdma.trace");

/// SBUF partitions of a core.
const PARTITIONS: u64 = 128;
/// Populated bytes of one SBUF partition (the soc map's `populated`).
const PARTITION_BYTES: u64 = 0x38000;
/// A tile's source range in hbm0 (past the first 16 MiB carve-out).
const TILE_SRC: u64 = 0x1000_0000;
/// The gather's table, its destination and its index vector (SBUF
/// partition 0 offset).
const GATHER_TABLE: u64 = 0x4000_0000;
const GATHER_DST: u64 = 0x5000_0000;
const GATHER_IDX_OFFSET: u64 = 0x2_0000;
/// Rows of the gather table and indices per INDIRECT1D word (the most one
/// word takes, docs/firmware.md).
const GATHER_ROWS: u32 = 4096;
/// Bytes per gathered row.
const GATHER_ROW_BYTES: u32 = 256;
/// Index k of the gather is `k × GATHER_STRIDE mod GATHER_ROWS` (odd:
/// a permutation).
const GATHER_STRIDE: u32 = 1237;
/// Bytes of one [128, 128] bf16 transpose source.
const XPOSE_BYTES: u64 = 128 * 128 * 2;

/// What the firmware is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// `words` DIRECT2D tiles of `part_bytes` per partition on TPB 0.
    Tiles { part_bytes: u32, words: u32 },
    /// `traces/calib/chip-8-cores-hbm.trace`.
    Chip,
    /// `words` INDIRECT1D gathers of [`GATHER_ROWS`] rows.
    Gather { words: u32 },
    /// `words` DIRECT2D_XPOSE [128, 128] bf16 tiles.
    Transpose { words: u32 },
    /// `traces/fw-allgather-rdma.trace`.
    AllGather,
}

/// One firmware case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FwCase {
    pub(crate) work: Work,
    pub(crate) timing_only: bool,
}

const fn fw_case(work: Work, timing_only: bool) -> FwCase {
    FwCase { work, timing_only }
}

/// 512 B and 4 KiB tiles: 128 words × 128 = 16384 data descriptors
/// (8 MiB, 64 MiB), as the raw 512 B / 4 KiB cases; 64 KiB: 16 words ×
/// 128 = 2048 (128 MiB).
pub(crate) const FW_CASES: &[FwCase] = &[
    fw_case(
        Work::Tiles {
            part_bytes: 512,
            words: 128,
        },
        true,
    ),
    fw_case(
        Work::Tiles {
            part_bytes: 4096,
            words: 128,
        },
        true,
    ),
    fw_case(
        Work::Tiles {
            part_bytes: 65536,
            words: 16,
        },
        true,
    ),
    fw_case(
        Work::Tiles {
            part_bytes: 65536,
            words: 16,
        },
        false,
    ),
    fw_case(Work::Chip, true),
    fw_case(Work::Gather { words: 4 }, true),
    fw_case(Work::Transpose { words: 128 }, true),
    fw_case(Work::AllGather, true),
];

/// The 512 B tile case of the firmware budget (issue 12).
pub(crate) const FW_TILE_512: FwCase = FW_CASES[0];
/// The 64 KiB tile case with payload (issue 12's `memcpy` budget).
pub(crate) const FW_TILE_64K: FwCase = FW_CASES[3];

impl fmt::Display for FwCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.work {
            Work::Tiles { part_bytes, words } => {
                write!(f, "tile{}x{words}w-16e", size_name(part_bytes))?;
            }
            Work::Chip => f.write_str("chip-8-cores")?,
            Work::Gather { words } => write!(f, "gather256x{}", words * GATHER_ROWS)?,
            Work::Transpose { words } => write!(f, "xpose128x128x{words}w")?,
            Work::AllGather => f.write_str("allgather-rdma-8c")?,
        }
        if self.timing_only {
            f.write_str("-t")?;
        }
        Ok(())
    }
}

impl FwCase {
    /// Payload bytes of one data descriptor: the size of the raw case the
    /// summary compares with.
    pub(crate) fn desc_bytes(self) -> u32 {
        match self.work {
            Work::Tiles { part_bytes, .. } => part_bytes,
            // [128, 8192] bf16: one 16 KiB descriptor per partition.
            Work::Chip => 16384,
            // A gathered row, a cross-bar row (128 bf16), a partition's
            // share of a ring step.
            Work::Gather { .. } | Work::Transpose { .. } | Work::AllGather => 256,
        }
    }

    /// The data bytes the words move, when the case knows them (the
    /// summary compares these with a `memcpy`).
    pub(crate) fn data_bytes(self) -> Option<u64> {
        match self.work {
            Work::Tiles { part_bytes, words } => {
                Some(u64::from(words) * PARTITIONS * u64::from(part_bytes))
            }
            _ => None,
        }
    }

    /// TX descriptors the run must complete, when the case knows them.
    fn expected_tx(self) -> Option<u64> {
        // Every word: its data descriptors plus one semaphore write per
        // engine (16).
        match self.work {
            Work::Tiles { words, .. } | Work::Transpose { words } => {
                Some(u64::from(words) * (PARTITIONS + 16))
            }
            Work::Gather { words } => Some(u64::from(words) * (u64::from(GATHER_ROWS) + 16)),
            Work::Chip => Some(4 * 8 * (PARTITIONS + 16)),
            Work::AllGather => None,
        }
    }

    /// The set-up statements (run before the timed section) and the check
    /// statements (run after the sanity run).
    fn texts(self, dev: &Device) -> (String, String) {
        let hbm = addr(dev, "hbm0");
        let sbuf = addr(dev, "tpb0.sbuf");
        let mut setup = String::new();
        let mut check = String::new();
        let dge = |setup: &mut String, carveout: u32| {
            writeln!(
                setup,
                "write32 tpb0.q7_local_reg.memcopy_carveout_cfg {carveout:#010x}\n\
                 write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff"
            )
            .unwrap();
        };
        match self.work {
            Work::Tiles { part_bytes, words } => {
                dge(&mut setup, 0x0100_0000);
                let elems = part_bytes / 2;
                let stride_elems = 0x40000 / 2;
                let slots = PARTITION_BYTES / u64::from(part_bytes);
                let tile = PARTITIONS * u64::from(part_bytes);
                for w in 0..u64::from(words) {
                    let src = hbm + TILE_SRC + w * tile;
                    let dst = sbuf + (w % slots) * u64::from(part_bytes);
                    writeln!(
                        setup,
                        "inst tpb0 DIRECT2D semaphore=1 sem_increment=1 \
                         src_start_addr=imm:{src:#x} src_step_elem=[1,{elems}] \
                         src_num_elem=[{elems},128] src_elem_size=2 \
                         dst_start_addr=imm:{dst:#x} dst_step_elem=[1,{stride_elems}] \
                         dst_num_elem=[{elems},128] dst_elem_size=2 \
                         in_dtype=BFLOAT16 out_dtype=BFLOAT16"
                    )
                    .unwrap();
                }
                writeln!(check, "read32 tpb0.sem.read[1] == {}", 16 * words).unwrap();
                if !self.timing_only {
                    let last = (u64::from(words) - 1) % slots * u64::from(part_bytes);
                    let end = last + u64::from(part_bytes) - 4;
                    for (p, off) in [(0, last), (127, end)] {
                        writeln!(check, "expect tpb0.sbuf[p{p}]+{off:#x} bytes=a5a5a5a5").unwrap();
                    }
                }
            }
            Work::Gather { words } => {
                dge(&mut setup, 0x0400_0000);
                let table_bytes = GATHER_ROWS * GATHER_ROW_BYTES;
                writeln!(
                    setup,
                    "fill hbm0+{GATHER_TABLE:#x} len={table_bytes} pattern=incr32"
                )
                .unwrap();
                let row_bytes = u64::from(GATHER_ROWS * GATHER_ROW_BYTES);
                for w in 0..u64::from(words) {
                    let dst = hbm + GATHER_DST + w * row_bytes;
                    writeln!(
                        setup,
                        "inst tpb0 INDIRECT1D semaphore=2 sem_increment=1 \
                         idx_num_active_channels=128 flags.indirect_mode=SRC_INDIRECTION \
                         src_start_addr=imm:{:#x} src_step_elem=1 src_num_elem={GATHER_ROWS} \
                         src_elem_size={GATHER_ROW_BYTES} dst_start_addr=imm:{dst:#x} \
                         dst_step_elem=1 dst_num_elem={GATHER_ROWS} \
                         dst_elem_size={GATHER_ROW_BYTES} \
                         src_idx_start_addr=imm:sbuf:q0:{GATHER_IDX_OFFSET:#x} \
                         in_dtype=BFLOAT16 out_dtype=BFLOAT16",
                        hbm + GATHER_TABLE
                    )
                    .unwrap();
                }
                writeln!(check, "read32 tpb0.sem.read[2] == {}", 16 * words).unwrap();
                if !self.timing_only {
                    // Row k of the last word holds table row idx[k], whose
                    // first u32 is idx[k] × 64 (incr32 from 0).
                    let last = GATHER_DST + (u64::from(words) - 1) * row_bytes;
                    for k in [1u32, 4095] {
                        let v = gather_index(k) * (GATHER_ROW_BYTES / 4);
                        let at = last + u64::from(k * GATHER_ROW_BYTES);
                        writeln!(check, "expect hbm0+{at:#x} bytes={}", le_hex(v)).unwrap();
                    }
                }
            }
            Work::Transpose { words } => {
                dge(&mut setup, 0x1000_0000);
                let src_bytes = u64::from(words) * XPOSE_BYTES;
                writeln!(
                    setup,
                    "fill hbm0+{TILE_SRC:#x} len={src_bytes} pattern=incr32"
                )
                .unwrap();
                let slots = PARTITION_BYTES / 256;
                for w in 0..u64::from(words) {
                    let src = hbm + TILE_SRC + w * XPOSE_BYTES;
                    let dst = sbuf + (w % slots) * 256;
                    writeln!(
                        setup,
                        "inst tpb0 DIRECT2D_XPOSE semaphore=1 \
                         in_dtype=BFLOAT16 out_dtype=BFLOAT16 src_start_addr=imm:{src:#x} \
                         src_step_elem=[1,128] src_num_elem=[128,128] tile_src_row_step=2048 \
                         dst_start_addr=imm:{dst:#x} dst_step_elem=[1,131072] \
                         dst_num_elem=[128,128] tile_src_rows=16 tile_src_cols=128"
                    )
                    .unwrap();
                }
                writeln!(check, "read32 tpb0.sem.read[1] == {}", 16 * words).unwrap();
                if !self.timing_only {
                    // Element (r, c) of word w is bf16 number w·16384 +
                    // 128r + c of the incr32 fill: for even c the low half
                    // of u32 number (w·16384 + 128r + c) / 2. It lands in
                    // partition c at 2r.
                    let w = u64::from(words) - 1;
                    let off = (w % slots) * 256;
                    let half = |r: u64| ((w * 16384 + 128 * r + 2) / 2) as u16;
                    writeln!(
                        check,
                        "expect tpb0.sbuf[p2]+{off:#x} bytes={}{}",
                        le_hex16(half(0)),
                        le_hex16(half(1))
                    )
                    .unwrap();
                }
            }
            Work::Chip | Work::AllGather => {
                let text = if self.work == Work::Chip {
                    CHIP_TRACE
                } else {
                    ALLGATHER_TRACE
                };
                // Set-up: every statement before the first `wait`.
                let mut in_check = false;
                for line in text.lines() {
                    in_check |= line.trim_start().starts_with("wait ");
                    let out = if in_check { &mut check } else { &mut setup };
                    // Timing-only: the copied data is not there to expect.
                    if in_check && self.timing_only && line.trim_start().starts_with("expect ") {
                        out.push('\n');
                        continue;
                    }
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        (setup, check)
    }

    /// Memory the set-up statements do not write: the tile sources, the
    /// gather's index vector.
    fn prepare(self, dev: &mut Device) {
        match self.work {
            Work::Tiles { .. } => {
                let hbm = addr(dev, "hbm0");
                dev.fill(hbm + TILE_SRC, self.data_bytes().unwrap(), SRC_BYTE)
                    .unwrap();
            }
            Work::Gather { .. } => {
                let idx: Vec<u8> = (0..GATHER_ROWS)
                    .flat_map(|k| gather_index(k).to_le_bytes())
                    .collect();
                let at = addr(dev, "tpb0.sbuf") + GATHER_IDX_OFFSET;
                dev.write_bytes(at, &idx).unwrap();
            }
            _ => {}
        }
    }
}

fn gather_index(k: u32) -> u32 {
    (k * GATHER_STRIDE) % GATHER_ROWS
}

fn le_hex(v: u32) -> String {
    v.to_le_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

fn le_hex16(v: u16) -> String {
    v.to_le_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// The traces name no files.
struct NoFiles;

impl TraceFiles for NoFiles {
    fn read(&mut self, path: &str) -> io::Result<Vec<u8>> {
        Err(io::Error::other(format!(
            "bench traces read no files ({path})"
        )))
    }
    fn write(&mut self, path: &str, _data: &[u8]) -> io::Result<()> {
        Err(io::Error::other(format!(
            "bench traces write no files ({path})"
        )))
    }
}

/// Parses, links and runs `text` on `dev`; every statement must succeed.
fn run_text(dev: &mut Device, text: &str, name: &str) -> RunReport {
    let first =
        |e: Vec<trace_format::ParseError>| -> ! { panic!("{name}: {} ({} errors)", e[0], e.len()) };
    let trace = trace_format::parse(text, name).unwrap_or_else(|e| first(e));
    let linked = soc::exec::link(dev, &trace, name).unwrap_or_else(|e| first(e));
    let report = soc::exec::run_linked(dev, &trace, &linked, name, &mut NoFiles, &mut NoHooks);
    assert!(
        report.errors.is_empty() && report.failures.is_empty(),
        "{name}: {} errors, {} failures, first: {:?}",
        report.errors.len(),
        report.failures.len(),
        report.errors.iter().chain(&report.failures).next()
    );
    report
}

/// A device with the case's words queued on the firmware: `run` does the
/// whole workload.
fn setup(c: FwCase) -> Device {
    let mut dev = Device::trn2().unwrap();
    dev.set_trace(false);
    dev.set_timing_only(c.timing_only);
    c.prepare(&mut dev);
    let (setup, _) = c.texts(&dev);
    let report = run_text(&mut dev, &setup, &format!("{c} set-up"));
    // Nothing ran yet: the timed run does all of it.
    assert_eq!(report.summary.cycles, 0, "{c}: set-up let time pass");
    dev
}

/// What the sanity run of a case measured, for the summary.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FwMeasured {
    /// TX descriptors completed.
    pub(crate) tx_descs: u64,
    /// Payload bytes moved by the engines (semaphore writes included).
    pub(crate) bytes: u64,
}

/// Per case name.
pub(crate) static FW_MEASURED: Mutex<BTreeMap<String, FwMeasured>> = Mutex::new(BTreeMap::new());

/// One untimed run: every word issued, nothing left, the checks hold.
fn sanity(c: FwCase) -> FwMeasured {
    let mut dev = setup(c);
    assert_eq!(dev.run(None), RunStop::Idle, "{c}");
    let s = Summary::of(&dev);
    assert!(s.stall.is_none(), "{c}: stalled {:?}", s.stall);
    for (core, fw) in &s.firmware {
        assert_eq!((fw.queued, fw.in_flight), (0, 0), "{c}: {core} {fw:?}");
        for (kind, k) in &fw.kinds {
            assert_eq!(k.rejected, 0, "{c}: {core} rejected a {kind}");
        }
    }
    if let Some(want) = c.expected_tx() {
        assert_eq!(s.tx_descriptors, want, "{c}: TX descriptors");
    }
    CYCLES.lock().unwrap().insert(c.to_string(), dev.now().0);
    let (_, check) = c.texts(&dev);
    run_text(&mut dev, &check, &format!("{c} checks"));
    let m = FwMeasured {
        tx_descs: s.tx_descriptors,
        bytes: s.bytes,
    };
    FW_MEASURED.lock().unwrap().insert(c.to_string(), m);
    m
}

#[divan::bench(args = FW_CASES, sample_count = 10, sample_size = 1)]
fn fw(bencher: Bencher, c: FwCase) {
    let m = sanity(c);
    let key = format!("fw/{c}");
    bencher
        .counter(ItemsCount::new(m.tx_descs))
        .counter(BytesCount::new(m.bytes))
        .with_inputs(|| setup(c))
        .bench_local_values(|mut dev| {
            let t = Instant::now();
            let stop = dev.run(None);
            record(key.clone(), t.elapsed());
            black_box(stop);
            dev
        });
}

/// The firmware cases with the race detector on (docs/races.md; issue 15's
/// budget: at most 3× the host time of the same case with it off). The
/// workloads are race-free: the detector must find nothing.
#[divan::bench(args = [FW_CASES[0], FW_CASES[3], FW_CASES[4]], sample_count = 5, sample_size = 1)]
fn fw_races(bencher: Bencher, c: FwCase) {
    let m = sanity(c);
    let key = format!("fw-races/{c}");
    let mut checked = setup(c);
    checked.detect_races();
    checked.run(None);
    let races = checked.race_summary().map(|s| s.races.len());
    assert_eq!(races, Some(0), "{c}: races in a race-free workload");
    bencher
        .counter(ItemsCount::new(m.tx_descs))
        .counter(BytesCount::new(m.bytes))
        .with_inputs(|| {
            let mut dev = setup(c);
            dev.detect_races();
            dev
        })
        .bench_local_values(|mut dev| {
            let t = Instant::now();
            let stop = dev.run(None);
            record(key.clone(), t.elapsed());
            black_box(stop);
            dev
        });
}
