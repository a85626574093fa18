//! Stalls (docs/firmware.md §Stalls, docs/trace-format.md §4.4): a device
//! whose firmware polls for DMA completions that cannot come stops instead
//! of spinning, says who waits on what, and lets bounded time pass without
//! changing a single cycle of what follows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{MemFiles, PHASE, device};
use soc::Device;
use soc::device::RunStop;
use soc::exec::{RunReport, run_source};

fn run_on(d: &mut Device, source: &str) -> RunReport {
    run_source(d, source, "t.trace", &mut MemFiles::default()).unwrap_or_else(|e| {
        let msgs: Vec<String> = e.iter().map(ToString::to_string).collect();
        panic!("trace did not link: {msgs:?}")
    })
}

fn run(source: &str) -> (RunReport, Device) {
    let mut d = device();
    let r = run_on(&mut d, source);
    (r, d)
}

/// The same trace with the register-access log recording: every firmware
/// poll then runs one by one, as before stalls were detected.
fn run_polling(source: &str) -> (RunReport, Device) {
    let mut d = device();
    d.record_reg_log(Some(Box::new(std::io::sink())));
    let r = run_on(&mut d, source);
    (r, d)
}

/// A custom-op `neuron_memcpy` whose DMA write faults (no memory at the
/// destination): the inline path polls its completion entry for ever.
const MEMCPY_UNMAPPED: &str = "\
memcpy tpb3 local=0x85f88 hbm=0x1000000000000 len=4 write
run
";

#[test]
fn a_bare_run_stops_at_a_faulted_firmware_dma_and_names_the_stall() {
    let (r, d) = run(MEMCPY_UNMAPPED);
    let text = r.to_text();
    assert_eq!(r.exit_code(), 1, "{text}");
    assert_eq!(r.expectations_failed, 1, "{text}");
    let run_line = &r.steps[1].text;
    for want in [
        "the device stalled at cycle",
        "tpb3#0 neuron_memcpy (line 1) waits on eng48.q15",
        "s2m aborted",
        "SEC_B_INT_CAUSE.DATA_WR_AXI",
    ] {
        assert!(run_line.contains(want), "missing `{want}` in {run_line}");
    }
    assert!(d.is_stalled());
    let stall = r.summary.stall.as_ref().expect("the summary has the stall");
    assert_eq!(stall.waits.len(), 1);
    assert_eq!(stall.waits[0].queue, "eng48.q15");
    assert!(text.contains("  stall: tpb3#0 neuron_memcpy (line 1) waits on eng48.q15"));
    // The stall is found within a few polls, not after millions.
    assert!(d.now().0 < 1_000, "stopped at cycle {}", d.now().0);
    assert!(d.events_processed() < 1_000);
}

