//! The DGE backend as a pure function: one instruction word → the emit
//! micro-ops GENERATE / DIMPUSH / REGWRITE (seed 004 §8) and, per engine,
//! the descriptor pairs they stand for (seed 004 §6.3, wiki-facts §D.3).
//!
//! The micro-ops have no published encoding (wiki-facts §L.2); their form
//! here carries exactly the fields of the firmware's own log strings
//! (`push GENERATE to DMA[%d]: %s : addr=0x%llx, elem_size=%d, sem_num=%i`,
//! `push DIMPUSH to DMA[%d]: [%u,%u][%d,%d]`, `push REGWRITE to DMA[%d]`) —
//! DESIGN §8 "DGE micro-ops".
//!
//! Splitting rule (the hardware's is unpublished, wiki-facts §L.2): the
//! element stream is cut into maximal runs contiguous on both sides and at
//! most 64 KiB; a run goes to the engine that covers its SBUF/PSUM
//! partition (destination first, then source: partition / 8, folded onto
//! the engines MEMCOPY_DMA_CFG allows), and runs with no partition go round
//! robin. Every allowed engine takes part, data or not, because every one
//! writes the completion semaphore (hardware-and-simulators §A.3).

use std::fmt;

use dma_abi::inst::{
    BoundCheckReg, ComputeOp, Direct2d, Direct2dXpose, Dtype, GatherXpose, Indirect1d, IndirectDim,
    IndirectMode, InstKind, InstWord, RdmaDescGen,
};
use soc_map::{Addr4, Addr4Mode, Addr8, PartitionTarget, TableOffset};

use crate::layout::{
    DgeConfig, ENGINES_PER_CORE, MAX_DESC_BYTES, PARTITIONS_PER_ENGINE, PeerLayout,
};

/// What the firmware reads while planning: its general registers, its
/// address table, and the partition an address falls in.
pub trait Operands {
    /// General register `n` (0..64).
    fn reg(&self, n: u8) -> u32;
    /// Address-table entry `e`.
    fn table_entry(&self, e: u8) -> u64;
    /// The SBUF/PSUM partition `addr` is in, if any.
    fn partition_of(&self, addr: u64) -> Option<u16>;
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

/// One M2S + S2M descriptor pair: a single-descriptor packet each.
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
    /// `B op= A` through the CCE (wiki-facts §F.3): the packet's first
    /// source is the destination's current contents (address, bytes,
    /// word1 reading them in the output dtype); `src` is the second.
    pub acc_src: Option<(u64, u32, u32)>,
    /// A CCE FMA meta descriptor placed right before `src` (wiki-facts
    /// §F.2): (meta1 | meta2 << 32, meta_ctrl). MULTIPLY uses it to make A's
    /// combine `acc × input + 0`.
    pub meta: Option<(u64, u32)>,
}

/// One M2S descriptor of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
            acc_src: None,
            meta: None,
        }
    }

    /// The M2S descriptors of this pair's packet, in order.
    pub fn sources(&self) -> Vec<TxSource> {
        let mut v = Vec::with_capacity(3);
        if let Some((a, l, w)) = self.acc_src {
            v.push(TxSource::data(a, l, w));
        }
        if let Some((m, w)) = self.meta {
            v.push(TxSource {
                addr: m,
                len_bytes: 0,
                word1: w,
                meta: true,
            });
        }
        v.push(TxSource::data(self.src, self.len_bytes, self.word1));
        v
    }
}

/// How the elements of a word move: a plain copy, or the CCE path
/// (`B = op(A, B)`, converting through f32; docs/cme.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Transfer {
    src_elem: u64,
    dst_elem: u64,
    /// The CCE word1 of the source A, when computing or converting.
    cce: Option<u32>,
    /// The CCE word1 that reads B (in the output dtype) as the first
    /// source of `B op= A`; `None` for a pure conversion.
    acc: Option<u32>,
    /// The FMA meta descriptor before A (MULTIPLY).
    meta: Option<(u64, u32)>,
}

impl Transfer {
    /// Elements one descriptor pair may carry.
    fn max_elems(&self) -> u64 {
        let by_len = (MAX_DESC_BYTES / self.src_elem).min(MAX_DESC_BYTES / self.dst_elem);
        if self.cce.is_some() {
            by_len.min(cme::CCE_MAX_ELEMENTS_V3 as u64)
        } else {
            by_len
        }
    }

    fn pair(&self, src: u64, dst: u64, n: u64) -> DescPair {
        let dst_len = (n * self.dst_elem) as u32;
        DescPair {
            src,
            dst,
            len_bytes: (n * self.src_elem) as u32,
            dst_len_bytes: dst_len,
            word1: self.cce.unwrap_or(dma_abi::DEFAULT_COPY_WORD1),
            acc_src: self.acc.map(|w| (dst, dst_len, w)),
            meta: self.meta,
        }
    }
}

/// The transfer a word's `compute_op`, dtypes and element sizes ask for.
/// Same dtype and element size without a compute op: a plain copy. A
/// dtype conversion (compute_op NONE): a one-source CCE ADD packet, which
/// loads the accumulator and converts it on the way out. ADD, MAX and MIN:
/// a two-source CCE packet (B, then A) written back to B (wiki-facts §F.3).
/// CCE element sizes must be the dtype sizes. MULTIPLY has no CCE encoding
/// (no multiply in SDMA_CCETYPE; wiki-facts §F.3 "mapping NOT given") and
/// is refused.
fn transfer(
    word: &str,
    compute_op: ComputeOp,
    (in_dtype, src_elem): (Dtype, u16),
    (out_dtype, dst_elem): (Dtype, u16),
) -> Result<Transfer, PlanError> {
    if src_elem == 0 || dst_elem == 0 {
        return Err(PlanError::Invalid(format!(
            "{word}: src_elem_size = {src_elem}, dst_elem_size = {dst_elem}: elements must have a size"
        )));
    }
    let cce_type = match compute_op {
        ComputeOp::None => None,
        ComputeOp::Add => Some(dma_abi::CceType::Add),
        ComputeOp::Max => Some(dma_abi::CceType::Max),
        ComputeOp::Min => Some(dma_abi::CceType::Min),
        // No CCE multiply: an FMA whose meta descriptor selects
        // a = stored, b = input, c = scale with scale 0 (wiki-facts §F.2,
        // §F.3 operand selectors; the ISA→CCE mapping itself is not
        // published — docs/firmware.md).
        ComputeOp::Multiply => Some(dma_abi::CceType::Fma),
    };
    let converts = src_elem != dst_elem || in_dtype != out_dtype;
    let (t, two_sources) = match cce_type {
        Some(t) => (t, true),
        None if converts => (dma_abi::CceType::Add, false),
        None => {
            return Ok(Transfer {
                src_elem: u64::from(src_elem),
                dst_elem: u64::from(dst_elem),
                cce: None,
                acc: None,
                meta: None,
            });
        }
    };
    let size = |field: &str, d: Dtype, elem: u16| -> Result<(), PlanError> {
        match cme::Dtype::from_code(d.code()) {
            Some(c) if c.size_bytes() == usize::from(elem) => Ok(()),
            Some(c) => Err(PlanError::Invalid(format!(
                "{word}.{field} = {d:?} is {} bytes but the element size is {elem}",
                c.size_bytes()
            ))),
            None => Err(PlanError::Invalid(format!(
                "{word}.{field} = {:#x}: not a dtype the CCE computes in",
                d.code()
            ))),
        }
    };
    size("in_dtype", in_dtype, src_elem)?;
    size("out_dtype", out_dtype, dst_elem)?;
    let encode = |a: Dtype, b: Dtype| {
        dma_abi::CmeWord::DEFAULT_COPY
            .with_cce(t, a.code(), b.code())
            .map(dma_abi::CmeWord::raw)
            .ok_or_else(|| {
                PlanError::Unsupported(format!(
                    "{word}: dtype codes {:#x}/{:#x} do not fit the CCE's 4-bit fields",
                    a.code(),
                    b.code()
                ))
            })
    };
    Ok(Transfer {
        src_elem: u64::from(src_elem),
        dst_elem: u64::from(dst_elem),
        cce: Some(encode(in_dtype, out_dtype)?),
        acc: if two_sources {
            Some(encode(out_dtype, out_dtype)?)
        } else {
            None
        },
        meta: (compute_op == ComputeOp::Multiply).then(|| multiply_meta(in_dtype)),
    })
}

/// The FMA meta descriptor of MULTIPLY: meta1 (W2) selects a = stored
/// buffer (0), b = input (1), c = scale (2) in bits 25:24 / 27:26 / 29:28;
/// meta2 (W3) is the scale 0.0; meta_ctrl is the FMA packer of wiki-facts
/// §F.2 (`in_dt << 8 | scale_dt << 12 | accum_dt << 16 | 0x2100000`, FP32
/// scale and accumulator).
fn multiply_meta(in_dtype: Dtype) -> (u64, u32) {
    let w2 = (cme::FmaOperand::Stored.bits() << 24)
        | (cme::FmaOperand::Input.bits() << 26)
        | (cme::FmaOperand::Scale.bits() << 28);
    let w3 = 0.0f32.to_bits();
    let fp32 = u32::from(Dtype::Fp32.code());
    let ctrl = (u32::from(in_dtype.code() & 0xF) << 8) | (fp32 << 12) | (fp32 << 16) | 0x210_0000;
    (u64::from(w2) | (u64::from(w3) << 32), ctrl)
}

