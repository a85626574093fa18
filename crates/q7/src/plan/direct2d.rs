//! DIRECT2D (docs/instruction-words.md "DIRECT2D, 0xb8"): the 2-D strided
//! copy, cut into runs contiguous on both sides (docs/firmware.md
//! "DIRECT2D expansion").

use dma_abi::inst::{Direct2d, InstKind};

use super::operands::{Gate, bounds_line, resolve_addr8, shape_reg_operand};
use super::spread::Spread;
use super::transfer::transfer;
use super::{Operands, Plan, PlanError};
use crate::layout::DgeConfig;

/// One side of a 2-D pattern.
#[derive(Clone, Copy, Debug)]
struct Side {
    base: u64,
    steps: [i64; 2],
    nums: [u64; 2],
    elem: u64,
}

/// A position in one side's pattern: element `x` of row `y` (x fastest),
/// linear element `y × nums[0] + x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cursor {
    x: u64,
    y: u64,
}

impl Side {
    /// Byte address of the element at `c`.
    fn addr(&self, c: Cursor) -> Option<u64> {
        let off = (c.x as i128 * i128::from(self.steps[0])
            + c.y as i128 * i128::from(self.steps[1]))
            * i128::from(self.elem);
        u64::try_from(i128::from(self.base) + off).ok()
    }

    /// Elements from linear element `i` (at `c`) that are contiguous in
    /// memory.
    fn run(&self, c: Cursor, i: u64, total: u64) -> u64 {
        if self.steps[0] != 1 {
            return 1;
        }
        if self.steps[1] == self.nums[0] as i64 || self.nums[1] == 1 {
            return total - i; // the rows abut
        }
        self.nums[0] - c.x
    }

    /// The cursor `n` elements after `c`. A run ends within its row or at
    /// its end (the common case: no divide per run); only a run over
    /// abutting rows divides.
    fn advance(&self, c: Cursor, n: u64) -> Cursor {
        let x = c.x + n;
        if x < self.nums[0] {
            Cursor { x, y: c.y }
        } else if x == self.nums[0] {
            Cursor { x: 0, y: c.y + 1 }
        } else {
            Cursor {
                x: x % self.nums[0],
                y: c.y + x / self.nums[0],
            }
        }
    }
}

/// One run of the cut: from linear element `first`, `n` elements
/// contiguous on both sides, at `src` and `dst` (`None`: outside the
/// 64-bit address space); `row_start` when it starts a source row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    first: u64,
    n: u64,
    src: Option<u64>,
    dst: Option<u64>,
    row_start: bool,
}

/// The runs of a `total`-element copy from `src` to `dst`, each at most
/// `max_elems`, in element order (docs/firmware.md "DIRECT2D expansion").
/// Both positions are carried as (x, y) cursors.
struct Runs {
    src: Side,
    dst: Side,
    total: u64,
    max_elems: u64,
    i: u64,
    at: [Cursor; 2],
    /// Set when every run is one whole row ([`RowWalk::of`]).
    rows: Option<RowWalk>,
}

/// The cut of the common tile shape, where run `y` is row `y` of both
/// sides: rows of the same element count, contiguous on both sides, at
/// most `max_elems`, and not abutting on at least one side (rows abutting
/// on both would merge into longer runs). Carries the row addresses,
/// stepped by plain 64-bit adds — no cursor, no 128-bit multiply.
#[derive(Clone, Copy, Debug)]
struct RowWalk {
    /// Row start addresses of the next run: source, destination.
    at: [u64; 2],
    /// Bytes from one row start to the next (two's complement).
    step: [u64; 2],
}