#[test]
fn a_word_reading_unmapped_memory_names_its_engine_queue_and_fault() {
    let (r, _) = run("\
write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x00400000
write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff
inst tpb0 DIRECT2D semaphore=1 sem_increment=1 src_start_addr=imm:0x1000000000000 src_step_elem=[1,64] src_num_elem=[64,128] src_elem_size=4 dst_start_addr=imm:0x2000000000 dst_step_elem=[1,65536] dst_num_elem=[64,128] dst_elem_size=4
run
");
    assert_eq!(r.exit_code(), 1, "{}", r.to_text());
    let line = &r.steps[3].text;
    for want in [
        "tpb0#0 DIRECT2D (line 3) waits on eng0.q0",
        "completions: M2S at 0 of 9, S2M at 0 of 9",
        "eng0 m2s aborted",
        "SEC_A_INT_CAUSE.AXI",
    ] {
        assert!(line.contains(want), "missing `{want}` in {line}");
    }
}

#[test]
fn a_wait_on_a_stalled_device_fails_at_the_stall_not_at_its_timeout() {
    let (r, d) = run(&MEMCPY_UNMAPPED.replace("run\n", "wait tpb3.sem.read[0] == 1\n"));
    assert_eq!(r.exit_code(), 1);
    let line = &r.steps[1].text;
    assert!(
        line.contains("the value is at 0x00000000 and cannot change: the device stalled at cycle"),
        "{line}"
    );
    assert!(d.now().0 < 1_000, "the wait burnt {} cycles", d.now().0);
}

#[test]
fn a_bounded_run_lets_its_cycles_pass_and_reports_the_stall() {
    let (r, d) = run(&MEMCPY_UNMAPPED.replace("run\n", "run cycles=1000000\nrun until=3000000\n"));
    assert_eq!(r.exit_code(), 0, "{}", r.to_text());
    assert!(
        r.steps[1]
            .text
            .ends_with(", stalled (the firmware polls for completions that cannot come)")
    );
    assert!(r.steps[1].text.starts_with("run: cycle 0 -> 1000000 "));
    assert!(
        r.steps[2]
            .text
            .starts_with("run: cycle 1000000 -> 3000000 ")
    );
    assert_eq!(d.now().0, 3_000_000);
    assert!(r.summary.stall.is_some());
    // 3 M cycles of polls at one every 32 cycles were not run one by one.
    assert!(d.events_processed() < 1_000, "{}", d.events_processed());
}

#[test]
fn a_device_that_stalls_runs_to_the_limit_through_device_run() {
    let mut d = device();
    let r = run_on(&mut d, MEMCPY_UNMAPPED.lines().next().unwrap());
    assert_eq!(r.exit_code(), 0);
    assert_eq!(d.run(Some(sim_core::Cycle(50_000))), RunStop::Stalled);
    assert_eq!(d.now().0, 50_000);
    assert_eq!(d.run(None), RunStop::Stalled);
    assert_eq!(d.now().0, 50_000, "an unbounded run stops where it is");
}

#[test]
fn skipping_the_polls_of_a_stalled_core_keeps_every_cycle() {
    let (fast, d_fast) = run(PHASE);
    let (slow, d_slow) = run_polling(PHASE);
    assert_eq!(fast.to_text(), slow.to_text());
    assert_eq!(d_fast.csr_snapshot(), d_slow.csr_snapshot());
    assert!(
        fast.steps[5].text.contains(", stalled"),
        "{}",
        fast.steps[5].text
    );
    // The second copy was seen done at a poll, after its packet landed.
    let text = fast.to_text();
    assert!(
        text.contains("1449 tpb0 inst#1 (line 5) neuron_memcpy done"),
        "{text}"
    );
    assert_eq!(d_fast.now().0, 1673);
    assert!(d_fast.events_processed() < d_slow.events_processed());
}

/// Issue 11 item 7: with 2^32-cycle write latencies the firmware used to
/// poll every 32 cycles through the whole latency (134 M polls). A polling
/// core now waits for the next change.
#[test]
fn huge_latencies_with_firmware_cost_no_polls() {
    let mut timing = sim_core::TimingConfig::default_config().unwrap();
    timing.write_latency_cycles = 1 << 32;
    let mut d =
        Device::with_timing(soc_map::trn2().unwrap(), csr::catalog().unwrap(), timing).unwrap();
    let r = run_on(
        &mut d,
        "\
write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x00400000
write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff
fill hbm0+0x10000000 len=1048576 pattern=incr32 seed=0x10000000
inst tpb0 DIRECT2D semaphore=1 sem_increment=1 src_start_addr=imm:0x10000000 src_step_elem=[1,4096] src_num_elem=[4096,128] src_elem_size=2 dst_start_addr=imm:0x2000000000 dst_step_elem=[1,131072] dst_num_elem=[4096,128] dst_elem_size=2 in_dtype=BFLOAT16 out_dtype=BFLOAT16
wait tpb0.sem.read[1] == 16 timeout=20000000000
run
read32 tpb0.sem.read[1] == 16
expect tpb0.sbuf[p127]+0x1ffc bytes=ffff0310
",
    );
    assert_eq!(r.exit_code(), 0, "{}", r.to_text());
    assert!(d.now().0 > 1 << 32);
    assert!(
        d.events_processed() < 100_000,
        "{} events for 288 descriptors",
        d.events_processed()
    );
}

/// A parked core waiting only on words in flight wakes when one of its
/// engine queues has completed enough descriptors to end a wait, not at
/// every completion (`Q7Core::wake_needs`): every firmware golden trace and
/// the chip stream give the same report and CSRs as when every poll runs
/// one by one (the register log), and the chip stream, where each core
/// waits on 16 engines for its last words, runs far fewer events.
#[test]
fn waking_a_parked_core_only_when_a_wait_can_end_keeps_every_cycle() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut traces: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("fw-"))
        })
        .collect();
    traces.sort();
    traces.push(dir.join("calib/chip-8-cores-hbm.trace"));
    assert!(traces.len() > 15);
    for t in &traces {
        let source = std::fs::read_to_string(t).unwrap();
        let (fast, d_fast) = run(&source);
        let (slow, d_slow) = run_polling(&source);
        let name = t.display();
        assert_eq!(fast.to_text(), slow.to_text(), "{name}");
        assert_eq!(d_fast.csr_snapshot(), d_slow.csr_snapshot(), "{name}");
        assert_eq!(d_fast.now(), d_slow.now(), "{name}");
    }
    let source = std::fs::read_to_string(dir.join("calib/chip-8-cores-hbm.trace")).unwrap();
    let (_, d) = run(&source);
    let (_, d_slow) = run_polling(&source);
    // The engines' own events are the same in both; the firmware runs
    // differ. Measured: 22,431 polling one by one, 19,878 waking at every
    // completion of an owned engine, 18,198 waking only when a wait can end.
    assert!(
        d.events_processed() * 100 < d_slow.events_processed() * 85,
        "{} events parked vs {} polling",
        d.events_processed(),
        d_slow.events_processed()
    );
}

