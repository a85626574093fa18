//! The DGE backend as a pure function: one instruction word → the emit
//! micro-ops GENERATE / DIMPUSH / REGWRITE (P9.1 §8) and, per engine,
//! the descriptor pairs they stand for (P9.1 §6.3, docs/references/wiki.md §D.3).
//!
//! The micro-ops have no published encoding (docs/references/wiki.md §L.2); their form
//! here carries exactly the fields of the firmware's own log strings
//! (`push GENERATE to DMA[%d]: %s : addr=0x%llx, elem_size=%d, sem_num=%i`,
//! `push DIMPUSH to DMA[%d]: [%u,%u][%d,%d]`, `push REGWRITE to DMA[%d]`) —
//! docs/references/design.md §8 "DGE micro-ops".
//!
//! Splitting rule (the hardware's is unpublished, docs/references/wiki.md §L.2): the
//! element stream is cut into maximal runs contiguous on both sides and at
//! most 64 KiB; a run goes to the engine that covers its SBUF/PSUM
//! partition (destination first, then source: partition / 8, folded onto
//! the engines MEMCOPY_DMA_CFG allows), and runs with no partition go round
//! robin. Every allowed engine takes part, data or not, because every one
//! writes the completion semaphore (docs/references/figures.md §A.3).
//!
//! One file per instruction word ([`direct2d`], [`indirect1d`], [`rdma`],
//! [`direct2d_xpose`], [`gather_xpose`]) over the shared helpers: operand
//! resolution and bound checks ([`operands`]), the CCE transfer
//! ([`transfer`]) and the engine spread with its ring cap ([`spread`]).

use std::fmt;

use dma_abi::inst::{InstKind, InstWord};

use crate::layout::{DgeConfig, PeerLayout};
use soc_map::PartitionTarget;

mod direct2d;
mod direct2d_xpose;
mod gather_xpose;
mod indirect1d;
mod operands;
mod rdma;
mod spread;
#[cfg(test)]
mod test_support;
mod transfer;

pub use direct2d_xpose::XPOSE_TILE_ROWS;

/// What the firmware reads while planning: its general registers, its
/// address table, and the partition an address falls in.
pub trait Operands {
    /// General register `n` (0..64).
    fn reg(&self, n: u8) -> u32;
    /// Address-table entry `e`.
    fn table_entry(&self, e: u8) -> u64;
    /// The SBUF/PSUM partition `addr` is in, if any.
    fn partition_of(&self, addr: u64) -> Option<u16>;
    /// [`Operands::partition_of`] of `addr`, with the span around it when
    /// known: the partition of every address in the span follows from its
    /// geometry, so a caller need not ask again for those (default: the
    /// partition alone).
    fn partition_span(&self, addr: u64) -> (Option<u16>, Option<PartitionSpan>) {
        (self.partition_of(addr), None)
    }
    /// Whether the plan lists each engine's micro-ops
    /// ([`EnginePlan::micro_ops`]; default yes). A firmware that records no
    /// events shows none, and a plan without them is otherwise the same.
    fn micro_ops(&self) -> bool {
        true
    }
    /// The partition stride of the partitioned memory at `addr`, if any
    /// (default none: the cross-bar transpose path is then not taken).
    fn partition_stride(&self, addr: u64) -> Option<u64> {
        let _ = addr;
        None
    }
    /// The SoC address of a partition byte of this core.
    fn partition_addr(&self, target: PartitionTarget) -> u64;
    /// `n` little-endian 32-bit words from memory (index vectors).
    fn read_u32s(&mut self, addr: u64, n: usize) -> Result<Vec<u32>, String>;
    /// SEM_INC of semaphore `idx` of this core.
    fn sem_inc_addr(&self, idx: u8) -> u64;
    /// Core `tpb` of the device (RDMA peers), if it exists.
    fn peer(&self, tpb: u32) -> Option<PeerLayout>;
}