impl RowWalk {
    /// The walk of `total` elements from `src` to `dst`, if the shape is
    /// one run per row and every row start is inside the 64-bit address
    /// space (then the wrapping adds give the exact addresses: they lie
    /// between the first and the last row's).
    fn of(src: &Side, dst: &Side, total: u64, max_elems: u64) -> Option<Self> {
        let [n0, n1] = src.nums;
        let abuts = |s: &Side| s.steps[1] == s.nums[0] as i64 || s.nums[1] == 1;
        let shape = src.steps[0] == 1
            && dst.steps[0] == 1
            && src.nums == dst.nums
            && n0 >= 1
            && n0.checked_mul(n1) == Some(total)
            && n0 <= max_elems
            && !(abuts(src) && abuts(dst));
        if !shape {
            return None;
        }
        let row_step = |s: &Side| i128::from(s.steps[1]) * i128::from(s.elem);
        let in_range = |s: &Side| {
            let last = i128::from(s.base) + i128::from(n1 - 1) * row_step(s);
            u64::try_from(last).is_ok()
        };
        (in_range(src) && in_range(dst)).then(|| RowWalk {
            at: [src.base, dst.base],
            step: [row_step(src) as u64, row_step(dst) as u64],
        })
    }
}

impl Runs {
    fn new(src: Side, dst: Side, total: u64, max_elems: u64) -> Self {
        let origin = Cursor { x: 0, y: 0 };
        Self {
            src,
            dst,
            total,
            max_elems,
            i: 0,
            at: [origin; 2],
            rows: RowWalk::of(&src, &dst, total, max_elems),
        }
    }
}

impl Iterator for Runs {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        if self.i >= self.total {
            return None;
        }
        if let Some(w) = &mut self.rows {
            let n = self.src.nums[0];
            let run = Run {
                first: self.i,
                n,
                src: Some(w.at[0]),
                dst: Some(w.at[1]),
                row_start: true,
            };
            self.i += n;
            w.at = [
                w.at[0].wrapping_add(w.step[0]),
                w.at[1].wrapping_add(w.step[1]),
            ];
            return Some(run);
        }
        let (i, [s, d]) = (self.i, self.at);
        let n = self
            .src
            .run(s, i, self.total)
            .min(self.dst.run(d, i, self.total))
            .min(self.max_elems);
        self.i += n;
        self.at = [self.src.advance(s, n), self.dst.advance(d, n)];
        Some(Run {
            first: i,
            n,
            src: self.src.addr(s),
            dst: self.dst.addr(d),
            row_start: s.x == 0,
        })
    }
}

pub(super) fn expand_direct2d(
    w: &Direct2d,
    cfg: &DgeConfig,
    ops: &dyn Operands,
    spare: Vec<super::EnginePlan>,
) -> Result<Plan, PlanError> {
    expand_direct2d_walking(w, cfg, ops, spare, true)
}

/// [`expand_direct2d`]; with `rows_fast`, a cut of one run per row
/// ([`RowWalk`]) is pushed by [`Spread::push_rows`], else run by run as
/// any other cut (the plain path it is tested against).
///
/// A plain copy — no compute op, no dtype on either side — whose sides
/// name different element sizes copies bytes: the reference's validity
/// rule is equal byte totals, Σ num × elem_size (docs/references/wiki.md
/// §C.5). True for such a word; its byte totals must match, and its
/// elements must be contiguous (element step 1) on both sides — a strided
/// copy between element sizes is refused as not modelled.
fn plain_byte_copy(w: &Direct2d) -> Result<bool, PlanError> {
    const W: &str = "DIRECT2D";
    let plain = w.compute_op == dma_abi::inst::ComputeOp::None
        && w.in_dtype.code() == 0
        && w.out_dtype.code() == 0;
    if !plain || w.src_elem_size == w.dst_elem_size || w.src_elem_size == 0 || w.dst_elem_size == 0
    {
        return Ok(false);
    }
    let bytes =
        |nums: [u16; 2], elem: u16| u64::from(nums[0]) * u64::from(nums[1]) * u64::from(elem);
    let (src_bytes, dst_bytes) = (
        bytes(w.src_num_elem, w.src_elem_size),
        bytes(w.dst_num_elem, w.dst_elem_size),
    );
    if src_bytes != dst_bytes {
        return Err(PlanError::Invalid(format!(
            "{W}: a plain copy moves src_num_elem {:?} × src_elem_size {} = {src_bytes} bytes \
             into dst_num_elem {:?} × dst_elem_size {} = {dst_bytes} bytes: the totals must match",
            w.src_num_elem, w.src_elem_size, w.dst_num_elem, w.dst_elem_size
        )));
    }
    if w.src_step_elem[0] != 1 || w.dst_step_elem[0] != 1 {
        return Err(PlanError::Unsupported(format!(
            "{W}: a plain copy between element sizes {} and {} with \
             src_step_elem[0] = {}, dst_step_elem[0] = {} (only contiguous elements, step 1, \
             are copied as bytes)",
            w.src_elem_size, w.dst_elem_size, w.src_step_elem[0], w.dst_step_elem[0]
        )));
    }
    Ok(true)
}