/// One engine's share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnginePlan {
    /// Engine slot 0..16 within the core.
    pub slot: u8,
    /// Data descriptor pairs, in order.
    pub pairs: Vec<DescPair>,
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
            bytes: 0,
            micro_ops: Vec::new(),
            sem_writes: Vec::new(),
            gathers: Vec::new(),
        }
    }

    /// M2S descriptors this engine's share needs.
    pub fn m2s_descs(&self) -> u64 {
        (self.pairs.len()
            + self.gathers.iter().map(|g| g.tx.len()).sum::<usize>()
            + self.sem_writes.len()) as u64
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
    /// Scatter destinations named twice without `non_unique_dst_idx`:
    /// (first position, later position, index). The writes race; the model
    /// lets the later write in simulated time win (docs/firmware.md).
    pub duplicate_dst: Vec<(u32, u32, u32)>,
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

/// Expands `word` under `cfg`.
pub fn expand(word: &InstWord, cfg: &DgeConfig, ops: &mut dyn Operands) -> Result<Plan, PlanError> {
    match word {
        InstWord::Direct2d(w) => expand_direct2d(w, cfg, ops),
        InstWord::Indirect1d(w) => expand_indirect1d(w, cfg, ops),
        InstWord::RdmaDescGen(w) => expand_rdma_gen(w, cfg, ops),
        InstWord::Direct2dXpose(w) => expand_direct2d_xpose(w, cfg, ops),
        InstWord::GatherXpose(w) => expand_gather_xpose(w, cfg, ops),
        other => Err(PlanError::Unsupported(format!(
            "{}: the firmware does not expand this word in this version",
            other.kind().name()
        ))),
    }
}

/// A register an operand was read from: (operand, register, value).
type RegOperand = (&'static str, u8, u64);

/// An operand resolved, with the registers it read.
struct Resolved {
    addr: u64,
    regs: Vec<(&'static str, u8, u64)>,
}

fn reg64(ops: &dyn Operands, reg: u8) -> u64 {
    u64::from(ops.reg(reg)) | (u64::from(ops.reg(reg.wrapping_add(1) & 63)) << 32)
}

/// ADDR8 → SoC address. Register mode reads REG[r] (low) and REG[r+1]
/// (high); table mode adds the offset to the entry (wiki-facts §C.4;
/// register pairing: docs/firmware.md).
fn resolve_addr8(
    what: &'static str,
    field: &'static str,
    a: Addr8,
    ops: &dyn Operands,
) -> Result<Resolved, PlanError> {
    let shape = match a {
        Addr8::Immediate { shape_reg, .. }
        | Addr8::Register { shape_reg, .. }
        | Addr8::Table { shape_reg, .. } => shape_reg,
    };
    if shape {
        return Err(PlanError::Unsupported(format!(
            "{what}.{field}: shapes from a shape register"
        )));
    }
    Ok(match a {
        Addr8::Immediate { addr, .. } => Resolved {
            addr,
            regs: Vec::new(),
        },
        Addr8::Register { reg, .. } => {
            let v = reg64(ops, reg);
            Resolved {
                addr: v,
                regs: vec![(field, reg, v)],
            }
        }
        Addr8::Table { entry, offset, .. } => {
            let base = ops.table_entry(entry);
            let (off, regs) = match offset {
                TableOffset::Immediate { value, .. } => (value, Vec::new()),
                TableOffset::Register { reg, wide } => {
                    let v = if wide {
                        reg64(ops, reg)
                    } else {
                        u64::from(ops.reg(reg))
                    };
                    (v, vec![(field, reg, v)])
                }
            };
            let addr = base.checked_add(off).ok_or_else(|| {
                PlanError::Invalid(format!(
                    "{what}.{field}: table entry {entry} ({base:#x}) + offset {off:#x} overflows"
                ))
            })?;
            Resolved { addr, regs }
        }
    })
}

/// One side of a 2-D pattern.
#[derive(Clone, Copy)]
struct Side {
    base: u64,
    steps: [i64; 2],
    nums: [u64; 2],
    elem: u64,
}

impl Side {
    /// Byte address of linear element `i` (x fastest).
    fn addr(&self, i: u64) -> Option<u64> {
        let x = i % self.nums[0];
        let y = i / self.nums[0];
        let off = (x as i128 * i128::from(self.steps[0]) + y as i128 * i128::from(self.steps[1]))
            * i128::from(self.elem);
        u64::try_from(i128::from(self.base) + off).ok()
    }

    /// Elements from linear element `i` that are contiguous in memory.
    fn run(&self, i: u64, total: u64) -> u64 {
        if self.steps[0] != 1 {
            return 1;
        }
        if self.steps[1] == self.nums[0] as i64 || self.nums[1] == 1 {
            return total - i; // the rows abut
        }
        self.nums[0] - i % self.nums[0]
    }
}

fn bound_check(
    side: &'static str,
    gate: BoundCheckReg,
    addr: u64,
    len: u32,
    ops: &dyn Operands,
) -> Option<OutOfBounds> {
    if !gate.bc_enabled {
        return None;
    }
    let limit = reg64(ops, gate.bc_reg);
    let last = addr.saturating_add(u64::from(len) - 1);
    (last > limit).then_some(OutOfBounds {
        side,
        addr,
        len_bytes: len,
        reg: gate.bc_reg,
        limit,
        notify: !gate.bc_disable_oob_error_notif,
    })
}

/// Spreads descriptor pairs over the allowed engines (the splitting rule
/// in the module doc), applying bound checks and the ring cap.
struct Spread {
    word: &'static str,
    sem_increment: u8,
    engines: Vec<EnginePlan>,
    rows: Vec<u32>,
    cap: usize,
    run_index: usize,
    out_of_bounds: Vec<OutOfBounds>,
}

impl Spread {
    fn new(word: &'static str, cfg: &DgeConfig, sem_increment: u8) -> Self {
        let engines: Vec<EnginePlan> = cfg
            .engine_slots()
            .into_iter()
            .map(EnginePlan::empty)
            .collect();
        Self {
            word,
            sem_increment,
            rows: vec![0; engines.len()],
            engines,
            cap: usize::from(cfg.carveout_size_descs),
            run_index: 0,
            out_of_bounds: Vec::new(),
        }
    }

    /// Engine index (into `engines`) for a run from `s` to `d`.
    fn engine_for(&mut self, ops: &dyn Operands, s: u64, d: u64) -> usize {
        let n = self.engines.len().max(1);
        let e = match ops.partition_of(d).or_else(|| ops.partition_of(s)) {
            Some(p) => usize::from(p / PARTITIONS_PER_ENGINE) % n,
            None => self.run_index % n,
        };
        self.run_index += 1;
        e
    }

    /// Adds one gather packet (several source pieces of `piece` bytes into
    /// one destination write) on the engine of the destination partition,
    /// after the bound checks of every piece and of the destination.
    fn push_gather(
        &mut self,
        ops: &dyn Operands,
        pieces: &[u64],
        dst: u64,
        piece: u32,
        gates: [BoundCheckReg; 2],
    ) -> Result<(), PlanError> {
        let first = pieces.first().copied().unwrap_or(0);
        let e = self.engine_for(ops, first, dst);
        let total = piece * pieces.len() as u32;
        let oob = pieces
            .iter()
            .find_map(|&s| bound_check("src", gates[0], s, piece, ops))
            .or_else(|| bound_check("dst", gates[1], dst, total, ops));
        if let Some(oob) = oob {
            self.out_of_bounds.push(oob);
            return Ok(());
        }
        self.place_gather(
            e,
            GatherPacket {
                tx: pieces.iter().map(|&s| (s, piece)).collect(),
                dst,
                dst_len_bytes: total,
                word1: dma_abi::DEFAULT_COPY_WORD1,
            },
        )
    }

    /// Adds a gather packet on engine `e` (its bound checks done), within
    /// the ring cap.
    fn place_gather(&mut self, e: usize, packet: GatherPacket) -> Result<(), PlanError> {
        self.check_room(e, packet.tx.len())?;
        let ep = &mut self.engines[e];
        ep.bytes += u64::from(packet.dst_len_bytes);
        ep.gathers.push(packet);
        self.rows[e] += 1;
        Ok(())
    }

    /// The ring cap (MEMCOPY_CARVEOUT_CFG.CARVEOUT_SIZE_DESCS): engine `e`
    /// can take `n` more M2S descriptors and still the semaphore write.
    fn check_room(&self, e: usize, n: usize) -> Result<(), PlanError> {
        let cap = self.cap;
        let ep = &self.engines[e];
        if ep.m2s_descs() as usize + n + 1 > cap {
            return Err(PlanError::Invalid(format!(
                "{}: engine slot {} needs more than {} descriptors per ring \
                 (MEMCOPY_CARVEOUT_CFG.CARVEOUT_SIZE_DESCS = {cap}, one is the semaphore write)",
                self.word,
                ep.slot,
                cap.saturating_sub(1)
            )));
        }
        Ok(())
    }

    /// Adds one cross-bar tile, on the next engine in round robin: `rows`
    /// source rows of `row_bytes` each (one M2S descriptor per row, op DRE
    /// with the element dtype) and one S2M descriptor at the first
    /// destination column; the axi2sram
    /// cross-bar lands element (i, c) at `dst + c × partition stride + i ×
    /// size` (wiki-facts §A.7, §G.4). `last_col` is the last column's
    /// address, for the bound check. Returns false, adding nothing, when a
    /// bound check would drop part of the tile: the caller then moves it
    /// as element pieces, which drop exactly the failing columns.
    #[allow(clippy::too_many_arguments)]
    fn push_xbar(
        &mut self,
        ops: &dyn Operands,
        rows: &[u64],
        row_bytes: u32,
        dst: u64,
        last_col: u64,
        col_bytes: u32,
        word1: u32,
        gates: [BoundCheckReg; 2],
    ) -> Result<bool, PlanError> {
        let total = row_bytes * rows.len() as u32;
        // Columns ascend from `dst` to `last_col`: the first and the last
        // bound every column's bytes.
        let oob = rows
            .iter()
            .any(|&s| bound_check("src", gates[0], s, row_bytes, ops).is_some())
            || bound_check("dst", gates[1], dst, col_bytes, ops).is_some()
            || bound_check("dst", gates[1], last_col, col_bytes, ops).is_some();
        if oob {
            return Ok(false);
        }
        // A tile spans up to 128 partitions, not one engine's 8: tiles are
        // dealt round robin over the allowed engines, like runs outside
        // the partitions.
        let n_engines = self.engines.len().max(1);
        let e = self.run_index % n_engines;
        self.run_index += 1;
        self.place_gather(
            e,
            GatherPacket {
                tx: rows.iter().map(|&s| (s, row_bytes)).collect(),
                dst,
                dst_len_bytes: total,
                word1,
            },
        )?;
        Ok(true)
    }

    /// Adds one pair without address gates; with `pin`, on the engine
    /// `pin mod n` instead of by partition.
    fn push_pinned(
        &mut self,
        ops: &dyn Operands,
        pair: DescPair,
        pin: Option<u64>,
    ) -> Result<Option<usize>, PlanError> {
        let Some(p) = pin else {
            return self.push(ops, pair, [BoundCheckReg::INERT; 2]);
        };
        let n = self.engines.len().max(1) as u64;
        self.place((p % n) as usize, pair).map(Some)
    }

    fn place(&mut self, e: usize, pair: DescPair) -> Result<usize, PlanError> {
        self.check_room(e, 1)?;
        let ep = &mut self.engines[e];
        ep.pairs.push(pair);
        ep.bytes += u64::from(pair.dst_len_bytes);
        Ok(e)
    }

    /// Adds one pair after the address bound checks (source first); returns
    /// the engine index it went to, or `None` when a check dropped it.
    fn push(
        &mut self,
        ops: &dyn Operands,
        pair: DescPair,
        gates: [BoundCheckReg; 2],
    ) -> Result<Option<usize>, PlanError> {
        let e = self.engine_for(ops, pair.src, pair.dst);
        if let Some(oob) = bound_check("src", gates[0], pair.src, pair.len_bytes, ops)
            .or_else(|| bound_check("dst", gates[1], pair.dst, pair.dst_len_bytes, ops))
        {
            self.out_of_bounds.push(oob);
            return Ok(None);
        }
        self.place(e, pair).map(Some)
    }

    /// Adds each engine's micro-ops: REGWRITE for every register operand
    /// and armed gate, GENERATE, and one DIMPUSH per side built by `dims`
    /// from the rows the engine got.
    fn finish(
        mut self,
        ops: &dyn Operands,
        addrs: [&Resolved; 2],
        extra_regs: &[RegOperand],
        gates: &[(&'static str, BoundCheckReg)],
        generate: (u64, u16, u8),
        dims: impl Fn(u32) -> [(&'static str, [u32; 2], [i64; 2]); 2],
    ) -> (Vec<EnginePlan>, Vec<OutOfBounds>) {
        let regs: Vec<RegOperand> = addrs
            .iter()
            .flat_map(|a| a.regs.iter().copied())
            .chain(extra_regs.iter().copied())
            .collect();
        let regs = &regs;
        let (base, elem_size, sem_num) = generate;
        for (ep, rows) in self.engines.iter_mut().zip(std::mem::take(&mut self.rows)) {
            let engine = u16::from(ep.slot);
            ep.sem_writes
                .push((ops.sem_inc_addr(sem_num), self.sem_increment));
            for (operand, reg, value) in regs {
                ep.micro_ops.push(MicroOp::RegWrite {
                    engine,
                    operand,
                    reg: *reg,
                    value: *value,
                });
            }
            for (operand, gate) in gates {
                if gate.bc_enabled {
                    ep.micro_ops.push(MicroOp::RegWrite {
                        engine,
                        operand,
                        reg: gate.bc_reg,
                        value: reg64(ops, gate.bc_reg),
                    });
                }
            }
            ep.micro_ops.push(MicroOp::Generate {
                engine,
                what: "RD",
                addr: ep.pairs.first().map_or(base, |p| p.src),
                elem_size,
                sem_num,
            });
            for (side, sizes, steps) in dims(rows) {
                ep.micro_ops.push(MicroOp::DimPush {
                    engine,
                    side,
                    sizes,
                    steps,
                });
            }
        }
        (self.engines, self.out_of_bounds)
    }
}

fn expand_direct2d(w: &Direct2d, cfg: &DgeConfig, ops: &dyn Operands) -> Result<Plan, PlanError> {
    const W: &str = "DIRECT2D";
    let xfer = transfer(
        W,
        w.compute_op,
        (w.in_dtype, w.src_elem_size),
        (w.out_dtype, w.dst_elem_size),
    )?;
    let src_total = u64::from(w.src_num_elem[0]) * u64::from(w.src_num_elem[1]);
    let dst_total = u64::from(w.dst_num_elem[0]) * u64::from(w.dst_num_elem[1]);
    if src_total != dst_total {
        return Err(PlanError::Invalid(format!(
            "{W}: src_num_elem {:?} ({src_total} elements) and dst_num_elem {:?} ({dst_total}) differ",
            w.src_num_elem, w.dst_num_elem
        )));
    }
    let src_addr = resolve_addr8(W, "src_start_addr", w.src_start_addr, ops)?;
    let dst_addr = resolve_addr8(W, "dst_start_addr", w.dst_start_addr, ops)?;
    let src = Side {
        base: src_addr.addr,
        steps: w.src_step_elem.map(i64::from),
        nums: w.src_num_elem.map(u64::from),
        elem: xfer.src_elem,
    };
    let dst = Side {
        base: dst_addr.addr,
        steps: w.dst_step_elem.map(i64::from),
        nums: w.dst_num_elem.map(u64::from),
        elem: xfer.dst_elem,
    };
    let mut spread = Spread::new(W, cfg, w.sem_increment);
    let gates = [w.src_bound_reg, w.dst_bound_reg];
    let max_elems = xfer.max_elems();
    let mut i = 0u64;
    while i < src_total {
        let n = src
            .run(i, src_total)
            .min(dst.run(i, src_total))
            .min(max_elems);
        let overflow = |side: &str| {
            PlanError::Invalid(format!(
                "{W}: the {side} address of element {i} is outside the 64-bit address space"
            ))
        };
        let pair = xfer.pair(
            src.addr(i).ok_or_else(|| overflow("source"))?,
            dst.addr(i).ok_or_else(|| overflow("destination"))?,
            n,
        );
        let first = i;
        i += n;
        if let Some(e) = spread.push(ops, pair, gates)?
            && first.is_multiple_of(src.nums[0])
        {
            spread.rows[e] += (n / src.nums[0]).max(1) as u32;
        }
    }
    let (engines, out_of_bounds) = spread.finish(
        ops,
        [&src_addr, &dst_addr],
        &[],
        &[
            ("src_bound_reg", w.src_bound_reg),
            ("dst_bound_reg", w.dst_bound_reg),
        ],
        (src.base, w.src_elem_size, w.semaphore),
        |rows| {
            [
                ("src", [src.nums[0] as u32, rows], src.steps),
                ("dst", [dst.nums[0] as u32, rows], dst.steps),
            ]
        },
    );
    Ok(Plan {
        kind: InstKind::Direct2d,
        engines,
        out_of_bounds,
        index_faults: Vec::new(),
        duplicate_dst: Vec::new(),
        ring_now: true,
    })
}

/// The CCE element size of `d` when it is a known dtype, else the row size
/// itself (a plain copy moves rows as opaque bytes).
fn dtype_elem(d: Dtype, row: u16) -> u16 {
    cme::Dtype::from_code(d.code())
        .map_or(row, |c| c.size_bytes() as u16)
        .min(row.max(1))
}

/// Most indices one INDIRECT1D leg may carry (wiki-facts §G.1).
pub const MAX_INDICES: u16 = 4096;

/// An index the index bound check stopped (INDIRECT1D, wiki-facts §G.1).
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

/// The address of an index vector: ADDR4 immediate in SBUF partition 0, or
/// a register pair (wiki-facts §G.1: "register-sourced or in SBUF partition
/// 0").
fn index_vector_addr(
    field: &'static str,
    a: Addr4,
    ops: &dyn Operands,
) -> Result<(u64, Option<RegOperand>), PlanError> {
    const W: &str = "INDIRECT1D";
    match a {
        Addr4::Immediate {
            offset,
            shape_reg: false,
        } => {
            if offset.psum || offset.quadrant != 0 {
                return Err(PlanError::Invalid(format!(
                    "{W}.{field}: index vectors must be in SBUF partition 0 (found {} quadrant {})",
                    if offset.psum { "PSUM" } else { "SBUF" },
                    offset.quadrant
                )));
            }
            let target = offset
                .lane(0)
                .map_err(|e| PlanError::Invalid(format!("{W}.{field}: {e}")))?;
            Ok((ops.partition_addr(target), None))
        }
        Addr4::Register {
            reg,
            mode: Addr4Mode::AddrReg,
        } => {
            let v = reg64(ops, reg);
            Ok((v, Some((field, reg, v))))
        }
        other => Err(PlanError::Unsupported(format!(
            "{W}.{field}: {other:?} (shape registers and indirect index modes)"
        ))),
    }
}

/// `idx_num_active_channels` must be 128: the index drives all 128
/// partition channels (wiki-facts §G.1, §G.2).
fn check_active_channels(word: &str, n: u8) -> Result<(), PlanError> {
    if n == 128 {
        return Ok(());
    }
    Err(PlanError::Invalid(format!(
        "{word}.idx_num_active_channels = {n}: must be 128 (the index drives all 128 partition channels)"
    )))
}

fn expand_indirect1d(
    w: &Indirect1d,
    cfg: &DgeConfig,
    ops: &mut dyn Operands,
) -> Result<Plan, PlanError> {
    const W: &str = "INDIRECT1D";
    check_active_channels(W, w.idx_num_active_channels)?;
    // One element is one row of `elem_size` bytes: with a compute op the
    // CCE works on the dtype's elements inside it.
    let xfer = transfer(
        W,
        w.compute_op,
        (w.in_dtype, dtype_elem(w.in_dtype, w.src_elem_size)),
        (w.out_dtype, dtype_elem(w.out_dtype, w.dst_elem_size)),
    )?;
    if w.compute_op != ComputeOp::None
        && u64::from(w.src_elem_size) / xfer.src_elem != u64::from(w.dst_elem_size) / xfer.dst_elem
    {
        return Err(PlanError::Invalid(format!(
            "{W}: src_elem_size {} and dst_elem_size {} hold different numbers of {:?}/{:?} elements",
            w.src_elem_size, w.dst_elem_size, w.in_dtype, w.out_dtype
        )));
    }
    let mode = w.flags.indirect_mode;
    let (src_indexed, dst_indexed) = match mode {
        IndirectMode::SrcIndirection => (true, false),
        IndirectMode::DstIndirection => (false, true),
        IndirectMode::SrcDstIndirection => (true, true),
    };
    // wiki-facts §G.1: without a shape register the indirect dim must be X;
    // SRC mode needs scatter_dim 0, DST mode gather_dim 0.
    for (name, dim, used) in [
        ("gather_dim", w.flags.gather_dim, src_indexed),
        ("scatter_dim", w.flags.scatter_dim, dst_indexed),
    ] {
        if dim != IndirectDim::X {
            return Err(PlanError::Invalid(format!(
                "{W}.flags.{name} = {}: {}",
                dim.name(),
                if used {
                    "with an immediate address the indirect dim must be X"
                } else {
                    "must be X (0) for this indirect_mode"
                }
            )));
        }
    }
    // The element count: the leg without an index walks its elements; with
    // both indexed the two counts must agree.
    let count = match mode {
        IndirectMode::SrcIndirection => w.dst_num_elem,
        IndirectMode::DstIndirection => w.src_num_elem,
        IndirectMode::SrcDstIndirection => {
            if w.src_num_elem != w.dst_num_elem {
                return Err(PlanError::Invalid(format!(
                    "{W}: src_num_elem {} and dst_num_elem {} differ (SRC_DST_INDIRECTION)",
                    w.src_num_elem, w.dst_num_elem
                )));
            }
            w.src_num_elem
        }
    };
    if count > MAX_INDICES {
        return Err(PlanError::Invalid(format!(
            "{W}: {count} indices (num_elem); at most {MAX_INDICES} without a shape register"
        )));
    }
    let src_addr = resolve_addr8(W, "src_start_addr", w.src_start_addr, ops)?;
    let dst_addr = resolve_addr8(W, "dst_start_addr", w.dst_start_addr, ops)?;
    let mut regs: Vec<RegOperand> = Vec::new();
    let mut read_leg = |field: &'static str,
                        a: Addr4,
                        used: bool,
                        ops: &mut dyn Operands|
     -> Result<Option<Vec<u32>>, PlanError> {
        if !used {
            return Ok(None);
        }
        let (at, reg) = index_vector_addr(field, a, ops)?;
        regs.extend(reg);
        ops.read_u32s(at, usize::from(count))
            .map(Some)
            .map_err(|m| PlanError::Invalid(format!("{W}.{field}: reading the indices: {m}")))
    };
    let src_idx = read_leg("src_idx_start_addr", w.src_idx_start_addr, src_indexed, ops)?;
    let dst_idx = read_leg("dst_idx_start_addr", w.dst_idx_start_addr, dst_indexed, ops)?;
    let ops: &dyn Operands = ops;
    let bound = |gate: BoundCheckReg| gate.bc_enabled.then(|| ops.reg(gate.bc_reg));
    let (src_bound, dst_bound) = (bound(w.src_idx_bound_reg), bound(w.dst_idx_bound_reg));
    let addr_of = |base: u64, step: i32, k: u64, elem: u16| -> Option<u64> {
        let off = i128::from(k) * i128::from(step) * i128::from(elem);
        u64::try_from(i128::from(base) + off).ok()
    };
    let row_elems = u64::from(w.src_elem_size) / xfer.src_elem;
    let mut spread = Spread::new(W, cfg, w.sem_increment);
    let mut index_faults = Vec::new();
    let mut seen_dst: std::collections::BTreeMap<u32, u32> = Default::default();
    let mut duplicates = Vec::new();
    'element: for k in 0..u32::from(count) {
        let mut pos = [u64::from(k); 2];
        for (leg, idx, bound, p) in [
            ("src_idx", &src_idx, src_bound, 0),
            ("dst_idx", &dst_idx, dst_bound, 1),
        ] {
            let Some(v) = idx.as_ref().and_then(|v| v.get(k as usize).copied()) else {
                continue;
            };
            if let Some(b) = bound
                && v >= b
            {
                index_faults.push(IndexOutOfBounds {
                    leg,
                    position: k,
                    index: v,
                    bound: b,
                    is_error: w.flags.idx_bound_is_err,
                });
                continue 'element;
            }
            pos[p] = u64::from(v);
        }
        if let Some(v) = dst_idx.as_ref().and_then(|v| v.get(k as usize).copied())
            && let Some(first) = seen_dst.insert(v, k)
        {
            duplicates.push((first, k, v));
        }
        let overflow = |side: &str| {
            PlanError::Invalid(format!(
                "{W}: the {side} address of element {k} is outside the 64-bit address space"
            ))
        };
        let (s_row, d_row) = (
            addr_of(src_addr.addr, w.src_step_elem, pos[0], w.src_elem_size)
                .ok_or_else(|| overflow("source"))?,
            addr_of(dst_addr.addr, w.dst_step_elem, pos[1], w.dst_elem_size)
                .ok_or_else(|| overflow("destination"))?,
        );
        // Scatter-reduce: every update of one destination row goes to the
        // same engine, whose queue order serialises the read-modify-writes,
        // so duplicates accumulate (wiki-facts §G.1).
        let pin = (xfer.cce.is_some() && dst_indexed).then_some(pos[1]);
        let mut done = 0u64;
        while done < row_elems.max(1) {
            let n = (row_elems - done).min(xfer.max_elems()).max(1);
            let pair = xfer.pair(
                s_row + done * xfer.src_elem,
                d_row + done * xfer.dst_elem,
                n,
            );
            if let Some(e) = spread.push_pinned(ops, pair, pin)? {
                spread.rows[e] += 1;
            }
            done += n;
        }
    }
    let (engines, out_of_bounds) = spread.finish(
        ops,
        [&src_addr, &dst_addr],
        &regs,
        &[
            ("src_idx_bound_reg", w.src_idx_bound_reg),
            ("dst_idx_bound_reg", w.dst_idx_bound_reg),
        ],
        (src_addr.addr, w.src_elem_size, w.semaphore),
        |rows| {
            [
                ("src", [1, rows], [1, i64::from(w.src_step_elem)]),
                ("dst", [1, rows], [1, i64::from(w.dst_step_elem)]),
            ]
        },
    );
    Ok(Plan {
        kind: InstKind::Indirect1d,
        engines,
        out_of_bounds,
        index_faults,
        duplicate_dst: if w.flags.non_unique_dst_idx {
            Vec::new()
        } else {
            duplicates
        },
        ring_now: true,
    })
}

/// RDMA_DESC_GEN (seed 004 §2.6; wiki-facts §E.2, §E.5): an SBUF→SBUF copy
/// from this core to core `remote_core_id`, the same partition offsets
/// fanned over the active partitions, spread over the `dma_engine_mask`
/// engines in contiguous partition blocks. Each masked engine then adds 1
/// to the peer's `remote_sem` (destination ready: +n engines in all), and
/// every one of the core's 16 engines adds 1 to the local `local_sem`
/// (triggering done: +16). The descriptors wait for RDMA_DESC_START.
fn expand_rdma_gen(
    w: &RdmaDescGen,
    cfg: &DgeConfig,
    ops: &dyn Operands,
) -> Result<Plan, PlanError> {
    const W: &str = "RDMA_DESC_GEN";
    if w.is_bidirectional != 0 {
        return Err(PlanError::Invalid(format!(
            "{W}.is_bidirectional = {}: not supported by the firmware",
            w.is_bidirectional
        )));
    }
    if w.remote_routing_id.0 != 0 {
        return Err(PlanError::Unsupported(format!(
            "{W}.remote_routing_id = {:#x}: routing to another die or chip (peers on this device use 0)",
            w.remote_routing_id.0
        )));
    }
    let mask = w.dma_engine_mask.0;
    if mask > 0xffff || !matches!(mask.count_ones(), 1 | 2 | 4 | 8 | 16) {
        return Err(PlanError::Invalid(format!(
            "{W}.dma_engine_mask = {mask:#x}: a 16-bit mask of 1, 2, 4, 8 or 16 engines"
        )));
    }
    let peer = ops.peer(w.remote_core_id.0).ok_or_else(|| {
        PlanError::Invalid(format!(
            "{W}.remote_core_id = {}: no such core on this device",
            w.remote_core_id.0
        ))
    })?;
    let offset = |field: &'static str, a: Addr4| match a {
        Addr4::Immediate {
            offset,
            shape_reg: false,
        } => Ok(offset),
        other => Err(PlanError::Unsupported(format!(
            "{W}.{field}: {other:?} (only a partition-offset immediate)"
        ))),
    };
    let src = offset("src_addr", w.src_addr)?;
    let dst = offset("dst_addr", w.dst_addr)?;
    let parts = match w.completion_info.num_active_ports {
        0 => 128u32,
        n => 16 * u32::from(n),
    };
    let slots: Vec<u8> = (0..16u8).filter(|i| mask & (1 << i) != 0).collect();
    let n = slots.len() as u32;
    let mut engines: Vec<EnginePlan> = (0..ENGINES_PER_CORE as u8).map(EnginePlan::empty).collect();
    let cap = usize::from(cfg.carveout_size_descs);
    let free = u64::from(w.free_dim_bytes);
    for lane in 0..parts {
        let lane_err = |field: &str, e: soc_map::Addr4Error| {
            PlanError::Invalid(format!("{W}.{field}: partition lane {lane}: {e}"))
        };
        let s_t = src.lane(lane).map_err(|e| lane_err("src_addr", e))?;
        let d_t = dst.lane(lane).map_err(|e| lane_err("dst_addr", e))?;
        let (s_addr, d_addr) = (ops.partition_addr(s_t), peer.partition_addr(d_t));
        let slot = slots[(lane * n / parts) as usize];
        let ep = &mut engines[usize::from(slot)];
        let mut off = 0u64;
        while off < free {
            let len = (free - off).min(MAX_DESC_BYTES);
            ep.pairs
                .push(DescPair::copy(s_addr + off, d_addr + off, len as u32));
            ep.bytes += len;
            off += len;
        }
    }
    for ep in &mut engines {
        let engine = u16::from(ep.slot);
        if slots.contains(&ep.slot) {
            ep.sem_writes.push((peer.sem_inc(w.remote_sem), 1));
            ep.micro_ops.push(MicroOp::Generate {
                engine,
                what: "RD",
                addr: ep.pairs.first().map_or(0, |p| p.src),
                elem_size: 1,
                sem_num: w.remote_sem,
            });
            ep.micro_ops.push(MicroOp::DimPush {
                engine,
                side: "src",
                sizes: [w.free_dim_bytes, parts / n],
                steps: [1, 0],
            });
        }
        ep.sem_writes.push((ops.sem_inc_addr(w.local_sem), 1));
        if ep.pairs.len() + ep.sem_writes.len() > cap {
            return Err(PlanError::Invalid(format!(
                "{W}: engine slot {} needs {} descriptors per ring (MEMCOPY_CARVEOUT_CFG.CARVEOUT_SIZE_DESCS = {cap})",
                ep.slot,
                ep.pairs.len() + ep.sem_writes.len()
            )));
        }
    }
    Ok(Plan {
        kind: InstKind::RdmaDescGen,
        engines,
        out_of_bounds: Vec::new(),
        index_faults: Vec::new(),
        duplicate_dst: Vec::new(),
        ring_now: false,
    })
}

/// Rows of one cross-bar transpose tile (wiki-facts §A.7).
pub const XPOSE_TILE_ROWS: u8 = 16;

/// DIRECT2D_XPOSE (seed 004 §2.5; wiki-facts §A.7, §G.4): the source is R
/// rows (`src_num_elem[1]`) of C elements (`src_num_elem[0]`), element
/// (r, c) at `src + (t·tile_src_row_step + i·src_step[1] + c·src_step[0])
/// × size` for r = 16t + i; it lands transposed, element (r, c) at
/// `dst + (r·dst_step[0] + c·dst_step[1]) × size`, so `dst_num_elem` is
/// [R, C]. The axi2sram cross-bar does the transpose in hardware: when
/// source rows are contiguous, destination rows adjacent and destination
/// columns one partition apart, each 16 × N tile chunk (N ≤
/// `tile_src_cols`) whose columns are all in partitions of one memory and
/// within the bound checks is one cross-bar packet (16 row descriptors,
/// engines in round robin). Otherwise — and for chunks that are not — each
/// 16-row tile column is one packet: 16 source pieces gathered into one
/// destination write of 16 elements (or 16 single pairs when the
/// destination column is not contiguous), on the engine of the destination
/// partition. Both land the same bytes (a proptest checks it).
fn expand_direct2d_xpose(
    w: &Direct2dXpose,
    cfg: &DgeConfig,
    ops: &dyn Operands,
) -> Result<Plan, PlanError> {
    const W: &str = "DIRECT2D_XPOSE";
    if w.out_dtype != w.in_dtype {
        return Err(PlanError::Invalid(format!(
            "{W}.out_dtype = {:?}: must equal in_dtype {:?} (no cast through the cross-bar)",
            w.out_dtype, w.in_dtype
        )));
    }
    let size = cme::Dtype::from_code(w.in_dtype.code()).map_or(0, |d| d.size_bytes());
    let max_cols = match size {
        2 => 128,
        4 => 64,
        _ => {
            return Err(PlanError::Invalid(format!(
                "{W}.in_dtype = {:?}: the cross-bar transposes 2- and 4-byte elements only",
                w.in_dtype
            )));
        }
    };
    if w.tile_src_rows != XPOSE_TILE_ROWS {
        return Err(PlanError::Invalid(format!(
            "{W}.tile_src_rows = {}: must be {XPOSE_TILE_ROWS}",
            w.tile_src_rows
        )));
    }
    if w.tile_src_cols == 0 || u32::from(w.tile_src_cols) > max_cols {
        return Err(PlanError::Invalid(format!(
            "{W}.tile_src_cols = {}: must be 1..={max_cols} for {size}-byte elements",
            w.tile_src_cols
        )));
    }
    let (cols, rows) = (u64::from(w.src_num_elem[0]), u64::from(w.src_num_elem[1]));
    if !rows.is_multiple_of(u64::from(XPOSE_TILE_ROWS)) {
        return Err(PlanError::Invalid(format!(
            "{W}.src_num_elem[1] = {rows}: the rows must fill 16-row tiles"
        )));
    }
    if w.dst_num_elem != [w.src_num_elem[1], w.src_num_elem[0]] {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_num_elem {:?}: must be [src_num_elem[1], src_num_elem[0]] = [{rows}, {cols}] (the transpose)",
            w.dst_num_elem
        )));
    }
    let src_addr = resolve_addr8(W, "src_start_addr", w.src_start_addr, ops)?;
    let dst_addr = resolve_addr8(W, "dst_start_addr", w.dst_start_addr, ops)?;
    if !dst_addr.addr.is_multiple_of(32) {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_start_addr = {:#x}: must be 32-byte aligned",
            dst_addr.addr
        )));
    }
    let esz = size as u64;
    let at = |base: u64, elems: i128| -> Result<u64, PlanError> {
        u64::try_from(i128::from(base) + elems * i128::from(esz)).map_err(|_| {
            PlanError::Invalid(format!(
                "{W}: an element address is outside the 64-bit address space"
            ))
        })
    };
    let [s0, s1] = w.src_step_elem.map(i128::from);
    let [d0, d1] = w.dst_step_elem.map(i128::from);
    let tile_step = i128::from(w.tile_src_row_step);
    let mut spread = Spread::new(W, cfg, 1);
    let gates = [w.src_bound_reg, w.dst_bound_reg];
    let tiles = rows / u64::from(XPOSE_TILE_ROWS);
    // The cross-bar path: source rows contiguous (step 0 = 1), each
    // destination column 16 contiguous elements (dst step 0 = 1) one
    // partition apart (dst step 1 × size = the partition stride) — then a
    // whole 16 × N tile is one packet of 16 row descriptors.
    let xbar_word1 = dma_abi::CmeWord::DEFAULT_COPY
        .with_xbar(w.in_dtype.code())
        .map(dma_abi::CmeWord::raw);
    let stride_ok = d1 > 0
        && ops
            .partition_stride(dst_addr.addr)
            .is_some_and(|p| i128::from(p) == d1 * i128::from(esz));
    if let (true, true, true, Some(word1)) = (s0 == 1, d0 == 1, stride_ok, xbar_word1) {
        let chunk = u64::from(w.tile_src_cols);
        for t in 0..tiles {
            let r0 = t * u64::from(XPOSE_TILE_ROWS);
            let mut c0 = 0;
            while c0 < cols {
                let n = chunk.min(cols - c0);
                let dst = at(dst_addr.addr, i128::from(r0) + i128::from(c0) * d1)?;
                let last = at(dst, i128::from(n - 1) * d1)?;
                // Every column in a partition of the same memory (`last`
                // is checked, so these sums do not overflow).
                let fits = ops.partition_stride(dst) == Some(d1 as u64 * esz)
                    && (0..n).all(|c| ops.partition_of(dst + c * (d1 as u64) * esz).is_some());
                let mut row_addrs = Vec::with_capacity(usize::from(XPOSE_TILE_ROWS));
                for i in 0..u64::from(XPOSE_TILE_ROWS) {
                    let row = at(
                        src_addr.addr,
                        i128::from(t) * tile_step + i128::from(i) * s1 + i128::from(c0),
                    )?;
                    // The row's last element is addressable, as on the
                    // element path.
                    at(row, i128::from(n - 1))?;
                    row_addrs.push(row);
                }
                let col = u32::from(XPOSE_TILE_ROWS) * esz as u32;
                let taken = fits
                    && spread.push_xbar(
                        ops,
                        &row_addrs,
                        (n * esz) as u32,
                        dst,
                        last,
                        col,
                        word1,
                        gates,
                    )?;
                if !taken {
                    // Off the partitions, or partly out of bounds: element
                    // pieces, column by column (the same bytes and drops as
                    // the element path below).
                    for c in 0..n {
                        let d = at(dst, i128::from(c) * d1)?;
                        let pieces = row_addrs
                            .iter()
                            .map(|&r| at(r, i128::from(c)))
                            .collect::<Result<Vec<u64>, _>>()?;
                        spread.push_gather(ops, &pieces, d, esz as u32, gates)?;
                    }
                }
                c0 += n;
            }
        }
    } else {
        for t in 0..tiles {
            for c in 0..cols {
                let r0 = t * u64::from(XPOSE_TILE_ROWS);
                let dst = at(dst_addr.addr, i128::from(r0) * d0 + i128::from(c) * d1)?;
                let mut pieces = Vec::with_capacity(usize::from(XPOSE_TILE_ROWS));
                for i in 0..u64::from(XPOSE_TILE_ROWS) {
                    let src = at(
                        src_addr.addr,
                        i128::from(t) * tile_step + i128::from(i) * s1 + i128::from(c) * s0,
                    )?;
                    pieces.push(src);
                }
                if d0 == 1 {
                    spread.push_gather(ops, &pieces, dst, esz as u32, gates)?;
                } else {
                    for (i, &src) in pieces.iter().enumerate() {
                        let d = at(dst, i as i128 * d0)?;
                        spread.push(ops, DescPair::copy(src, d, esz as u32), gates)?;
                    }
                }
            }
        }
    }
    let (engines, out_of_bounds) = spread.finish(
        ops,
        [&src_addr, &dst_addr],
        &[],
        &[
            ("src_bound_reg", w.src_bound_reg),
            ("dst_bound_reg", w.dst_bound_reg),
        ],
        (src_addr.addr, size as u16, w.semaphore),
        |_| {
            [
                ("src", [cols as u32, rows as u32], [s0 as i64, s1 as i64]),
                ("dst", [rows as u32, cols as u32], [d0 as i64, d1 as i64]),
            ]
        },
    );
    Ok(Plan {
        kind: InstKind::Direct2dXpose,
        engines,
        out_of_bounds,
        index_faults: Vec::new(),
        duplicate_dst: Vec::new(),
        ring_now: true,
    })
}

