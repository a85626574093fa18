//! CRC and checksum algorithms of the CME ("Fast CRC + Memcopy") engine.
//!
//! The hardware's polynomials, reflection and final-XOR conventions are
//! unpublished (docs/references/wiki.md §J.2). Following docs/references/design.md §8, every
//! `SDMA_CMETYPE` value is modelled by the *standard* definition of the
//! algorithm it names; the exact parameters are listed on each
//! [`ChecksumKind`] variant and in `docs/cme.md`.
//!
//! # Register model
//!
//! Every algorithm is a small state machine whose *raw register* is a
//! `u32` (narrower algorithms use the low bits). [`Checksum::new`] presets
//! the register either with the algorithm's standard initial value (`None`)
//! or with a hardware initial-value (IV) register (`Some(iv)`), mapped as
//! follows:
//!
//! | kind | register preset from `iv` | `iv = 0xFFFF_FFFF` gives |
//! |---|---|---|
//! | CRC32, CRC32C | all 32 bits | the standard init (identical results) |
//! | CRC16 | bits 15:0 | preset 0xFFFF = CRC-16/MODBUS |
//! | CRC8 | bits 7:0 | preset 0xFF (CRC-8, poly 0x07, init 0xFF; unnamed) |
//! | CKSUM16 | bits 15:0 as the initial ones'-complement sum | 0xFFFF ("negative zero"): same as RFC 1071 unless the data sums to zero |
//! | CKSUM32 | all 32 bits as the initial sum | sum − 1 (mod 2³²) |
//! | CKSUM32_ADLER | A = bits 15:0 mod 65521, B = bits 31:16 mod 65521 | A = B = 14 |
//!
//! The raw register is what [`Checksum::state`] saves and
//! [`Checksum::from_state`] restores; [`Checksum::finish`] applies the
//! final transformation (final XOR, ones' complement, packing) without
//! consuming the state, so a computation can continue after a `finish`.

use serde::{Deserialize, Serialize};

/// Reset value of the per-queue CRC initial-value registers
/// (`tdma_model.notific_cfg_per_queue[q].m2s_crc_init` / `s2m_crc_init`,
/// docs/references/wiki.md §J.1). Pass it as `Checksum::new(kind, Some(HW_CRC_INIT))` to
/// model a queue whose IV was never reprogrammed.
pub const HW_CRC_INIT: u32 = 0xFFFF_FFFF;

/// Number of cached CRC IV slots addressed by the descriptor's
/// `cached_crc_iv_index` field (3 bits, docs/references/wiki.md §J.1).
pub const CRC_IV_CACHE_SLOTS: usize = 8;

/// The 3-bit `SDMA_CMETYPE` field (`op_type`, WORD1 bits 22:20) of a CME
/// descriptor (P9.1 §3; docs/references/wiki.md §J.1).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum CmeType {
    /// 0: plain copy, no checksum.
    Copy,
    /// 1..=7: copy (optionally) and compute the named checksum.
    Checksum(ChecksumKind),
}

impl CmeType {
    /// Decodes the 3-bit field. Only the low three bits of `code` are
    /// looked at, so every input decodes.
    #[must_use]
    pub const fn from_code(code: u8) -> CmeType {
        match ChecksumKind::from_code(code & 0x7) {
            Some(kind) => CmeType::Checksum(kind),
            None => CmeType::Copy,
        }
    }

    /// The field value (0..=7).
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            CmeType::Copy => 0,
            CmeType::Checksum(kind) => kind.code(),
        }
    }

    /// The checksum this type computes, `None` for COPY.
    #[must_use]
    pub const fn checksum_kind(self) -> Option<ChecksumKind> {
        match self {
            CmeType::Copy => None,
            CmeType::Checksum(kind) => Some(kind),
        }
    }
}