/// A span of addresses whose partitions follow from its geometry: address
/// `a` in `[base, base + len)` is in partition `(a - base) / stride` (as a
/// 16-bit number, none past that), or in none when `stride` is 0 (plain
/// memory). The engine a run goes to follows from its partition
/// (docs/firmware.md "DIRECT2D expansion").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionSpan {
    /// First address.
    pub base: u64,
    /// Bytes.
    pub len: u64,
    /// Bytes per partition; 0 for memory without partitions.
    pub stride: u64,
}

impl PartitionSpan {
    /// The partition of `addr` when the span holds it (`Some(None)`: held,
    /// in no partition); `None` outside the span.
    #[inline]
    pub fn partition(&self, addr: u64) -> Option<Option<u16>> {
        let off = addr.checked_sub(self.base).filter(|&o| o < self.len)?;
        if self.stride == 0 {
            return Some(None);
        }
        // Strides are powers of two in practice: a shift, not a divide.
        let p = if self.stride.is_power_of_two() {
            off >> self.stride.trailing_zeros()
        } else {
            off / self.stride
        };
        Some(u16::try_from(p).ok())
    }
}

/// One DGE emit micro-op (our internal form, named after the firmware's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MicroOp {
    /// Start a pattern on engine `engine`.
    Generate {
        /// Device engine id.
        engine: u16,
        /// `RD` (the M2S side) — the only form the firmware strings show.
        what: &'static str,
        /// First source address of this engine's share.
        addr: u64,
        /// Element size in bytes.
        elem_size: u16,
        /// Completion semaphore.
        sem_num: u8,
    },
    /// One side's 2-D pattern: `[n0,n1][s0,s1]` (elements).
    DimPush {
        /// Device engine id.
        engine: u16,
        /// `src` or `dst`.
        side: &'static str,
        /// Element counts.
        sizes: [u32; 2],
        /// Signed element steps.
        steps: [i64; 2],
    },
    /// An operand came from a register: the firmware pushes its value.
    RegWrite {
        /// Device engine id.
        engine: u16,
        /// Which operand (`src_start_addr`, `src_bound_reg`, …).
        operand: &'static str,
        /// Register number.
        reg: u8,
        /// Value read.
        value: u64,
    },
}

impl fmt::Display for MicroOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MicroOp::Generate {
                engine,
                what,
                addr,
                elem_size,
                sem_num,
            } => write!(
                f,
                "push GENERATE to DMA[{engine}]: {what} : addr={addr:#x}, elem_size={elem_size}, sem_num={sem_num}"
            ),
            MicroOp::DimPush {
                engine,
                side,
                sizes,
                steps,
            } => write!(
                f,
                "push DIMPUSH to DMA[{engine}]: [{},{}][{},{}] ({side})",
                sizes[0], sizes[1], steps[0], steps[1]
            ),
            MicroOp::RegWrite {
                engine,
                operand,
                reg,
                value,
            } => write!(
                f,
                "push REGWRITE to DMA[{engine}]: {operand} = REG[{reg}] = {value:#x}"
            ),
        }
    }
}

/// One M2S + S2M descriptor pair: one packet, whose M2S side is the
/// share's [`PairExtras`] (none for a plain copy) and then the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescPair {
    /// Source (M2S buf_ptr).
    pub src: u64,
    /// Destination (S2M buf_ptr).
    pub dst: u64,
    /// Bytes read, 1..=65536.
    pub len_bytes: u32,
    /// Bytes written (differs from `len_bytes` when the CCE converts the
    /// dtype).
    pub dst_len_bytes: u32,
    /// The M2S descriptor's word1: the plain CME copy, or a CCE command.
    pub word1: u32,
}

