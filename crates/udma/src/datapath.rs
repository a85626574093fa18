//! The SDMA data mover for one packet (seed 004 §3–4): TX descriptors name
//! the source bytes, RX descriptors the destination buffers; a CME checksum
//! op computes over the source (docs/cme.md), and the stream is the data
//! (when `copy_src_data`) followed by the 4-byte result (when `send_crc`).
//! With S2M header split the first N stream bytes land in the first RX
//! descriptor's second buffer.

use sim_core::{AccessError, Bus};

use crate::desc::{Cme, RawDesc};

/// A descriptor as the data path sees it.
#[derive(Clone, Copy, Debug)]
pub struct Piece {
    /// Ring index (for messages).
    pub idx: u32,
    /// The descriptor.
    pub desc: RawDesc,
}

/// Why a packet did not land.
#[derive(Debug)]
pub enum MoveError {
    /// A source read failed (M2S data AXI error).
    Read(AccessError),
    /// A destination write failed (S2M data AXI error).
    Write(AccessError),
    /// The RX buffers cannot hold the stream.
    Length(String),
}

/// Checksum state carried between packets (the IV cache of
/// `cached_crc_iv_index`, wiki-facts §J.1).
#[derive(Clone, Debug, Default)]
pub struct CrcCache {
    /// Eight cached states.
    pub slots: [Option<cme::ChecksumState>; cme::CRC_IV_CACHE_SLOTS],
}

/// What a moved packet produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// Bytes written to destinations.
    pub written: u64,
    /// The CME result, if the packet computed one.
    pub checksum: Option<u32>,
}

/// Writes `stream` (a prefix of destination space) across RX buffers.
struct Sink<'a> {
    rx: &'a [Piece],
    encode_64k: bool,
    i: usize,
    off: u64,
    hdr_left: u64,
    hdr_addr: u64,
    written: u64,
}

impl Sink<'_> {
    /// The next destination chunk of at most `want` bytes.
    fn next(&mut self, want: u64) -> Result<(u64, u64), MoveError> {
        if self.hdr_left > 0 {
            let n = want.min(self.hdr_left);
            let addr = self.hdr_addr;
            self.hdr_addr += n;
            self.hdr_left -= n;
            return Ok((addr, n));
        }
        loop {
            let Some(p) = self.rx.get(self.i) else {
                return Err(MoveError::Length(format!(
                    "the stream does not fit the {} RX buffers",
                    self.rx.len()
                )));
            };
            let cap = u64::from(p.desc.len_bytes(self.encode_64k));
            if self.off < cap {
                let n = want.min(cap - self.off);
                let addr = p.desc.buf_ptr + self.off;
                self.off += n;
                return Ok((addr, n));
            }
            self.i += 1;
            self.off = 0;
        }
    }
}

/// Moves one packet. `crc_init` is the queue's CRC initial value register.
pub fn move_packet(
    bus: &mut dyn Bus,
    tx: &[Piece],
    rx: &[Piece],
    encode_64k: bool,
    crc_init: u32,
    hdr_split_bytes: u64,
    cache: &mut CrcCache,
) -> Result<Moved, MoveError> {
    let Some(first) = tx.first() else {
        return Ok(Moved {
            written: 0,
            checksum: None,
        });
    };
    let cmd = Cme(first.desc.word1);
    let (hdr_addr, hdr_left) = match rx.first() {
        Some(r) if hdr_split_bytes > 0 => (r.desc.buf2(), hdr_split_bytes),
        _ => (0, 0),
    };
    let mut sink = Sink {
        rx,
        encode_64k,
        i: 0,
        off: 0,
        hdr_left,
        hdr_addr,
        written: 0,
    };
    if let Some(op) = cmd.cce() {
        return cce_packet(bus, tx, &mut sink, encode_64k, cmd, op);
    }
    let Some(kind) = cmd.checksum() else {
        // Plain copy: page-to-page through the bus, no bounce buffer.
        for t in tx {
            let mut src = t.desc.buf_ptr;
            let mut left = u64::from(t.desc.len_bytes(encode_64k));
            while left > 0 {
                let (dst, n) = sink.next(left)?;
                bus.copy(src, dst, n).map_err(|e| {
                    if e.addr >= dst
                        && e.addr < dst + n.max(1)
                        && (e.addr < src || e.addr >= src + n)
                    {
                        MoveError::Write(e)
                    } else {
                        MoveError::Read(e)
                    }
                })?;
                sink.written += n;
                src += n;
                left -= n;
            }
        }
        return Ok(Moved {
            written: sink.written,
            checksum: None,
        });
    };
    let slot = cmd.iv_slot();
    let mut sum = match (
        cmd.use_stored_crc_iv(),
        cache.slots.get(slot).copied().flatten(),
    ) {
        (true, Some(state)) => cme::Checksum::from_state(state),
        _ => cme::Checksum::new(kind, Some(crc_init)),
    };
    let mut buf = Vec::new();
    for t in tx {
        let len = t.desc.len_bytes(encode_64k) as usize;
        buf.resize(len, 0);
        bus.read(t.desc.buf_ptr, &mut buf)
            .map_err(MoveError::Read)?;
        sum.update(&buf);
        if cmd.copy_src_data() {
            let mut done = 0usize;
            while done < len {
                let (dst, n) = sink.next((len - done) as u64)?;
                let n = n as usize;
                bus.write(dst, &buf[done..done + n])
                    .map_err(MoveError::Write)?;
                sink.written += n as u64;
                done += n;
            }
        }
    }
    let result = sum.finish();
    if cmd.store_crc_result()
        && let Some(s) = cache.slots.get_mut(slot)
    {
        *s = Some(sum.state());
    }
    if cmd.send_crc() {
        let bytes = result.to_le_bytes();
        let mut done = 0usize;
        while done < 4 {
            let (dst, n) = sink.next((4 - done) as u64)?;
            let n = n as usize;
            bus.write(dst, &bytes[done..done + n])
                .map_err(MoveError::Write)?;
            sink.written += n as u64;
            done += n;
        }
    }
    Ok(Moved {
        written: sink.written,
        checksum: Some(result),
    })
}

