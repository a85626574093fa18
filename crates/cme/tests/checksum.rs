#![allow(clippy::unwrap_used)]

use cme::{
    Checksum, ChecksumKind, ChecksumState, CmeType, HW_CRC_INIT, checksum, checksum_with_iv,
};
use proptest::prelude::*;

use ChecksumKind::{Cksum16, Cksum32, Cksum32Adler, Crc8, Crc16, Crc32, Crc32c};

/// The 4 KiB test pattern: byte i = (7i + 3) mod 251.
fn pattern_4k() -> Vec<u8> {
    (0..4096u32).map(|i| ((i * 7 + 3) % 251) as u8).collect()
}

/// Expected values (computed independently with a bitwise Python model of
/// each catalogue definition, cross-checked against zlib for CRC32 and
/// Adler-32), in `ChecksumKind::ALL` order.
struct Vectors {
    data: Vec<u8>,
    standard: [u32; 7],
    hw_iv: [u32; 7],
}

fn vectors() -> Vec<Vectors> {
    vec![
        Vectors {
            data: b"123456789".to_vec(),
            standard: [
                0xCBF4_3926,
                0xE306_9283,
                0xF62A,
                0x6C6A_689F,
                0xBB3D,
                0x091E_01DE,
                0xF4,
            ],
            hw_iv: [
                0xCBF4_3926,
                0xE306_9283,
                0xF62A,
                0x6C6A_689E,
                0x4B37, // CRC-16/MODBUS check value
                0x09A1_01EB,
                0xFB,
            ],
        },
        Vectors {
            data: Vec::new(),
            standard: [0, 0, 0xFFFF, 0, 0, 1, 0],
            hw_iv: [0, 0, 0, 0xFFFF_FFFF, 0xFFFF, 0x000E_000E, 0xFF],
        },
        Vectors {
            data: pattern_4k(),
            standard: [
                0x80E3_A247,
                0x7C1B_5BBF,
                0xFAE3,
                0x1A8D_FF81,
                0xCFDF,
                0x3A45_CDB6,
                0x3D,
            ],
            hw_iv: [
                0x80E3_A247,
                0x7C1B_5BBF,
                0xFAE3,
                0x1A8D_FF80,
                0x1021,
                0x0A62_CDC3,
                0xC8,
            ],
        },
    ]
}

#[test]
fn known_vectors_standard_init() {
    for v in vectors() {
        for (kind, want) in ChecksumKind::ALL.iter().zip(v.standard) {
            assert_eq!(
                checksum(*kind, &v.data),
                want,
                "{} over {} bytes",
                kind.name(),
                v.data.len()
            );
        }
    }
}

#[test]
fn known_vectors_hardware_iv() {
    for v in vectors() {
        for (kind, want) in ChecksumKind::ALL.iter().zip(v.hw_iv) {
            assert_eq!(
                checksum_with_iv(*kind, HW_CRC_INIT, &v.data),
                want,
                "{} over {} bytes with IV 0xFFFFFFFF",
                kind.name(),
                v.data.len()
            );
        }
    }
}

#[test]
fn crc32_family_hw_iv_is_standard_init() {
    for kind in [Crc32, Crc32c] {
        assert_eq!(kind.standard_init(), HW_CRC_INIT);
        assert_eq!(
            Checksum::new(kind, None).state(),
            Checksum::new(kind, Some(HW_CRC_INIT)).state()
        );
    }
}

#[test]
fn iv_uses_only_the_documented_bits() {
    let data = b"some payload";
    // Upper bits are ignored by the 16- and 8-bit algorithms.
    for (kind, keep) in [(Crc16, 0xFFFF), (Cksum16, 0xFFFF), (Crc8, 0xFF)] {
        assert_eq!(
            checksum_with_iv(kind, 0x1234_5678, data),
            checksum_with_iv(kind, 0x1234_5678 & keep, data),
            "{}",
            kind.name()
        );
    }
    // Adler halves are reduced mod 65521.
    assert_eq!(
        checksum_with_iv(Cksum32Adler, 0xFFFF_FFFF, data),
        checksum_with_iv(Cksum32Adler, (14 << 16) | 14, data)
    );
    // IV 1 is the standard Adler init.
    assert_eq!(
        checksum_with_iv(Cksum32Adler, 1, data),
        checksum(Cksum32Adler, data)
    );
}

#[test]
fn codes_round_trip() {
    for kind in ChecksumKind::ALL {
        assert_eq!(ChecksumKind::from_code(kind.code()), Some(kind));
        assert_eq!(CmeType::from_code(kind.code()), CmeType::Checksum(kind));
        assert_eq!(ChecksumKind::try_from(kind.code()), Ok(kind));
    }
    assert_eq!(ChecksumKind::from_code(0), None);
    assert_eq!(ChecksumKind::from_code(8), None);
    assert_eq!(CmeType::from_code(0), CmeType::Copy);
    assert_eq!(CmeType::Copy.code(), 0);
    assert_eq!(CmeType::Copy.checksum_kind(), None);
    // Only 3 bits are decoded.
    assert_eq!(CmeType::from_code(0x09), CmeType::Checksum(Crc32));
    let codes: Vec<u8> = ChecksumKind::ALL.iter().map(|k| k.code()).collect();
    assert_eq!(codes, [1, 2, 3, 4, 5, 6, 7]);
}