/// The M2S descriptors every packet of an engine share has before its
/// data: the word's CCE transfer, the same for all its pairs
/// (docs/firmware.md "Compute ops and dtypes").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairExtras {
    /// `B op= A` through the CCE (docs/references/wiki.md §F.3): the
    /// packet's first source is the destination's current contents (the
    /// pair's `dst` and `dst_len_bytes`), read with this word1 in the
    /// output dtype; the pair's `src` is the second.
    pub acc: Option<u32>,
    /// A CCE FMA meta descriptor placed right before `src`
    /// (docs/references/wiki.md §F.2): (meta1 | meta2 << 32, meta_ctrl).
    /// MULTIPLY uses it to make A's combine `acc × input + 0`.
    pub meta: Option<(u64, u32)>,
}

impl PairExtras {
    /// A plain copy's: none.
    pub const NONE: PairExtras = PairExtras {
        acc: None,
        meta: None,
    };

    /// M2S descriptors of one packet (1 to 3): the accumulate source, the
    /// meta descriptor and the data.
    pub fn m2s_per_pair(&self) -> u64 {
        1 + u64::from(self.acc.is_some()) + u64::from(self.meta.is_some())
    }
}

/// One M2S descriptor of a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxSource {
    /// Source address, or meta1 | meta2 << 32 for a meta descriptor.
    pub addr: u64,
    /// Bytes read (0 for a meta descriptor).
    pub len_bytes: u32,
    /// word1 (CME command / meta_ctrl).
    pub word1: u32,
    /// A META descriptor (word0 bit 23).
    pub meta: bool,
}

impl TxSource {
    /// A data source.
    pub const fn data(addr: u64, len_bytes: u32, word1: u32) -> Self {
        Self {
            addr,
            len_bytes,
            word1,
            meta: false,
        }
    }
}

impl DescPair {
    /// A plain copy of `len` bytes.
    pub fn copy(src: u64, dst: u64, len: u32) -> Self {
        Self {
            src,
            dst,
            len_bytes: len,
            dst_len_bytes: len,
            word1: dma_abi::DEFAULT_COPY_WORD1,
        }
    }

    /// The M2S descriptors of this pair's packet under `x`, in order.
    pub fn sources(&self, x: &PairExtras) -> TxSources {
        let mut v = TxSources::default();
        for k in 0..self.source_count(x) {
            if let Some(s) = self.source(x, k) {
                v.push(s);
            }
        }
        v
    }

    /// How many M2S descriptors the pair's packet has under `x` (1 to 3).
    pub fn source_count(&self, x: &PairExtras) -> usize {
        x.m2s_per_pair() as usize
    }

    /// The packet's M2S descriptor `k` in ring order under `x` — the
    /// accumulate source, the FMA meta descriptor, then the data — without
    /// building the list ([`DescPair::sources`]).
    pub fn source(&self, x: &PairExtras, k: usize) -> Option<TxSource> {
        let mut k = k;
        if let Some(w) = x.acc {
            if k == 0 {
                return Some(TxSource::data(self.dst, self.dst_len_bytes, w));
            }
            k -= 1;
        }
        if let Some((m, w)) = x.meta {
            if k == 0 {
                return Some(TxSource {
                    addr: m,
                    len_bytes: 0,
                    word1: w,
                    meta: true,
                });
            }
            k -= 1;
        }
        (k == 0).then_some(TxSource::data(self.src, self.len_bytes, self.word1))
    }
}

/// The M2S descriptors of one pair's packet: at most three (accumulate
/// source, FMA meta, data), kept inline — the firmware builds one list per
/// descriptor pair it writes. Reads as a slice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxSources {
    items: [TxSource; 3],
    len: usize,
}

impl TxSources {
    fn push(&mut self, s: TxSource) {
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = s;
            self.len += 1;
        }
    }
}

impl std::ops::Deref for TxSources {
    type Target = [TxSource];
    fn deref(&self) -> &[TxSource] {
        &self.items[..self.len]
    }
}

