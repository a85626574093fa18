//! The spill buffer of `neuron-sim run`'s output (docs/user-guide.md
//! §Output): bytes that wait for their statement's line (a statement's
//! event lines or objects) or for the end of the run (`--json`'s steps),
//! in memory up to a limit, then in an anonymous temporary file.
//!
//! The memory is a list of chunks, not one growing vector: a statement's
//! events move into the steps by their chunks (no copy), nothing is copied
//! to grow, and drained chunks are reused by the next statement. One
//! growing vector per buffer held each byte twice at the end of a `--json`
//! run (the statement's events, then the steps) and left the copies of its
//! doublings behind: the chip trace's 3.7 MB document took 18 MB of memory
//! the kernel zeroed (docs/user-guide.md §14, "The allocator's page
//! geometry").

use std::io::{self, Read, Seek, Write};

/// Bytes kept in memory before a spill buffer moves to a temporary file.
const SPILL_MEMORY_BYTES: usize = 8 << 20;

/// Bytes of a chunk: the open chunk is sealed once it holds this many.
const CHUNK_BYTES: usize = 64 << 10;

/// Spare chunks a buffer keeps once it is on disk.
const SPARE_ON_DISK: usize = 2;

/// Bytes that wait: in memory, then on disk.
pub(super) struct Spill {
    /// The open chunk: a writer appends here, then calls [`Spill::settle`].
    pub(super) open: Vec<u8>,
    /// Sealed chunks, oldest first, not yet in the file.
    sealed: Vec<Vec<u8>>,
    /// Bytes of `sealed`.
    sealed_bytes: usize,
    /// The bytes older than `sealed`, once the buffer has moved to disk.
    file: Option<std::fs::File>,
    /// Emptied chunks, reused for the next open ones.
    spare: Vec<Vec<u8>>,
    /// Bytes kept in memory before moving to a file.
    limit_bytes: usize,
    /// Bytes of a chunk.
    chunk_bytes: usize,
}

impl Default for Spill {
    fn default() -> Self {
        Spill::with_limits(SPILL_MEMORY_BYTES, CHUNK_BYTES)
    }
}

impl Spill {
    /// A buffer that moves to a file past `limit_bytes`, in chunks of
    /// `chunk_bytes`.
    pub(super) fn with_limits(limit_bytes: usize, chunk_bytes: usize) -> Self {
        Spill {
            open: Vec::new(),
            sealed: Vec::new(),
            sealed_bytes: 0,
            file: None,
            spare: Vec::new(),
            limit_bytes,
            chunk_bytes: chunk_bytes.max(1),
        }
    }

    /// Appends `bytes`.
    pub(super) fn push(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.open.extend_from_slice(bytes);
        self.settle()
    }

    /// Bytes appended to the open chunk since the last call go where they
    /// belong: a full open chunk is sealed; sealed chunks go to the file
    /// once there is one, or with everything held to a new one past the
    /// limit. (A writer appends to `open` and calls this: no copy.)
    pub(super) fn settle(&mut self) -> io::Result<()> {
        if self.open.len() >= self.chunk_bytes {
            self.seal();
        }
        match self.file.as_mut() {
            Some(f) => {
                for chunk in &self.sealed {
                    f.write_all(chunk)?;
                }
                self.recycle_sealed();
            }
            None if self.sealed_bytes + self.open.len() > self.limit_bytes => {
                let mut f = tempfile::tempfile()?;
                for chunk in &self.sealed {
                    f.write_all(chunk)?;
                }
                f.write_all(&self.open)?;
                self.open.clear();
                self.file = Some(f);
                self.recycle_sealed();
                // On disk a buffer fills one chunk at a time: the memory
                // it held goes back to the allocator.
                self.spare.truncate(SPARE_ON_DISK);
            }
            None => {}
        }
        Ok(())
    }

