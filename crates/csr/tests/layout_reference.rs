//! The offset → register table of every built-in map (built sparsely:
//! only the words of registers are written) against a reference laid out
//! from the register specs alone: every word of every block finds the
//! element the specs put there, in the slot its rank by offset gives, or a
//! hole.
#![allow(clippy::unwrap_used)]

use csr::CsrAccessError;

#[test]
fn every_word_of_every_builtin_block_decodes_as_the_specs_say() {
    let catalog = csr::catalog().unwrap();
    let mut checked = 0;
    for map in catalog.maps() {
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
    }
    assert!(checked > 2000);
}
