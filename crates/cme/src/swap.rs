//! The CME endian / bit-swap controls: four pairs of word-1 bits (result,
//! intermediate value, source data, init value; each a byte swap and a bit
//! swap, docs/references/driver.md §3.3). Their exact semantics are unpublished; the
//! definitions here are the simulator's (docs/cme.md §1.4).

/// One byte-swap / bit-swap pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Swap {
    /// Reverse the byte order (of a value within its width; of data within
    /// each 4-byte word).
    pub byte: bool,
    /// Reverse the bit order (of a value within its width; of data within
    /// each byte).
    pub bit: bool,
}

/// The data word a data byte swap reverses, in bytes.
pub const SWAP_WORD_BYTES: usize = 4;

impl Swap {
    /// Neither swap.
    pub const NONE: Swap = Swap {
        byte: false,
        bit: false,
    };

    /// True when either swap is on.
    #[must_use]
    pub const fn any(self) -> bool {
        self.byte || self.bit
    }

    /// A value of `width_bits` (8, 16 or 32; others read as 32) swapped:
    /// the low `width_bits` of `v`, byte order reversed, then bit order
    /// reversed, within that width; higher bits are dropped.
    #[must_use]
    pub const fn value(self, v: u32, width_bits: u32) -> u32 {
        let width = match width_bits {
            8 | 16 => width_bits,
            _ => 32,
        };
        let mask = if width == 32 {
            u32::MAX
        } else {
            (1 << width) - 1
        };
        let mut v = v & mask;
        if self.byte {
            v = v.swap_bytes() >> (32 - width);
        }
        if self.bit {
            v = v.reverse_bits() >> (32 - width);
        }
        v
    }

    /// Data swapped in place: each whole [`SWAP_WORD_BYTES`]-byte word
    /// byte-reversed (a shorter final word reversed within its length),
    /// then every byte bit-reversed.
    pub fn data(self, data: &mut [u8]) {
        if self.byte {
            for word in data.chunks_mut(SWAP_WORD_BYTES) {
                word.reverse();
            }
        }
        if self.bit {
            for b in data.iter_mut() {
                *b = b.reverse_bits();
            }
        }
    }
}