/// A stream of DIRECT2D words over 16 engines, some applying their update
/// when their reads are done, some when they are done, some gated on a
/// semaphore the engines of earlier words increment: the core generates
/// while earlier words are in flight and semaphores change under it.
fn tile_stream(words: u32, row_bytes: u32) -> String {
    let elems = row_bytes / 2;
    let mut t = String::from(
        "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x01000000\n\
         write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n",
    );
    for w in 0..words {
        let sem = if w % 3 == 0 { 5 } else { 1 };
        let update = match w % 5 {
            1 => " events.update_mode=SEM_INC_READ events.update_idx=3",
            3 => " events.update_mode=SEM_INC_COMPLETE events.update_idx=4",
            _ => "",
        };
        // Every 8th word waits until the engines of the words before it
        // that increment semaphore 5 have all done so.
        let gate = if w % 8 == 7 {
            format!(
                " events.wait_mode=WAIT_FOR_SEM_GE_IMM events.wait_idx=5 events.semaphore_value={}",
                16 * w.div_ceil(3)
            )
        } else {
            String::new()
        };
        t.push_str(&format!(
            "inst tpb0 DIRECT2D{gate}{update} semaphore={sem} sem_increment=1 \
             src_start_addr=imm:{:#x} src_step_elem=[1,{elems}] src_num_elem=[{elems},128] src_elem_size=2 \
             dst_start_addr=imm:{:#x} dst_step_elem=[1,131072] dst_num_elem=[{elems},128] dst_elem_size=2 \
             in_dtype=BFLOAT16 out_dtype=BFLOAT16\n",
            0x1000_0000 + u64::from(w) * 128 * u64::from(row_bytes),
            0x20_0000_0000 + u64::from(w % (0x30000 / row_bytes)) * u64::from(row_bytes),
        ));
    }
    let ones = (0..words).filter(|w| w % 3 != 0).count() * 16;
    t.push_str(&format!("wait tpb0.sem.read[1] == {ones:#x}\n"));
    t.push_str(&format!(
        "read32 tpb0.sem.read[5] == {:#x}\n",
        16 * words.div_ceil(3)
    ));
    // The last word is done once a poll has seen its completions.
    t.push_str("run\n");
    t
}

/// `words` DIRECT2D words of 4 KiB rows over 16 engines, nothing but a
/// semaphore per word: the rings fill and the words queued behind wait for
/// room.
fn room_stream(words: u32) -> String {
    let mut t = String::from(
        "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x01000000\n\
         write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n",
    );
    for w in 0..u64::from(words) {
        t.push_str(&format!(
            "inst tpb0 DIRECT2D semaphore=1 sem_increment=1 \
             src_start_addr=imm:{:#x} src_step_elem=[1,2048] src_num_elem=[2048,128] src_elem_size=2 \
             dst_start_addr=imm:{:#x} dst_step_elem=[1,131072] dst_num_elem=[2048,128] dst_elem_size=2 \
             in_dtype=BFLOAT16 out_dtype=BFLOAT16\n",
            0x1000_0000 + w * 0x8_0000,
            0x20_0000_0000 + (w % 48) * 4096,
        ));
    }
    t.push_str(&format!(
        "wait tpb0.sem.read[1] == {:#x}\nrun\n",
        16 * words
    ));
    t
}

