//! The user buffers of host copies (`docs/host-runtime.md` §5.1): a
//! `copyin` source computes its bytes when the driver or the runtime reads
//! them, a `copyout` destination checks and hashes them as they arrive, so
//! a copy of N bytes holds no N-byte buffer on the host side.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use ioctl_abi::Errno;
use ioctl_bus::{UserSink, UserSource};
use sha2::{Digest, Sha256};
use soc::exec::{FileRange, TraceFiles};
use trace_format::{FillPattern, HostData};

/// Bytes handed to a [`CheckSink`] out of order are held until the stream
/// reaches them; a sink that would hold more than this fails the write
/// (`ENOMEM`) rather than grow with the transfer.
pub const MAX_PENDING_BYTES: u64 = 64 << 20;

/// Scratch size for comparing with the expected stream and for feeding the
/// zeros of bytes never written.
const SCRATCH_BYTES: usize = 1 << 20;

/// A byte stream of a data spec (`byte=`, `pattern=`, `file=`), readable at
/// any index.
#[derive(Clone, Debug)]
pub enum Stream {
    /// Every byte the same.
    Byte(u8),
    /// A fill pattern from `seed`.
    Pattern {
        /// Which pattern.
        kind: FillPattern,
        /// First element.
        seed: u64,
    },
    /// A file's bytes from `offset`, read a piece at a time where the
    /// trace's file access can ([`TraceFiles::open`]).
    File {
        /// The opened file.
        file: Arc<dyn FileRange>,
        /// First byte used.
        offset: u64,
    },
}

impl Stream {
    /// The stream of `data`, with enough bytes for `len` from index 0.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or is too short, named with its path.
    pub fn new(data: &HostData, len: u64, files: &mut dyn TraceFiles) -> Result<Self, String> {
        Ok(match data {
            HostData::Byte(b) => Self::Byte(*b),
            HostData::Pattern { kind, seed } => Self::Pattern {
                kind: *kind,
                seed: *seed,
            },
            HostData::File { path, offset } => {
                let file = files
                    .open(&path.path)
                    .map_err(|e| format!("cannot read {}: {e}", path.path))?;
                let have = file.len_bytes();
                if offset.checked_add(len).is_none_or(|end| end > have) {
                    return Err(format!(
                        "{} has {have} bytes; {len} are needed from offset {offset}",
                        path.path
                    ));
                }
                Self::File {
                    file,
                    offset: *offset,
                }
            }
        })
    }

    /// `data` with its pattern seed advanced by `k` (batch copies: tensor k
    /// gets seed + k).
    #[must_use]
    pub fn advanced(&self, k: u64) -> Self {
        match self {
            Self::Pattern { kind, seed } => Self::Pattern {
                kind: *kind,
                seed: seed.wrapping_add(k),
            },
            other => other.clone(),
        }
    }

    /// Fills `buf` with the bytes from `index`.
    ///
    /// # Errors
    ///
    /// `EFAULT` past the end of a file (the range was checked when the
    /// stream was made, so only a misuse reaches it).
    pub fn fill(&self, index: u64, buf: &mut [u8]) -> Result<(), Errno> {
        match self {
            Self::Byte(b) => buf.fill(*b),
            Self::Pattern {
                kind: FillPattern::Incr8,
                seed,
            } => {
                // The pattern repeats every 256 bytes: copy one period.
                let first = seed.wrapping_add(index) as u8;
                let mut period = [0u8; 256];
                for (i, b) in period.iter_mut().enumerate() {
                    *b = first.wrapping_add(i as u8);
                }
                for chunk in buf.chunks_mut(period.len()) {
                    chunk.copy_from_slice(&period[..chunk.len()]);
                }
            }
            Self::Pattern { kind, seed } => kind.fill(*seed, index, buf),
            Self::File { file, offset } => {
                let start = offset.checked_add(index).ok_or(Errno::EFAULT)?;
                file.read_at(start, buf).map_err(|_| Errno::EFAULT)?;
            }
        }
        Ok(())
    }
}

/// A read-only user buffer whose bytes are a [`Stream`] (a `copyin` or
/// `batch_copy in` source).
#[derive(Debug)]
pub struct StreamSource(pub Stream);

impl UserSource for StreamSource {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.0.fill(offset, buf)
    }
}

/// The first byte that differs from the expected stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Its index in the copy.
    pub index: u64,
    /// The byte copied.
    pub got: u8,
    /// The byte expected.
    pub want: u8,
}

/// What a [`CheckSink`] saw, once the copy is over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkReport {
    /// SHA-256 of the `len` bytes (bytes never written count as zeros, as
    /// in a zeroed buffer), when the sink hashes.
    pub sha256: Option<[u8; 32]>,
    /// The first byte that differs from the expected stream, if one was
    /// given and a byte does.
    pub first_mismatch: Option<Mismatch>,
    /// The first offset written a second time, if any: the stream is
    /// consumed once, so such a copy cannot be checked.
    pub rewritten_at: Option<u64>,
    /// The first index whose expected bytes could not be read (a `file=`
    /// source that failed), if any: the copy was not checked from there.
    pub unreadable_at: Option<u64>,
}

