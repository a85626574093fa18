//! A deterministic random source and the mutations the campaign applies:
//! bytes (flip, set, insert, delete, duplicate), tokens (a number replaced
//! by a boundary value, a word by another word of the corpus) and lines
//! (deleted, repeated, moved, taken from another seed), and splices.

/// SplitMix64: small, fast and the same sequence on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One element of `items` (None when empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }

    /// A value near a boundary of some integer width, or plain random.
    pub fn interesting_u64(&mut self) -> u64 {
        let bits = [1u32, 7, 8, 12, 15, 16, 24, 31, 32, 47, 48, 63, 64];
        match self.below(6) {
            0 => self.below(17) as u64,
            1 => {
                let b = *self.pick(&bits).unwrap_or(&32);
                (1u64.checked_shl(b).unwrap_or(0)).wrapping_sub(1)
            }
            2 => 1u64 << (self.below(64)),
            3 => (1u64 << self.below(64)).wrapping_add(self.below(3) as u64),
            4 => u64::MAX - self.below(3) as u64,
            _ => self.next_u64(),
        }
    }
}

/// Number texts that overflow, are negative, fractional or odd spellings.
const ODD_NUMBERS: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "-1",
    "-9223372036854775808",
    "0.5",
    "1e308",
    "1e400",
    "0x",
    "0xFFFFFFFFFFFFFFFFF",
    "00",
    "4294967296",
    "4294967295",
    "65536",
    "100000",
    "32000000",
    "1_000",
    "0b101",
    "NaN",
];

/// Applies 1–4 random mutations to `input`, using `dict` (words and lines
/// of the corpus) and `others` (the other seeds) as material. The result
/// has at most `max_len` bytes.
pub fn mutate(
    rng: &mut Rng,
    input: &[u8],
    dict: &[Vec<u8>],
    others: &[Vec<u8>],
    max_len: usize,
) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(12) {
            0 => flip_bit(rng, &mut out),
            1 => set_byte(rng, &mut out),
            2 => insert_bytes(rng, &mut out),
            3 => delete_range(rng, &mut out),
            4 => duplicate_range(rng, &mut out),
            5 | 6 => replace_number(rng, &mut out),
            7 => replace_word(rng, &mut out, dict),
            8 => line_edit(rng, &mut out, others),
            9 => {
                if let Some(other) = rng.pick(others) {
                    out = splice(rng, &out, other);
                }
            }
            10 => insert_dict(rng, &mut out, dict),
            _ => repeat_tail(rng, &mut out),
        }
        out.truncate(max_len);
    }
    out
}

fn flip_bit(rng: &mut Rng, b: &mut [u8]) {
    if !b.is_empty() {
        let i = rng.below(b.len());
        b[i] ^= 1 << rng.below(8);
    }
}

fn set_byte(rng: &mut Rng, b: &mut [u8]) {
    if !b.is_empty() {
        let i = rng.below(b.len());
        let special = [
            0u8, 0xFF, 0x7F, 0x80, b'\n', b'"', b'[', b']', b'{', b'}', b',', 0xC3,
        ];
        b[i] = if rng.one_in(2) {
            *rng.pick(&special).unwrap_or(&0)
        } else {
            rng.next_u64() as u8
        };
    }
}

fn insert_bytes(rng: &mut Rng, b: &mut Vec<u8>) {
    let at = rng.below(b.len() + 1);
    let n = 1 + rng.below(8);
    let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
    b.splice(at..at, bytes);
}

fn delete_range(rng: &mut Rng, b: &mut Vec<u8>) {
    if !b.is_empty() {
        let at = rng.below(b.len());
        let n = 1 + rng.below((b.len() - at).min(64));
        b.drain(at..at + n);
    }
}

fn duplicate_range(rng: &mut Rng, b: &mut Vec<u8>) {
    if !b.is_empty() {
        let at = rng.below(b.len());
        let n = 1 + rng.below((b.len() - at).min(256));
        let chunk = b[at..at + n].to_vec();
        let to = rng.below(b.len() + 1);
        b.splice(to..to, chunk);
    }
}

fn repeat_tail(rng: &mut Rng, b: &mut Vec<u8>) {
    if !b.is_empty() {
        let at = rng.below(b.len());
        let chunk = b[at..].to_vec();
        for _ in 0..1 + rng.below(4) {
            b.extend_from_slice(&chunk);
        }
    }
}