/// One engine's share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnginePlan {
    /// Engine slot 0..16 within the core.
    pub slot: u8,
    /// Data descriptor pairs, in order.
    pub pairs: Vec<DescPair>,
    /// What every packet of `pairs` adds before its data (the word's
    /// transfer).
    pub extras: PairExtras,
    /// Bytes moved.
    pub bytes: u64,
    /// The micro-ops that produced `pairs`.
    pub micro_ops: Vec<MicroOp>,
    /// Semaphore increments after the data, in order: (SEM_INC address,
    /// value), each a 4-byte descriptor pair from the payload table.
    pub sem_writes: Vec<(u64, u8)>,
    /// Transpose packets (after `pairs`): several source pieces gathered
    /// into one destination write.
    pub gathers: Vec<GatherPacket>,
}

/// One packet of several TX descriptors (FIRST … LAST) and one RX
/// descriptor: a transposed tile column (DIRECT2D_XPOSE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatherPacket {
    /// Source pieces (address, bytes), in order.
    pub tx: Vec<(u64, u32)>,
    /// Destination.
    pub dst: u64,
    /// Bytes written (the sum of the pieces).
    pub dst_len_bytes: u32,
    /// The M2S word1: the plain copy, or the cross-bar transpose (DRE).
    pub word1: u32,
}

impl EnginePlan {
    /// Engine slot `slot` with nothing to do yet.
    pub fn empty(slot: u8) -> Self {
        Self {
            slot,
            pairs: Vec::new(),
            extras: PairExtras::NONE,
            bytes: 0,
            micro_ops: Vec::new(),
            sem_writes: Vec::new(),
            gathers: Vec::new(),
        }
    }

    /// Engine slot `slot` with nothing to do, as [`EnginePlan::empty`],
    /// keeping the room of this share's lists.
    pub fn reset(&mut self, slot: u8) {
        // Every field named: a new one cannot be left out.
        let EnginePlan {
            slot: s,
            pairs,
            extras,
            bytes,
            micro_ops,
            sem_writes,
            gathers,
        } = self;
        *s = slot;
        pairs.clear();
        *extras = PairExtras::NONE;
        *bytes = 0;
        micro_ops.clear();
        sem_writes.clear();
        gathers.clear();
    }

    /// M2S descriptors this engine's share writes: every source of every
    /// packet (a CCE pair has 2 or 3, docs/firmware.md "Compute ops and
    /// dtypes"), every piece of a gather, and the semaphore writes.
    pub fn m2s_descs(&self) -> u64 {
        self.pairs.len() as u64 * self.extras.m2s_per_pair()
            + self.gathers.iter().map(|g| g.tx.len() as u64).sum::<u64>()
            + self.sem_writes.len() as u64
    }

    /// S2M descriptors this engine's share needs.
    pub fn s2m_descs(&self) -> u64 {
        (self.pairs.len() + self.gathers.len() + self.sem_writes.len()) as u64
    }
}

/// A run the bound check stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfBounds {
    /// `src` or `dst`.
    pub side: &'static str,
    /// First byte of the run on that side.
    pub addr: u64,
    /// Bytes of the run.
    pub len_bytes: u32,
    /// The bound register.
    pub reg: u8,
    /// Its value (the last address allowed).
    pub limit: u64,
    /// False when `bc_disable_oob_error_notif` suppresses the notification.
    pub notify: bool,
}

