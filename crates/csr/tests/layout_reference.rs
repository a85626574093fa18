//! The offset → register table of every built-in map (built sparsely:
//! only the words of registers are written) against a reference laid out
//! from the register specs alone: every word of every block finds the
//! element the specs put there, in the slot its rank by offset gives, or a
//! hole.
#![allow(clippy::unwrap_used)]

use csr::{CsrAccessError, CsrMap};

/// Checks every word of `map` against the layout its specs give;
/// returns the elements found.
fn check(map: &CsrMap) -> usize {
    let mut checked = 0;
    // Reference: (offset, register, array index) of every element,
    // sorted by offset; an element's slot is its rank.
    let mut reference: Vec<(u64, &str, Option<u32>)> = Vec::new();
    for spec in map.registers() {
        match spec.array() {
            None => reference.push((spec.offset(), spec.name(), None)),
            Some(a) => {
                for i in (0..a.count()).filter(|&i| a.contains(i)) {
                    let offset = spec.offset() + u64::from(i) * a.stride();
                    reference.push((offset, spec.name(), Some(i)));
                }
            }
        }
    }
    reference.sort_by_key(|e| e.0);
    assert_eq!(map.element_count(), reference.len(), "{}", map.block());
    let mut next = reference.iter().enumerate().peekable();
    for offset in (0..map.size()).step_by(4) {
        let got = map.element_at(offset);
        match next.peek() {
            Some(&(slot, &(o, name, index))) if o == offset => {
                let r = got.unwrap();
                assert_eq!(
                    (r.slot(), r.spec().name(), r.index(), r.offset()),
                    (slot, name, index, offset),
                    "{} {offset:#x}",
                    map.block()
                );
                assert_eq!(map.reset_values()[slot], r.spec().reset());
                next.next();
                checked += 1;
            }
            _ => assert!(
                matches!(got, Err(CsrAccessError::Hole { offset: o }) if o == offset),
                "{} {offset:#x}: {got:?}",
                map.block()
            ),
        }
        assert!(map.element_at(offset + 2).is_err());
    }
    assert!(next.next().is_none(), "{}", map.block());
    assert!(map.element_at(map.size()).is_err());
    checked
}

#[test]
fn every_word_of_every_builtin_block_decodes_as_the_specs_say() {
    let catalog = csr::catalog().unwrap();
    let checked: usize = catalog.maps().map(check).sum();
    assert!(checked > 2000);
}

/// Maps not declared in offset order (the built-in ones are): a register
/// declared after arrays above it and interleaved arrays in small blocks
/// (ordered by a scan of the words), interleaved arrays in a large sparse
/// block (ordered by a sort).
#[test]
fn maps_declared_out_of_offset_order() {
    let map = |size: &str, stride: &str, a: &str, b: &str| {
        let text = format!(
            r#"{{"block": "t", "description": "d", "size": "{size}", "source": "s", "registers": [
              {{"name": "A", "offset": "{a}", "access": "RW", "description": "d", "source": "s",
                "array": {{"count": 16, "stride": "{stride}"}}}},
              {{"name": "B", "offset": "{b}", "access": "RW", "description": "d", "source": "s",
                "array": {{"count": 16, "stride": "{stride}"}}}},
              {{"name": "C", "offset": "0x4", "access": "RO", "description": "d", "source": "s"}}
            ]}}"#
        );
        CsrMap::from_json(&text, "t.json").unwrap()
    };
    for m in [
        map("0x400", "0x8", "0x100", "0x200"),
        map("0x100", "0x8", "0x10", "0x14"),
        map("0x10000", "0x1000", "0x10", "0x14"),
    ] {
        assert_eq!(check(&m), 33);
    }
}