/// A write-only user buffer of `len` bytes (a `copyout` or `batch_copy
/// out` destination): hashes the bytes in order and compares them with an
/// expected stream, holding only bytes that arrive ahead of the ones
/// before them.
pub struct CheckSink {
    len: u64,
    cursor: u64,
    pending: BTreeMap<u64, Vec<u8>>,
    pending_bytes: u64,
    hasher: Option<Sha256>,
    expect: Option<Stream>,
    first_mismatch: Option<Mismatch>,
    rewritten_at: Option<u64>,
    unreadable_at: Option<u64>,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for CheckSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckSink")
            .field("len", &self.len)
            .field("cursor", &self.cursor)
            .field("pending_bytes", &self.pending_bytes)
            .finish_non_exhaustive()
    }
}

impl CheckSink {
    /// A sink for `len` bytes, checked against `expect` when given, and
    /// hashed when `hash` is set.
    #[must_use]
    pub fn new(len: u64, expect: Option<Stream>, hash: bool) -> Self {
        Self {
            len,
            cursor: 0,
            pending: BTreeMap::new(),
            pending_bytes: 0,
            hasher: hash.then(Sha256::new),
            expect,
            first_mismatch: None,
            rewritten_at: None,
            unreadable_at: None,
            scratch: Vec::new(),
        }
    }

    /// Takes `bytes` at the cursor: hash, compare, advance.
    fn consume(&mut self, bytes: &[u8]) {
        if let Some(h) = &mut self.hasher {
            h.update(bytes);
        }
        if self.first_mismatch.is_none()
            && self.unreadable_at.is_none()
            && let Some(expect) = &self.expect
        {
            let mut at = 0;
            while at < bytes.len() {
                let n = (bytes.len() - at).min(SCRATCH_BYTES);
                self.scratch.resize(n, 0);
                let index = self.cursor + at as u64;
                if expect.fill(index, &mut self.scratch).is_err() {
                    // Not a match: the check cannot go on.
                    self.unreadable_at = Some(index);
                    break;
                }
                let got = &bytes[at..at + n];
                if got != self.scratch.as_slice()
                    && let Some(i) = got.iter().zip(&self.scratch).position(|(a, b)| a != b)
                {
                    self.first_mismatch = Some(Mismatch {
                        index: index + i as u64,
                        got: bytes[at + i],
                        want: self.scratch[i],
                    });
                    break;
                }
                at += n;
            }
        }
        self.cursor += bytes.len() as u64;
    }

    /// Consumes held pieces the cursor has reached.
    fn drain_pending(&mut self) {
        while let Some(entry) = self.pending.first_entry() {
            let at = *entry.key();
            if at > self.cursor {
                break;
            }
            let piece = entry.remove();
            self.pending_bytes -= piece.len() as u64;
            self.take(at, &piece);
        }
    }

    /// Bytes at `offset`: the part past the cursor is consumed (or held if
    /// it is ahead); a part before the cursor is a rewrite.
    fn take(&mut self, offset: u64, bytes: &[u8]) {
        let end = offset + bytes.len() as u64;
        if offset < self.cursor {
            self.rewritten_at.get_or_insert(offset);
        }
        if end > self.cursor {
            let skip = usize::try_from(self.cursor.saturating_sub(offset)).unwrap_or(usize::MAX);
            self.consume(&bytes[skip.min(bytes.len())..]);
        }
    }

    /// The result: what was never written counts as zeros.
    #[must_use]
    pub fn finish(mut self) -> SinkReport {
        loop {
            self.drain_pending();
            let next = self.pending.keys().next().copied().unwrap_or(self.len);
            if self.cursor >= self.len && self.pending.is_empty() {
                break;
            }
            if next > self.cursor {
                let gap = (next - self.cursor).min(SCRATCH_BYTES as u64) as usize;
                let zeros = vec![0u8; gap];
                self.consume(&zeros);
            }
        }
        SinkReport {
            sha256: self.hasher.map(|h| h.finalize().into()),
            first_mismatch: self.first_mismatch,
            rewritten_at: self.rewritten_at,
            unreadable_at: self.unreadable_at,
        }
    }
}

impl UserSink for CheckSink {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        if offset > self.cursor {
            let n = bytes.len() as u64;
            if self.pending_bytes + n > MAX_PENDING_BYTES {
                return Err(Errno::ENOMEM);
            }
            let mut v = Vec::new();
            v.try_reserve_exact(bytes.len())
                .map_err(|_| Errno::ENOMEM)?;
            v.extend_from_slice(bytes);
            if let Some(old) = self.pending.insert(offset, v) {
                self.pending_bytes -= old.len() as u64;
                self.rewritten_at.get_or_insert(offset);
            }
            self.pending_bytes += n;
            return Ok(());
        }
        self.take(offset, bytes);
        self.drain_pending();
        Ok(())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(b: &[u8]) -> [u8; 32] {
        Sha256::digest(b).into()
    }

