//! The race detector on random correctly-synchronised firmware traces
//! (docs/races.md, issue 15 "No false positives"): a chain of DIRECT2D
//! words on random cores, each copying its producer's buffer on, each
//! issued after a `wait` on its producer's completion semaphore, reports no
//! race; the same chain with one of those waits removed reports the race
//! between the producer's writes and the consumer's reads.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use soc::Device;
use soc::exec::{TraceFiles, run_source};

struct NoFiles;

impl TraceFiles for NoFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!("no files ({path})")))
    }
    fn write(&mut self, path: &str, _data: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(format!("no files ({path})")))
    }
}

/// Buffer `i` of the chain: in HBM, or in tpb0's SBUF partition 0.
fn buffer(i: usize, in_sbuf: bool) -> u64 {
    if in_sbuf {
        0x20_0000_1000 + i as u64 * 0x1000
    } else {
        0x2000_0000 + i as u64 * 0x1000
    }
}

/// The trace: word `k` (on core `cores[k]`) copies buffer `k` to buffer
/// `k + 1`, 256 bytes; before word `k + 1` the trace waits for word `k`'s
/// completion semaphore unless `k == skip`.
fn chain(cores: &[u8], sbuf: &[bool], skip: Option<usize>) -> String {
    let mut t = String::new();
    for c in 0..4 {
        t.push_str(&format!(
            "write32 tpb{c}.q7_local_reg.memcopy_carveout_cfg 0x00400000\n\
             write32 tpb{c}.q7_local_reg.memcopy_dma_cfg 0x00010001\n"
        ));
    }
    t.push_str(&format!(
        "fill {:#x} len=256 pattern=incr8\n",
        buffer(0, sbuf[0])
    ));
    for (k, &core) in cores.iter().enumerate() {
        let (src, dst) = (buffer(k, sbuf[k]), buffer(k + 1, sbuf[k + 1]));
        let sem = k + 1;
        t.push_str(&format!(
            "inst tpb{core} DIRECT2D semaphore={sem} sem_increment=1 src_start_addr=imm:{src:#x} \
             src_step_elem=[1,256] src_num_elem=[256,1] src_elem_size=1 dst_start_addr=imm:{dst:#x} \
             dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=1\n"
        ));
        if skip != Some(k) {
            t.push_str(&format!(
                "wait tpb{core}.sem.read[{sem}] == 1 timeout=100000\n"
            ));
        }
    }
    t.push_str("run\n");
    t
}

fn races(source: &str) -> Vec<soc::RaceReport> {
    let mut dev = Device::trn2().unwrap();
    dev.detect_races();
    let report = run_source(&mut dev, source, "chain.trace", &mut NoFiles).unwrap();
    assert_eq!(report.exit_code(), 0, "{source}\n{}", report.to_text());
    dev.race_summary().unwrap().races
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn synchronised_chains_report_no_race_and_one_missing_wait_reports_it(
        cores in prop::collection::vec(0u8..4, 2..5),
        sbuf in prop::collection::vec(any::<bool>(), 5),
        skip_at in any::<prop::sample::Index>(),
    ) {
        let clean = races(&chain(&cores, &sbuf, None));
        prop_assert!(clean.is_empty(), "{:#?}", clean);
        // Remove the wait between word k and word k + 1.
        let k = skip_at.index(cores.len() - 1);
        let racy = races(&chain(&cores, &sbuf, Some(k)));
        prop_assert!(!racy.is_empty(), "no race with the wait after word {k} removed");
        let dst = buffer(k + 1, sbuf[k + 1]);
        prop_assert!(
            racy.iter().any(|r| r.kind == "read/write"
                && r.addr.is_some_and(|a| a.0 >= dst && a.0 < dst + 256)),
            "{:#?}", racy
        );
    }
}

/// A `wait` on a semaphore that only a word stuck behind a deadlocked
/// word would write: the failed wait keeps a wait-for graph in which the
/// host's wait is deadlocked too.
#[test]
fn a_failed_wait_keeps_a_wait_for_graph() {
    let mut t = String::from(
        "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x00400000\n\
         write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x00010001\n",
    );
    let copy = "src_start_addr=imm:0x20000000 src_step_elem=[1,256] src_num_elem=[256,1] \
                src_elem_size=1 dst_start_addr=imm:0x20100000 dst_step_elem=[1,256] \
                dst_num_elem=[256,1] dst_elem_size=1";
    t.push_str(&format!(
        "inst tpb0 DIRECT2D events.wait_mode=WAIT_FOR_SEM_GE_IMM events.wait_idx=6 \
         events.semaphore_value=1 semaphore=2 sem_increment=1 {copy}\n\
         inst tpb0 DIRECT2D semaphore=3 sem_increment=1 {copy}\n\
         wait tpb0.sem.read[3] == 1 timeout=3000\n"
    ));
    let mut dev = Device::trn2().unwrap();
    dev.detect_races();
    let report = run_source(&mut dev, &t, "w.trace", &mut NoFiles).unwrap();
    assert_eq!(report.exit_code(), 1, "the wait fails");
    let s = dev.race_summary().unwrap();
    let g = &s.wait_graphs[0];
    assert!(
        g.when.contains("trace line 5 wait failed"),
        "{}",
        g.to_text()
    );
    assert!(g.deadlock, "{}", g.to_text());
    let host = g.waits.iter().find(|w| w.waiter.contains("wait")).unwrap();
    assert_eq!(host.on, "tpb0.evt_sem.SEM_READ[3]", "{}", g.to_text());
    assert!(host.deadlocked, "{}", g.to_text());
    assert_eq!(
        host.could_change,
        ["tpb0#1 DIRECT2D (line 4)"],
        "{}",
        g.to_text()
    );
}

