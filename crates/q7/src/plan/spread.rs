//! The engine spread: descriptor pairs and gather packets dealt over the
//! allowed engines (the splitting rule of the module doc of `plan`),
//! with the bound checks and the ring cap (docs/firmware.md "Refusals").

use super::operands::{Gate, RegOperand, Resolved, bound_check};
use super::{
    DescPair, EnginePlan, GatherPacket, MicroOp, Operands, OutOfBounds, PairExtras, PartitionSpan,
    PlanError,
};
use crate::layout::{DgeConfig, ENGINES_PER_CORE, PARTITIONS_PER_ENGINE};

/// The most pairs [`Spread::reserve_pairs`] makes room for per engine
/// (a word refused at its ring cap need not allocate its whole share).
const RESERVED_PAIRS_MAX: u64 = 1024;

/// Spreads descriptor pairs over the allowed engines (the splitting rule
/// in the module doc), applying bound checks and the ring cap.
pub(super) struct Spread {
    word: &'static str,
    sem_increment: u8,
    engines: Vec<EnginePlan>,
    /// Rows each engine got (for its DIMPUSH), by index into `engines`
    /// (at most the 16 of a 16-bit engine mask).
    pub(super) rows: [u32; ENGINES_PER_CORE],
    /// Descriptors placed per engine so far: [M2S, S2M], semaphore write
    /// not included.
    descs: [[u64; 2]; ENGINES_PER_CORE],
    cap: usize,
    run_index: usize,
    out_of_bounds: Vec<OutOfBounds>,
    /// M2S descriptors of every pair's packet ([`PairExtras::m2s_per_pair`]).
    m2s_per_pair: u64,
    /// The last span [`Operands::partition_span`] gave: addresses in it
    /// are not asked about again.
    span: Option<PartitionSpan>,
}

impl Spread {
    /// A spread over the engines `cfg` allows, built in `spare` (an earlier
    /// plan's engines, their vectors' room reused; [`super::expand_reusing`]).
    pub(super) fn new(
        word: &'static str,
        cfg: &DgeConfig,
        sem_increment: u8,
        spare: Vec<EnginePlan>,
    ) -> Self {
        let mut engines = spare;
        let mut n = 0;
        for slot in cfg.slots() {
            match engines.get_mut(n) {
                Some(ep) => ep.reset(slot),
                None => engines.push(EnginePlan::empty(slot)),
            }
            n += 1;
        }
        engines.truncate(n);
        Self {
            word,
            sem_increment,
            rows: [0; ENGINES_PER_CORE],
            descs: [[0; 2]; ENGINES_PER_CORE],
            engines,
            cap: usize::from(cfg.carveout_size_descs),
            run_index: 0,
            out_of_bounds: Vec::new(),
            m2s_per_pair: 1,
            span: None,
        }
    }

    /// Every pair's packet has `x` before its data (the word's transfer).
    pub(super) fn set_extras(&mut self, x: PairExtras) {
        for ep in &mut self.engines {
            ep.extras = x;
        }
        self.m2s_per_pair = x.m2s_per_pair();
    }

    /// [`Operands::partition_of`] of `addr`, from the last span the
    /// operands gave when it holds `addr`.
    #[inline(always)]
    fn partition(&mut self, ops: &dyn Operands, addr: u64) -> Option<u16> {
        if let Some(p) = self.span.and_then(|s| s.partition(addr)) {
            return p;
        }
        let (p, span) = ops.partition_span(addr);
        if span.is_some() {
            self.span = span;
        }
        p
    }

    /// Engine index (into `engines`) for a run from `s` to `d`.
    #[inline(always)]
    fn engine_for(&mut self, ops: &dyn Operands, s: u64, d: u64) -> usize {
        let n = self.engines.len().max(1);
        let part = match self.partition(ops, d) {
            Some(p) => Some(p),
            None => self.partition(ops, s),
        };
        let e = match part {
            // Partition group g goes to engine g, folded when fewer engines
            // are allowed (no divide in the common case of all 16).
            Some(p) => match usize::from(p / PARTITIONS_PER_ENGINE) {
                g if g < n => g,
                g => g % n,
            },
            None => self.run_index % n,
        };
        self.run_index += 1;
        e
    }

    /// Adds one gather packet (several source pieces of `piece` bytes into
    /// one destination write) on the engine of the destination partition,
    /// after the bound checks of every piece and of the destination.
    pub(super) fn push_gather(
        &mut self,
        ops: &dyn Operands,
        pieces: &[u64],
        dst: u64,
        piece: u32,
        gates: [Gate; 2],
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
        self.check_room(e, packet.tx.len() as u64)?;
        let ep = &mut self.engines[e];
        ep.bytes += u64::from(packet.dst_len_bytes);
        ep.gathers.push(packet);
        self.rows[e] += 1;
        Ok(())
    }