/// The byte ranges of numbers (decimal or `0x` hex) in `b`.
fn numbers(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric());
        if starts {
            let s = i;
            if b[i] == b'0' && b.get(i + 1).is_some_and(|&c| c == b'x' || c == b'X') {
                i += 2;
                while i < b.len() && (b[i].is_ascii_hexdigit() || b[i] == b'_') {
                    i += 1;
                }
            } else {
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
                    i += 1;
                }
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

fn replace_number(rng: &mut Rng, b: &mut Vec<u8>) {
    let nums = numbers(b);
    let Some(&(s, e)) = rng.pick(&nums) else {
        return;
    };
    let hex = b[s..e].starts_with(b"0x");
    let text = match rng.below(4) {
        0 => rng.pick(ODD_NUMBERS).unwrap_or(&"0").to_string(),
        _ => {
            let v = rng.interesting_u64();
            if hex {
                format!("{v:#x}")
            } else {
                v.to_string()
            }
        }
    };
    b.splice(s..e, text.into_bytes());
}

fn replace_word(rng: &mut Rng, b: &mut Vec<u8>, dict: &[Vec<u8>]) {
    let mut words = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            words.push((s, i));
        } else {
            i += 1;
        }
    }
    if let (Some(&(s, e)), Some(w)) = (rng.pick(&words), rng.pick(dict)) {
        let w = w.clone();
        b.splice(s..e, w);
    }
}

fn insert_dict(rng: &mut Rng, b: &mut Vec<u8>, dict: &[Vec<u8>]) {
    if let Some(w) = rng.pick(dict) {
        let at = rng.below(b.len() + 1);
        let w = w.clone();
        b.splice(at..at, w);
    }
}

fn line_edit(rng: &mut Rng, b: &mut Vec<u8>, others: &[Vec<u8>]) {
    let mut lines: Vec<Vec<u8>> = b.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
    if lines.is_empty() {
        return;
    }
    let i = rng.below(lines.len());
    match rng.below(4) {
        0 => {
            lines.remove(i);
        }
        1 => {
            let l = lines[i].clone();
            for _ in 0..1 + rng.below(3) {
                lines.insert(i, l.clone());
            }
        }
        2 => {
            let l = lines.remove(i);
            let to = rng.below(lines.len() + 1);
            lines.insert(to, l);
        }
        _ => {
            if let Some(other) = rng.pick(others) {
                let theirs: Vec<&[u8]> = other.split(|&c| c == b'\n').collect();
                if let Some(l) = rng.pick(&theirs) {
                    lines.insert(i, l.to_vec());
                }
            }
        }
    }
    *b = lines.join(&b'\n');
}

fn splice(rng: &mut Rng, a: &[u8], other: &[u8]) -> Vec<u8> {
    let cut_a = rng.below(a.len() + 1);
    let cut_b = rng.below(other.len() + 1);
    let mut out = a[..cut_a].to_vec();
    out.extend_from_slice(&other[cut_b..]);
    out
}

/// Words and lines of the corpus, as mutation material (at most 4,096).
pub fn dictionary(corpus: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut words = std::collections::BTreeSet::new();
    for seed in corpus {
        for w in seed.split(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.')) {
            if (2..=40).contains(&w.len()) {
                words.insert(w.to_vec());
            }
        }
    }
    words.into_iter().take(4096).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_the_same_everywhere() {
        let mut r = Rng::new(1);
        let a: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        let mut r = Rng::new(1);
        let b: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        assert_eq!(a, b);
        assert_ne!(a[0], a[1]);
    }

    #[test]
    fn numbers_are_found_and_replaced() {
        assert_eq!(numbers(b"a 12 0x1f q7 x"), vec![(2, 4), (5, 9)]);
        let mut r = Rng::new(3);
        let mut changed = 0;
        for _ in 0..50 {
            let mut b = b"count 32 here".to_vec();
            replace_number(&mut r, &mut b);
            changed += usize::from(b != b"count 32 here");
            assert!(b.starts_with(b"count ") && b.ends_with(b" here"));
        }
        assert!(changed > 40);
    }

    #[test]
    fn mutations_respect_the_length_cap() {
        let mut r = Rng::new(9);
        let seed = b"line one 1\nline two 0x20\n".to_vec();
        let dict = dictionary(std::slice::from_ref(&seed));
        for _ in 0..500 {
            let m = mutate(&mut r, &seed, &dict, std::slice::from_ref(&seed), 64);
            assert!(m.len() <= 64);
        }
    }
}
