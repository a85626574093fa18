//! Queue control through the registers: Q_CFG enables, the engine-level
//! PREF_QUEUE_EN, and each Q_SW_CTRL reset bit (docs/descriptors.md
//! "Queue control"; docs/references/wiki.md §B.2, §B.5, §B.7; docs/references/driver.md §2.4, §2.9).

#![allow(clippy::unwrap_used)]

mod common;

use common::{F, RING_LEN, Rig, WHOLE, is_done, is_start, ptr};
use udma::{Dir, EventKind, UnitBlock};

const EN: u32 = 0x0303_0000;
const PREF_ONLY: u32 = 0x0301_0000;
const NONE: u32 = 0x0300_0000;
const SRC: u64 = 0x1000_0000;
const DST: u64 = 0x2000_0000;

/// Q_SW_CTRL bits (P9.1 §4.1).
const RST_DMB: u32 = 0x1;
const RST_TAIL_PTR: u32 = 0x2;
const RST_HEAD_PTR: u32 = 0x4;
const RST_CURRENT_PTR: u32 = 0x8;
const RST_BIT4: u32 = 0x10;
const RST_Q: u32 = 0x100;

fn fill(rig: &mut Rig, addr: u64, len: usize, seed: u8) {
    let v: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(7) ^ seed).collect();
    rig.mem.put(addr, &v);
}

fn used(rig: &Rig, dir: Dir, q: u8) -> u32 {
    rig.rq(dir, q, "Q_STATUS") & 0x1FF_FFFF
}

fn tx_pkts(rig: &Rig, q: u8) -> u32 {
    rig.rq(Dir::M2s, q, "Q_TX_PKT")
}

// ------------------------------------------------------------- Q_CFG enables

/// The audit's qcfg.trace: with EN_SCHEDULING (M2S) or EN_STREAM (S2M)
/// clear the packet is prefetched but does not move; it moves once both
/// are set.
#[test]
fn q_cfg_enables_gate_the_data_path() {
    let mut rig = Rig::new(0);
    rig.setup(0, PREF_ONLY, PREF_ONLY);
    fill(&mut rig, SRC, 4096, 1);
    rig.put_copy(0, 0, 4096, SRC, DST, WHOLE);
    rig.doorbells(0, 1);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 0);
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), ptr(1, 1), "prefetched");
    assert_eq!(rig.rq(Dir::S2m, 0, "RDRHP"), ptr(1, 1), "prefetched");
    rig.wq(Dir::S2m, 0, "Q_CFG", EN);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 0, "M2S EN_SCHEDULING still clear");
    rig.wq(Dir::M2s, 0, "Q_CFG", EN);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 1);
    assert_eq!(rig.mem.get(DST, 4096), rig.mem.get(SRC, 4096));
}

/// With EN_PREF clear nothing is prefetched: the head stays at 0.
#[test]
fn q_cfg_en_pref_clear_holds_the_head() {
    let mut rig = Rig::new(0);
    rig.setup(0, 0x0302_0000, EN);
    rig.put_copy(0, 0, 64, SRC, DST, WHOLE);
    rig.doorbells(0, 1);
    rig.run();
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), ptr(0, 1));
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRTP"), ptr(1, 1));
    assert_eq!(used(&rig, Dir::M2s, 0), 1);
    assert_eq!(tx_pkts(&rig, 0), 0);
    rig.wq(Dir::M2s, 0, "Q_CFG", EN);
    rig.run();
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), ptr(1, 1));
    assert_eq!(tx_pkts(&rig, 0), 1);
}

/// Clearing EN_SCHEDULING (the driver's pause, docs/references/driver.md §2.9 step 4)
/// stops a running queue: the packet in the data path finishes, no new
/// packet starts; setting it again resumes in order.
#[test]
fn clearing_en_scheduling_stops_a_running_queue() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    for i in 0..4u32 {
        let off = u64::from(i) * 0x1000;
        fill(&mut rig, SRC + off, 4096, i as u8);
        rig.put_copy(0, i, 4096, SRC + off, DST + off, WHOLE);
    }
    rig.doorbells(0, 4);
    assert!(rig.run_until_event(is_start));
    rig.wq(Dir::M2s, 0, "Q_CFG", PREF_ONLY);
    rig.run();
    assert_eq!(rig.count(is_start), 1);
    assert_eq!(rig.count(is_done), 1);
    assert_eq!(tx_pkts(&rig, 0), 1);
    assert_eq!(used(&rig, Dir::M2s, 0), 3, "three descriptors still posted");
    assert_eq!(rig.mem.get(DST + 0x1000, 4), [0; 4], "packet 2 not moved");
    rig.wq(Dir::M2s, 0, "Q_CFG", EN);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 4);
    assert_eq!(rig.mem.get(DST, 0x4000), rig.mem.get(SRC, 0x4000));
}