fn expand_direct2d_walking(
    w: &Direct2d,
    cfg: &DgeConfig,
    ops: &dyn Operands,
    spare: Vec<super::EnginePlan>,
    rows_fast: bool,
) -> Result<Plan, PlanError> {
    const W: &str = "DIRECT2D";
    shape_reg_operand(
        W,
        "src_start_addr",
        w.src_start_addr,
        ("src_num_elem", &w.src_num_elem),
        Some(("src_step_elem", w.src_step_elem[1])),
    )?;
    shape_reg_operand(
        W,
        "dst_start_addr",
        w.dst_start_addr,
        ("dst_num_elem", &w.dst_num_elem),
        Some(("dst_step_elem", w.dst_step_elem[1])),
    )?;
    let bytes_copy = plain_byte_copy(w)?;
    let (src_elem, dst_elem) = if bytes_copy {
        (1, 1)
    } else {
        (w.src_elem_size, w.dst_elem_size)
    };
    let xfer = transfer(
        W,
        w.compute_op,
        (w.in_dtype, src_elem),
        (w.out_dtype, dst_elem),
    )?;
    // A byte copy walks bytes: each side's rows are num_elem[0] ×
    // elem_size bytes, its row step scaled to bytes.
    let in_bytes = |nums: [u16; 2], steps: [i32; 2], elem: u16| {
        if bytes_copy {
            (
                [u64::from(nums[0]) * u64::from(elem), u64::from(nums[1])],
                [1, i64::from(steps[1]) * i64::from(elem)],
            )
        } else {
            (nums.map(u64::from), steps.map(i64::from))
        }
    };
    let (src_nums, src_steps) = in_bytes(w.src_num_elem, w.src_step_elem, w.src_elem_size);
    let (dst_nums, dst_steps) = in_bytes(w.dst_num_elem, w.dst_step_elem, w.dst_elem_size);
    let src_total = src_nums[0] * src_nums[1];
    let dst_total = dst_nums[0] * dst_nums[1];
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
        steps: src_steps,
        nums: src_nums,
        elem: xfer.src_elem,
    };
    let dst = Side {
        base: dst_addr.addr,
        steps: dst_steps,
        nums: dst_nums,
        elem: xfer.dst_elem,
    };
    let mut spread = Spread::new(W, cfg, w.sem_increment, spare);
    spread.set_extras(xfer.extras());
    let gates = [
        Gate::of(w.src_bound_reg, w.src_start_addr, W, "src_bound_reg")?,
        Gate::of(w.dst_bound_reg, w.dst_start_addr, W, "dst_bound_reg")?,
    ];
    let max_elems = xfer.max_elems();
    // Whole rows on both sides (the common case): one pair per row or
    // per `max_elems`, known before the cut.
    if src.steps[0] == 1 && dst.steps[0] == 1 {
        let run = src.nums[0].min(dst.nums[0]).min(max_elems).max(1);
        spread.reserve_pairs(src_total.div_ceil(run));
    }
    let runs = Runs::new(src, dst, src_total, max_elems);
    match runs.rows {
        // One run per row (the tile shape): its own loop.
        Some(walk) if rows_fast => spread.push_rows(
            ops,
            xfer.pair(walk.at[0], walk.at[1], src.nums[0]),
            walk.step,
            src.nums[1],
            gates,
        )?,
        _ => {
            for run in runs {
                let overflow = |side: &str| {
                    PlanError::Invalid(format!(
                        "{W}: the {side} address of element {} is outside the 64-bit address space",
                        run.first
                    ))
                };
                let pair = xfer.pair(
                    run.src.ok_or_else(|| overflow("source"))?,
                    run.dst.ok_or_else(|| overflow("destination"))?,
                    run.n,
                );
                if let Some(e) = spread.push(ops, pair, gates)?
                    && run.row_start
                {
                    // Whole rows: at least one (no divide for a run of one row).
                    let rows = if run.n <= src.nums[0] {
                        1
                    } else {
                        run.n / src.nums[0]
                    };
                    spread.rows[e] += rows as u32;
                }
            }
        }
    }
    let (engines, out_of_bounds) = spread.finish(
        ops,
        [&src_addr, &dst_addr],
        &[],
        &[("src_bound_reg", gates[0]), ("dst_bound_reg", gates[1])],
        (src.base, src_elem, w.semaphore),
        |rows| {
            [
                ("src", [src.nums[0] as u32, rows], src.steps),
                ("dst", [dst.nums[0] as u32, rows], dst.steps),
            ]
        },
    );
    let log = bounds_line(ops, gates, [src.base, dst.base])
        .into_iter()
        .collect();
    Ok(Plan {
        kind: InstKind::Direct2d,
        engines,
        out_of_bounds,
        index_faults: Vec::new(),
        duplicate_dst: Vec::new(),
        log,
        ring_now: true,
        elements: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::layout::DgeConfig;
    use crate::plan::test_support::*;
    use crate::plan::{MicroOp, PlanError, expand};
    use dma_abi::inst::{BoundCheckReg, ComputeOp, Dtype, InstWord};
    use soc_map::{Addr8, TableOffset};

    /// The cut as first written, one divide per coordinate: the reference
    /// the cursor walk ([`super::Runs`]) is checked against.
    fn runs_by_division(
        src: super::Side,
        dst: super::Side,
        total: u64,
        max: u64,
    ) -> Vec<super::Run> {
        let addr = |s: &super::Side, i: u64| {
            let (x, y) = (i % s.nums[0], i / s.nums[0]);
            let off = (x as i128 * i128::from(s.steps[0]) + y as i128 * i128::from(s.steps[1]))
                * i128::from(s.elem);
            u64::try_from(i128::from(s.base) + off).ok()
        };
        let run = |s: &super::Side, i: u64| {
            if s.steps[0] != 1 {
                1
            } else if s.steps[1] == s.nums[0] as i64 || s.nums[1] == 1 {
                total - i
            } else {
                s.nums[0] - i % s.nums[0]
            }
        };
        let mut out = Vec::new();
        let mut i = 0;
        while i < total {
            let n = run(&src, i).min(run(&dst, i)).min(max);
            out.push(super::Run {
                first: i,
                n,
                src: addr(&src, i),
                dst: addr(&dst, i),
                row_start: i.is_multiple_of(src.nums[0]),
            });
            i += n;
        }
        out
    }

    proptest::proptest! {
        /// The cursor walk cuts every shape exactly as the divide-per-run
        /// walk: same runs, addresses (overflow included) and row starts.
        #[test]
        fn the_cursor_walk_equals_the_divide_walk(
            src_nums in (1u64..40, 1u64..12),
            dst_x in 1u64..40,
            src_steps in (-3i64..4, -200i64..200),
            dst_steps in (-3i64..4, -200i64..200),
            elems in (1u64..5, 1u64..5),
            max in 1u64..70,
            high in proptest::bool::ANY,
        ) {
            let total = src_nums.0 * src_nums.1;
            // A destination shape of the same element count when it divides.
            let dst_x = if total % dst_x == 0 { dst_x } else { src_nums.0 };
            // Abutting rows now and then (steps[1] == nums[0]).
            let src_s1 = if src_steps.1 % 3 == 0 { src_nums.0 as i64 } else { src_steps.1 };
            let base = if high { u64::MAX - 4000 } else { 0x1_0000 };
            let src = super::Side { base, steps: [src_steps.0, src_s1], nums: [src_nums.0, src_nums.1], elem: elems.0 };
            let dst_s1 = if dst_steps.1 % 3 == 0 { dst_x as i64 } else { dst_steps.1 };
            // Unit element steps most of the time (runs longer than one).
            let unit = |s: i64| if s >= 0 { 1 } else { s };
            let src = super::Side { steps: [unit(src_steps.0), src_s1], ..src };
            let dst = super::Side { base: 0x2000, steps: [unit(dst_steps.0), dst_s1], nums: [dst_x, total / dst_x], elem: elems.1 };
            let walked: Vec<super::Run> = super::Runs::new(src, dst, total, max).collect();
            proptest::prop_assert_eq!(walked, runs_by_division(src, dst, total, max));
        }
    }
    proptest::proptest! {
        /// Shapes of whole rows on both sides (the row walk's, and those
        /// just outside it: abutting rows, rows longer than a run, row
        /// starts past the address space) cut exactly as the divide walk.
        #[test]
        fn the_row_walk_equals_the_divide_walk(
            nums in (1u64..40, 1u64..12),
            s1 in (-300i64..300, -300i64..300),
            abut in (proptest::bool::ANY, proptest::bool::ANY),
            elems in (1u64..5, 1u64..5),
            max in 1u64..70,
            bases in (0u64..3, 0u64..3),
        ) {
            let total = nums.0 * nums.1;
            let base = |k: u64| [0x1_0000, u64::MAX - 4000, 1000][k as usize];
            let side = |b: u64, s1: i64, abut: bool, elem: u64| super::Side {
                base: base(b),
                steps: [1, if abut { nums.0 as i64 } else { s1 }],
                nums: [nums.0, nums.1],
                elem,
            };
            let src = side(bases.0, s1.0, abut.0, elems.0);
            let dst = side(bases.1, s1.1, abut.1, elems.1);
            let walked: Vec<super::Run> = super::Runs::new(src, dst, total, max).collect();
            proptest::prop_assert_eq!(walked, runs_by_division(src, dst, total, max));
        }
    }

    proptest::proptest! {
        /// Rows pushed in their own loop ([`super::Spread::push_rows`])
        /// give the plan the run-by-run loop gives: engines, pairs, rows
        /// per DIMPUSH, bound-check drops and ring-cap refusals, with or
        /// without a compute op, across the SBUF's partitions and outside.
        #[test]
        fn pushed_rows_equal_the_run_loop(
            n in (1u16..64, 1u16..40),
            steps in (-3000i32..3000, -3000i32..3000),
            abut in (proptest::bool::ANY, proptest::bool::ANY),
            bases in (0u64..3, 0u64..3),
            elem in proptest::sample::select(vec![1u16, 2, 4]),
            op in proptest::sample::select(vec![ComputeOp::None, ComputeOp::Add, ComputeOp::Multiply]),
            mask in 1u16..,
            ring in proptest::sample::select(vec![4u16, 40, 4096]),
            limits in (proptest::option::of(0u32..0x10_0000), proptest::option::of(0u32..0x10_0000)),
        ) {
            let base = |k: u64| [0x1_0000, SBUF + 3 * STRIDE + 64, SBUF + 127 * STRIDE][k as usize];
            let step1 = |s: i32, abut: bool| if abut { i32::from(n.0) } else { s };
            let InstWord::Direct2d(mut w) = word(
                base(bases.0),
                [1, step1(steps.0, abut.0)],
                [n.0, n.1],
                base(bases.1),
                [1, step1(steps.1, abut.1)],
                [n.0, n.1],
                elem,
            ) else {
                unreachable!()
            };
            if op != ComputeOp::None {
                w.compute_op = op;
                w.in_dtype = Dtype::Fp32;
                w.out_dtype = Dtype::Fp32;
                w.src_elem_size = 4;
                w.dst_elem_size = 4;
            }
            // Limits in the low 1 MiB: some rows pass, some drop.
            let mut regs = Vec::new();
            if let Some(l) = limits.0 {
                w.src_bound_reg = BoundCheckReg::enabled(5);
                regs.push((5, l));
            }
            if let Some(l) = limits.1 {
                w.dst_bound_reg = BoundCheckReg::enabled(7);
                regs.push((7, l));
            }
            let o = Ops { regs, table: Vec::new(), mem: Vec::new(), xbar: false };
            let c = DgeConfig { carveout_size_descs: ring, ..cfg(mask) };
            let pushed = super::expand_direct2d_walking(&w, &c, &o, Vec::new(), true);
            let walked = super::expand_direct2d_walking(&w, &c, &o, Vec::new(), false);
            proptest::prop_assert_eq!(pushed, walked);
        }
    }

    /// The tile shape (rows abutting in the source, a partition apart in
    /// the destination) takes the row walk.
    #[test]
    fn tile_rows_take_the_row_walk() {
        let side = |base, s1, elem| super::Side {
            base,
            steps: [1, s1],
            nums: [256, 128],
            elem,
        };
        let (src, dst) = (side(0x1000_0000, 256, 2), side(SBUF, 131072, 2));
        assert!(super::RowWalk::of(&src, &dst, 256 * 128, 32768).is_some());
        // Abutting on both sides: longer runs, the cursor walk.
        assert!(super::RowWalk::of(&src, &src, 256 * 128, 32768).is_none());
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
        // With its own counts set the word is invalid (the shape register
        // supplies them); shape_register_operands_are_checked_then_refused_
        // with_the_reason covers the valid form.
        let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
        assert!(
            e.to_string()
                .contains("DIRECT2D.src_num_elem = [16, 1]: must be 0 when DIRECT2D.src_start_addr takes its shape from a shape register"),
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

    #[test]
    fn the_bound_limit_is_32_bits_unless_the_offset_is_wide() {
        // docs/firmware.md "Bound checks": REG[bc_reg] is the limit;
        // REG[bc_reg + 1] holds its high 32 bits only when the gated
        // operand is in wide-offset mode (ADDR8 OFFSET_WIDE).
        let InstWord::Direct2d(mut w) =
            word(0x1000, [1, 64], [64, 4], 0x10_0000, [1, 64], [64, 4], 1)
        else {
            unreachable!()
        };
        w.src_bound_reg = BoundCheckReg::enabled(5);
        w.dst_bound_reg = BoundCheckReg::enabled(7);
        // One byte short on both sides; the neighbouring registers are
        // something else's (non-zero).
        let neighbours = vec![(5, 0x10fe), (6, 1), (7, 0x10_00fe), (8, 1)];
        let mut o = Ops {
            regs: neighbours.clone(),
            table: vec![(2, 0x1000), (3, 0x10_0000)],
            mem: Vec::new(),
            xbar: false,
        };
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut o).unwrap();
        assert_eq!(p.data_pairs(), 0);
        assert_eq!(p.out_of_bounds[0].limit, 0x10fe, "REG[6] is not read");
        let e = &p.engines[0];
        assert!(e.micro_ops.contains(&MicroOp::RegWrite {
            engine: 0,
            operand: "src_bound_reg",
            reg: 5,
            value: 0x10fe,
        }));
        // Destination alone checked: its limit is 32 bits too.
        w.src_bound_reg = BoundCheckReg::INERT;
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut o).unwrap();
        assert_eq!(p.out_of_bounds.len(), 1);
        assert_eq!(
            (p.out_of_bounds[0].side, p.out_of_bounds[0].limit),
            ("dst", 0x10_00fe)
        );
        // Wide-offset table operands on both sides: the pair is the limit,
        // 0x1_0000_10fe and 0x1_0010_00fe, and the run passes.
        w.src_bound_reg = BoundCheckReg::enabled(5);
        let wide = |entry| Addr8::Table {
            entry,
            offset: TableOffset::Immediate {
                value: 0,
                wide: true,
            },
            shape_reg: false,
        };
        w.src_start_addr = wide(2);
        w.dst_start_addr = wide(3);
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut o).unwrap();
        assert_eq!(p.data_pairs(), 1);
        assert!(p.out_of_bounds.is_empty());
        assert!(p.engines[0].micro_ops.contains(&MicroOp::RegWrite {
            engine: 0,
            operand: "dst_bound_reg",
            reg: 7,
            value: 0x1_0010_00fe,
        }));
        // A narrow table offset on the source: back to 32 bits there.
        w.src_start_addr = Addr8::Table {
            entry: 2,
            offset: TableOffset::Immediate {
                value: 0,
                wide: false,
            },
            shape_reg: false,
        };
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut o).unwrap();
        assert_eq!(p.out_of_bounds.len(), 1);
        assert_eq!(p.out_of_bounds[0].side, "src");
        assert_eq!(p.out_of_bounds[0].limit, 0x10fe);
    }

    #[test]
    fn shape_register_operands_are_checked_then_refused_with_the_reason() {
        // docs/firmware.md "Not modelled": markers 0x40/0xC0/0x60/0x68 take
        // the shape from a DGE shape register. The word's own counts and
        // row step must then be 0 (the validity rule); a valid word is
        // refused because no source says which shape register it selects
        // or how one is loaded.
        let shaped = [
            Addr8::Immediate {
                addr: 0x1000,
                shape_reg: true,
            },
            Addr8::Register {
                reg: 4,
                shape_reg: true,
            },
            Addr8::Table {
                entry: 1,
                offset: TableOffset::Immediate {
                    value: 0,
                    wide: false,
                },
                shape_reg: true,
            },
            Addr8::Table {
                entry: 1,
                offset: TableOffset::Register {
                    reg: 3,
                    wide: false,
                },
                shape_reg: true,
            },
        ];
        for (a, marker) in shaped.into_iter().zip(["0x40", "0xc0", "0x60", "0x68"]) {
            let InstWord::Direct2d(mut w) = word(0, [1, 0], [0, 0], 0x9000, [1, 16], [16, 1], 4)
            else {
                unreachable!()
            };
            w.src_start_addr = a;
            let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
            assert!(matches!(e, PlanError::Unsupported(_)), "{marker}: {e}");
            let m = e.to_string();
            assert!(
                m.contains(&format!("DIRECT2D.src_start_addr: ADDR8 marker {marker}"))
                    && m.contains("shape register"),
                "{m}"
            );
            // The counts the register would supply must be 0.
            w.src_num_elem = [16, 1];
            let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
            assert!(matches!(e, PlanError::Invalid(_)), "{e}");
            assert!(
                e.to_string().contains("DIRECT2D.src_num_elem = [16, 1]"),
                "{e}"
            );
            w.src_num_elem = [0, 0];
            w.src_step_elem = [1, 16];
            let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
            assert!(
                e.to_string().contains("DIRECT2D.src_step_elem[1] = 16"),
                "{e}"
            );
        }
        // The destination side likewise.
        let InstWord::Direct2d(mut w) = word(0x1000, [1, 16], [16, 1], 0, [1, 0], [0, 0], 4) else {
            unreachable!()
        };
        w.dst_start_addr = Addr8::Immediate {
            addr: 0x9000,
            shape_reg: true,
        };
        let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
        assert!(
            e.to_string()
                .contains("DIRECT2D.dst_start_addr: ADDR8 marker 0x40"),
            "{e}"
        );
    }

    #[test]
    fn the_bounds_line_reads_like_the_firmware_trace() {
        // `bounds:(%1d 0x%llx<=0x%llx, %1d 0x%llx<=0x%llx)`: src then dst,
        // {enabled, effective address <= limit}, for a word with a gate.
        let InstWord::Direct2d(mut w) =
            word(0x1000, [1, 64], [64, 4], 0x10_0000, [1, 64], [64, 4], 1)
        else {
            unreachable!()
        };
        let mut o = Ops {
            regs: vec![(5, 0x10fe), (6, 1)],
            table: Vec::new(),
            mem: Vec::new(),
            xbar: false,
        };
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut o).unwrap();
        assert!(p.log.is_empty(), "no gate, no line: {:?}", p.log);
        w.src_bound_reg = BoundCheckReg::enabled(5);
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut o).unwrap();
        assert_eq!(p.log, vec!["bounds:(1 0x1000<=0x10fe, 0 0x100000<=0x0)"]);
    }
}
