//! The CME endian / bit-swap controls (docs/cme.md §1.4).

use cme::Swap;
use proptest::prelude::*;

const BYTE: Swap = Swap {
    byte: true,
    bit: false,
};
const BIT: Swap = Swap {
    byte: false,
    bit: true,
};
const BOTH: Swap = Swap {
    byte: true,
    bit: true,
};

#[test]
fn values_swap_within_the_algorithm_width() {
    assert_eq!(Swap::NONE.value(0x1234_5678, 32), 0x1234_5678);
    assert_eq!(BYTE.value(0x1234_5678, 32), 0x7856_3412);
    assert_eq!(BIT.value(0x0000_0001, 32), 0x8000_0000);
    assert_eq!(BIT.value(0x1234_5678, 32), 0x1E6A_2C48);
    assert_eq!(BOTH.value(0x1234_5678, 32), 0x482C_6A1E);
    // 16-bit results: the low half only, the high half dropped.
    assert_eq!(Swap::NONE.value(0xFFFF_ABCD, 16), 0xABCD);
    assert_eq!(BYTE.value(0x0000_ABCD, 16), 0xCDAB);
    assert_eq!(BIT.value(0x0000_0001, 16), 0x8000);
    // 8-bit: a byte swap is nothing, a bit swap reverses the byte.
    assert_eq!(BYTE.value(0xA5, 8), 0xA5);
    assert_eq!(BIT.value(0x01, 8), 0x80);
    assert_eq!(BIT.value(0x1_0001, 8), 0x80);
}

#[test]
fn data_swaps_bytes_within_each_word_and_bits_within_each_byte() {
    let mut d = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    BYTE.data(&mut d);
    // Whole 4-byte words reversed; the 2-byte tail reversed within itself.
    assert_eq!(d, [4, 3, 2, 1, 8, 7, 6, 5, 10, 9]);
    let mut d = [0x01u8, 0x80, 0x0F];
    BIT.data(&mut d);
    assert_eq!(d, [0x80, 0x01, 0xF0]);
    let mut d = [0x01u8, 0x02, 0x03, 0x04];
    BOTH.data(&mut d);
    assert_eq!(d, [0x20, 0xC0, 0x40, 0x80]);
    let mut d = [7u8, 8];
    Swap::NONE.data(&mut d);
    assert_eq!(d, [7, 8]);
}

proptest! {
    /// Each swap is its own inverse, for values and data alike.
    #[test]
    fn swaps_are_involutions(
        v in any::<u32>(),
        width in prop::sample::select(vec![8u32, 16, 32]),
        byte in any::<bool>(),
        bit in any::<bool>(),
        data in prop::collection::vec(any::<u8>(), 0..40),
    ) {
        let s = Swap { byte, bit };
        let mask = if width == 32 { u32::MAX } else { (1 << width) - 1 };
        prop_assert_eq!(s.value(s.value(v, width), width), v & mask);
        let mut d = data.clone();
        s.data(&mut d);
        s.data(&mut d);
        prop_assert_eq!(d, data);
    }

    /// A 32-bit bit swap is the data bit swap of the value's bytes, byte
    /// order reversed (the value read little-endian).
    #[test]
    fn value_and_data_swaps_agree(v in any::<u32>()) {
        let mut d = v.to_le_bytes();
        BOTH.data(&mut d);
        prop_assert_eq!(u32::from_le_bytes(d), BIT.value(v, 32));
    }
}