/// Bytes a CCE packet writes: the first source's element count (which
/// sets the accumulator's, wiki-facts §F.3) times the output size.
pub fn cce_out_len(first_word1: Cme, first_len: u64) -> u64 {
    match (first_word1.cce_dtypes(), first_word1.cce()) {
        (Some((i, o)), Some(_)) => first_len / i.size_bytes().max(1) as u64 * o.size_bytes() as u64,
        _ => first_len,
    }
}

/// CCE in-transfer compute (wiki-facts §F.3; docs/cme.md §4): every TX
/// descriptor of the packet is one source, read in its own input dtype
/// (word1 bits 11:8) and combined into the running accumulator (FP32) with
/// the packet's operation; the first source loads it. The last source's
/// output dtype (bits 15:12) converts the result, which streams into the RX
/// buffers. The destination is not read: `B op= A` is the two-source packet
/// (B, A), and a single source converts the dtype. An FMA source without a
/// meta descriptor uses scale 1.0.
///
/// A CCE meta descriptor (word0 bit 23; wiki-facts §F.2) configures the next
/// source as an FMA with its own operand selectors and scale: meta1 (W2)
/// bits 25:24 / 27:26 / 29:28 select a, b and c among the stored buffer (0),
/// the input (1) and the scale (2); meta2 (W3) is the FP32 scale; the
/// source then combines as `acc = a × b + c`. It moves no data.
fn cce_packet(
    bus: &mut dyn Bus,
    tx: &[Piece],
    sink: &mut Sink<'_>,
    encode_64k: bool,
    cmd: Cme,
    op: cme::ReduceOp,
) -> Result<Moved, MoveError> {
    let mut acc = cme::Accumulator::new(cme::Dtype::Fp32);
    let mut out_dt = None;
    let mut src = Vec::new();
    let mut next_op: Option<cme::ReduceOp> = None;
    for t in tx {
        if t.desc.meta() {
            let w2 = t.desc.buf_ptr as u32;
            let w3 = (t.desc.buf_ptr >> 32) as u32;
            let sel = |shift: u32| cme::FmaOperand::from_bits(w2 >> shift);
            let (Some(a), Some(b), Some(c)) = (sel(24), sel(26), sel(28)) else {
                return Err(MoveError::Length(format!(
                    "CCE meta descriptor W2 {w2:#010x}: operand selector 3 is not assigned"
                )));
            };
            next_op = Some(cme::ReduceOp::FmaSelect {
                a,
                b,
                c,
                scale: f32::from_bits(w3),
            });
            continue;
        }
        let word = Cme(t.desc.word1);
        let Some((in_dt, o)) = word.cce_dtypes() else {
            return Err(MoveError::Length(format!(
                "CCE descriptor word1 {:#010x} names an unknown dtype",
                word.0
            )));
        };
        out_dt = Some(o);
        let len = t.desc.len_bytes(encode_64k) as usize;
        src.resize(len, 0);
        bus.read(t.desc.buf_ptr, &mut src)
            .map_err(MoveError::Read)?;
        acc.combine(next_op.take().unwrap_or(op), in_dt, &src)
            .map_err(|e| MoveError::Length(format!("CCE: {e}")))?;
    }
    let Some(out_dt) = out_dt else {
        return Err(MoveError::Length(format!(
            "CCE packet of word1 {:#010x} has no source",
            cmd.0
        )));
    };
    let mut out = vec![0u8; acc.len() * out_dt.size_bytes().max(1)];
    acc.flush(out_dt, &mut out)
        .map_err(|e| MoveError::Length(format!("CCE: {e}")))?;
    let mut done = 0usize;
    while done < out.len() {
        let (dst, n) = sink.next((out.len() - done) as u64)?;
        let n = n as usize;
        bus.write(dst, &out[done..done + n])
            .map_err(MoveError::Write)?;
        sink.written += n as u64;
        done += n;
    }
    Ok(Moved {
        written: sink.written,
        checksum: None,
    })
}
