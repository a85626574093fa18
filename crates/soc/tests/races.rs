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