/// A core waiting for ring room wakes when the room it needs is free, not
/// at every completion of its engines: the same report, registers and
/// cycles as polling one by one.
#[test]
fn a_core_waiting_for_ring_room_wakes_when_the_room_is_there() {
    let source = room_stream(64);
    let (fast, d_fast) = run(&source);
    let (slow, d_slow) = run_polling(&source);
    let text = fast.to_text();
    assert_eq!(fast.exit_code(), 0, "{text}");
    assert_eq!(text, slow.to_text());
    assert_eq!(d_fast.csr_snapshot(), d_slow.csr_snapshot());
    assert_eq!(d_fast.now(), d_slow.now());
    let engine_events = |d: &Device| d.engines().map(udma::Engine::events_done).sum::<u64>();
    let fw_runs = |d: &Device| d.events_processed() - engine_events(d);
    // Measured: 3,356 runs polling one by one; 220 parked waking at every
    // completion of the room-waiting word's engines; 159 waking when its
    // room is free (under 3 a word: submitted, issued, done).
    assert!(
        fw_runs(&d_fast) < 3 * 64 && fw_runs(&d_fast) * 5 < fw_runs(&d_slow),
        "{} firmware runs parked vs {} polling",
        fw_runs(&d_fast),
        fw_runs(&d_slow)
    );
}

/// A core generating a word's descriptors is parked on the words in flight,
/// a core waiting for ring room on the room it needs, and a semaphore
/// change that cannot matter to it does not run it (docs/firmware.md
/// §Stalls): the same report, registers and cycles as when every poll runs
/// one by one, with far fewer firmware runs.
#[test]
fn a_generating_core_parks_and_sem_changes_it_cannot_read_do_not_run_it() {
    // Measured, firmware runs polling one by one -> parked: 512 B rows
    // 1,107 -> 129 (every poll period while generating and every semaphore
    // change ran the core before); 4 KiB rows, where the words queued
    // behind wait at their gates and for ring room (runs a semaphore change
    // makes then still happen), 2,523 -> 636.
    for (row_bytes, words, fewer) in [(512, 48, 5), (4096, 48, 3)] {
        let source = tile_stream(words, row_bytes);
        let (fast, d_fast) = run(&source);
        let (slow, d_slow) = run_polling(&source);
        let text = fast.to_text();
        assert_eq!(fast.exit_code(), 0, "{row_bytes}: {text}");
        assert_eq!(text, slow.to_text(), "{row_bytes}");
        assert_eq!(d_fast.csr_snapshot(), d_slow.csr_snapshot(), "{row_bytes}");
        assert_eq!(d_fast.now(), d_slow.now(), "{row_bytes}");
        let fw = d_fast.core(0).unwrap();
        assert_eq!((fw.queued(), fw.in_flight()), (0, 0), "{text}");
        // Engine events are the same in both; only the firmware runs differ.
        let engine_events = |d: &Device| d.engines().map(udma::Engine::events_done).sum::<u64>();
        assert_eq!(
            engine_events(&d_fast),
            engine_events(&d_slow),
            "{row_bytes}"
        );
        let fw_runs = |d: &Device| d.events_processed() - engine_events(d);
        assert!(
            fw_runs(&d_fast) * fewer < fw_runs(&d_slow),
            "{row_bytes}: {} firmware runs parked vs {} polling",
            fw_runs(&d_fast),
            fw_runs(&d_slow)
        );
    }
}