/// Clearing S2M EN_STREAM stops the queue as well (a packet needs both).
#[test]
fn clearing_en_stream_stops_a_running_queue() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    for i in 0..3u32 {
        let off = u64::from(i) * 0x1000;
        rig.put_copy(0, i, 4096, SRC + off, DST + off, WHOLE);
    }
    rig.doorbells(0, 3);
    assert!(rig.run_until_event(is_start));
    rig.wq(Dir::S2m, 0, "Q_CFG", PREF_ONLY);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 1);
    rig.wq(Dir::S2m, 0, "Q_CFG", EN);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 3);
}

/// Clearing EN_PREF on a running queue stops prefetch at the next burst:
/// what is prefetched still runs, the rest waits at the head.
#[test]
fn clearing_en_pref_stops_prefetch_of_a_running_queue() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    for i in 0..20u32 {
        rig.put_copy(0, i, 64, SRC, DST + u64::from(i) * 64, WHOLE);
    }
    rig.doorbells(0, 20);
    assert!(rig.run_until_event(|k| matches!(k, EventKind::Prefetch { dir: Dir::M2s, .. })));
    rig.wq(Dir::M2s, 0, "Q_CFG", 0x0302_0000);
    rig.run();
    let head = rig.rq(Dir::M2s, 0, "TDRHP") & 0xFF_FFFF;
    assert!(head < 20, "prefetch stopped at {head}");
    assert_eq!(tx_pkts(&rig, 0), head);
    assert_eq!(used(&rig, Dir::M2s, 0), 20 - head);
    rig.wq(Dir::M2s, 0, "Q_CFG", EN);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 20);
}

// ------------------------------------------------------------- PREF_QUEUE_EN

/// The audit's prefq.trace: PREF_QUEUE_EN bit q clear stops queue q's
/// prefetch (docs/references/wiki.md §B.2), and only queue q's; setting it resumes.
#[test]
fn pref_queue_en_bit_clear_stops_that_queue_prefetch() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    rig.setup(1, EN, EN);
    rig.w(UnitBlock::M2s, "PREF_QUEUE_EN", 0xFFFE);
    fill(&mut rig, SRC, 4096, 3);
    rig.put_copy(0, 0, 4096, SRC, DST, WHOLE);
    rig.put_copy(1, 0, 4096, SRC, DST + 0x1000, WHOLE);
    rig.doorbells(0, 1);
    rig.doorbells(1, 1);
    rig.run();
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), 0x4000_0000);
    assert_eq!(used(&rig, Dir::M2s, 0), 1);
    assert_eq!(tx_pkts(&rig, 0), 0);
    assert_eq!(
        rig.rq(Dir::M2s, 1, "TDRHP"),
        ptr(1, 1),
        "queue 1 unaffected"
    );
    assert_eq!(tx_pkts(&rig, 1), 1);
    rig.w(UnitBlock::M2s, "PREF_QUEUE_EN", 0xFFFF);
    rig.run();
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), ptr(1, 1));
    assert_eq!(tx_pkts(&rig, 0), 1);
    assert_eq!(rig.mem.get(DST, 4096), rig.mem.get(SRC, 4096));
}

/// Clearing the bit of a running queue stops further bursts; a burst
/// already issued lands.
#[test]
fn pref_queue_en_clear_stops_a_running_queue_prefetch() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    for i in 0..24u32 {
        rig.put_copy(0, i, 64, SRC, DST + u64::from(i) * 64, WHOLE);
    }
    rig.doorbells(0, 24);
    assert!(rig.run_until_event(|k| matches!(k, EventKind::Prefetch { dir: Dir::M2s, .. })));
    rig.w(UnitBlock::M2s, "PREF_QUEUE_EN", 0);
    rig.run();
    let head = rig.rq(Dir::M2s, 0, "TDRHP") & 0xFF_FFFF;
    assert!(
        head <= 16,
        "at most the burst in flight landed, head {head}"
    );
    assert_eq!(tx_pkts(&rig, 0), head);
    rig.w(UnitBlock::M2s, "PREF_QUEUE_EN", 1);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 24);
}