/// GATHER_XPOSE (seed 004 §2.4; wiki-facts §G.2): K = `src_num_elem[1]`
/// UINT32 indices (a multiple of 16) pick K source rows of `elem_size` bytes
/// (J = elem_size / 2 elements of a 2-byte dtype): row k at
/// `src + idx[k] × src_step[1] × 2`, element j of it at `+ j × src_step[0]
/// × 2`. They land transposed: element (k, j) at `dst + k × 2 +
/// j × dst_step_elem_1 × 2` (dst step 0 = sizeof(dtype_hi)), so
/// `dst_num_elem` = [K, J]. Like DIRECT2D_XPOSE, a 16-index tile with all
/// indices valid, contiguous rows (`src_step[0]` = 1) and destination
/// columns one partition apart is one cross-bar packet when it fits the
/// partitions and the bound checks; otherwise each tile column is one
/// gather packet (16 pieces → one 32-byte write). Indices at or past
/// `REG[src_idx_bound_reg]` are dropped (that tile column falls back to
/// single pairs for the rows that remain).
fn expand_gather_xpose(
    w: &GatherXpose,
    cfg: &DgeConfig,
    ops: &mut dyn Operands,
) -> Result<Plan, PlanError> {
    const W: &str = "GATHER_XPOSE";
    check_active_channels(W, w.idx_num_active_channels)?;
    if w.flags.gather_dim != IndirectDim::Y {
        return Err(PlanError::Invalid(format!(
            "{W}.flags.gather_dim = {}: must be Y (the gathered rows are the slow axis)",
            w.flags.gather_dim.name()
        )));
    }
    let (lo, hi) = (w.dtype.dtype_lo, w.dtype.dtype_hi);
    if lo != hi || !matches!(lo, Dtype::Bfloat16 | Dtype::Fp16) {
        return Err(PlanError::Invalid(format!(
            "{W}.dtype = {lo:?}/{hi:?}: BF16 or FP16 on both sides (no cast)"
        )));
    }
    if w.elem_size < 2 || w.elem_size > 256 || !w.elem_size.is_multiple_of(2) {
        return Err(PlanError::Invalid(format!(
            "{W}.elem_size = {}: an even number of bytes in 2..=256",
            w.elem_size
        )));
    }
    let k_count = w.src_num_elem[1];
    let j_count = w.elem_size / 2;
    if !k_count.is_multiple_of(16) || k_count > MAX_INDICES {
        return Err(PlanError::Invalid(format!(
            "{W}.src_num_elem[1] = {k_count}: a multiple of 16 indices, at most {MAX_INDICES}"
        )));
    }
    if w.dst_num_elem != [k_count, j_count] {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_num_elem {:?}: must be [src_num_elem[1], elem_size / 2] = [{k_count}, {j_count}]",
            w.dst_num_elem
        )));
    }
    let ops_ro: &dyn Operands = ops;
    let src_addr = resolve_addr8(W, "src_start_addr", w.src_start_addr, ops_ro)?;
    let dst_addr = resolve_addr8(W, "dst_start_addr", w.dst_start_addr, ops_ro)?;
    if !src_addr.addr.is_multiple_of(2) {
        return Err(PlanError::Invalid(format!(
            "{W}.src_start_addr = {:#x}: must be 2-byte aligned",
            src_addr.addr
        )));
    }
    if !dst_addr.addr.is_multiple_of(32) {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_start_addr = {:#x}: must be 32-byte aligned",
            dst_addr.addr
        )));
    }
    if j_count > 1 && (i64::from(w.dst_step_elem_1) * 2).rem_euclid(32) != 0 {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_step_elem_1 = {}: a multiple of 32 bytes unless dst_num_elem[1] = 1",
            w.dst_step_elem_1
        )));
    }
    let (idx_at, reg) = match w.src_idx_start_addr {
        Addr4::Immediate {
            offset,
            shape_reg: false,
        } if !offset.psum && offset.quadrant == 0 && offset.offset.is_multiple_of(4) => {
            let t = offset
                .lane(0)
                .map_err(|e| PlanError::Invalid(format!("{W}.src_idx_start_addr: {e}")))?;
            (ops_ro.partition_addr(t), None)
        }
        Addr4::Register {
            reg,
            mode: Addr4Mode::AddrReg,
        } => {
            let v = reg64(ops_ro, reg);
            (v, Some(("src_idx_start_addr", reg, v)))
        }
        other => {
            return Err(PlanError::Invalid(format!(
                "{W}.src_idx_start_addr: {other:?}: a 4-byte aligned offset in SBUF partition 0, or a register"
            )));
        }
    };
    let idx = ops.read_u32s(idx_at, usize::from(k_count)).map_err(|m| {
        PlanError::Invalid(format!("{W}.src_idx_start_addr: reading the indices: {m}"))
    })?;
    let ops: &dyn Operands = ops;
    let bound = w
        .src_idx_bound_reg
        .bc_enabled
        .then(|| ops.reg(w.src_idx_bound_reg.bc_reg));
    let at = |base: u64, elems: i128| -> Result<u64, PlanError> {
        u64::try_from(i128::from(base) + elems * 2).map_err(|_| {
            PlanError::Invalid(format!(
                "{W}: an element address is outside the 64-bit address space"
            ))
        })
    };
    let [s0, s1] = w.src_step_elem.map(i128::from);
    let d1 = i128::from(w.dst_step_elem_1);
    let mut index_faults = Vec::new();
    let valid: Vec<bool> = idx
        .iter()
        .enumerate()
        .map(|(k, &v)| match bound {
            Some(b) if v >= b => {
                index_faults.push(IndexOutOfBounds {
                    leg: "src_idx",
                    position: k as u32,
                    index: v,
                    bound: b,
                    is_error: !w.src_idx_bound_reg.bc_disable_oob_error_notif,
                });
                false
            }
            _ => true,
        })
        .collect();
    let mut spread = Spread::new(W, cfg, 1);
    let gates = [BoundCheckReg::INERT, w.dst_bound_reg];
    // The cross-bar path (as DIRECT2D_XPOSE): gathered rows contiguous
    // (step 0 = 1) and destination columns one partition apart — each
    // whole 16-index tile is one packet of 16 row descriptors.
    let xbar_word1 = dma_abi::CmeWord::DEFAULT_COPY
        .with_xbar(w.dtype.dtype_hi.code())
        .map(dma_abi::CmeWord::raw);
    let stride_ok = d1 > 0
        && ops
            .partition_stride(dst_addr.addr)
            .is_some_and(|p| i128::from(p) == d1 * 2);
    let xbar = (s0 == 1 && stride_ok).then_some(xbar_word1).flatten();
    for t in 0..usize::from(k_count / 16) {
        let rows = t * 16..t * 16 + 16;
        let whole = valid[rows.clone()].iter().all(|&v| v);
        if let (true, Some(word1)) = (whole, xbar) {
            let dst = at(dst_addr.addr, (t as i128) * 16)?;
            let last = at(dst, i128::from(j_count - 1) * d1)?;
            let fits = ops.partition_stride(dst) == Some(d1 as u64 * 2)
                && (0..u64::from(j_count))
                    .all(|j| ops.partition_of(dst + j * (d1 as u64) * 2).is_some());
            if fits {
                let mut row_addrs = Vec::with_capacity(16);
                for k in rows.clone() {
                    let row = at(src_addr.addr, i128::from(idx[k]) * s1)?;
                    at(row, i128::from(j_count) - 1)?;
                    row_addrs.push(row);
                }
                // Partly out of bounds: element pieces below.
                if spread.push_xbar(
                    ops,
                    &row_addrs,
                    u32::from(j_count) * 2,
                    dst,
                    last,
                    32,
                    word1,
                    gates,
                )? {
                    continue;
                }
            }
        }
        for j in 0..i128::from(j_count) {
            let dst = at(dst_addr.addr, (t as i128) * 16 + j * d1)?;
            let mut pieces = Vec::with_capacity(16);
            for k in rows.clone() {
                pieces.push(at(src_addr.addr, i128::from(idx[k]) * s1 + j * s0)?);
            }
            if whole {
                spread.push_gather(ops, &pieces, dst, 2, gates)?;
            } else {
                for (n, (k, src)) in rows.clone().zip(pieces).enumerate() {
                    if valid[k] {
                        spread.push(ops, DescPair::copy(src, dst + 2 * n as u64, 2), gates)?;
                    }
                }
            }
        }
    }
    let (engines, out_of_bounds) = spread.finish(
        ops,
        [&src_addr, &dst_addr],
        reg.as_slice(),
        &[
            ("src_idx_bound_reg", w.src_idx_bound_reg),
            ("dst_bound_reg", w.dst_bound_reg),
        ],
        (src_addr.addr, 2, w.semaphore),
        |_| {
            [
                (
                    "src",
                    [u32::from(j_count), u32::from(k_count)],
                    [s0 as i64, s1 as i64],
                ),
                (
                    "dst",
                    [u32::from(k_count), u32::from(j_count)],
                    [1, d1 as i64],
                ),
            ]
        },
    );
    Ok(Plan {
        kind: InstKind::GatherXpose,
        engines,
        out_of_bounds,
        index_faults,
        duplicate_dst: Vec::new(),
        ring_now: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dma_abi::inst::{Dtype, InstKind};
    use std::collections::BTreeMap;

    /// SBUF of TPB 0 (partition stride 256 KiB) and registers from a list.
    struct Ops {
        regs: Vec<(u8, u32)>,
        table: Vec<(u8, u64)>,
        /// Index vectors: (address, words).
        mem: Vec<(u64, Vec<u32>)>,
        /// Whether the SBUF reports its partition stride (the cross-bar
        /// transpose path).
        xbar: bool,
    }

    const SBUF: u64 = 0x20_0000_0000;
    const STRIDE: u64 = 256 << 10;

    impl Operands for Ops {
        fn reg(&self, n: u8) -> u32 {
            self.regs.iter().find(|r| r.0 == n).map_or(0, |r| r.1)
        }
        fn table_entry(&self, e: u8) -> u64 {
            self.table.iter().find(|t| t.0 == e).map_or(0, |t| t.1)
        }
        fn partition_of(&self, addr: u64) -> Option<u16> {
            (SBUF..SBUF + 128 * STRIDE)
                .contains(&addr)
                .then(|| ((addr - SBUF) / STRIDE) as u16)
        }
        fn partition_stride(&self, addr: u64) -> Option<u64> {
            (self.xbar && self.partition_of(addr).is_some()).then_some(STRIDE)
        }
        fn partition_addr(&self, t: PartitionTarget) -> u64 {
            match t {
                PartitionTarget::Sbuf(a) => {
                    SBUF + u64::from(a.partition) * STRIDE + u64::from(a.offset)
                }
                PartitionTarget::Psum(_) => 0,
            }
        }
        fn sem_inc_addr(&self, idx: u8) -> u64 {
            0x28_0270_1800 + 4 * u64::from(idx)
        }
        fn peer(&self, tpb: u32) -> Option<PeerLayout> {
            (tpb < 8).then(|| PeerLayout {
                sbuf_base: 0x100_0000_0000 + u64::from(tpb) * 0x10_0000_0000,
                sbuf_stride: STRIDE,
                psum_base: 0,
                psum_stride: 0,
                sem_inc0: 0x200_0000_0000 + u64::from(tpb) * 0x1000,
                sem_stride: 4,
            })
        }
        fn read_u32s(&mut self, addr: u64, n: usize) -> Result<Vec<u32>, String> {
            let at = self
                .mem
                .iter()
                .find(|(a, _)| *a == addr)
                .ok_or_else(|| format!("nothing at {addr:#x}"))?;
            Ok(at.1.iter().copied().take(n).collect())
        }
    }

    fn ops() -> Ops {
        Ops {
            regs: Vec::new(),
            table: Vec::new(),
            mem: Vec::new(),
            xbar: false,
        }
    }

    fn cfg(engine_mask: u16) -> DgeConfig {
        DgeConfig {
            carveout_offset_descs: 0,
            carveout_size_descs: 1024,
            engine_mask,
            queue_mask: 1,
        }
    }

    fn word(
        src: u64,
        ss: [i32; 2],
        sn: [u16; 2],
        dst: u64,
        ds: [i32; 2],
        dn: [u16; 2],
        e: u16,
    ) -> InstWord {
        let InstWord::Direct2d(mut w) = InstWord::default_of(InstKind::Direct2d) else {
            unreachable!()
        };
        w.semaphore = 3;
        w.sem_increment = 1;
        w.src_start_addr = Addr8::Immediate {
            addr: src,
            shape_reg: false,
        };
        w.src_step_elem = ss;
        w.src_num_elem = sn;
        w.src_elem_size = e;
        w.dst_start_addr = Addr8::Immediate {
            addr: dst,
            shape_reg: false,
        };
        w.dst_step_elem = ds;
        w.dst_num_elem = dn;
        w.dst_elem_size = e;
        InstWord::Direct2d(w)
    }

    #[test]
    fn tile_rows_go_to_the_engine_of_their_partition() {
        // [128, 4096] bf16 HBM -> SBUF: one 8 KiB pair per partition.
        let w = word(
            0x1000_0000,
            [1, 4096],
            [4096, 128],
            SBUF,
            [1, 131072],
            [4096, 128],
            2,
        );
        let p = expand(&w, &cfg(0xffff), &mut ops()).unwrap();
        assert_eq!(p.engines.len(), 16);
        for ep in &p.engines {
            assert_eq!(ep.pairs.len(), 8);
            for (k, pair) in ep.pairs.iter().enumerate() {
                let part = u64::from(ep.slot) * 8 + k as u64;
                assert_eq!(pair.dst, SBUF + part * STRIDE);
                assert_eq!(pair.src, 0x1000_0000 + part * 8192);
                assert_eq!(pair.len_bytes, 8192);
            }
        }
        assert_eq!(p.descriptors(), 2 * (128 + 16));
        assert_eq!(p.bytes(), 1 << 20);
    }

    #[test]
    fn masked_engines_fold_the_partition_groups() {
        // Partitions 0..15 with engines 0 and 2 allowed: group 0 -> slot 0,
        // group 1 -> slot 2.
        let w = word(
            0x1000_0000,
            [1, 64],
            [64, 16],
            SBUF,
            [1, 65536],
            [64, 16],
            4,
        );
        let p = expand(&w, &cfg(0b101), &mut ops()).unwrap();
        let slots: Vec<(u8, usize)> = p.engines.iter().map(|e| (e.slot, e.pairs.len())).collect();
        assert_eq!(slots, vec![(0, 8), (2, 8)]);
    }

    #[test]
    fn contiguous_rows_merge_and_split_at_64_kib() {
        // 4 rows of 40000 fp32 back to back on both sides: one 640000-byte
        // stream, cut at 64 KiB.
        let w = word(
            0x1000_0000,
            [1, 40000],
            [40000, 4],
            0x2000_0000,
            [1, 40000],
            [40000, 4],
            4,
        );
        let p = expand(&w, &cfg(1), &mut ops()).unwrap();
        let lens: Vec<u32> = p.engines[0].pairs.iter().map(|x| x.len_bytes).collect();
        assert_eq!(lens.len(), 10);
        assert!(lens[..9].iter().all(|&l| l == 65536));
        assert_eq!(lens[9], 640_000 - 9 * 65536);
        assert_eq!(p.engines[0].pairs[1].src, 0x1000_0000 + 65536);
    }

    #[test]
    fn a_negative_step_reverses_element_by_element() {
        let w = word(
            0x1000_0000 + 12,
            [-1, 0],
            [4, 1],
            0x2000_0000,
            [1, 4],
            [4, 1],
            4,
        );
        let p = expand(&w, &cfg(1), &mut ops()).unwrap();
        let pairs: Vec<(u64, u64)> = p.engines[0].pairs.iter().map(|x| (x.src, x.dst)).collect();
        assert_eq!(
            pairs,
            vec![
                (0x1000_000c, 0x2000_0000),
                (0x1000_0008, 0x2000_0004),
                (0x1000_0004, 0x2000_0008),
                (0x1000_0000, 0x2000_000c)
            ]
        );
    }

    #[test]
    fn register_and_table_operands_resolve() {
        let InstWord::Direct2d(mut w) = word(0, [1, 16], [16, 1], 0, [1, 16], [16, 1], 1) else {
            unreachable!()
        };
        w.src_start_addr = Addr8::Register {
            reg: 10,
            shape_reg: false,
        };
        w.dst_start_addr = Addr8::Table {
            entry: 3,
            offset: TableOffset::Immediate {
                value: 0x40,
                wide: false,
            },
            shape_reg: false,
        };
        let mut o = Ops {
            regs: vec![(10, 0x2345_6000), (11, 0x1)],
            table: vec![(3, SBUF + STRIDE)],
            mem: Vec::new(),
            xbar: false,
        };
        let p = expand(&InstWord::Direct2d(w), &cfg(0xffff), &mut o).unwrap();
        let e = p.engines.iter().find(|e| !e.pairs.is_empty()).unwrap();
        assert_eq!(e.slot, 0); // partition 1 -> engine 0
        assert_eq!(e.pairs[0].src, 0x1_2345_6000);
        assert_eq!(e.pairs[0].dst, SBUF + STRIDE + 0x40);
        assert!(e.micro_ops.iter().any(|m| matches!(
            m,
            MicroOp::RegWrite {
                reg: 10,
                value: 0x1_2345_6000,
                ..
            }
        )));
        let text: Vec<String> = e.micro_ops.iter().map(ToString::to_string).collect();
        assert!(
            text.iter()
                .any(|t| t
                    == "push GENERATE to DMA[0]: RD : addr=0x123456000, elem_size=1, sem_num=3")
        );
        assert!(
            text.iter()
                .any(|t| t == "push DIMPUSH to DMA[0]: [16,1][1,16] (src)")
        );
    }

    #[test]
    fn refusals_name_the_field() {
        let base = word(
            0x1000_0000,
            [1, 16],
            [16, 1],
            0x2000_0000,
            [1, 8],
            [8, 1],
            4,
        );
        let e = expand(&base, &cfg(1), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("dst_num_elem [8, 1] (8)"), "{e}");

        let InstWord::Direct2d(mut w) = word(0, [1, 16], [16, 1], 0, [1, 16], [16, 1], 2) else {
            unreachable!()
        };
        // CCE element sizes must be the dtype sizes (bf16 is 2 bytes).
        w.in_dtype = Dtype::Bfloat16;
        w.out_dtype = Dtype::Fp32;
        w.src_elem_size = 4;
        w.dst_elem_size = 4;
        w.compute_op = ComputeOp::Multiply;
        let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("in_dtype"), "{e}");

        w = match word(0, [1, 16], [16, 1], 0, [1, 16], [16, 1], 2) {
            InstWord::Direct2d(w) => w,
            _ => unreachable!(),
        };
        w.src_start_addr = Addr8::Immediate {
            addr: 0,
            shape_reg: true,
        };
        let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
        assert!(
            e.to_string()
                .contains("src_start_addr: shapes from a shape register"),
            "{e}"
        );

        // Underflow of a negative step.
        let w = word(0, [-1, 0], [4, 1], 0x1000, [1, 4], [4, 1], 4);
        let e = expand(&w, &cfg(1), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("source address of element 1"), "{e}");

        // More pairs than the ring holds.
        let w = word(0x1000, [2, 0], [16, 1], 0x10_0000, [1, 16], [16, 1], 4);
        let small = DgeConfig {
            carveout_size_descs: 16,
            ..cfg(1)
        };
        let e = expand(&w, &small, &mut ops()).unwrap_err();
        assert!(e.to_string().contains("CARVEOUT_SIZE_DESCS = 16"), "{e}");
    }

    #[test]
    fn bound_checks_drop_runs_src_first() {
        let InstWord::Direct2d(mut w) =
            word(0x1000, [1, 64], [64, 4], 0x10_0000, [1, 64], [64, 4], 1)
        else {
            unreachable!()
        };
        // Rows are contiguous on both sides: one 256-byte run, checked as
        // a whole.
        w.src_bound_reg = BoundCheckReg::enabled(5);
        w.dst_bound_reg = BoundCheckReg::enabled(7);
        // The limit is the last address allowed: ending on it passes.
        let mut at_limit = Ops {
            regs: vec![(5, 0x10ff), (7, 0x10_00ff)],
            table: Vec::new(),
            mem: Vec::new(),
            xbar: false,
        };
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut at_limit).unwrap();
        assert_eq!(p.data_pairs(), 1);
        assert!(p.out_of_bounds.is_empty());
        // One byte short on both sides: the source check reports.
        let mut o = Ops {
            regs: vec![(5, 0x10fe), (7, 0x10_00fe)],
            table: Vec::new(),
            mem: Vec::new(),
            xbar: false,
        };
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut o).unwrap();
        assert_eq!(p.data_pairs(), 0);
        assert_eq!(p.out_of_bounds.len(), 1);
        assert_eq!(p.out_of_bounds[0].side, "src");
        assert_eq!(p.out_of_bounds[0].limit, 0x10fe);
        assert!(p.out_of_bounds[0].notify);
        // Every engine still writes its semaphore.
        assert_eq!(p.descriptors(), 2);
    }

    /// An ADDR4 partition-offset immediate in SBUF quadrant 0.
    fn sbuf_q0(off: u32) -> Addr4 {
        Addr4::Immediate {
            offset: soc_map::PartitionOffset {
                offset: off,
                quadrant: 0,
                psum: false,
            },
            shape_reg: false,
        }
    }

    fn indirect(mode: IndirectMode, n: u16) -> Indirect1d {
        let InstWord::Indirect1d(mut w) = InstWord::default_of(InstKind::Indirect1d) else {
            unreachable!()
        };
        w.idx_num_active_channels = 128;
        w.flags.indirect_mode = mode;
        w.semaphore = 2;
        w.sem_increment = 1;
        w.src_start_addr = Addr8::Immediate {
            addr: 0x1000_0000,
            shape_reg: false,
        };
        w.dst_start_addr = Addr8::Immediate {
            addr: SBUF,
            shape_reg: false,
        };
        w.src_step_elem = 1;
        w.dst_step_elem = (STRIDE / 64) as i32;
        w.src_num_elem = n;
        w.dst_num_elem = n;
        w.src_elem_size = 64;
        w.dst_elem_size = 64;
        let at = sbuf_q0;
        w.src_idx_start_addr = at(0x100);
        w.dst_idx_start_addr = at(0x200);
        w
    }

    fn index_ops(src_idx: Vec<u32>, dst_idx: Vec<u32>) -> Ops {
        Ops {
            regs: vec![(9, 10)],
            table: Vec::new(),
            mem: vec![(SBUF + 0x100, src_idx), (SBUF + 0x200, dst_idx)],
            xbar: false,
        }
    }

    fn pairs(p: &Plan) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = p
            .engines
            .iter()
            .flat_map(|e| e.pairs.iter().map(|x| (x.src, x.dst)))
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn gather_reads_the_indexed_rows_into_consecutive_partitions() {
        let w = indirect(IndirectMode::SrcIndirection, 3);
        let mut o = index_ops(vec![7, 0, 7], Vec::new());
        let p = expand(&InstWord::Indirect1d(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(
            pairs(&p),
            vec![
                (0x1000_0000, SBUF + STRIDE),
                (0x1000_0000 + 7 * 64, SBUF),
                (0x1000_0000 + 7 * 64, SBUF + 2 * STRIDE),
            ]
        );
        // Partitions 0..2 are all engine 0's; a repeated source index is fine.
        assert_eq!(p.engines[0].pairs.len(), 3);
        assert!(p.duplicate_dst.is_empty());
    }

    #[test]
    fn scatter_writes_consecutive_sources_to_the_indexed_rows_and_reports_races() {
        let mut w = indirect(IndirectMode::DstIndirection, 3);
        // Scatter from SBUF partitions into an HBM table of 64-byte rows.
        w.src_start_addr = Addr8::Immediate {
            addr: SBUF,
            shape_reg: false,
        };
        w.src_step_elem = (STRIDE / 64) as i32;
        w.dst_start_addr = Addr8::Immediate {
            addr: 0x3000_0000,
            shape_reg: false,
        };
        w.dst_step_elem = 1;
        let mut o = index_ops(Vec::new(), vec![5, 2, 5]);
        let p = expand(&InstWord::Indirect1d(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(
            pairs(&p),
            vec![
                (SBUF, 0x3000_0000 + 5 * 64),
                (SBUF + STRIDE, 0x3000_0000 + 2 * 64),
                (SBUF + 2 * STRIDE, 0x3000_0000 + 5 * 64),
            ]
        );
        assert_eq!(p.duplicate_dst, vec![(0, 2, 5)]);
        w.flags.non_unique_dst_idx = true;
        let p = expand(&InstWord::Indirect1d(w), &cfg(0xffff), &mut o).unwrap();
        assert!(p.duplicate_dst.is_empty());
    }

    #[test]
    fn both_legs_indexed_and_index_bounds() {
        let mut w = indirect(IndirectMode::SrcDstIndirection, 3);
        w.dst_step_elem = 1;
        w.dst_start_addr = Addr8::Immediate {
            addr: 0x3000_0000,
            shape_reg: false,
        };
        w.src_idx_bound_reg = BoundCheckReg::enabled(9); // indices < REG[9] = 10
        w.flags.idx_bound_is_err = true;
        let mut o = index_ops(vec![1, 12, 3], vec![4, 5, 6]);
        let p = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap();
        assert_eq!(
            pairs(&p),
            vec![
                (0x1000_0000 + 64, 0x3000_0000 + 4 * 64),
                (0x1000_0000 + 3 * 64, 0x3000_0000 + 6 * 64),
            ]
        );
        assert_eq!(
            p.index_faults,
            vec![IndexOutOfBounds {
                leg: "src_idx",
                position: 1,
                index: 12,
                bound: 10,
                is_error: true,
            }]
        );
    }

    #[test]
    fn indirect_refusals_name_the_field() {
        let mut o = index_ops(vec![0; 8], vec![0; 8]);
        let mut w = indirect(IndirectMode::SrcIndirection, 2);
        w.idx_num_active_channels = 64;
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(
            e.to_string().contains("idx_num_active_channels = 64"),
            "{e}"
        );

        let mut w = indirect(IndirectMode::SrcIndirection, 4097);
        w.src_num_elem = 2;
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(e.to_string().contains("4097 indices"), "{e}");

        let mut w = indirect(IndirectMode::SrcIndirection, 2);
        w.src_idx_start_addr = Addr4::Immediate {
            offset: soc_map::PartitionOffset {
                offset: 0x100,
                quadrant: 1,
                psum: false,
            },
            shape_reg: false,
        };
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(
            e.to_string()
                .contains("src_idx_start_addr: index vectors must be in SBUF partition 0"),
            "{e}"
        );

        let mut w = indirect(IndirectMode::DstIndirection, 2);
        w.flags.gather_dim = IndirectDim::Y;
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(e.to_string().contains("flags.gather_dim = Y"), "{e}");

        let mut w = indirect(IndirectMode::SrcDstIndirection, 2);
        w.dst_num_elem = 3;
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(
            e.to_string()
                .contains("src_num_elem 2 and dst_num_elem 3 differ"),
            "{e}"
        );

        let mut w = indirect(IndirectMode::DstIndirection, 2);
        w.compute_op = ComputeOp::Multiply; // a CCE FMA now; dtypes left at 0
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(e.to_string().contains("in_dtype = 0x0"), "{e}");
        w.compute_op = ComputeOp::Add; // dtypes left at 0
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(e.to_string().contains("in_dtype = 0x0"), "{e}");
    }

    #[test]
    fn dtype_conversion_is_a_one_source_cce_packet() {
        let InstWord::Direct2d(mut w) = word(0x1000, [1, 16], [16, 1], 0x9000, [1, 16], [16, 1], 2)
        else {
            unreachable!()
        };
        w.in_dtype = Dtype::Bfloat16;
        w.out_dtype = Dtype::Fp32;
        w.dst_elem_size = 4;
        w.compute_op = ComputeOp::None;
        let plan = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap();
        let pairs: Vec<&DescPair> = plan.engines.iter().flat_map(|e| &e.pairs).collect();
        assert!(!pairs.is_empty());
        for p in &pairs {
            assert_eq!(p.acc_src, None, "a conversion reads only A");
            assert_eq!(p.dst_len_bytes, 2 * p.len_bytes, "bf16 in, fp32 out");
            let c = dma_abi::CmeWord::from_raw(p.word1);
            assert_eq!(c.cce_type(), Some(dma_abi::CceType::Add));
            assert_eq!(p.sources().len(), 1);
        }
        // ADD is B op= A: B (in the output dtype) first, then A.
        w.compute_op = ComputeOp::Add;
        w.in_dtype = Dtype::Fp32;
        w.src_elem_size = 4;
        let plan = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap();
        let p = &plan
            .engines
            .iter()
            .flat_map(|e| &e.pairs)
            .next()
            .unwrap()
            .clone();
        let (b_addr, b_len, b_word1) = p.acc_src.unwrap();
        assert_eq!((b_addr, b_len), (p.dst, p.dst_len_bytes));
        let b = dma_abi::CmeWord::from_raw(b_word1);
        assert_eq!(b.cce_type(), Some(dma_abi::CceType::Add));
        assert_eq!(p.sources()[0].addr, p.dst);
        assert_eq!(p.sources()[1].addr, p.src);
        assert_eq!(p.meta, None);
        // MULTIPLY: B, then the FMA meta descriptor (a = stored, b = input,
        // c = scale, scale 0.0: acc × A + 0), then A.
        w.compute_op = ComputeOp::Multiply;
        let plan = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap();
        let p = *plan.engines.iter().flat_map(|e| &e.pairs).next().unwrap();
        let src = p.sources();
        assert_eq!(src.len(), 3);
        assert_eq!((src[0].addr, src[0].meta), (p.dst, false));
        assert!(src[1].meta);
        assert_eq!(src[1].len_bytes, 0);
        assert_eq!(
            src[1].addr & 0xFFFF_FFFF,
            (1 << 26) | (2 << 28),
            "selectors"
        );
        assert_eq!(src[1].addr >> 32, u64::from(0.0f32.to_bits()), "scale 0.0");
        assert_eq!(src[1].word1 & 0x0FF0_0000, 0x0210_0000, "FMA meta_ctrl");
        assert_eq!((src[2].addr, src[2].meta), (p.src, false));
        let a = dma_abi::CmeWord::from_raw(src[2].word1);
        assert_eq!(a.cce_type(), Some(dma_abi::CceType::Fma));
    }

    #[test]
    fn compute_ops_go_through_the_cce_with_dtype_sizes() {
        // DIRECT2D ADD of 3000 fp32 into bf16: CCE word1, 2048-element cap,
        // 4-byte reads and 2-byte writes.
        let InstWord::Direct2d(mut w) = word(
            0x1000_0000,
            [1, 3000],
            [3000, 1],
            0x2000_0000,
            [1, 3000],
            [3000, 1],
            4,
        ) else {
            unreachable!()
        };
        w.compute_op = ComputeOp::Add;
        w.in_dtype = Dtype::Fp32;
        w.out_dtype = Dtype::Bfloat16;
        w.dst_elem_size = 2;
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap();
        let pairs = &p.engines[0].pairs;
        assert_eq!(pairs.len(), 2);
        assert_eq!((pairs[0].len_bytes, pairs[0].dst_len_bytes), (8192, 4096));
        assert_eq!(
            (pairs[1].len_bytes, pairs[1].dst_len_bytes),
            (952 * 4, 952 * 2)
        );
        assert_eq!(pairs[1].src, 0x1000_0000 + 8192);
        assert_eq!(pairs[1].dst, 0x2000_0000 + 4096);
        let cce = dma_abi::CmeWord::from_raw(pairs[0].word1);
        assert_eq!(cce.op(), dma_abi::SdmaOp::Cce);
        assert_eq!(cce.cce_type(), Some(dma_abi::CceType::Add));
        assert_eq!((pairs[0].word1 >> 8) & 0xFF, 0x6A); // in fp32 0xA, out bf16 0x6
        // Element size must be the dtype size.
        w.dst_elem_size = 4;
        let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
        assert!(
            e.to_string()
                .contains("out_dtype = Bfloat16 is 2 bytes but the element size is 4"),
            "{e}"
        );
        // MULTIPLY goes through the CCE too (an FMA): the same size rule.
        w.compute_op = ComputeOp::Multiply;
        let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("element size is 4"), "{e}");
    }

    #[test]
    fn scatter_add_keeps_every_update_of_a_row_on_one_engine() {
        let mut w = indirect(IndirectMode::DstIndirection, 4);
        w.compute_op = ComputeOp::Add;
        w.flags.non_unique_dst_idx = true;
        w.in_dtype = Dtype::Fp32;
        w.out_dtype = Dtype::Fp32;
        w.src_elem_size = 8; // two fp32 per row
        w.dst_elem_size = 8;
        w.src_start_addr = Addr8::Immediate {
            addr: SBUF,
            shape_reg: false,
        };
        w.src_step_elem = (STRIDE / 8) as i32; // row k in partition k
        w.dst_start_addr = Addr8::Immediate {
            addr: 0x3000_0000,
            shape_reg: false,
        };
        w.dst_step_elem = 1;
        // Rows 0 and 3 both add into bin 5; engines allowed: 0..3.
        let mut o = index_ops(Vec::new(), vec![5, 2, 9, 5]);
        let p = expand(&InstWord::Indirect1d(w), &cfg(0xf), &mut o).unwrap();
        let bin5: Vec<u8> = p
            .engines
            .iter()
            .filter(|e| e.pairs.iter().any(|x| x.dst == 0x3000_0000 + 5 * 8))
            .map(|e| e.slot)
            .collect();
        assert_eq!(bin5, vec![1]); // 5 mod 4: both updates on one engine
        assert_eq!(p.engines[1].pairs.len(), 3); // bins 5, 5 and 9
        assert!(p.duplicate_dst.is_empty());
    }

    fn rdma(mask: u32, free: u32) -> RdmaDescGen {
        let InstWord::RdmaDescGen(mut w) = InstWord::default_of(InstKind::RdmaDescGen) else {
            unreachable!()
        };
        w.local_sem = 2;
        w.remote_sem = 1;
        w.remote_core_id = dma_abi::inst::ImmVal(3);
        w.dma_engine_mask = dma_abi::inst::ImmVal(mask);
        let at = sbuf_q0;
        w.src_addr = at(0x100);
        w.dst_addr = at(0x200);
        w.free_dim_bytes = free;
        w
    }

    #[test]
    fn rdma_gen_fans_all_partitions_over_the_masked_engines() {
        let w = rdma(0x000f, 100);
        let p = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap();
        assert!(!p.ring_now);
        // 4 engines, 32 partitions each; every one of the 16 engines
        // writes the local semaphore, the 4 masked ones the remote one too.
        assert_eq!(p.engines.len(), 16);
        let peer_sbuf = 0x100_0000_0000 + 3 * 0x10_0000_0000u64;
        for ep in &p.engines {
            let k = u64::from(ep.slot);
            if ep.slot < 4 {
                assert_eq!(ep.pairs.len(), 32);
                assert_eq!(ep.pairs[0].src, SBUF + 32 * k * STRIDE + 0x100);
                assert_eq!(ep.pairs[0].dst, peer_sbuf + 32 * k * STRIDE + 0x200);
                assert_eq!(ep.pairs[0].len_bytes, 100);
                assert_eq!(
                    ep.sem_writes,
                    vec![
                        (0x200_0000_0000 + 3 * 0x1000 + 4, 1),
                        (0x28_0270_1800 + 8, 1)
                    ]
                );
            } else {
                assert!(ep.pairs.is_empty());
                assert_eq!(ep.sem_writes, vec![(0x28_0270_1800 + 8, 1)]);
            }
        }
        assert_eq!(p.bytes(), 128 * 100);
        assert_eq!(p.descriptors(), 2 * (128 + 4 + 16));
    }

    #[test]
    fn rdma_gen_refusals_name_the_field() {
        for (mask, ok) in [
            (0x0003, true),
            (0x0007, false),
            (0x1_0000, false),
            (0, false),
        ] {
            let r = expand(
                &InstWord::RdmaDescGen(rdma(mask, 64)),
                &cfg(0xffff),
                &mut ops(),
            );
            assert_eq!(r.is_ok(), ok, "mask {mask:#x}: {r:?}");
            if let Err(e) = r {
                assert!(e.to_string().contains("dma_engine_mask"), "{e}");
            }
        }
        let mut w = rdma(0xffff, 64);
        w.remote_core_id = dma_abi::inst::ImmVal(8);
        let e = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("remote_core_id = 8"), "{e}");
        let mut w = rdma(0xffff, 64);
        w.is_bidirectional = 1;
        let e = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("is_bidirectional = 1"), "{e}");
        let mut w = rdma(0xffff, 64);
        w.remote_routing_id = dma_abi::inst::ImmVal(0x12);
        let e = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap_err();
        assert!(matches!(e, PlanError::Unsupported(_)), "{e}");
        // Two ports = 32 partitions only.
        let mut w = rdma(0x0001, 64);
        w.completion_info.num_active_ports = 2;
        let p = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap();
        assert_eq!(p.data_pairs(), 32);
    }

    fn xpose() -> Direct2dXpose {
        let InstWord::Direct2dXpose(mut w) = InstWord::default_of(InstKind::Direct2dXpose) else {
            unreachable!()
        };
        w.semaphore = 7;
        w.in_dtype = Dtype::Bfloat16;
        w.out_dtype = Dtype::Bfloat16;
        w.src_start_addr = Addr8::Immediate {
            addr: SBUF,
            shape_reg: false,
        };
        w.src_step_elem = [1, (STRIDE / 2) as i32];
        w.src_num_elem = [4, 16];
        w.tile_src_row_step = 16 * (STRIDE / 2) as i32;
        w.dst_start_addr = Addr8::Immediate {
            addr: SBUF + 0x1000,
            shape_reg: false,
        };
        w.dst_step_elem = [1, (STRIDE / 2) as i32];
        w.dst_num_elem = [16, 4];
        w.tile_src_rows = 16;
        w.tile_src_cols = 4;
        w
    }

    #[test]
    fn xpose_gathers_each_tile_column_into_one_destination_write() {
        let p = expand(&InstWord::Direct2dXpose(xpose()), &cfg(0xffff), &mut ops()).unwrap();
        // 4 columns -> partitions 0..3 -> engine 0: four 16-piece packets.
        let e0 = &p.engines[0];
        assert_eq!(e0.gathers.len(), 4);
        let g = &e0.gathers[3];
        assert_eq!(g.dst, SBUF + 3 * STRIDE + 0x1000);
        assert_eq!(g.dst_len_bytes, 32);
        assert_eq!(g.tx.len(), 16);
        assert_eq!(g.tx[0], (SBUF + 3 * 2, 2)); // row 0, column 3
        assert_eq!(g.tx[15], (SBUF + 15 * STRIDE + 3 * 2, 2)); // row 15
        assert_eq!(e0.m2s_descs(), 4 * 16 + 1);
        assert_eq!(e0.s2m_descs(), 4 + 1);
        assert_eq!(p.bytes(), 16 * 4 * 2);
    }

    #[test]
    fn xpose_takes_the_cross_bar_when_columns_are_a_partition_apart() {
        // Two 16 x 4 tiles (rows 0..15 and 16..31), SBUF to SBUF.
        let mut w = xpose();
        w.src_num_elem = [4, 32];
        w.dst_num_elem = [32, 4];
        let mut o = ops();
        o.xbar = true;
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        let word1 = dma_abi::CmeWord::DEFAULT_COPY
            .with_xbar(Dtype::Bfloat16.code())
            .map(dma_abi::CmeWord::raw);
        // One packet per tile, dealt round robin: engine 0 then engine 1.
        for (e, tile) in [(0usize, 0u64), (1, 1)] {
            let g = &p.engines[e].gathers;
            assert_eq!(g.len(), 1, "engine {e}");
            assert_eq!(Some(g[0].word1), word1);
            // 16 source rows of 4 bf16, one partition apart.
            assert_eq!(g[0].tx.len(), 16);
            assert_eq!(g[0].tx[0], (SBUF + 16 * tile * STRIDE, 8));
            assert_eq!(g[0].tx[15], (SBUF + (16 * tile + 15) * STRIDE, 8));
            // The tile's first column: partition 0, rows 16t.. at +2 × 16t.
            assert_eq!(g[0].dst, SBUF + 0x1000 + 32 * tile);
            assert_eq!(g[0].dst_len_bytes, 128);
            assert_eq!(p.engines[e].m2s_descs(), 16 + 1);
            assert_eq!(p.engines[e].s2m_descs(), 1 + 1);
        }
        assert_eq!(p.bytes(), 32 * 4 * 2);
        // Destination rows not adjacent (step 0 = 2): element pieces again.
        let mut w = xpose();
        w.dst_step_elem = [2, (STRIDE / 2) as i32];
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert!(p.engines.iter().all(|e| e.gathers.is_empty()));
        assert_eq!(p.data_pairs(), 16 * 4);
        // Columns two partitions apart are no cross-bar tile either.
        let mut w = xpose();
        w.dst_step_elem = [1, STRIDE as i32];
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert!(
            p.engines
                .iter()
                .flat_map(|e| &e.gathers)
                .all(|g| g.word1 == dma_abi::DEFAULT_COPY_WORD1)
        );
    }

    /// Where each destination byte comes from: pairs byte for byte,
    /// element gathers in order, cross-bar tiles transposed across
    /// partitions (as the data path lands them).
    fn landing(p: &Plan) -> BTreeMap<u64, u64> {
        let mut m = BTreeMap::new();
        for e in &p.engines {
            for d in &e.pairs {
                for k in 0..u64::from(d.len_bytes) {
                    m.insert(d.dst + k, d.src + k);
                }
            }
            for g in &e.gathers {
                let xbar = dma_abi::CmeWord::from_raw(g.word1).xbar_dtype();
                match xbar.and_then(cme::Dtype::from_code) {
                    Some(dt) => {
                        let esz = dt.size_bytes() as u64;
                        for (i, &(row, len)) in g.tx.iter().enumerate() {
                            for c in 0..u64::from(len) / esz {
                                for b in 0..esz {
                                    let to = g.dst + c * STRIDE + i as u64 * esz + b;
                                    m.insert(to, row + c * esz + b);
                                }
                            }
                        }
                    }
                    None => {
                        let mut at = g.dst;
                        for &(src, len) in &g.tx {
                            for k in 0..u64::from(len) {
                                m.insert(at, src + k);
                                at += 1;
                            }
                        }
                    }
                }
            }
        }
        m
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]
        /// The cross-bar path lands every byte where the element path
        /// does, for any shape: chunks narrower than the tile, 2- and
        /// 4-byte types, tiles running off the last partition, destination
        /// bound checks that drop some columns.
        #[test]
        fn xpose_cross_bar_lands_what_the_element_path_lands(
            four_bytes in proptest::bool::ANY,
            cols in 1u16..=40,
            chunk_div in 1u16..=4,
            tiles in 1u16..=2,
            src_row_gap in 0i32..3,
            dst_part in 0u64..128,
            dst_limit_cols in proptest::option::of(0u64..40),
        ) {
            let mut w = xpose();
            let (dt, esz) = if four_bytes { (Dtype::Fp32, 4u64) } else { (Dtype::Bfloat16, 2) };
            w.in_dtype = dt;
            w.out_dtype = dt;
            let cols = if four_bytes { cols.min(64) } else { cols };
            let pstride = (STRIDE / esz) as i32;
            // Source rows: contiguous columns, rows (cols + gap) apart in
            // partition 0, tiles one row block apart.
            w.src_step_elem = [1, i32::from(cols) + src_row_gap];
            w.src_num_elem = [cols, 16 * tiles];
            w.tile_src_row_step = 16 * (i32::from(cols) + src_row_gap);
            w.tile_src_cols = u8::try_from(cols.div_ceil(chunk_div).max(1)).unwrap_or(u8::MAX);
            w.dst_start_addr = Addr8::Immediate {
                addr: SBUF + dst_part * STRIDE + 0x1000,
                shape_reg: false,
            };
            w.dst_step_elem = [1, pstride];
            w.dst_num_elem = [16 * tiles, cols];
            // Optional destination bound: REG[9] = a limit inside the
            // partitions, so some columns are dropped.
            let mut o = ops();
            if let Some(lim) = dst_limit_cols {
                w.dst_bound_reg = BoundCheckReg::enabled(9);
                o.regs = vec![(9, ((dst_part + lim) * STRIDE + 0x1000) as u32)];
            }
            let element = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o);
            o.xbar = true;
            let xbar = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o);
            match (element, xbar) {
                (Ok(e), Ok(x)) => {
                    proptest::prop_assert_eq!(landing(&e), landing(&x));
                    proptest::prop_assert_eq!(e.out_of_bounds.len(), x.out_of_bounds.len());
                }
                (e, x) => proptest::prop_assert_eq!(e.map(|_| ()), x.map(|_| ())),
            }
        }
    }

    #[test]
    fn xpose_cross_bar_is_taken_for_whole_tiles_only() {
        // Tile at partition 120 with 16 columns: runs off partition 127.
        let mut w = xpose();
        w.src_num_elem = [16, 16];
        w.dst_num_elem = [16, 16];
        w.tile_src_cols = 16;
        w.dst_start_addr = Addr8::Immediate {
            addr: SBUF + 120 * STRIDE + 0x1000,
            shape_reg: false,
        };
        let mut o = ops();
        o.xbar = true;
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        let xbar_packets = p
            .engines
            .iter()
            .flat_map(|e| &e.gathers)
            .filter(|g| g.word1 != dma_abi::DEFAULT_COPY_WORD1)
            .count();
        assert_eq!(xbar_packets, 0);
        // Element pieces for all 16 columns, as without the cross-bar (the
        // ones past partition 127 fault when the engine writes them).
        assert_eq!(landing(&p).len(), 16 * 16 * 2);
        o.xbar = false;
        let element = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(landing(&p), landing(&element));
    }

    #[test]
    fn xpose_refusals_name_the_field() {
        type Change = fn(&mut Direct2dXpose);
        let cases: [(Change, &str); 6] = [
            (|w| w.tile_src_rows = 8, "tile_src_rows = 8"),
            (|w| w.tile_src_cols = 129, "tile_src_cols = 129"),
            (|w| w.out_dtype = Dtype::Fp32, "must equal in_dtype"),
            (|w| w.src_num_elem = [4, 8], "16-row tiles"),
            (
                |w| w.dst_num_elem = [4, 16],
                "must be [src_num_elem[1], src_num_elem[0]]",
            ),
            (
                |w| {
                    w.dst_start_addr = Addr8::Immediate {
                        addr: SBUF + 0x1010,
                        shape_reg: false,
                    }
                },
                "32-byte aligned",
            ),
        ];
        for (change, msg) in cases {
            let mut w = xpose();
            change(&mut w);
            let e = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut ops()).unwrap_err();
            assert!(e.to_string().contains(msg), "{msg}: {e}");
        }
        let mut w = xpose();
        w.in_dtype = Dtype::Fp32;
        w.out_dtype = Dtype::Fp32;
        w.tile_src_cols = 65;
        let e = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("1..=64 for 4-byte"), "{e}");
    }

    fn gxpose(k: u16) -> GatherXpose {
        let InstWord::GatherXpose(mut w) = InstWord::default_of(InstKind::GatherXpose) else {
            unreachable!()
        };
        w.semaphore = 8;
        w.idx_num_active_channels = 128;
        w.flags.gather_dim = IndirectDim::Y;
        w.dtype.dtype_lo = Dtype::Bfloat16;
        w.dtype.dtype_hi = Dtype::Bfloat16;
        w.src_start_addr = Addr8::Immediate {
            addr: 0x1000_0000,
            shape_reg: false,
        };
        w.src_step_elem = [1, 4];
        w.src_num_elem = [4, k];
        w.src_idx_start_addr = sbuf_q0(0x100);
        w.dst_start_addr = Addr8::Immediate {
            addr: SBUF + 0x2000,
            shape_reg: false,
        };
        w.dst_step_elem_1 = (STRIDE / 2) as i32;
        w.dst_num_elem = [k, 4];
        w.elem_size = 8;
        w
    }

    #[test]
    fn gather_xpose_transposes_the_indexed_rows() {
        let idx: Vec<u32> = (0..16).map(|k| 15 - k).collect();
        let mut o = index_ops(idx, Vec::new());
        let p = expand(&InstWord::GatherXpose(gxpose(16)), &cfg(0xffff), &mut o).unwrap();
        // 4 columns -> partitions 0..3 -> engine 0.
        let g = &p.engines[0].gathers;
        assert_eq!(g.len(), 4);
        assert_eq!(g[2].dst, SBUF + 2 * STRIDE + 0x2000);
        // Piece k = row idx[k] = 15 - k, element 2: 0x1000_0000 + (15-k)*8 + 4.
        assert_eq!(g[2].tx[0], (0x1000_0000 + 15 * 8 + 4, 2));
        assert_eq!(g[2].tx[15], (0x1000_0000 + 4, 2));
        assert_eq!(g[2].dst_len_bytes, 32);
        // An out-of-bounds index: that tile falls back to single pairs.
        let mut w = gxpose(16);
        w.src_idx_bound_reg = BoundCheckReg::enabled(9); // REG[9] = 10
        let idx: Vec<u32> = (0..16).collect();
        let mut o = index_ops(idx, Vec::new());
        let p = expand(&InstWord::GatherXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(p.index_faults.len(), 6);
        assert!(p.engines[0].gathers.is_empty());
        assert_eq!(p.engines[0].pairs.len(), 4 * 10);
    }

    #[test]
    fn gather_xpose_takes_the_cross_bar_for_whole_tiles() {
        let idx: Vec<u32> = (0..16).map(|k| 15 - k).collect();
        let mut o = index_ops(idx, Vec::new());
        o.xbar = true;
        let p = expand(&InstWord::GatherXpose(gxpose(16)), &cfg(0xffff), &mut o).unwrap();
        let g = &p.engines[0].gathers;
        assert_eq!(g.len(), 1);
        assert_eq!(
            Some(g[0].word1),
            dma_abi::CmeWord::DEFAULT_COPY
                .with_xbar(Dtype::Bfloat16.code())
                .map(dma_abi::CmeWord::raw)
        );
        // Row k = table row idx[k] = 15 - k, whole (8 bytes = 4 bf16).
        assert_eq!(g[0].tx[0], (0x1000_0000 + 15 * 8, 8));
        assert_eq!(g[0].tx[15], (0x1000_0000, 8));
        assert_eq!(g[0].dst, SBUF + 0x2000);
        assert_eq!(g[0].dst_len_bytes, 16 * 8);
        assert_eq!(p.data_pairs(), 0);
    }

    #[test]
    fn gather_xpose_refusals_name_the_field() {
        type Change = fn(&mut GatherXpose);
        let cases: [(Change, &str); 6] = [
            (
                |w| w.idx_num_active_channels = 16,
                "idx_num_active_channels = 16",
            ),
            (|w| w.flags.gather_dim = IndirectDim::X, "gather_dim = X"),
            (|w| w.dtype.dtype_hi = Dtype::Fp32, "BF16 or FP16"),
            (|w| w.elem_size = 7, "elem_size = 7"),
            (|w| w.src_num_elem = [4, 8], "src_num_elem[1] = 8"),
            (|w| w.dst_num_elem = [4, 16], "dst_num_elem [4, 16]"),
        ];
        for (change, msg) in cases {
            let mut w = gxpose(16);
            change(&mut w);
            let mut o = index_ops(vec![0; 16], Vec::new());
            let e = expand(&InstWord::GatherXpose(w), &cfg(0xffff), &mut o).unwrap_err();
            assert!(e.to_string().contains(msg), "{msg}: {e}");
        }
    }
}