    /// The ring cap (MEMCOPY_CARVEOUT_CFG.CARVEOUT_SIZE_DESCS): engine `e`
    /// takes one more packet of `m2s` M2S descriptors and one S2M
    /// descriptor, and still has room for its semaphore write, in each
    /// direction. Counts what the firmware will write (a CCE packet has 2
    /// or 3 M2S descriptors), so a share that fits is never more than its
    /// ring holds (docs/firmware.md "Refusals"). Records the packet.
    #[inline(always)]
    fn check_room(&mut self, e: usize, m2s: u64) -> Result<(), PlanError> {
        let cap = self.cap as u64;
        let have = self.descs[e];
        // +1: the semaphore write every engine ends with.
        let need = [have[0] + m2s + 1, have[1] + 1 + 1];
        if need[0] > cap || need[1] > cap {
            return Err(self.room_error(e, need));
        }
        self.descs[e] = [have[0] + m2s, have[1] + 1];
        Ok(())
    }

    /// The refusal of a share that does not fit its ring: the first
    /// direction (M2S, then S2M) whose count `need` passes the cap.
    #[cold]
    fn room_error(&self, e: usize, need: [u64; 2]) -> PlanError {
        let cap = self.cap as u64;
        let (dir, n) = ["M2S", "S2M"]
            .into_iter()
            .zip(need)
            .find(|&(_, n)| n > cap)
            .unwrap_or(("M2S", need[0]));
        PlanError::Invalid(format!(
            "{}: engine slot {} needs {n} {dir} descriptors for its share so far \
             (data packets and the semaphore write), more than its ring holds \
             (MEMCOPY_CARVEOUT_CFG.CARVEOUT_SIZE_DESCS = {cap}); refused rather than \
             overrun the ring",
            self.word,
            self.engines.get(e).map_or(0, |ep| ep.slot)
        ))
    }

    /// Room for about `pairs` descriptor pairs spread evenly over the
    /// engines (at most the ring cap, which no share passes, and at most
    /// [`RESERVED_PAIRS_MAX`]): one allocation per engine instead of a
    /// vector grown pair by pair.
    pub(super) fn reserve_pairs(&mut self, pairs: u64) {
        let n = self.engines.len().max(1) as u64;
        let each = pairs
            .div_ceil(n)
            .min(self.cap as u64)
            .min(RESERVED_PAIRS_MAX);
        for ep in &mut self.engines {
            ep.pairs.reserve(usize::try_from(each).unwrap_or(0));
        }
    }

    /// Adds one cross-bar tile, on the next engine in round robin: `rows`
    /// source rows of `row_bytes` each (one M2S descriptor per row, op DRE
    /// with the element dtype) and one S2M descriptor at the first
    /// destination column; the axi2sram
    /// cross-bar lands element (i, c) at `dst + c × partition stride + i ×
    /// size` (docs/references/wiki.md §A.7, §G.4). `last_col` is the last column's
    /// address, for the bound check. Returns false, adding nothing, when a
    /// bound check would drop part of the tile: the caller then moves it
    /// as element pieces, which drop exactly the failing columns.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_xbar(
        &mut self,
        ops: &dyn Operands,
        rows: &[u64],
        row_bytes: u32,
        dst: u64,
        last_col: u64,
        col_bytes: u32,
        word1: u32,
        gates: [Gate; 2],
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
    pub(super) fn push_pinned(
        &mut self,
        ops: &dyn Operands,
        pair: DescPair,
        pin: Option<u64>,
    ) -> Result<Option<usize>, PlanError> {
        let Some(p) = pin else {
            return self.push(ops, pair, [Gate::INERT; 2]);
        };
        let n = self.engines.len().max(1) as u64;
        self.place((p % n) as usize, pair).map(Some)
    }

    #[inline(always)]
    pub(super) fn place(&mut self, e: usize, pair: DescPair) -> Result<usize, PlanError> {
        self.check_room(e, self.m2s_per_pair)?;
        let ep = &mut self.engines[e];
        ep.pairs.push(pair);
        ep.bytes += u64::from(pair.dst_len_bytes);
        Ok(e)
    }