/// A checksum algorithm selectable by `SDMA_CMETYPE` (codes 1..=7).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum ChecksumKind {
    /// 1: CRC-32/ISO-HDLC (the zlib / Ethernet CRC): width 32, poly
    /// 0x04C11DB7 (reflected 0xEDB88320), init 0xFFFFFFFF, refin/refout,
    /// xorout 0xFFFFFFFF, check 0xCBF43926.
    Crc32,
    /// 2: CRC-32/ISCSI (Castagnoli, "CRC-32C"): width 32, poly 0x1EDC6F41
    /// (reflected 0x82F63B78), init 0xFFFFFFFF, refin/refout, xorout
    /// 0xFFFFFFFF, check 0xE3069283.
    Crc32c,
    /// 3: 16-bit ones'-complement Internet checksum (RFC 1071) over
    /// big-endian 16-bit words (byte `2k` is the high byte of word `k`); an
    /// odd tail byte is padded with a zero low byte. Result is the ones'
    /// complement of the folded sum; check 0xF62A.
    Cksum16,
    /// 4: simulator-defined 32-bit checksum: wrapping (mod 2³²) sum of
    /// little-endian 32-bit words (byte `4k + j` is bits `8j+7 .. 8j` of word
    /// `k`); a partial tail word is zero-padded. No final transformation;
    /// check 0x6C6A689F.
    Cksum32,
    /// 5: CRC-16/ARC: width 16, poly 0x8005 (reflected 0xA001), init 0,
    /// refin/refout, xorout 0, check 0xBB3D.
    Crc16,
    /// 6: Adler-32 (RFC 1950): A = 1 + Σ bytes, B = Σ A after each byte, both
    /// mod 65521, result (B << 16) | A; check 0x091E01DE.
    Cksum32Adler,
    /// 7: CRC-8/SMBUS: width 8, poly 0x07, init 0, refin/refout false,
    /// xorout 0, check 0xF4.
    Crc8,
}

impl ChecksumKind {
    /// All seven kinds in `SDMA_CMETYPE` order.
    pub const ALL: [ChecksumKind; 7] = [
        ChecksumKind::Crc32,
        ChecksumKind::Crc32c,
        ChecksumKind::Cksum16,
        ChecksumKind::Cksum32,
        ChecksumKind::Crc16,
        ChecksumKind::Cksum32Adler,
        ChecksumKind::Crc8,
    ];

    /// Decodes an `SDMA_CMETYPE` value; `None` for 0 (COPY) and values > 7.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<ChecksumKind> {
        match code {
            1 => Some(ChecksumKind::Crc32),
            2 => Some(ChecksumKind::Crc32c),
            3 => Some(ChecksumKind::Cksum16),
            4 => Some(ChecksumKind::Cksum32),
            5 => Some(ChecksumKind::Crc16),
            6 => Some(ChecksumKind::Cksum32Adler),
            7 => Some(ChecksumKind::Crc8),
            _ => None,
        }
    }

    /// The `SDMA_CMETYPE` value (1..=7).
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            ChecksumKind::Crc32 => 1,
            ChecksumKind::Crc32c => 2,
            ChecksumKind::Cksum16 => 3,
            ChecksumKind::Cksum32 => 4,
            ChecksumKind::Crc16 => 5,
            ChecksumKind::Cksum32Adler => 6,
            ChecksumKind::Crc8 => 7,
        }
    }

    /// The `SDMA_CMETYPE` enumerator name, e.g. `"CRC32C"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ChecksumKind::Crc32 => "CRC32",
            ChecksumKind::Crc32c => "CRC32C",
            ChecksumKind::Cksum16 => "CKSUM16",
            ChecksumKind::Cksum32 => "CKSUM32",
            ChecksumKind::Crc16 => "CRC16",
            ChecksumKind::Cksum32Adler => "CKSUM32_ADLER",
            ChecksumKind::Crc8 => "CRC8",
        }
    }

    /// The standard algorithm this kind is modelled by, e.g.
    /// `"CRC-32/ISCSI"`.
    #[must_use]
    pub const fn algorithm(self) -> &'static str {
        match self {
            ChecksumKind::Crc32 => "CRC-32/ISO-HDLC",
            ChecksumKind::Crc32c => "CRC-32/ISCSI",
            ChecksumKind::Cksum16 => "RFC 1071 Internet checksum (big-endian words)",
            ChecksumKind::Cksum32 => "32-bit sum of little-endian words (simulator-defined)",
            ChecksumKind::Crc16 => "CRC-16/ARC",
            ChecksumKind::Cksum32Adler => "Adler-32 (RFC 1950)",
            ChecksumKind::Crc8 => "CRC-8/SMBUS",
        }
    }

    /// Width of the result in bits (8, 16 or 32); results are zero-extended
    /// to `u32`.
    #[must_use]
    pub const fn width_bits(self) -> u32 {
        match self {
            ChecksumKind::Crc32
            | ChecksumKind::Crc32c
            | ChecksumKind::Cksum32
            | ChecksumKind::Cksum32Adler => 32,
            ChecksumKind::Cksum16 | ChecksumKind::Crc16 => 16,
            ChecksumKind::Crc8 => 8,
        }
    }

    /// The raw register value the standard definition starts from (what
    /// `Checksum::new(kind, None)` presets): 0xFFFFFFFF for the CRC-32
    /// family, 1 for Adler-32 (A = 1, B = 0), 0 otherwise.
    #[must_use]
    pub const fn standard_init(self) -> u32 {
        match self {
            ChecksumKind::Crc32 | ChecksumKind::Crc32c => 0xFFFF_FFFF,
            ChecksumKind::Cksum32Adler => 1,
            ChecksumKind::Cksum16
            | ChecksumKind::Cksum32
            | ChecksumKind::Crc16
            | ChecksumKind::Crc8 => 0,
        }
    }

    /// Word size in bytes for the position-dependent sums (2 for CKSUM16, 4
    /// for CKSUM32); 1 for the byte-serial algorithms.
    #[must_use]
    pub const fn word_bytes(self) -> u8 {
        match self {
            ChecksumKind::Cksum16 => 2,
            ChecksumKind::Cksum32 => 4,
            _ => 1,
        }
    }
}