/// Runs `source` with the detector on; its stall summary and the run's
/// cycles.
fn stalls(source: &str) -> (Vec<soc::WordStall>, u64) {
    let mut dev = Device::trn2().unwrap();
    dev.detect_races();
    let report = run_source(&mut dev, source, "stall.trace", &mut NoFiles).unwrap();
    assert_eq!(report.exit_code(), 0, "{source}\n{}", report.to_text());
    (dev.race_summary().unwrap().stalls, dev.now().0)
}

/// Two DIRECT2D words of 12 rows each (one descriptor pair per row, a
/// semaphore packet after them) on engine slot 0, queue 0, with rings of
/// `ring_descs` descriptors.
fn two_copies(ring_descs: u32) -> String {
    let copy = |dst: u64, sem: u8| {
        format!(
            "inst tpb0 DIRECT2D semaphore={sem} sem_increment=1 src_start_addr=imm:0x20000000 \
             src_step_elem=[1,256] src_num_elem=[256,12] src_elem_size=1 \
             dst_start_addr=imm:{dst:#x} dst_step_elem=[1,512] dst_num_elem=[256,12] \
             dst_elem_size=1\n"
        )
    };
    format!(
        "write32 tpb0.q7_local_reg.memcopy_carveout_cfg {:#010x}\n\
         write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x00010001\n\
         fill hbm0+0x20000000 len=4096 pattern=incr8\n\
         {}{}run\n\
         read32 tpb0.sem.read[3] == 1\n",
        ring_descs << 16,
        copy(0x2010_0000, 2),
        copy(0x2020_0000, 3),
    )
}

/// A word whose 13 descriptors per direction do not fit a 16-descriptor
/// ring beside the 13 of the word before it waits for ring room on that
/// queue until the engine consumed enough of them; with 64-descriptor
/// rings it does not wait.
#[test]
fn a_word_waiting_for_ring_room_is_a_ring_room_stall_on_its_queue() {
    let (list, cycles) = stalls(&two_copies(16));
    let room: Vec<_> = list
        .iter()
        .filter(|s| matches!(s.wait, soc::StallWait::RingRoom { .. }))
        .collect();
    assert_eq!(room.len(), 1, "{list:#?}");
    let s = room[0];
    assert_eq!(s.word, "tpb0 word #1 (line 5)");
    assert_eq!(s.tpb, 0);
    assert_eq!(
        s.wait,
        soc::StallWait::RingRoom {
            engine: 0,
            queue: 0
        }
    );
    assert_eq!(s.on, "ring room on eng0.q0");
    assert_eq!(s.awaited, ["eng0.q0"]);
    // The room it got was freed by the first word's packets.
    assert!(
        s.released_by.starts_with("eng0.q0[") && s.released_by.ends_with("tpb0 word #0 (line 4)"),
        "{s:#?}"
    );
    // At least the threshold, and over before the run ended.
    assert!(s.waited_cycles >= soc::race::LONG_STALL_CYCLES, "{s:#?}");
    assert!(
        s.cycle < cycles && s.waited_cycles < s.cycle,
        "{s:#?} in {cycles} cycles"
    );
    // Room enough: no ring-room wait.
    let (list, _) = stalls(&two_copies(64));
    assert!(
        list.iter()
            .all(|s| !matches!(s.wait, soc::StallWait::RingRoom { .. })),
        "{list:#?}"
    );
}

/// A 32 KiB DIRECT2D whose EVENTS update (SEM_INC_COMPLETE) waits for its
/// completion: a completion stall on its queue, at least as long as 32 KiB
/// takes at one engine's 32 bytes per cycle (docs/timing.md), ending when
/// the update applied. The same copy without an update is no stall.
#[test]
fn an_events_update_waiting_for_its_completions_is_a_completion_stall() {
    let copy = |update: &str| {
        format!(
            "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x00400000\n\
             write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x00010001\n\
             fill hbm0+0x20000000 len=32768 pattern=incr8\n\
             inst tpb0 DIRECT2D {update}src_start_addr=imm:0x20000000 \
             src_step_elem=[1,32768] src_num_elem=[32768,1] src_elem_size=1 \
             dst_start_addr=imm:0x20100000 dst_step_elem=[1,32768] \
             dst_num_elem=[32768,1] dst_elem_size=1\n\
             run\n"
        )
    };
    let (list, cycles) = stalls(&copy(
        "events.update_mode=SEM_INC_COMPLETE events.update_idx=5 ",
    ));
    assert_eq!(list.len(), 1, "{list:#?}");
    let s = &list[0];
    assert_eq!(s.word, "tpb0 word #0 (line 4)");
    assert_eq!(
        s.wait,
        soc::StallWait::Completion {
            engine: 0,
            queue: 0
        }
    );
    assert_eq!(s.on, "completion of eng0.q0");
    assert_eq!(s.awaited, ["eng0.q0"]);
    assert!(
        s.released_by.starts_with("eng0.q0[") && s.released_by.ends_with("tpb0 word #0 (line 4)"),
        "{s:#?}"
    );
    assert!(s.waited_cycles >= 32768 / 32, "{s:#?}");
    // The update is the last thing the run does.
    assert!(
        s.cycle <= cycles && s.waited_cycles < s.cycle,
        "{s:#?} in {cycles} cycles"
    );
    let (list, _) = stalls(&copy(""));
    assert!(list.is_empty(), "{list:#?}");
}