// ------------------------------------------------------------- Q_SW_CTRL

/// RST_TAIL_PTR: the tail goes to 0 with ring id 1; descriptors posted but
/// not yet prefetched are withdrawn (head == tail: no work).
#[test]
fn rst_tail_ptr_resets_the_tail_and_withdraws_unfetched_descriptors() {
    for dir in [Dir::M2s, Dir::S2m] {
        let mut rig = Rig::new(0);
        rig.setup(0, NONE, NONE);
        for i in 0..3 {
            rig.put_copy(0, i, 64, SRC, DST, WHOLE);
        }
        rig.doorbells(0, 3);
        rig.run();
        let tail = if dir == Dir::M2s { "TDRTP" } else { "RDRTP" };
        assert_eq!(rig.rq(dir, 0, tail), ptr(3, 1));
        assert_eq!(used(&rig, dir, 0), 3);
        rig.wq(dir, 0, "Q_SW_CTRL", RST_TAIL_PTR);
        assert_eq!(rig.rq(dir, 0, tail), ptr(0, 1), "{dir:?}");
        assert_eq!(used(&rig, dir, 0), 0, "{dir:?}");
        rig.wq(Dir::M2s, 0, "Q_CFG", EN);
        rig.wq(Dir::S2m, 0, "Q_CFG", EN);
        rig.run();
        assert_eq!(tx_pkts(&rig, 0), 0, "{dir:?}: withdrawn, nothing moves");
        // The other direction's tail is untouched.
        let other = if dir == Dir::M2s { Dir::S2m } else { Dir::M2s };
        let other_tail = if dir == Dir::M2s { "RDRTP" } else { "TDRTP" };
        assert_eq!(rig.rq(other, 0, other_tail), ptr(3, 1));
    }
}

/// RST_TAIL_PTR | RST_HEAD_PTR restarts an idle ring at index 0.
#[test]
fn rst_tail_and_head_restart_the_ring_at_zero() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    for i in 0..5 {
        rig.put_copy(0, i, 64, SRC, DST, WHOLE);
    }
    rig.doorbells(0, 5);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 5);
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), ptr(5, 1));
    for dir in [Dir::M2s, Dir::S2m] {
        rig.wq(dir, 0, "Q_SW_CTRL", RST_TAIL_PTR | RST_HEAD_PTR);
    }
    for (dir, h, t) in [(Dir::M2s, "TDRHP", "TDRTP"), (Dir::S2m, "RDRHP", "RDRTP")] {
        assert_eq!(rig.rq(dir, 0, h), ptr(0, 1));
        assert_eq!(rig.rq(dir, 0, t), ptr(0, 1));
        assert_eq!(used(&rig, dir, 0), 0);
    }
    fill(&mut rig, SRC + 0x8000, 256, 9);
    rig.put_copy(0, 0, 256, SRC + 0x8000, DST + 0x8000, WHOLE);
    rig.doorbells(0, 1);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 6);
    assert_eq!(
        rig.mem.get(DST + 0x8000, 256),
        rig.mem.get(SRC + 0x8000, 256)
    );
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), ptr(1, 1));
}

