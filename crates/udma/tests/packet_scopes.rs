//! Packet scopes (the race detector's hints, docs/races.md) are built and
//! handed to the bus only when it says an observer takes them
//! (`Bus::observes_packets`); either way the engine does the same.

#![allow(clippy::unwrap_used)]

mod common;

use common::{MEM_TOP, Rig, WHOLE};
use udma::{Dir, UnitBlock};

const EN: u32 = 0x0303_0000;
const SRC: u64 = 0x1000_0000;
const DST: u64 = 0x2000_0000;

/// Three copies, the last into missing memory (a data write fault), on a
/// bus that observes packets or not.
fn run(unobserved: bool) -> Rig {
    let mut rig = Rig::new(0);
    rig.mem.unobserved = unobserved;
    rig.setup(0, EN, EN);
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    rig.mem.put(SRC, &data);
    rig.put_copy(0, 0, 512, SRC, DST, WHOLE);
    rig.put_copy(0, 1, 1024, SRC + 512, DST + 0x1000, WHOLE);
    rig.put_copy(0, 2, 256, SRC, MEM_TOP - 16, WHOLE);
    rig.doorbells(0, 3);
    rig.run();
    rig
}

#[test]
fn scopes_only_for_an_observer_and_the_same_run_either_way() {
    let seen = run(false);
    let blind = run(true);
    // The observer got, per packet, its scope, then its completion's, then
    // the end (the faulting packet: its scope and the end).
    let kinds: Vec<Option<bool>> = seen
        .mem
        .scopes
        .iter()
        .map(|s| s.map(|s| s.completion))
        .collect();
    assert_eq!(
        kinds,
        [
            Some(false),
            Some(true),
            None,
            Some(false),
            Some(true),
            None,
            Some(false),
            None
        ]
    );
    assert_eq!(seen.mem.scopes[3].map(|s| s.slot), Some(1));
    assert!(blind.mem.scopes.is_empty());
    // The same bytes, events and registers.
    assert_eq!(format!("{:?}", seen.events), format!("{:?}", blind.events));
    assert_eq!(seen.mem.get(DST, 0x2000), blind.mem.get(DST, 0x2000));
    assert_eq!(seen.mem.get(DST, 512), seen.mem.get(SRC, 512));
    for reg in ["Q_TX_PKT", "TDRHP", "TCRHP", "Q_STATUS"] {
        assert_eq!(
            seen.rq(Dir::M2s, 0, reg),
            blind.rq(Dir::M2s, 0, reg),
            "{reg}"
        );
    }
    assert_eq!(
        seen.r(UnitBlock::Gen, "SEC_B_INT_CAUSE"),
        blind.r(UnitBlock::Gen, "SEC_B_INT_CAUSE")
    );
    assert_ne!(seen.r(UnitBlock::Gen, "SEC_B_INT_CAUSE"), 0);
}