    /// Moves everything `other` holds to the end of this buffer and
    /// empties `other`: its chunks in memory move as they are (a small
    /// open chunk is copied, its memory stays with `other`); a buffer on
    /// disk is copied.
    pub(super) fn append(&mut self, other: &mut Spill) -> io::Result<()> {
        if self.file.is_some() || other.file.is_some() {
            return other.drain_to(&mut SpillWriter(self));
        }
        self.seal_partial();
        other.seal_partial();
        self.sealed_bytes += other.sealed_bytes;
        self.sealed.append(&mut other.sealed);
        other.sealed_bytes = 0;
        self.settle()
    }

    /// Writes everything held to `out` and empties the buffer (its chunks
    /// kept for reuse).
    pub(super) fn drain_to(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(mut f) = self.file.take() {
            f.flush()?;
            f.seek(io::SeekFrom::Start(0))?;
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                out.write_all(&buf[..n])?;
            }
        }
        for chunk in &self.sealed {
            out.write_all(chunk)?;
        }
        self.recycle_sealed();
        out.write_all(&self.open)?;
        self.open.clear();
        Ok(())
    }

    /// Seals the open chunk and opens a new one.
    fn seal(&mut self) {
        let next = self.next_chunk();
        let full = std::mem::replace(&mut self.open, next);
        self.sealed_bytes += full.len();
        self.sealed.push(full);
    }

    /// Seals what the open chunk holds before bytes that are not written
    /// through it: as it is when it is at least half full, else as a copy
    /// of its bytes (a chunk's memory is not held for a few bytes).
    fn seal_partial(&mut self) {
        if self.open.is_empty() {
            return;
        }
        if self.open.len() >= self.chunk_bytes / 2 {
            self.seal();
        } else {
            let copy = self.open.clone();
            self.open.clear();
            self.sealed_bytes += copy.len();
            self.sealed.push(copy);
        }
    }

    /// An empty chunk: a spare one, or a new one with room for a chunk and
    /// the writer's last append past it.
    fn next_chunk(&mut self) -> Vec<u8> {
        self.spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.chunk_bytes + self.chunk_bytes / 8))
    }

    /// Empties `sealed`, keeping chunk-sized ones for reuse (as many as the
    /// memory limit holds; [`SPARE_ON_DISK`] once on disk).
    fn recycle_sealed(&mut self) {
        let keep = if self.file.is_some() {
            SPARE_ON_DISK
        } else {
            self.limit_bytes / self.chunk_bytes + 1
        };
        for mut chunk in self.sealed.drain(..) {
            if chunk.capacity() >= self.chunk_bytes && self.spare.len() < keep {
                chunk.clear();
                self.spare.push(chunk);
            }
        }
        self.sealed_bytes = 0;
    }

    /// True when some of the bytes are in a file.
    #[cfg(test)]
    pub(super) fn on_disk(&self) -> bool {
        self.file.is_some()
    }

    /// Bytes held in memory.
    #[cfg(test)]
    pub(super) fn memory_bytes(&self) -> usize {
        self.sealed_bytes + self.open.len()
    }
}

/// Writes into a spill buffer.
pub(super) struct SpillWriter<'a>(pub(super) &'a mut Spill);