/// RST_HEAD_PTR: the head goes to 0 with ring id 1, the prefetched (not
/// started) descriptors are dropped, and prefetch starts again from index
/// 0 up to the tail — so rewritten descriptors take effect.
#[test]
fn rst_head_ptr_refetches_from_index_zero() {
    for dir in [Dir::M2s, Dir::S2m] {
        let mut rig = Rig::new(0);
        rig.setup(0, PREF_ONLY, PREF_ONLY);
        fill(&mut rig, SRC, 0x300, 5);
        for i in 0..3u32 {
            let off = u64::from(i) * 0x100;
            rig.put_copy(0, i, 0x100, SRC + off, DST + off, WHOLE);
        }
        rig.doorbells(0, 3);
        rig.run();
        let head = if dir == Dir::M2s { "TDRHP" } else { "RDRHP" };
        assert_eq!(rig.rq(dir, 0, head), ptr(3, 1));
        // Rewrite descriptor 1 of this direction, then reset the head.
        match dir {
            Dir::M2s => rig.put_desc(
                Dir::M2s,
                0,
                1,
                common::word0(0x100, WHOLE),
                dma_abi::DEFAULT_COPY_WORD1,
                SRC + 0x200,
            ),
            Dir::S2m => rig.put_desc(
                Dir::S2m,
                0,
                1,
                common::word0(0x100, common::RX),
                0,
                DST + 0x800,
            ),
        }
        rig.wq(dir, 0, "Q_SW_CTRL", RST_HEAD_PTR);
        assert_eq!(rig.rq(dir, 0, head), ptr(0, 1), "{dir:?}: head reset");
        assert_eq!(used(&rig, dir, 0), 3, "{dir:?}: still posted");
        rig.run();
        assert_eq!(
            rig.rq(dir, 0, head),
            ptr(3, 1),
            "{dir:?}: re-fetched to the tail"
        );
        rig.wq(Dir::M2s, 0, "Q_CFG", EN);
        rig.wq(Dir::S2m, 0, "Q_CFG", EN);
        rig.run();
        assert_eq!(tx_pkts(&rig, 0), 3, "{dir:?}");
        assert_eq!(used(&rig, dir, 0), 0, "{dir:?}");
        match dir {
            Dir::M2s => assert_eq!(
                rig.mem.get(DST + 0x100, 0x100),
                rig.mem.get(SRC + 0x200, 0x100),
                "the rewritten source was read"
            ),
            Dir::S2m => assert_eq!(
                rig.mem.get(DST + 0x800, 0x100),
                rig.mem.get(SRC + 0x100, 0x100),
                "the rewritten destination was written"
            ),
        }
    }
}

/// RST_CURRENT_PTR: TDCP / RDCP go to 0; head and tail stay.
#[test]
fn rst_current_ptr_clears_only_the_current_pointer() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    for i in 0..3 {
        rig.put_copy(0, i, 64, SRC, DST, WHOLE);
    }
    rig.doorbells(0, 3);
    rig.run();
    assert_eq!(rig.rq(Dir::M2s, 0, "TDCP"), 2);
    assert_eq!(rig.rq(Dir::S2m, 0, "RDCP"), 2);
    for (dir, cp, h, t) in [
        (Dir::M2s, "TDCP", "TDRHP", "TDRTP"),
        (Dir::S2m, "RDCP", "RDRHP", "RDRTP"),
    ] {
        rig.wq(dir, 0, "Q_SW_CTRL", RST_CURRENT_PTR);
        assert_eq!(rig.rq(dir, 0, cp), 0, "{dir:?}");
        assert_eq!(rig.rq(dir, 0, h), ptr(3, 1), "{dir:?}");
        assert_eq!(rig.rq(dir, 0, t), ptr(3, 1), "{dir:?}");
    }
}

/// RST_DMB (M2S): a packet held by its DMB (Q_STATUS.Q_DMB set, waiting
/// for the queue's earlier transfers) is released: Q_DMB clears and it
/// starts at once.
#[test]
fn rst_dmb_releases_a_packet_held_by_its_barrier() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    // DMB pauses the queue only with RLIMIT_MASK.INTERNAL_PAUSE_DMB clear.
    rig.wq(Dir::M2s, 0, "RLIMIT_MASK", 0x3);
    fill(&mut rig, SRC, 0x1_0000, 2);
    rig.put_copy(0, 0, 0xF000, SRC, DST, WHOLE);
    let dmb = F { dmb: true, ..WHOLE };
    rig.put_copy(0, 1, 64, SRC + 0xF000, DST + 0xF000, dmb);
    rig.doorbells(0, 2);
    // Run until the DMB packet is held.
    let mut held = false;
    for _ in 0..10_000 {
        if rig.rq(Dir::M2s, 0, "Q_STATUS") & (1 << 30) != 0 {
            held = true;
            break;
        }
        assert!(rig.step_one(), "went idle before the barrier held");
    }
    assert!(held);
    assert_eq!(rig.count(is_start), 1);
    let first_done_at = rig
        .events
        .iter()
        .find_map(|e| match e.kind {
            EventKind::PacketStart { done_at, .. } => Some(done_at),
            _ => None,
        })
        .unwrap();
    assert!(rig.now < first_done_at);
    rig.wq(Dir::M2s, 0, "Q_SW_CTRL", RST_DMB);
    assert_eq!(
        rig.rq(Dir::M2s, 0, "Q_STATUS") & (1 << 30),
        0,
        "Q_DMB cleared"
    );
    rig.run();
    let starts: Vec<u64> = rig
        .events
        .iter()
        .filter(|e| is_start(&e.kind))
        .map(|e| e.cycle)
        .collect();
    assert_eq!(starts.len(), 2);
    assert!(
        starts[1] < first_done_at,
        "released packet started at {} before the first landed at {first_done_at}",
        starts[1]
    );
    assert_eq!(tx_pkts(&rig, 0), 2);
    assert_eq!(rig.mem.get(DST, 0xF040), rig.mem.get(SRC, 0xF040));
}