    #[test]
    fn pattern_fill_matches_byte_at() {
        for kind in [FillPattern::Incr8, FillPattern::Incr32] {
            let s = Stream::Pattern { kind, seed: 0xfe };
            let mut buf = [0u8; 600];
            s.fill(1001, &mut buf).unwrap();
            for (i, b) in buf.iter().enumerate() {
                assert_eq!(*b, kind.byte_at(0xfe, 1001 + i as u64), "{kind:?} {i}");
            }
        }
    }

    #[test]
    fn sink_hashes_in_order_writes_and_finds_the_first_mismatch() {
        let want: Vec<u8> = (0..1000u32).map(|i| (i + 3) as u8).collect();
        let expect = Stream::Pattern {
            kind: FillPattern::Incr8,
            seed: 3,
        };
        let mut s = CheckSink::new(1000, Some(expect.clone()), true);
        s.write_at(0, &want[..400]).unwrap();
        s.write_at(400, &want[400..]).unwrap();
        let r = s.finish();
        assert_eq!(r.sha256, Some(digest(&want)));
        assert_eq!((r.first_mismatch, r.rewritten_at), (None, None));

        let mut bad = want.clone();
        bad[777] ^= 0x40;
        let mut s = CheckSink::new(1000, Some(expect), false);
        s.write_at(0, &bad).unwrap();
        let r = s.finish();
        assert_eq!(
            r.first_mismatch,
            Some(Mismatch {
                index: 777,
                got: want[777] ^ 0x40,
                want: want[777]
            })
        );
    }

    #[test]
    fn sink_reorders_and_zero_fills() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
        let mut s = CheckSink::new(400, None, true);
        s.write_at(200, &data[200..]).unwrap();
        s.write_at(0, &data[..100]).unwrap();
        s.write_at(100, &data[100..200]).unwrap();
        let r = s.finish();
        let mut whole = data.clone();
        whole.resize(400, 0);
        assert_eq!(r.sha256, Some(digest(&whole)));
        assert_eq!(r.rewritten_at, None);
        // Nothing written at all: the digest of zeros.
        assert_eq!(
            CheckSink::new(5, None, true).finish().sha256,
            Some(digest(&[0; 5]))
        );
        // A hole before a later piece is zeros too.
        let mut s = CheckSink::new(10, None, true);
        s.write_at(6, &[1, 2]).unwrap();
        assert_eq!(
            s.finish().sha256,
            Some(digest(&[0, 0, 0, 0, 0, 0, 1, 2, 0, 0]))
        );
    }

    /// A review's finding: an expected `file=` stream that fails to read
    /// (a directory, a file cut short) ended the comparison, and the copy
    /// passed as expected.
    #[test]
    fn sink_reports_expected_bytes_it_cannot_read() {
        let short = Stream::File {
            file: Arc::new(soc::exec::InMemoryFile(vec![7; 4])),
            offset: 0,
        };
        let mut s = CheckSink::new(8, Some(short), false);
        s.write_at(0, &[7; 8]).unwrap();
        let r = s.finish();
        assert_eq!(r.first_mismatch, None);
        assert_eq!(r.unreadable_at, Some(0));
    }

    #[test]
    fn sink_reports_rewrites_and_bounds_what_it_holds() {
        let mut s = CheckSink::new(10, None, true);
        s.write_at(0, &[1; 6]).unwrap();
        s.write_at(4, &[2; 6]).unwrap();
        let r = s.finish();
        assert_eq!(r.rewritten_at, Some(4));
        // The part past the cursor still counts.
        assert_eq!(r.sha256, Some(digest(&[1, 1, 1, 1, 1, 1, 2, 2, 2, 2])));
        let mut s = CheckSink::new(u64::MAX, None, false);
        let big = vec![0u8; (MAX_PENDING_BYTES / 2 + 1) as usize];
        s.write_at(10, &big).unwrap();
        assert_eq!(s.write_at(1 << 40, &big), Err(Errno::ENOMEM));
    }

    #[test]
    fn file_streams_check_their_length() {
        struct One(Vec<u8>);
        impl TraceFiles for One {
            fn read(&mut self, _: &str) -> std::io::Result<Vec<u8>> {
                Ok(self.0.clone())
            }
            fn write(&mut self, _: &str, _: &[u8]) -> std::io::Result<()> {
                Ok(())
            }
        }
        let data = HostData::File {
            path: trace_format::FileRef {
                path: "w.bin".into(),
                span: trace_format::Span::default(),
            },
            offset: 2,
        };
        let mut files = One(vec![9, 8, 7, 6, 5]);
        let s = Stream::new(&data, 3, &mut files).unwrap();
        let mut b = [0u8; 3];
        s.fill(0, &mut b).unwrap();
        assert_eq!(b, [7, 6, 5]);
        assert_eq!(s.fill(1, &mut b), Err(Errno::EFAULT));
        assert_eq!(
            Stream::new(&data, 4, &mut files).unwrap_err(),
            "w.bin has 5 bytes; 4 are needed from offset 2"
        );
    }
}