impl TryFrom<u8> for ChecksumKind {
    type Error = u8;

    /// Like [`ChecksumKind::from_code`]; the error is the rejected code.
    fn try_from(code: u8) -> Result<Self, Self::Error> {
        ChecksumKind::from_code(code).ok_or(code)
    }
}

/// A saved intermediate checksum: what "store the CRC result as the next
/// IV" keeps between descriptors.
///
/// `value` is the raw register (see the module docs): for the CRCs the
/// shift register *before* the final XOR, for CKSUM16 the folded 16-bit
/// ones'-complement sum *before* complementing, for CKSUM32 the sum, for
/// Adler-32 `(B << 16) | A`. `phase` is the number of bytes consumed modulo
/// [`ChecksumKind::word_bytes`] (always 0 for the byte-serial algorithms);
/// it lets a CKSUM16/CKSUM32 computation resume exactly in the middle of a
/// word. A hardware IV register holds only `value`; restoring it with
/// `phase = 0` is the same as `Checksum::new(kind, Some(value))`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChecksumState {
    /// The algorithm.
    pub kind: ChecksumKind,
    /// Raw register value.
    pub value: u32,
    /// Bytes consumed modulo the word size.
    pub phase: u8,
}

impl ChecksumState {
    /// The word-aligned state whose [`Checksum::finish`] is `result`: the
    /// inverse of the final transformation (XOR with 0xFFFFFFFF for the
    /// CRC-32 family, ones' complement for CKSUM16, identity otherwise).
    /// Use it when a *finished* checksum is fed back as the next IV and the
    /// computation must continue as if uninterrupted.
    #[must_use]
    pub const fn from_result(kind: ChecksumKind, result: u32) -> ChecksumState {
        let value = match kind {
            ChecksumKind::Crc32 | ChecksumKind::Crc32c => result ^ 0xFFFF_FFFF,
            ChecksumKind::Cksum16 => !result & 0xFFFF,
            ChecksumKind::Crc16 => result & 0xFFFF,
            ChecksumKind::Crc8 => result & 0xFF,
            ChecksumKind::Cksum32 | ChecksumKind::Cksum32Adler => result,
        };
        ChecksumState {
            kind,
            value,
            phase: 0,
        }
    }
}

/// Adler-32 modulus (largest prime below 2¹⁶).
const ADLER_MOD: u32 = 65_521;
/// Largest n such that 255·n·(n+1)/2 + (n+1)·(ADLER_MOD−1) < 2³² (RFC 1950
/// reference bound): bytes that can be summed before reducing.
const ADLER_NMAX: usize = 5552;

/// Builds the 8 slicing tables of a reflected 32-bit CRC.
const fn crc32_reflected_tables(poly: u32) -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
            bit += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// Table of a reflected 16-bit CRC (byte at a time).
const fn crc16_reflected_table(poly: u16) -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u16;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
            bit += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// Table of a non-reflected 8-bit CRC.
const fn crc8_table(poly: u8) -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u8;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 0x80 != 0 {
                (c << 1) ^ poly
            } else {
                c << 1
            };
            bit += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC32_TABLES: [[u32; 256]; 8] = crc32_reflected_tables(0xEDB8_8320);
static CRC32C_TABLES: [[u32; 256]; 8] = crc32_reflected_tables(0x82F6_3B78);
static CRC16_TABLE: [u16; 256] = crc16_reflected_table(0xA001);
static CRC8_TABLE: [u8; 256] = crc8_table(0x07);