/// Without RST_DMB the same packet waits for the first to land (the
/// baseline of the test above).
#[test]
fn dmb_holds_until_the_earlier_transfer_lands() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    rig.wq(Dir::M2s, 0, "RLIMIT_MASK", 0x3);
    rig.put_copy(0, 0, 0xF000, SRC, DST, WHOLE);
    rig.put_copy(0, 1, 64, SRC, DST + 0xF000, F { dmb: true, ..WHOLE });
    rig.doorbells(0, 2);
    rig.run();
    let starts: Vec<(u64, u64)> = rig
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::PacketStart { done_at, .. } => Some((e.cycle, done_at)),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 2);
    assert!(starts[1].0 >= starts[0].1);
}

/// Bit 4 (M2S RST_DATA_TAIL_PTR, S2M RST_PREFETCH): the prefetched
/// descriptors that have not started are discarded and the head rewinds to
/// the first of them; they are fetched again, rewritten contents included.
#[test]
fn bit4_rewinds_the_prefetch_to_the_first_unstarted_descriptor() {
    for dir in [Dir::M2s, Dir::S2m] {
        let mut rig = Rig::new(0);
        rig.setup(0, EN, EN);
        fill(&mut rig, SRC, 0x400, 7);
        // Packet 0 runs now; packets 1 and 2 are prefetched while the
        // queue is paused.
        rig.put_copy(0, 0, 0x100, SRC, DST, WHOLE);
        rig.doorbells(0, 1);
        rig.run();
        assert_eq!(tx_pkts(&rig, 0), 1);
        rig.wq(Dir::M2s, 0, "Q_CFG", PREF_ONLY);
        for i in 1..3u32 {
            let off = u64::from(i) * 0x100;
            rig.put_copy(0, i, 0x100, SRC + off, DST + off, WHOLE);
        }
        rig.doorbells(0, 2);
        rig.run();
        let head = if dir == Dir::M2s { "TDRHP" } else { "RDRHP" };
        assert_eq!(rig.rq(dir, 0, head), ptr(3, 1));
        match dir {
            Dir::M2s => rig.put_desc(
                Dir::M2s,
                0,
                2,
                common::word0(0x100, WHOLE),
                dma_abi::DEFAULT_COPY_WORD1,
                SRC + 0x300,
            ),
            Dir::S2m => rig.put_desc(
                Dir::S2m,
                0,
                2,
                common::word0(0x100, common::RX),
                0,
                DST + 0x800,
            ),
        }
        rig.wq(dir, 0, "Q_SW_CTRL", RST_BIT4);
        assert_eq!(
            rig.rq(dir, 0, head),
            ptr(1, 1),
            "{dir:?}: rewound to the first unstarted"
        );
        assert_eq!(used(&rig, dir, 0), 2, "{dir:?}");
        rig.run();
        assert_eq!(rig.rq(dir, 0, head), ptr(3, 1), "{dir:?}: fetched again");
        rig.wq(Dir::M2s, 0, "Q_CFG", EN);
        rig.run();
        assert_eq!(tx_pkts(&rig, 0), 3, "{dir:?}");
        match dir {
            Dir::M2s => assert_eq!(
                rig.mem.get(DST + 0x200, 0x100),
                rig.mem.get(SRC + 0x300, 0x100)
            ),
            Dir::S2m => assert_eq!(
                rig.mem.get(DST + 0x800, 0x100),
                rig.mem.get(SRC + 0x200, 0x100)
            ),
        }
    }
}