    /// Adds one pair after the address bound checks (source first); returns
    /// the engine index it went to, or `None` when a check dropped it.
    #[inline(always)]
    pub(super) fn push(
        &mut self,
        ops: &dyn Operands,
        pair: DescPair,
        gates: [Gate; 2],
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

    /// Adds `rows` pairs shaped as `first`, each after the one before at
    /// `step` bytes further on both sides (two's complement; the caller
    /// knows every address is in the 64-bit space): [`Spread::push`] row
    /// after row, each row counted to its engine's DIMPUSH. Its own loop,
    /// out of the word's, keeps the walk's state in registers; consecutive
    /// rows on one engine (a partition group's, docs/firmware.md "DIRECT2D
    /// expansion") are placed together ([`Spread::place_rows`]).
    #[inline(never)]
    pub(super) fn push_rows(
        &mut self,
        ops: &dyn Operands,
        first: DescPair,
        step: [u64; 2],
        rows: u64,
        gates: [Gate; 2],
    ) -> Result<(), PlanError> {
        // Rows not yet placed: (engine, first of them, how many).
        let mut batch: Option<(usize, DescPair, u64)> = None;
        let mut pair = first;
        for _ in 0..rows {
            let e = self.engine_for(ops, pair.src, pair.dst);
            if let Some(oob) = bound_check("src", gates[0], pair.src, pair.len_bytes, ops)
                .or_else(|| bound_check("dst", gates[1], pair.dst, pair.dst_len_bytes, ops))
            {
                // A dropped row ends the batch: its rows are a step apart.
                if let Some((be, bp, n)) = batch.take() {
                    self.place_rows(be, bp, step, n)?;
                }
                self.out_of_bounds.push(oob);
            } else {
                match &mut batch {
                    Some((be, _, n)) if *be == e => *n += 1,
                    _ => {
                        if let Some((be, bp, n)) = batch.replace((e, pair, 1)) {
                            self.place_rows(be, bp, step, n)?;
                        }
                    }
                }
            }
            pair.src = pair.src.wrapping_add(step[0]);
            pair.dst = pair.dst.wrapping_add(step[1]);
        }
        if let Some((be, bp, n)) = batch {
            self.place_rows(be, bp, step, n)?;
        }
        Ok(())
    }

    /// [`Spread::place`] of `n` pairs shaped as `first` a `step` apart on
    /// engine `e`, in one go, each counted to its DIMPUSH: the ring cap is
    /// checked once for all of them (the refusal names the first pair that
    /// does not fit, as pair by pair).
    fn place_rows(
        &mut self,
        e: usize,
        first: DescPair,
        step: [u64; 2],
        n: u64,
    ) -> Result<(), PlanError> {
        let (cap, m2s) = (self.cap as u64, self.m2s_per_pair);
        let have = self.descs[e];
        // +1: the semaphore write every engine ends with.
        let need = |k: u64| [have[0] + k * m2s + 1, have[1] + k + 1];
        let fits = |k: u64| {
            let [m, s] = need(k);
            m <= cap && s <= cap
        };
        if !fits(n) {
            let k = (1..=n).find(|&k| !fits(k)).unwrap_or(n);
            return Err(self.room_error(e, need(k)));
        }
        self.descs[e] = [have[0] + n * m2s, have[1] + n];
        let ep = &mut self.engines[e];
        ep.pairs.extend((0..n).map(|k| DescPair {
            src: first.src.wrapping_add(k.wrapping_mul(step[0])),
            dst: first.dst.wrapping_add(k.wrapping_mul(step[1])),
            ..first
        }));
        ep.bytes += n * u64::from(first.dst_len_bytes);
        self.rows[e] += n as u32;
        Ok(())
    }

    /// Adds each engine's micro-ops: REGWRITE for every register operand
    /// and armed gate, GENERATE, and one DIMPUSH per side built by `dims`
    /// from the rows the engine got.
    pub(super) fn finish(
        mut self,
        ops: &dyn Operands,
        addrs: [&Resolved; 2],
        extra_regs: &[RegOperand],
        gates: &[(&'static str, Gate)],
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
        let armed = gates.iter().filter(|(_, g)| g.reg.bc_enabled).count();
        let listed = ops.micro_ops();
        for (ep, rows) in self.engines.iter_mut().zip(self.rows) {
            let engine = u16::from(ep.slot);
            ep.sem_writes.reserve_exact(1);
            ep.sem_writes
                .push((ops.sem_inc_addr(sem_num), self.sem_increment));
            if !listed {
                continue;
            }
            // REGWRITEs, GENERATE and two DIMPUSHes, in one allocation.
            ep.micro_ops.reserve_exact(regs.len() + armed + 3);
            for (operand, reg, value) in regs {
                ep.micro_ops.push(MicroOp::RegWrite {
                    engine,
                    operand,
                    reg: *reg,
                    value: *value,
                });
            }
            for (operand, gate) in gates {
                if gate.reg.bc_enabled {
                    ep.micro_ops.push(MicroOp::RegWrite {
                        engine,
                        operand,
                        reg: gate.reg.bc_reg,
                        value: gate.limit(ops),
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