impl Write for SpillWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.push(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Bytes pushed come out in order whether they stayed in memory, in
    /// chunks, or moved to a file past the limit; a drained buffer is
    /// empty and in memory again.
    #[test]
    fn a_spill_keeps_order_across_memory_and_file() {
        let mut s = Spill::with_limits(10, 4);
        let mut want = Vec::new();
        for i in 0..100u8 {
            let chunk = [i; 3];
            s.push(&chunk).unwrap();
            want.extend_from_slice(&chunk);
        }
        assert!(s.on_disk(), "past 10 bytes it moved to a file");
        assert!(s.memory_bytes() < 4, "memory holds less than a chunk");
        let mut out = Vec::new();
        s.drain_to(&mut out).unwrap();
        assert_eq!(out, want);
        // Drained: empty, and usable again (in memory).
        let mut out = Vec::new();
        s.drain_to(&mut out).unwrap();
        assert!(out.is_empty());
        s.push(b"ab").unwrap();
        assert!(!s.on_disk());
        s.drain_to(&mut out).unwrap();
        assert_eq!(out, b"ab");
    }

    /// Appending one buffer to another keeps every byte in order (head of
    /// the one, all of the other, tail of the one), in memory, with small
    /// and full chunks on either side, and with either buffer on disk; the
    /// appended buffer is left empty and usable.
    #[test]
    fn append_moves_every_byte_in_order() {
        for (limit_a, limit_b) in [(1 << 20, 1 << 20), (10, 1 << 20), (1 << 20, 10), (10, 10)] {
            for n_other in [0usize, 1, 7, 8, 9, 40] {
                for n_head in [0usize, 1, 3, 8, 21] {
                    let mut a = Spill::with_limits(limit_a, 8);
                    let mut b = Spill::with_limits(limit_b, 8);
                    let mut want = Vec::new();
                    let head: Vec<u8> = (0..n_head).map(|i| i as u8).collect();
                    a.push(&head).unwrap();
                    want.extend_from_slice(&head);
                    let other: Vec<u8> = (0..n_other).map(|i| 100 + i as u8).collect();
                    for byte in &other {
                        b.push(&[*byte]).unwrap();
                    }
                    want.extend_from_slice(&other);
                    a.append(&mut b).unwrap();
                    a.push(b"tail").unwrap();
                    want.extend_from_slice(b"tail");
                    let mut out = Vec::new();
                    a.drain_to(&mut out).unwrap();
                    let case = format!("limits {limit_a}/{limit_b}, {n_head} + {n_other}");
                    assert_eq!(out, want, "{case}");
                    let mut rest = Vec::new();
                    b.drain_to(&mut rest).unwrap();
                    assert!(rest.is_empty(), "{case}: the appended buffer is empty");
                    b.push(b"again").unwrap();
                    b.drain_to(&mut rest).unwrap();
                    assert_eq!(rest, b"again", "{case}");
                }
            }
        }
    }

    /// A buffer that moved to a file gives back the chunks it held in
    /// memory (it fills one at a time from then on): after steps of
    /// events far past the limit, it keeps at most [`SPARE_ON_DISK`]
    /// spare chunks, where it kept the limit's worth (found in review).
    #[test]
    fn on_disk_a_buffer_keeps_few_chunks() {
        let (limit, chunk) = (4096, 64);
        let mut steps = Spill::with_limits(limit, chunk);
        let mut events = Spill::with_limits(limit, chunk);
        let mut want = Vec::new();
        for step in 0..200u32 {
            let head = format!("step {step} [");
            steps.push(head.as_bytes()).unwrap();
            want.extend_from_slice(head.as_bytes());
            for e in 0..20u32 {
                let line = format!("event {e} of {step},");
                events.open.extend_from_slice(line.as_bytes());
                events.settle().unwrap();
                want.extend_from_slice(line.as_bytes());
            }
            steps.append(&mut events).unwrap();
            steps.push(b"]").unwrap();
            want.push(b']');
        }
        assert!(steps.on_disk());
        assert!(
            steps.spare.len() <= SPARE_ON_DISK,
            "on disk, {} spare chunks",
            steps.spare.len()
        );
        let held: usize =
            steps.spare.iter().map(Vec::capacity).sum::<usize>() + steps.open.capacity();
        assert!(held <= 8 * chunk, "on disk, {held} bytes of chunks held");
        let mut out = Vec::new();
        steps.drain_to(&mut out).unwrap();
        assert_eq!(out, want);
    }

    /// A buffer's chunks are reused from one statement to the next: a
    /// second fill of the same size allocates no new chunk.
    #[test]
    fn drained_chunks_are_reused() {
        let mut s = Spill::with_limits(1 << 20, 16);
        let fill = |s: &mut Spill| {
            for i in 0..64u8 {
                s.push(&[i; 5]).unwrap();
            }
        };
        fill(&mut s);
        let mut out = Vec::new();
        s.drain_to(&mut out).unwrap();
        let spare = s.spare.len();
        assert!(spare > 0);
        fill(&mut s);
        assert!(s.spare.len() < spare, "the second fill took spare chunks");
        s.drain_to(&mut out).unwrap();
        assert_eq!(s.spare.len(), spare, "and gave them back");
        assert_eq!(out.len(), 2 * 64 * 5);
    }
}
