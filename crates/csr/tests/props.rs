//! Property tests of the write/read rules.
#![allow(clippy::unwrap_used)]

use csr::{CsrMap, RegFile};
use proptest::prelude::*;

const MAP: &str = r#"{
  "block": "prop_block", "description": "d", "size": "0x20", "source": "s",
  "registers": [
    { "name": "RW_PLAIN", "offset": "0x0", "access": "RW", "description": "d", "source": "s" },
    { "name": "RW_FIELDS", "offset": "0x4", "access": "RW", "description": "d", "source": "s",
      "fields": [ { "name": "A", "bits": "3:0", "description": "d" },
                  { "name": "S", "bits": "8", "access": "RO", "description": "d" },
                  { "name": "E", "bits": "9", "access": "W1C", "description": "d" },
                  { "name": "B", "bits": "27:16", "description": "d" } ] },
    { "name": "CAUSE", "offset": "0x8", "access": "W1C", "description": "d", "source": "s" }
  ]
}"#;

fn map() -> CsrMap {
    CsrMap::from_json(MAP, "prop.json").unwrap()
}

proptest! {
    #[test]
    fn rw_write_then_read_returns_value_masked_by_writable_bits(
        offset in prop::sample::select(vec![0u64, 4]),
        before in any::<u32>(),
        value in any::<u32>(),
    ) {
        let m = map();
        let mut rf = RegFile::new(&m);
        rf.hw_set(offset, before).unwrap();
        let before = rf.value(offset).unwrap();
        let masks = *m.register_at(offset).unwrap().spec().masks();
        let out = rf.write(offset, value).unwrap();
        let read = rf.read(offset).unwrap().value;
        prop_assert_eq!(read & masks.writable(), value & masks.writable());
        // Non-RW bits never take the written value unless they already had it:
        // RO and reserved bits keep their old value, W1C bits only clear.
        prop_assert_eq!(read & (masks.ro | masks.reserved), before & (masks.ro | masks.reserved));
        prop_assert_eq!(read & masks.w1c & !before, 0);
        prop_assert_eq!(out.new, read);
    }

    #[test]
    fn w1c_never_sets_bits(before in any::<u32>(), writes in prop::collection::vec(any::<u32>(), 1..8)) {
        let m = map();
        let mut rf = RegFile::new(&m);
        rf.hw_set(8, before).unwrap();
        let mut expected = before;
        for w in writes {
            let out = rf.write(8, w).unwrap();
            prop_assert_eq!(out.new & !out.old, 0, "a W1C write set a bit");
            expected &= !w;
            prop_assert_eq!(out.new, expected);
        }
        // The W1C field of a mixed register behaves the same way.
        rf.hw_set(4, before).unwrap();
        let old = rf.value(4).unwrap();
        let out = rf.write(4, !old).unwrap();
        prop_assert_eq!(out.new & (1 << 9) & !old, 0);
    }
}
