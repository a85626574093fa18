//! Unit tests of the detector's happens-before rules (docs/races.md).

use super::*;

fn scope(queue: u8, slot: u32, dmb: bool) -> Option<PacketScope> {
    Some(PacketScope {
        queue,
        slot,
        tx_descs: 1,
        dmb,
        barrier: false,
        completion: false,
    })
}

/// Runs one packet of `engine.queue` that reads `src` and writes `dst`
/// (`len` bytes each).
fn packet(d: &mut Detector, engine: u16, queue: u8, slot: u32, dmb: bool, src: u64, dst: u64) {
    d.packet_scope(engine, scope(queue, slot, dmb));
    d.access(None, src, 0x100, false, 10);
    d.access(None, dst, 0x100, true, 10);
    d.packet_scope(engine, None);
}

fn name(addr: u64) -> String {
    format!("hbm0+{addr:#x}")
}

#[test]
fn two_queues_writing_one_range_race_once_per_source_pair() {
    let mut d = Detector::new();
    d.doorbell(None, 0, 0, 1);
    d.doorbell(None, 1, 0, 1);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    packet(&mut d, 1, 0, 0, false, 0x3000, 0x2080);
    let s = d.summary(&name);
    assert_eq!(s.races.len(), 1, "{}", s.to_text());
    let r = &s.races[0];
    assert_eq!(r.kind, "write/write");
    assert_eq!(r.range, "hbm0+0x2080..+0x2100");
    assert_eq!(r.first.agent, "eng0.q0");
    assert_eq!(r.second.agent, "eng1.q0");
}

#[test]
fn a_semaphore_orders_the_second_queue_after_the_first() {
    let mut d = Detector::new();
    d.doorbell(None, 0, 0, 1);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    // The packet's queue releases semaphore 3; core 1 waits on it and
    // rings engine 1.
    d.packet_scope(0, scope(0, 1, false));
    d.sem_write(None, 7, 3);
    d.packet_scope(0, None);
    d.doorbell(None, 0, 0, 1);
    d.sem_read(Some(1), 7, 3);
    d.doorbell(Some(1), 1, 0, 1);
    packet(&mut d, 1, 0, 0, false, 0x2000, 0x4000);
    assert!(d.summary(&name).races.is_empty());
}

/// Two doorbells on one queue from two host statements.
fn two_doorbells(d: &mut Detector) {
    d.set_host_label("trace line 1 doorbell");
    d.doorbell(None, 0, 0, 1);
    d.set_host_label("trace line 2 doorbell");
    d.doorbell(None, 0, 0, 1);
}

#[test]
fn within_a_queue_a_read_of_an_earlier_write_needs_a_dmb() {
    let mut d = Detector::new();
    two_doorbells(&mut d);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    packet(&mut d, 0, 0, 1, false, 0x2000, 0x3000);
    let s = d.summary(&name);
    assert_eq!(s.races.len(), 1, "{}", s.to_text());
    assert_eq!(s.races[0].kind, "read/write");

    let mut d = Detector::new();
    two_doorbells(&mut d);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    packet(&mut d, 0, 0, 1, true, 0x2000, 0x3000);
    assert!(d.summary(&name).races.is_empty(), "the DMB orders it");

    // One doorbell statement (one word) orders its own packets.
    let mut d = Detector::new();
    d.doorbell(None, 0, 0, 2);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    packet(&mut d, 0, 0, 1, false, 0x2000, 0x3000);
    assert!(d.summary(&name).races.is_empty());

    // A completion seen by the ringer of the second orders it too.
    let mut d = Detector::new();
    d.set_host_label("trace line 1 doorbell");
    d.doorbell(None, 0, 0, 1);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    d.completion_poll(None, 0, 0);
    d.set_host_label("trace line 2 doorbell");
    d.doorbell(None, 0, 0, 1);
    packet(&mut d, 0, 0, 1, false, 0x2000, 0x3000);
    assert!(d.summary(&name).races.is_empty());

    // A later packet's write over what an earlier one read is ordered.
    let mut d = Detector::new();
    two_doorbells(&mut d);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    packet(&mut d, 0, 0, 1, false, 0x5000, 0x1000);
    assert!(d.summary(&name).races.is_empty());
}

#[test]
fn a_poll_of_a_completed_write_orders_the_poller_after_it() {
    let mut d = Detector::new();
    d.doorbell(None, 0, 0, 1);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    // Without the poll, a host write over the packet's output races.
    d.poll(None, 0x20f0, 4);
    d.access(None, 0x2000, 0x100, true, 30);
    assert!(d.summary(&name).races.is_empty());
}

#[test]
fn host_writes_after_the_doorbell_race_and_before_do_not() {
    let mut d = Detector::new();
    d.access(None, 0x1000, 0x100, true, 0);
    d.doorbell(None, 0, 0, 1);
    d.access(None, 0x1080, 0x10, true, 0);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    let s = d.summary(&name);
    assert_eq!(s.races.len(), 1, "{}", s.to_text());
    assert_eq!(s.races[0].range, "hbm0+0x1080..+0x1090");
    assert_eq!(s.races[0].first.agent, "host");
    // After the device went idle the host reads and writes freely.
    d.quiesce();
    d.access(None, 0x2000, 0x100, true, 20);
    assert_eq!(d.summary(&name).races.len(), 1);
    assert!(d.segments() > 0);
}

#[test]
fn a_scatter_race_is_reported_with_both_positions() {
    let mut d = Detector::new();
    d.scatter_race(0, "tpb0 word #0 (line 3)", 1, 4, 9, 5);
    let s = d.summary(&name);
    assert_eq!(s.races.len(), 1);
    assert!(
        s.races[0]
            .range
            .contains("dst_idx[1] and dst_idx[4] both = 9")
    );
    assert_eq!(s.races[0].kind, "write/write");
}

#[test]
fn a_firmware_completion_poll_orders_its_semaphore_update_not_its_next_word() {
    // Word 0 of core 0 writes 0x2000 on eng0.q0; the firmware's poll sees
    // it complete; word 1 (fired after the poll) reads it on the same
    // queue: nothing gates word 1 on that completion, so it races.
    let mut d = Detector::new();
    d.set_core_label(0, "tpb0 word #0");
    d.doorbell(Some(0), 0, 0, 1);
    packet(&mut d, 0, 0, 0, false, 0x1000, 0x2000);
    d.completion_poll(Some(0), 0, 0);
    d.set_core_label(0, "tpb0 word #1");
    d.doorbell(Some(0), 0, 0, 1);
    packet(&mut d, 0, 0, 1, false, 0x2000, 0x3000);
    assert_eq!(d.summary(&name).races.len(), 1);
    // The EVENTS update after the poll carries the completion: a core
    // waiting on that semaphore is ordered after word 0.
    d.sem_write(Some(0), 1, 6);
    d.sem_read(Some(2), 1, 6);
    d.doorbell(Some(2), 5, 0, 1);
    packet(&mut d, 5, 0, 0, false, 0x2000, 0x4000);
    assert_eq!(
        d.summary(&name).races.len(),
        1,
        "{}",
        d.summary(&name).to_text()
    );
}