/// The rewind crosses the ring's wrap: the ring id goes back with it.
#[test]
fn bit4_rewind_across_the_wrap_restores_the_ring_id() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    let n = RING_LEN - 1;
    for i in 0..n {
        rig.put_copy(0, i, 16, SRC, DST, WHOLE);
    }
    rig.doorbells(0, n);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), n);
    rig.wq(Dir::M2s, 0, "Q_CFG", PREF_ONLY);
    // Slots 63, 0 and 1: the second pass carries ring id 2.
    rig.put_copy(0, n, 16, SRC, DST, WHOLE);
    for i in 0..2 {
        rig.put_copy(
            0,
            i,
            16,
            SRC,
            DST,
            F {
                ring_id: 2,
                ..WHOLE
            },
        );
    }
    // S2M descriptors of the second pass carry ring id 2 too.
    for i in 0..2 {
        rig.put_desc(
            Dir::S2m,
            0,
            i,
            common::word0(
                16,
                F {
                    ring_id: 2,
                    ..common::RX
                },
            ),
            0,
            DST,
        );
    }
    rig.doorbells(0, 3);
    rig.run();
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), ptr(2, 2));
    rig.wq(Dir::M2s, 0, "Q_SW_CTRL", RST_BIT4);
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), ptr(n, 1));
    rig.run();
    assert_eq!(rig.rq(Dir::M2s, 0, "TDRHP"), ptr(2, 2));
    rig.wq(Dir::M2s, 0, "Q_CFG", EN);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), n + 3);
    assert!(rig.faults().is_empty(), "{:?}", rig.faults());
}

/// RST_Q: every pointer to 0 with ring id 1 and the queue emptied.
#[test]
fn rst_q_resets_every_pointer() {
    let mut rig = Rig::new(0);
    rig.setup(0, PREF_ONLY, PREF_ONLY);
    for i in 0..3 {
        rig.put_copy(0, i, 64, SRC, DST, WHOLE);
    }
    rig.doorbells(0, 3);
    rig.run();
    for (dir, regs) in [
        (Dir::M2s, ["TDRHP", "TDRTP", "TCRHP"]),
        (Dir::S2m, ["RDRHP", "RDRTP", "RCRHP"]),
    ] {
        rig.wq(dir, 0, "Q_SW_CTRL", RST_Q);
        for r in regs {
            assert_eq!(rig.rq(dir, 0, r), ptr(0, 1), "{dir:?} {r}");
        }
        assert_eq!(used(&rig, dir, 0), 0);
    }
    rig.wq(Dir::M2s, 0, "Q_CFG", EN);
    rig.wq(Dir::S2m, 0, "Q_CFG", EN);
    rig.run();
    assert_eq!(tx_pkts(&rig, 0), 0);
}

/// Ring bases at the top of the 64-bit space (software may write any
/// base): the ring-end check and the descriptor fetch wrap no sum — each
/// doorbell warns about its ring, and the fetch that cannot reach it is a
/// PREF_AXI_RESPONSE fault, state, not a panic (docs/descriptors.md
/// "Queue control").
#[test]
fn ring_bases_at_the_top_of_the_address_space_fault_without_overflow() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    for (dir, lo, hi) in [
        (Dir::M2s, "TDRBP_LOW", "TDRBP_HIGH"),
        (Dir::S2m, "RDRBP_LOW", "RDRBP_HIGH"),
    ] {
        rig.wq(dir, 0, lo, 0xFFFF_FF00);
        rig.wq(dir, 0, hi, 0xFFFF_FFFF);
    }
    rig.doorbells(0, RING_LEN - 16);
    rig.run();
    let warnings = rig
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::RingWarning { .. }))
        .count();
    assert_eq!(warnings, 2, "one per direction's doorbell");
    let faults = rig.faults();
    for group in ["SEC_A", "SEC_B"] {
        let cause = format!("{group}_INT_CAUSE.PREF_AXI_RESPONSE");
        assert!(faults.contains(&cause), "{cause}: {faults:?}");
    }
    assert_eq!(tx_pkts(&rig, 0), 0);
}

/// A completion ring whose first entry ends at the top of the 64-bit
/// space: its write is a COMP_AXI_RESPONSE fault of the S2M direction,
/// state, and the packet's data still moved.
#[test]
fn a_completion_ring_at_the_top_of_the_address_space_faults_without_overflow() {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    rig.wq(Dir::S2m, 0, "RCRBP_LOW", 0xFFFF_FFF0);
    rig.wq(Dir::S2m, 0, "RCRBP_HIGH", 0xFFFF_FFFF);
    rig.wq(Dir::S2m, 0, "COMP_CFG", 1);
    for i in 0..2 {
        rig.put_copy(0, i, 64, SRC, DST, WHOLE);
    }
    rig.doorbells(0, 2);
    rig.run();
    let faults = rig.faults();
    assert!(
        faults.contains(&"SEC_B_INT_CAUSE.COMP_AXI_RESPONSE".to_string()),
        "{faults:?}"
    );
    assert_eq!(rig.mem.get(DST, 4), rig.mem.get(SRC, 4));
}