/// Bitwise reflected CRC-32, one bit at a time (the slow reference).
fn crc32_bitwise(poly_reflected: u32, data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ poly_reflected
            } else {
                crc >> 1
            };
        }
    }
    crc ^ 0xFFFF_FFFF
}

/// Bitwise MSB-first CRC-32 with the normal-form polynomial: a second,
/// differently structured reference.
fn crc32_bitwise_msb_first(poly: u32, data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b.reverse_bits()) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ poly
            } else {
                crc << 1
            };
        }
    }
    crc.reverse_bits() ^ 0xFFFF_FFFF
}

#[test]
fn crc32_of_1mib_matches_bitwise_reference() {
    // A simple xorshift stream so every byte value and alignment occurs.
    let mut x = 0x9E37_79B9u32;
    let data: Vec<u8> = (0..(1 << 20))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect();
    assert_eq!(checksum(Crc32, &data), crc32_bitwise(0xEDB8_8320, &data));
    assert_eq!(checksum(Crc32c, &data), crc32_bitwise(0x82F6_3B78, &data));
    // Odd-offset, odd-length slice exercises the slicing-by-8 tail path.
    let tail = &data[3..data.len() - 5];
    assert_eq!(
        checksum(Crc32, tail),
        crc32_bitwise_msb_first(0x04C1_1DB7, tail)
    );
    assert_eq!(
        checksum(Crc32c, tail),
        crc32_bitwise_msb_first(0x1EDC_6F41, tail)
    );
}

#[test]
fn finish_does_not_consume() {
    let mut c = Checksum::new(Crc32, None);
    c.update(b"1234");
    let _ = c.finish();
    c.update(b"56789");
    assert_eq!(c.finish(), 0xCBF4_3926);
    assert_eq!(c.finish(), 0xCBF4_3926);
}

#[test]
fn result_fed_back_as_state_continues() {
    let data = pattern_4k();
    let (a, b) = data.split_at(1000);
    for kind in ChecksumKind::ALL {
        let mut first = Checksum::new(kind, None);
        first.update(a);
        let mut next = Checksum::from_state(ChecksumState::from_result(kind, first.finish()));
        next.update(b);
        assert_eq!(next.finish(), checksum(kind, &data), "{}", kind.name());
    }
}

#[test]
fn cksum_phase_is_saved_and_restored() {
    // Split inside a word: the phase must survive the state round trip.
    for kind in [Cksum16, Cksum32] {
        let data = b"abcdefghijk";
        let mut c = Checksum::new(kind, None);
        c.update(&data[..3]);
        let s = c.state();
        assert_eq!(s.phase, 3 % kind.word_bytes());
        let mut r = Checksum::from_state(s);
        r.update(&data[3..]);
        assert_eq!(r.finish(), checksum(kind, data));
    }
}

#[test]
fn large_cksum16_does_not_overflow() {
    let data = vec![0xFFu8; 300_000];
    // Sum of 0xFFFF words folds to 0xFFFF, complemented: 0.
    assert_eq!(checksum(Cksum16, &data), 0);
    let data = vec![0x01u8; 3 << 16];
    let words = (3u64 << 16) / 2;
    let mut s = words * 0x0101;
    while s > 0xFFFF {
        s = (s & 0xFFFF) + (s >> 16);
    }
    assert_eq!(u64::from(checksum(Cksum16, &data)), !s & 0xFFFF);
}

fn kind_strategy() -> impl Strategy<Value = ChecksumKind> {
    prop::sample::select(ChecksumKind::ALL.to_vec())
}

proptest! {
    #[test]
    fn streaming_equals_one_shot(
        kind in kind_strategy(),
        data in prop::collection::vec(any::<u8>(), 0..3000),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        iv in prop::option::of(any::<u32>()),
    ) {
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(data.len() + 1)).collect();
        points.sort_unstable();
        let mut c = Checksum::new(kind, iv);
        let mut start = 0;
        for p in points {
            c.update(&data[start..p]);
            start = p;
        }
        c.update(&data[start..]);
        let mut one = Checksum::new(kind, iv);
        one.update(&data);
        prop_assert_eq!(c.finish(), one.finish());
        prop_assert_eq!(c.state(), one.state());
    }

    #[test]
    fn resume_from_state_equals_uninterrupted(
        kind in kind_strategy(),
        data in prop::collection::vec(any::<u8>(), 0..2000),
        cut in any::<prop::sample::Index>(),
    ) {
        let cut = cut.index(data.len() + 1);
        let mut a = Checksum::new(kind, None);
        a.update(&data[..cut]);
        let saved = a.state();
        let mut b = Checksum::from_state(saved);
        prop_assert_eq!(b.state(), saved);
        b.update(&data[cut..]);
        prop_assert_eq!(b.finish(), checksum(kind, &data));
    }

    #[test]
    fn from_state_never_panics_and_fits_width(
        kind in kind_strategy(),
        value in any::<u32>(),
        phase in any::<u8>(),
        data in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut c = Checksum::from_state(ChecksumState { kind, value, phase });
        c.update(&data);
        let r = c.finish();
        if kind.width_bits() < 32 {
            prop_assert!(r < (1 << kind.width_bits()));
        }
        prop_assert!(c.state().phase < kind.word_bytes());
    }
}