/// With the race detector on, skipping polls that end no wait (parked
/// cores, semaphore changes a generating core cannot read) finds the same
/// races, stalls and waits as polling one by one: every firmware and race
/// golden trace and the mixed stream give the same report and summary.
#[test]
fn the_race_detector_sees_the_same_with_polls_skipped() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut sources: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                (n.starts_with("fw-") || n.starts_with("race-") || n.starts_with("deadlock-"))
                    && !n.starts_with("race-host")
            })
        })
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    sources.sort();
    sources.push(("tile stream".into(), tile_stream(24, 512)));
    sources.push(("tile stream, 4 KiB rows".into(), tile_stream(24, 4096)));
    sources.push(("room stream".into(), room_stream(40)));
    assert!(sources.len() > 20);
    for (name, source) in &sources {
        let mut fast = device();
        fast.detect_races();
        let r_fast = run_on(&mut fast, source);
        let mut slow = device();
        slow.detect_races();
        slow.record_reg_log(Some(Box::new(std::io::sink())));
        let r_slow = run_on(&mut slow, source);
        assert_eq!(r_fast.to_text(), r_slow.to_text(), "{name}");
        assert_eq!(fast.race_summary(), slow.race_summary(), "{name}");
        assert_eq!(fast.now(), slow.now(), "{name}");
    }
}

/// Words narrowed by the DGE mailbox gate that then wait for ring room
/// report the gate once each, parked or polling one by one (a retry
/// reports it again only when the mailboxes changed it).
#[test]
fn a_mailbox_gated_word_waiting_for_room_reports_its_gate_once() {
    // Mailbox 1 = {0, priority 1, mask 0x000f}: class 2 words keep engines
    // 0..3, whose rings fill with 4 KiB rows.
    let mut t = String::from(
        "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x01000000\n\
         write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n\
         write32 tpb0.q7_dram0+0x2c 0x000f0100\n",
    );
    let words = 12u64;
    for w in 0..words {
        t.push_str(&format!(
            "inst tpb0 DIRECT2D dma_configs.priority_class=2 semaphore=1 sem_increment=1 \
             src_start_addr=imm:{:#x} src_step_elem=[1,2048] src_num_elem=[2048,128] src_elem_size=2 \
             dst_start_addr=imm:{:#x} dst_step_elem=[1,131072] dst_num_elem=[2048,128] dst_elem_size=2 \
             in_dtype=BFLOAT16 out_dtype=BFLOAT16\n",
            0x1000_0000 + w * 0x8_0000,
            0x20_0000_0000 + (w % 40) * 4096,
        ));
    }
    t.push_str(&format!("wait tpb0.sem.read[1] == {:#x}\nrun\n", 4 * words));
    let (fast, d_fast) = run(&t);
    let (slow, d_slow) = run_polling(&t);
    let text = fast.to_text();
    assert_eq!(fast.exit_code(), 0, "{text}");
    assert_eq!(text, slow.to_text());
    assert_eq!(d_fast.now(), d_slow.now());
    // One per word (before: 32, one per retry while waiting for room on
    // the 4 engines' rings, polling one by one).
    assert_eq!(
        text.matches("DGE mailbox gate").count(),
        words as usize,
        "{text}"
    );
}

/// Engine 0's queue 0 made to ring its own doorbells, so the device is
/// never idle (a review's reproducer: a bare `run` of it never ended).
const NEVER_IDLE_QUEUE: &str = include_str!("data/never-idle-queue.trace");

/// Nothing may hang: a bare `run` of a device that keeps itself busy stops
/// at its bound (docs/trace-format.md §4.4) as a failed statement that says
/// why, and the trace goes on.
#[test]
fn a_bare_run_of_a_device_that_never_idles_stops_at_its_bound() {
    let mut d = device();
    d.set_bare_run_limit_cycles(20_000);
    let r = run_on(&mut d, NEVER_IDLE_QUEUE);
    assert_eq!(r.expectations_failed, 1, "{:?}", r.failures);
    assert_eq!(
        r.expectations_passed, 1,
        "the expect after the run still runs"
    );
    let f = &r.failures[0].to_string();
    assert!(
        f.contains("still busy after 20000 cycles, the bound of a bare `run`"),
        "{f}"
    );
    let run_at = r.steps.iter().position(|s| s.directive == "run").unwrap();
    assert_eq!(r.steps[run_at].cycle - r.steps[run_at - 1].cycle, 20_000);
    // `run cycles=N` on the same device is bounded by the trace alone.
    let mut d = device();
    d.set_bare_run_limit_cycles(20_000);
    let bounded = NEVER_IDLE_QUEUE.replace("\nrun\n", "\nrun cycles=50000\n");
    let r = run_on(&mut d, &bounded);
    assert_eq!((r.expectations_failed, r.expectations_passed), (0, 1));
}