/// Slicing-by-8 update of a reflected 32-bit CRC register.
fn crc32_update(tables: &[[u32; 256]; 8], mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = tables[7][(lo & 0xFF) as usize]
            ^ tables[6][((lo >> 8) & 0xFF) as usize]
            ^ tables[5][((lo >> 16) & 0xFF) as usize]
            ^ tables[4][(lo >> 24) as usize]
            ^ tables[3][(hi & 0xFF) as usize]
            ^ tables[2][((hi >> 8) & 0xFF) as usize]
            ^ tables[1][((hi >> 16) & 0xFF) as usize]
            ^ tables[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ tables[0][((crc ^ u32::from(b)) & 0xFF) as usize];
    }
    crc
}

/// Folds a ones'-complement accumulator to 16 bits (end-around carry).
fn fold16(mut sum: u64) -> u32 {
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    // `sum` is at most 0xFFFF here.
    (sum & 0xFFFF) as u32
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Inner {
    Crc32(u32),
    Crc32c(u32),
    Crc16(u16),
    Crc8(u8),
    /// Unfolded ones'-complement sum; `odd` = an odd number of bytes seen.
    Cksum16 {
        sum: u64,
        odd: bool,
    },
    /// Wrapping sum; `phase` = bytes seen mod 4.
    Cksum32 {
        sum: u32,
        phase: u8,
    },
    /// Adler-32 halves, both kept below [`ADLER_MOD`].
    Adler {
        a: u32,
        b: u32,
    },
}

/// A streaming checksum computation.
///
/// ```
/// use cme::{Checksum, ChecksumKind, checksum};
/// let mut c = Checksum::new(ChecksumKind::Crc32, None);
/// c.update(b"1234");
/// c.update(b"56789");
/// assert_eq!(c.finish(), 0xCBF4_3926);
/// assert_eq!(checksum(ChecksumKind::Crc32, b"123456789"), 0xCBF4_3926);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checksum {
    inner: Inner,
}

impl Checksum {
    /// Starts a computation. `init = None` presets the register with the
    /// standard initial value ([`ChecksumKind::standard_init`]);
    /// `Some(iv)` presets it from a hardware IV register as described in the
    /// module docs (only the low 16 / 8 bits are used by the 16- / 8-bit
    /// algorithms; Adler-32 reduces each half mod 65521).
    #[must_use]
    pub fn new(kind: ChecksumKind, init: Option<u32>) -> Checksum {
        let value = init.unwrap_or(kind.standard_init());
        Checksum::from_state(ChecksumState {
            kind,
            value,
            phase: 0,
        })
    }

    /// Resumes a computation saved with [`Checksum::state`]. Out-of-range
    /// fields are normalised, never rejected: `value` is truncated to the
    /// algorithm's width (Adler-32 halves reduced mod 65521) and `phase` is
    /// taken modulo the word size.
    #[must_use]
    pub fn from_state(state: ChecksumState) -> Checksum {
        let v = state.value;
        let inner = match state.kind {
            ChecksumKind::Crc32 => Inner::Crc32(v),
            ChecksumKind::Crc32c => Inner::Crc32c(v),
            ChecksumKind::Crc16 => Inner::Crc16((v & 0xFFFF) as u16),
            ChecksumKind::Crc8 => Inner::Crc8((v & 0xFF) as u8),
            ChecksumKind::Cksum16 => Inner::Cksum16 {
                sum: u64::from(v & 0xFFFF),
                odd: state.phase % 2 == 1,
            },
            ChecksumKind::Cksum32 => Inner::Cksum32 {
                sum: v,
                phase: state.phase % 4,
            },
            ChecksumKind::Cksum32Adler => Inner::Adler {
                a: (v & 0xFFFF) % ADLER_MOD,
                b: (v >> 16) % ADLER_MOD,
            },
        };
        Checksum { inner }
    }

    /// The algorithm.
    #[must_use]
    pub const fn kind(&self) -> ChecksumKind {
        match self.inner {
            Inner::Crc32(_) => ChecksumKind::Crc32,
            Inner::Crc32c(_) => ChecksumKind::Crc32c,
            Inner::Crc16(_) => ChecksumKind::Crc16,
            Inner::Crc8(_) => ChecksumKind::Crc8,
            Inner::Cksum16 { .. } => ChecksumKind::Cksum16,
            Inner::Cksum32 { .. } => ChecksumKind::Cksum32,
            Inner::Adler { .. } => ChecksumKind::Cksum32Adler,
        }
    }

