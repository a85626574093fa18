//! A register file shares its map's reset values until a store changes one
//! (copy on write): the same accesses give the same outcomes and values as
//! on a file that owns its values from the start.
#![allow(clippy::unwrap_used)]

use csr::{CsrMap, RegFile};
use proptest::prelude::*;

/// One access of a sequence: (kind, element index, value).
type Op = (u8, usize, u32);

/// A file that owns its values from the start, at reset: a store that
/// changes a value, then one that restores it.
fn owned_at_reset(map: &CsrMap) -> RegFile<'_> {
    let mut rf = RegFile::new(map);
    let first = map.elements().next().unwrap().offset();
    let reset = rf.value(first).unwrap();
    let reserved = map.register_at(first).unwrap().spec().masks().reserved;
    rf.hw_set(first, !reset & !reserved).unwrap();
    rf.hw_set(first, reset).unwrap();
    assert!(!rf.is_shared_reset());
    rf
}

/// Applies `op` to `rf`, returning what the access reported.
fn apply(rf: &mut RegFile<'_>, offsets: &[u64], op: Op) -> String {
    let (kind, i, value) = op;
    let offset = offsets[i % offsets.len()];
    match kind % 7 {
        0 => format!(
            "{:?}",
            rf.write(offset, value)
                .map(|o| (o.old, o.new, o.ignored, o.pulses, o.delta))
        ),
        1 => format!("{:?}", rf.read(offset).map(|o| (o.value, o.cleared))),
        2 => format!("{:?}", rf.hw_set(offset, value)),
        3 => format!("{:?}", rf.hw_update(offset, |v| v ^ value)),
        4 => {
            let s = rf.slot_of(offset).unwrap();
            format!("{}", rf.hw_update_slot(s, |v| v.rotate_left(value % 32)))
        }
        5 => format!("{:?}", rf.peek(offset)),
        _ => {
            if value % 8 == 0 {
                rf.reset();
            }
            String::new()
        }
    }
}

fn values(rf: &RegFile<'_>) -> Vec<u32> {
    rf.iter().map(|(_, v)| v).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every built-in map: a shared file and an owning one answer every
    /// access alike and hold the same values after each; a clone taken
    /// along the way keeps its values while the original moves on.
    #[test]
    fn a_shared_file_behaves_as_an_owning_one(
        block in 0usize..10,
        ops in prop::collection::vec((any::<u8>(), any::<usize>(), any::<u32>()), 1..64),
        clone_at in any::<usize>(),
    ) {
        let catalog = csr::catalog().unwrap();
        let maps: Vec<&CsrMap> = catalog.maps().collect();
        let map = maps[block % maps.len()];
        let offsets: Vec<u64> = map.elements().map(|r| r.offset()).collect();
        let mut shared = RegFile::new(map);
        prop_assert!(shared.is_shared_reset());
        let mut owned = owned_at_reset(map);
        let mut snapshot: Option<(RegFile<'_>, Vec<u32>)> = None;
        for (n, &op) in ops.iter().enumerate() {
            if n == clone_at % ops.len() {
                snapshot = Some((shared.clone(), values(&shared)));
            }
            let a = apply(&mut shared, &offsets, op);
            let b = apply(&mut owned, &offsets, op);
            prop_assert_eq!(&a, &b, "{} op {} {:?}", map.block(), n, op);
            prop_assert_eq!(values(&shared), values(&owned));
            prop_assert_eq!(shared.diff_from_reset(), owned.diff_from_reset());
        }
        if let Some((copy, before)) = snapshot {
            prop_assert_eq!(values(&copy), before);
        }
    }
}

/// A store that leaves the value as it is keeps the file shared; one that
/// changes it gives the file its own copy; a reset shares again.
#[test]
fn only_a_changing_store_copies() {
    let catalog = csr::catalog().unwrap();
    let map = catalog.block("udma_m2s_q").unwrap();
    let mut rf = RegFile::new(map);
    let cfg = map.find("Q_CFG", None).unwrap();
    let reset = rf.value(cfg).unwrap();
    rf.hw_set(cfg, reset).unwrap();
    let _ = rf.read(cfg).unwrap();
    assert!(rf.is_shared_reset());
    rf.hw_set(cfg, reset ^ 1).unwrap();
    assert!(!rf.is_shared_reset());
    assert_eq!(rf.value(cfg).unwrap(), reset ^ 1);
    rf.reset();
    assert!(rf.is_shared_reset());
    assert_eq!(rf.value(cfg).unwrap(), reset);
}
