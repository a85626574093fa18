//! A packet's descriptors of one side as its in-flight slot holds them:
//! the common single descriptor inline in the slot, longer packets in a
//! vector (host speed: a packet's start and completion touch the slot's
//! lines only, not a separate buffer per side).

use super::Fetched;

/// An all-zero descriptor: the inline place of an empty side.
const NO_PIECE: Fetched = Fetched {
    idx: 0,
    desc: crate::desc::RawDesc {
        word0: 0,
        word1: 0,
        buf_ptr: 0,
    },
};

/// The descriptors of one side of a packet, in order. Up to one is held
/// inline; from two on all of them sit in `more`, whose buffer is kept
/// across packets.
#[derive(Clone, Debug)]
pub(super) struct Pieces {
    /// Descriptors held (`one` when 1, `more` when 2 or more).
    len: u32,
    one: Fetched,
    more: Vec<Fetched>,
}

impl Default for Pieces {
    fn default() -> Self {
        Self {
            len: 0,
            one: NO_PIECE,
            more: Vec::new(),
        }
    }
}

impl Pieces {
    /// Appends a descriptor.
    #[inline]
    pub(super) fn push(&mut self, f: Fetched) {
        match self.len {
            0 => self.one = f,
            1 => {
                self.more.clear();
                self.more.push(self.one);
                self.more.push(f);
            }
            _ => self.more.push(f),
        }
        self.len += 1;
    }

    /// Empties the side, keeping the vector's buffer.
    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.more.clear();
    }

    /// The descriptors, in order.
    #[inline]
    pub(super) fn as_slice(&self) -> &[Fetched] {
        if self.len <= 1 {
            &std::slice::from_ref(&self.one)[..self.len as usize]
        } else {
            &self.more
        }
    }
}

impl std::ops::Deref for Pieces {
    type Target = [Fetched];
    fn deref(&self) -> &[Fetched] {
        self.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn piece(n: u32) -> Fetched {
        Fetched {
            idx: n,
            desc: crate::desc::RawDesc {
                word0: n.wrapping_mul(3),
                word1: !n,
                buf_ptr: u64::from(n) << 20,
            },
        }
    }

    proptest! {
        /// Any sequence of packets (pushes, then a clear, as a slot is
        /// reused) holds exactly what a plain vector holds.
        #[test]
        fn holds_what_a_vector_holds(packets in prop::collection::vec(0usize..6, 1..24)) {
            let mut p = Pieces::default();
            let mut n = 0u32;
            for len in packets {
                let mut reference = Vec::new();
                for _ in 0..len {
                    n += 1;
                    p.push(piece(n));
                    reference.push(piece(n));
                    prop_assert_eq!(format!("{:?}", p.as_slice()), format!("{reference:?}"));
                }
                prop_assert_eq!(p.len(), len);
                p.clear();
                prop_assert!(p.is_empty());
            }
        }
    }
}