    /// Feeds bytes, in order.
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.inner {
            Inner::Crc32(crc) => *crc = crc32_update(&CRC32_TABLES, *crc, data),
            Inner::Crc32c(crc) => *crc = crc32_update(&CRC32C_TABLES, *crc, data),
            Inner::Crc16(crc) => {
                for &b in data {
                    *crc = (*crc >> 8) ^ CRC16_TABLE[usize::from((*crc as u8) ^ b)];
                }
            }
            Inner::Crc8(crc) => {
                for &b in data {
                    *crc = CRC8_TABLE[usize::from(*crc ^ b)];
                }
            }
            Inner::Cksum16 { sum, odd } => cksum16_update(sum, odd, data),
            Inner::Cksum32 { sum, phase } => cksum32_update(sum, phase, data),
            Inner::Adler { a, b } => adler_update(a, b, data),
        }
    }

    /// The checksum of everything fed so far (zero-extended to `u32`). Does
    /// not consume or change the state.
    #[must_use]
    pub fn finish(&self) -> u32 {
        match self.inner {
            Inner::Crc32(crc) | Inner::Crc32c(crc) => crc ^ 0xFFFF_FFFF,
            Inner::Crc16(crc) => u32::from(crc),
            Inner::Crc8(crc) => u32::from(crc),
            Inner::Cksum16 { sum, .. } => !fold16(sum) & 0xFFFF,
            Inner::Cksum32 { sum, .. } => sum,
            Inner::Adler { a, b } => (b << 16) | a,
        }
    }

    /// The raw intermediate state, for [`Checksum::from_state`].
    #[must_use]
    pub fn state(&self) -> ChecksumState {
        let kind = self.kind();
        let (value, phase) = match self.inner {
            Inner::Crc32(crc) | Inner::Crc32c(crc) => (crc, 0),
            Inner::Crc16(crc) => (u32::from(crc), 0),
            Inner::Crc8(crc) => (u32::from(crc), 0),
            Inner::Cksum16 { sum, odd } => (fold16(sum), u8::from(odd)),
            Inner::Cksum32 { sum, phase } => (sum, phase),
            Inner::Adler { a, b } => ((b << 16) | a, 0),
        };
        ChecksumState { kind, value, phase }
    }
}

fn cksum16_update(sum: &mut u64, odd: &mut bool, mut data: &[u8]) {
    if *odd && let Some((&first, rest)) = data.split_first() {
        // Second byte of a big-endian word: the low byte.
        *sum += u64::from(first);
        *odd = false;
        data = rest;
    }
    // Fold every 64 KiB so the accumulator can never overflow.
    for block in data.chunks(1 << 16) {
        let mut words = block.chunks_exact(2);
        let mut s = 0u64;
        for w in &mut words {
            s += u64::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [last] = words.remainder() {
            s += u64::from(*last) << 8;
            *odd = true;
        }
        *sum = u64::from(fold16(*sum + s));
    }
}

fn cksum32_update(sum: &mut u32, phase: &mut u8, mut data: &[u8]) {
    // Bytes until the next word boundary go in one by one.
    while *phase != 0 {
        let Some((&b, rest)) = data.split_first() else {
            return;
        };
        *sum = sum.wrapping_add(u32::from(b) << (8 * u32::from(*phase)));
        *phase = (*phase + 1) % 4;
        data = rest;
    }
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        *sum = sum.wrapping_add(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    }
    for &b in words.remainder() {
        *sum = sum.wrapping_add(u32::from(b) << (8 * u32::from(*phase)));
        *phase += 1;
    }
}

fn adler_update(a: &mut u32, b: &mut u32, data: &[u8]) {
    for block in data.chunks(ADLER_NMAX) {
        for &byte in block {
            *a += u32::from(byte);
            *b += *a;
        }
        *a %= ADLER_MOD;
        *b %= ADLER_MOD;
    }
}

/// One-shot checksum of `data` with the standard initial value.
#[must_use]
pub fn checksum(kind: ChecksumKind, data: &[u8]) -> u32 {
    let mut c = Checksum::new(kind, None);
    c.update(data);
    c.finish()
}

/// One-shot checksum of `data` starting from a hardware IV register value
/// (see [`Checksum::new`] for how `iv` maps onto each algorithm).
#[must_use]
pub fn checksum_with_iv(kind: ChecksumKind, iv: u32, data: &[u8]) -> u32 {
    let mut c = Checksum::new(kind, Some(iv));
    c.update(data);
    c.finish()
}