/// The expansion of one word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Which word.
    pub kind: InstKind,
    /// Every participating engine, ascending slot.
    pub engines: Vec<EnginePlan>,
    /// False for RDMA_DESC_GEN: the descriptors wait for RDMA_DESC_START
    /// to ring the doorbells.
    pub ring_now: bool,
    /// Runs dropped by a bound check.
    pub out_of_bounds: Vec<OutOfBounds>,
    /// Indices dropped by an index bound check (INDIRECT1D).
    pub index_faults: Vec<IndexOutOfBounds>,
    /// The firmware's own log lines for this word, in order (e.g. the
    /// `bounds:(…)` trace of a gated memcopy; docs/firmware.md "Firmware
    /// log lines").
    pub log: Vec<String>,
    /// Scatter destinations named twice without `non_unique_dst_idx`:
    /// (first position, later position, index). The writes race; the model
    /// lets the later write in simulated time win (docs/firmware.md).
    pub duplicate_dst: Vec<(u32, u32, u32)>,
    /// The element type the word moves its data as, when every piece is
    /// whole elements of it: the transposes' dtype code (their cross-bar
    /// packets and element pieces alike); `None` for byte copies. An
    /// observer's hint ([`crate::FwBus::note_elements`]): `--uninit nan`
    /// fills with this type's NaN (docs/races.md §Uninitialised memory).
    pub elements: Option<u8>,
}

impl Plan {
    /// Data descriptor pairs over all engines.
    pub fn data_pairs(&self) -> usize {
        self.engines.iter().map(|e| e.pairs.len()).sum()
    }

    /// Descriptors written to rings, both directions.
    pub fn descriptors(&self) -> usize {
        self.engines
            .iter()
            .map(|e| (e.m2s_descs() + e.s2m_descs()) as usize)
            .sum()
    }

    /// Bytes moved.
    pub fn bytes(&self) -> u64 {
        self.engines.iter().map(|e| e.bytes).sum()
    }
}

/// Why a word was not expanded. The message names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// The word is wrong as the firmware sees it (shape mismatch, address
    /// overflow, carve-out too small).
    Invalid(String),
    /// A feature the simulator does not model yet.
    Unsupported(String),
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Invalid(m) => write!(f, "{m}"),
            PlanError::Unsupported(m) => write!(f, "not modelled yet: {m}"),
        }
    }
}

impl std::error::Error for PlanError {}

/// Most indices one INDIRECT1D leg may carry (docs/references/wiki.md §G.1).
pub const MAX_INDICES: u16 = 4096;

/// An index the index bound check stopped (INDIRECT1D, docs/references/wiki.md §G.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexOutOfBounds {
    /// `src_idx` or `dst_idx`.
    pub leg: &'static str,
    /// Position in the index vector.
    pub position: u32,
    /// The index read.
    pub index: u32,
    /// The bound (`REG[bc_reg]`): indices must be below it.
    pub bound: u32,
    /// `flags.idx_bound_is_err`: the firmware raises an error notification.
    pub is_error: bool,
}

/// Expands `word` under `cfg`.
pub fn expand(word: &InstWord, cfg: &DgeConfig, ops: &mut dyn Operands) -> Result<Plan, PlanError> {
    expand_reusing(word, cfg, ops, Vec::new())
}

/// [`expand`], building the engine shares in `spare` — an earlier plan's
/// [`Plan::engines`], whatever they hold — so that a firmware expanding
/// word after word reuses their lists' room instead of allocating each
/// anew. The plan is the one [`expand`] gives.
pub fn expand_reusing(
    word: &InstWord,
    cfg: &DgeConfig,
    ops: &mut dyn Operands,
    spare: Vec<EnginePlan>,
) -> Result<Plan, PlanError> {
    match word {
        InstWord::Direct2d(w) => direct2d::expand_direct2d(w, cfg, ops, spare),
        InstWord::Indirect1d(w) => indirect1d::expand_indirect1d(w, cfg, ops, spare),
        InstWord::RdmaDescGen(w) => rdma::expand_rdma_gen(w, cfg, ops),
        InstWord::Direct2dXpose(w) => direct2d_xpose::expand_direct2d_xpose(w, cfg, ops, spare),
        InstWord::GatherXpose(w) => gather_xpose::expand_gather_xpose(w, cfg, ops, spare),
        other => Err(PlanError::Unsupported(format!(
            "{}: the firmware does not expand this word in this version",
            other.kind().name()
        ))),
    }
}
