//! `RegFile::value` reads the slot without building the element reference,
//! and `RegFile::value_slot` reads through a slot from `slot_of`: both must
//! give exactly what the element lookup gives, errors included, at every
//! offset of every built-in map (docs/csr-map-format.md).
#![allow(clippy::unwrap_used)]

#[test]
fn value_and_value_slot_match_the_element_lookup_everywhere() {
    let catalog = csr::catalog().unwrap();
    for map in catalog.maps() {
        let mut file = csr::RegFile::new(map);
        // A distinct stored value per element (reserved bits stay 0).
        let offsets: Vec<u64> = map.elements().map(|r| r.offset()).collect();
        for (i, &o) in offsets.iter().enumerate() {
            file.hw_set(o, 0x9E37_79B9u32.wrapping_mul(i as u32 + 1))
                .unwrap();
        }
        let stored: Vec<u32> = file.iter().map(|(_, v)| v).collect();
        for offset in 0..map.size() + 16 {
            let slow = map.element_at(offset).map(|r| stored[r.slot()]);
            let fast = file.value(offset);
            assert_eq!(
                format!("{fast:?}"),
                format!("{slow:?}"),
                "{} at {offset:#x}",
                map.block()
            );
            let by_slot = file.slot_of(offset).and_then(|s| file.value_slot(s));
            assert_eq!(by_slot, slow.ok(), "{} at {offset:#x}", map.block());
        }
        assert_eq!(file.value_slot(csr::HwSlot::default()), None);
    }
}
