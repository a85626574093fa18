//! The SDMA data mover for one packet (P9.1 §3–4): TX descriptors name
//! the source bytes, RX descriptors the destination buffers; a CME checksum
//! op computes over the source (docs/cme.md), and the stream is the data
//! (when `copy_src_data`) followed by the 4-byte result (when `send_crc`).
//! With S2M header split the first N stream bytes land in the first RX
//! descriptor's second buffer.

use dma_abi::{CmeType, CmeWord, SdmaOp};
use sim_core::{AccessError, Bus};

use crate::desc::{Cme, RawDesc};

/// Word 1 of the custom-op inline path's descriptors: its rings are filled
/// with 0xB8 bytes and word 1 is never written (P9.1 §5.1). It reads as
/// op DRE; the seed describes the descriptor as a CME copy, so the data
/// path moves it as one (docs/cme.md §4).
pub const INLINE_FILL_WORD1: u32 = 0xB8B8_B8B8;

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
    /// The packet's first TX word 1 asks for an operation the simulator
    /// has no description of (an undefined op or CCE type, a DRE word
    /// other than the cross-bar transpose); nothing moved.
    Unsupported(String),
    /// `validate_crc`: the computed CRC differs from the stored source CRC
    /// (or none is stored); the data streamed before the check landed.
    CrcMismatch(String),
}

/// Checksum state carried between packets, per engine, indexed by
/// `cached_crc_iv_index` (docs/references/wiki.md §J.1; docs/cme.md §4).
#[derive(Clone, Debug, Default)]
pub struct CrcCache {
    /// The IV cache: states saved by `store_crc_result`, resumed by
    /// `use_stored_crc_iv`.
    pub slots: [Option<cme::ChecksumState>; cme::CRC_IV_CACHE_SLOTS],
    /// The source-CRC store: results saved by `store_source_crc`, checked
    /// by `validate_crc`.
    pub source_crcs: [Option<u32>; cme::CRC_IV_CACHE_SLOTS],
    /// Timing-only mode: the IV slot holds a state computed from bytes no
    /// copy moved (docs/user-guide.md §11, "Timing-only mode").
    pub stale_slots: [bool; cme::CRC_IV_CACHE_SLOTS],
    /// Timing-only mode: the source-CRC slot holds a result computed from
    /// bytes no copy moved.
    pub stale_source_crcs: [bool; cme::CRC_IV_CACHE_SLOTS],
}

/// What a packet's first TX word 1 asks the data path to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum PacketOp {
    /// Move the bytes (CME COPY, the inline path's fill word).
    Copy,
    /// A CME checksum.
    Checksum(cme::ChecksumKind),
    /// CCE compute.
    Cce(cme::ReduceOp),
    /// The axi2sram cross-bar transpose, elements of this many bytes.
    Xbar(usize),
}

/// Decodes a packet's first TX word 1 (docs/cme.md §4). `Err` names why
/// the simulator refuses it: an op that names no engine, an undefined CCE
/// type, or a DRE word other than the cross-bar transpose encoding (the
/// DRE command layout is unpublished, docs/references/wiki.md §J.2) — never a silent
/// copy.
pub(crate) fn packet_op(word1: u32) -> Result<PacketOp, String> {
    let w = CmeWord::from_raw(word1);
    match w.op() {
        SdmaOp::Cme => Ok(match w.cme_type() {
            CmeType::Copy => PacketOp::Copy,
            t => match cme::ChecksumKind::from_code(t as u8) {
                Some(kind) => PacketOp::Checksum(kind),
                None => PacketOp::Copy,
            },
        }),
        SdmaOp::Cce => match cme::CceType::from_code(w.optype_value()) {
            Some(t) => Ok(PacketOp::Cce(cme::ReduceOp::from_cce(t, 1.0))),
            None => Err(format!(
                "word1 {word1:#010x}: CCE type {} is undefined (SDMA_CCETYPE 0-5); nothing moved",
                w.optype_value()
            )),
        },
        SdmaOp::Dre if word1 == INLINE_FILL_WORD1 => Ok(PacketOp::Copy),
        SdmaOp::Dre => match w.xbar_dtype() {
            Some(code) => match xbar_elem_bytes(word1) {
                Some(esz) => Ok(PacketOp::Xbar(esz)),
                None => Err(format!(
                    "word1 {word1:#010x}: cross-bar transpose of dtype code {code:#x}, \
                     which is not a 2- or 4-byte type; nothing moved"
                )),
            },
            None => Err(format!(
                "word1 {word1:#010x}: a DRE command other than the cross-bar transpose \
                 (the DRE command layout is unpublished); nothing moved"
            )),
        },
        SdmaOp::Unknown(op) => Err(format!(
            "word1 {word1:#010x}: op {op} names no engine (SDMAOP 1 DRE, 2 CME, 4 CCE); nothing moved"
        )),
    }
}

/// The endian controls of a CME checksum word (word 1 bits 13:6;
/// docs/cme.md §1.4).
#[derive(Clone, Copy, Debug)]
struct Swaps {
    result: cme::Swap,
    intr_val: cme::Swap,
    src: cme::Swap,
    init: cme::Swap,
}

impl Swaps {
    fn of(w: CmeWord) -> Self {
        let s = |byte, bit| cme::Swap { byte, bit };
        Self {
            result: s(w.result_byte_swap(), w.result_bit_swap()),
            intr_val: s(w.intr_val_byte_swap(), w.intr_val_bit_swap()),
            src: s(w.src_byte_swap(), w.src_bit_swap()),
            init: s(w.init_byte_swap(), w.init_bit_swap()),
        }
    }
}

/// What a moved packet produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    /// Bytes written to destinations.
    pub written: u64,
    /// The CME result, if the packet computed one.
    pub checksum: Option<u32>,
    /// Timing-only mode: a `validate_crc` the packet could not make, because
    /// the result or the stored CRC was computed from bytes no copy moved;
    /// the packet completes as if they matched (docs/user-guide.md §11).
    pub unchecked: Option<String>,
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
            unchecked: None,
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
    let kind = match packet_op(cmd.0).map_err(MoveError::Unsupported)? {
        PacketOp::Cce(op) => {
            let moved = cce_packet(bus, tx, &mut sink, encode_64k, cmd, op);
            bus.read_as(None);
            return moved;
        }
        PacketOp::Xbar(esz) => {
            let dtype = CmeWord::from_raw(cmd.0)
                .xbar_dtype()
                .and_then(cme::Dtype::from_code);
            bus.read_as(dtype.and_then(nan_of));
            let moved = xbar_packet(bus, tx, rx, encode_64k, cmd, esz);
            bus.read_as(None);
            return moved;
        }
        PacketOp::Checksum(kind) => Some(kind),
        PacketOp::Copy => None,
    };
    let Some(kind) = kind else {
        // Plain copy: page-to-page through the bus, no bounce buffer.
        let copy_error = |e: AccessError, src: u64, dst: u64, n: u64| {
            if e.addr >= dst && e.addr < dst + n.max(1) && (e.addr < src || e.addr >= src + n) {
                MoveError::Write(e)
            } else {
                MoveError::Read(e)
            }
        };
        // The common packet, one descriptor into one buffer that holds it
        // (no header split): one copy, as the loop below would do it.
        if let ([t], [r]) = (tx, rx)
            && hdr_left == 0
        {
            let n = u64::from(t.desc.len_bytes(encode_64k));
            if n > 0 && n <= u64::from(r.desc.len_bytes(encode_64k)) {
                let (src, dst) = (t.desc.buf_ptr, r.desc.buf_ptr);
                bus.copy(src, dst, n)
                    .map_err(|e| copy_error(e, src, dst, n))?;
                return Ok(Moved {
                    written: n,
                    checksum: None,
                    unchecked: None,
                });
            }
        }
        for t in tx {
            let mut src = t.desc.buf_ptr;
            let mut left = u64::from(t.desc.len_bytes(encode_64k));
            while left > 0 {
                let (dst, n) = sink.next(left)?;
                bus.copy(src, dst, n)
                    .map_err(|e| copy_error(e, src, dst, n))?;
                sink.written += n;
                src += n;
                left -= n;
            }
        }
        return Ok(Moved {
            written: sink.written,
            checksum: None,
            unchecked: None,
        });
    };
    let slot = cmd.iv_slot();
    let swaps = Swaps::of(CmeWord::from_raw(cmd.0));
    let width = kind.width_bits();
    // The initial value: a stored IV (intermediate-value swaps) or the
    // queue's CRC init register (init swaps).
    // Timing-only: a checksum of bytes no copy moved is stale too, and so
    // is one resumed from a stale IV.
    let mut stale_sum = false;
    let mut sum = match (
        cmd.use_stored_crc_iv(),
        cache.slots.get(slot).copied().flatten(),
    ) {
        (true, Some(state)) => {
            stale_sum = cache.stale_slots.get(slot).copied().unwrap_or(false);
            cme::Checksum::from_state(cme::ChecksumState {
                value: swaps.intr_val.value(state.value, width),
                ..state
            })
        }
        _ => cme::Checksum::new(kind, Some(swaps.init.value(crc_init, width))),
    };
    let mut buf = Vec::new();
    let mut swapped = Vec::new();
    for t in tx {
        let len = t.desc.len_bytes(encode_64k) as usize;
        buf.resize(len, 0);
        bus.read(t.desc.buf_ptr, &mut buf)
            .map_err(MoveError::Read)?;
        let stale = bus.stale(t.desc.buf_ptr, len as u64);
        stale_sum |= stale;
        // The source swaps change what the CRC sees, not the data moved.
        if swaps.src.any() {
            swapped.clear();
            swapped.extend_from_slice(&buf);
            swaps.src.data(&mut swapped);
            sum.update(&swapped);
        } else {
            sum.update(&buf);
        }
        if cmd.copy_src_data() {
            let mut done = 0usize;
            while done < len {
                let (dst, n) = sink.next((len - done) as u64)?;
                let n = n as usize;
                bus.write(dst, &buf[done..done + n])
                    .map_err(MoveError::Write)?;
                if stale {
                    bus.mark_stale(dst, n as u64);
                }
                sink.written += n as u64;
                done += n;
            }
        }
    }
    let result = swaps.result.value(sum.finish(), width);
    let mut unchecked = None;
    let stored_stale = cache.stale_source_crcs.get(slot).copied().unwrap_or(false);
    if cmd.validate_crc() && (stale_sum || stored_stale) {
        // Timing-only: one side of the comparison was computed from bytes
        // no copy moved, so the payload run's outcome is unknown; the
        // packet carries on as if they matched, and the run says so.
        unchecked = Some(format!(
            "validate_crc on slot {slot}: {} computed from bytes no copy moved (timing-only); carried on as if it matched",
            match (stale_sum, stored_stale) {
                (true, true) => "the result and the stored source CRC were",
                (true, false) => "the result was",
                _ => "the stored source CRC was",
            }
        ));
    } else if cmd.validate_crc() {
        match cache.source_crcs.get(slot).copied().flatten() {
            Some(stored) if stored == result => {}
            Some(stored) => {
                return Err(MoveError::CrcMismatch(format!(
                    "validate_crc: computed {} {result:#010x}, the source CRC stored in slot {slot} is {stored:#010x}",
                    kind.name()
                )));
            }
            None => {
                return Err(MoveError::CrcMismatch(format!(
                    "validate_crc: computed {} {result:#010x}, but no source CRC is stored in slot {slot}",
                    kind.name()
                )));
            }
        }
    }
    if cmd.store_crc_result()
        && let Some(s) = cache.slots.get_mut(slot)
    {
        *s = Some(sum.state());
        cache.stale_slots[slot] = stale_sum;
    }
    if cmd.store_source_crc()
        && let Some(s) = cache.source_crcs.get_mut(slot)
    {
        *s = Some(result);
        cache.stale_source_crcs[slot] = stale_sum;
    }
    if cmd.send_crc() {
        let bytes = result.to_le_bytes();
        let mut done = 0usize;
        while done < 4 {
            let (dst, n) = sink.next((4 - done) as u64)?;
            let n = n as usize;
            bus.write(dst, &bytes[done..done + n])
                .map_err(MoveError::Write)?;
            if stale_sum {
                bus.mark_stale(dst, n as u64);
            }
            sink.written += n as u64;
            done += n;
        }
    }
    Ok(Moved {
        written: sink.written,
        checksum: Some(result),
        unchecked,
    })
}

/// Bytes a CCE packet writes: the first source's element count (which
/// sets the accumulator's, docs/references/wiki.md §F.3) times the output size.
pub fn cce_out_len(first_word1: Cme, first_len: u64) -> u64 {
    match (first_word1.cce_dtypes(), first_word1.cce()) {
        (Some((i, o)), Some(_)) => first_len / i.size_bytes().max(1) as u64 * o.size_bytes() as u64,
        _ => first_len,
    }
}

/// CCE in-transfer compute (docs/references/wiki.md §F.3; docs/cme.md §4): every TX
/// descriptor of the packet is one source, read in its own input dtype
/// (word1 bits 11:8) and combined into the running accumulator (FP32) with
/// the packet's operation; the first source loads it. The last source's
/// output dtype (bits 15:12) converts the result, which streams into the RX
/// buffers. The destination is not read: `B op= A` is the two-source packet
/// (B, A), and a single source converts the dtype. An FMA source without a
/// meta descriptor uses scale 1.0.
///
/// A CCE meta descriptor (word0 bit 23; docs/references/wiki.md §F.2) configures the next
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
    let mut stale = false;
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
        bus.read_as(nan_of(in_dt));
        bus.read(t.desc.buf_ptr, &mut src)
            .map_err(MoveError::Read)?;
        // Timing-only: a result computed from bytes no copy moved.
        stale |= bus.stale(t.desc.buf_ptr, len as u64);
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
        if stale {
            bus.mark_stale(dst, n as u64);
        }
        sink.written += n as u64;
        done += n;
    }
    Ok(Moved {
        written: sink.written,
        checksum: None,
        unchecked: None,
    })
}

/// The NaN of a float element type as it lies in memory (the quiet NaN
/// the conversions produce, [`cme::from_f32`] of NaN: BF16 0x7FC0, FP16
/// 0x7E00, FP32 0x7FC00000, FP8 E4M3 0x7F, E5M2 0x7E, E3M4 0x78); `None`
/// for the integers and FP4, which have no NaN ([`Bus::read_as`]).
pub fn nan_of(dtype: cme::Dtype) -> Option<sim_core::ElementNan> {
    if !dtype.is_float() || dtype == cme::Dtype::Fp4Exp2 {
        return None;
    }
    let e = cme::from_f32(dtype, f32::NAN);
    let mut bytes = [0u8; 4];
    let s = e.as_slice();
    bytes.get_mut(..s.len())?.copy_from_slice(s);
    Some(sim_core::ElementNan {
        bytes,
        len: s.len() as u8,
    })
}

/// [`nan_of`] of a dtype code (word1 bits 11:8, the instruction words'
/// dtype fields); `None` for an unknown code.
pub fn nan_of_code(code: u8) -> Option<sim_core::ElementNan> {
    cme::Dtype::from_code(code).and_then(nan_of)
}

/// The element size of a cross-bar transpose word1 (the default copy word
/// with op DRE and a 2- or 4-byte dtype in bits 11:8,
/// [`dma_abi::CmeWord::xbar_dtype`]); `None` for every other word (which
/// [`packet_op`] refuses when it reads as DRE).
pub(crate) fn xbar_elem_bytes(word1: u32) -> Option<usize> {
    let code = CmeWord::from_raw(word1).xbar_dtype()?;
    cme::Dtype::from_code(code)
        .map(|d| d.size_bytes())
        .filter(|&s| s == 2 || s == 4)
}

/// The axi2sram cross-bar transpose (docs/references/wiki.md §A.7, §G.4; docs/cme.md
/// §4): a cross-bar packet's (word1 = the default copy word with op DRE and
/// the element dtype, [`dma_abi::CmeWord::xbar_dtype`]; [`packet_op`]
/// refuses other DRE words) R TX descriptors are R source rows of N elements
/// (the element dtype in word1 bits 11:8, this simulator's field), and the
/// tile lands transposed in the partitioned memory of the first RX buffer:
/// element (i, c) at `dst + c × partition stride + i × size` — N columns of
/// R elements, one per partition. The RX length covers R × N elements.
fn xbar_packet(
    bus: &mut dyn Bus,
    tx: &[Piece],
    rx: &[Piece],
    encode_64k: bool,
    cmd: Cme,
    esz: usize,
) -> Result<Moved, MoveError> {
    // One S2M buffer holding the whole tile (the firmware's shape).
    let tile_bytes: u64 = tx
        .iter()
        .map(|t| u64::from(t.desc.len_bytes(encode_64k)))
        .sum();
    let dst = match rx {
        [r] if u64::from(r.desc.len_bytes(encode_64k)) >= tile_bytes => r.desc.buf_ptr,
        _ => {
            return Err(MoveError::Length(format!(
                "cross-bar word1 {:#010x}: {} S2M buffers for a {tile_bytes}-byte tile \
                 (one buffer of at least the tile's size lands it)",
                cmd.0,
                rx.len()
            )));
        }
    };
    let Some(stride) = bus.partition_stride(dst) else {
        return Err(MoveError::Length(format!(
            "cross-bar destination {dst:#x} is not in partitioned memory (SBUF/PSUM)"
        )));
    };
    let row_len = tx
        .first()
        .map_or(0, |t| t.desc.len_bytes(encode_64k) as usize);
    if row_len == 0
        || !row_len.is_multiple_of(esz)
        || tx
            .iter()
            .any(|t| t.desc.len_bytes(encode_64k) as usize != row_len)
    {
        return Err(MoveError::Length(format!(
            "cross-bar rows must be equal whole numbers of {esz}-byte elements (first row {row_len} bytes)"
        )));
    }
    let mut rows = vec![0u8; row_len * tx.len()];
    // Timing-only: a tile transposed from bytes no copy moved.
    let mut stale = false;
    for (t, chunk) in tx.iter().zip(rows.chunks_mut(row_len)) {
        bus.read(t.desc.buf_ptr, chunk).map_err(MoveError::Read)?;
        stale |= bus.stale(t.desc.buf_ptr, row_len as u64);
    }
    let (r, n) = (tx.len(), row_len / esz);
    let mut col = vec![0u8; r * esz];
    for c in 0..n {
        for i in 0..r {
            let from = i * row_len + c * esz;
            col[i * esz..(i + 1) * esz].copy_from_slice(&rows[from..from + esz]);
        }
        bus.write(dst + c as u64 * stride, &col)
            .map_err(MoveError::Write)?;
        if stale {
            bus.mark_stale(dst + c as u64 * stride, col.len() as u64);
        }
    }
    Ok(Moved {
        written: (r * n * esz) as u64,
        checksum: None,
        unchecked: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dma_abi::CmeWord;

    /// 4 partitions of 64 bytes, 0x100 apart, at 0x1000; flat memory below.
    struct PartBus {
        mem: Vec<u8>,
    }

    const PART0: u64 = 0x1000;
    const STRIDE: u64 = 0x100;

    impl Bus for PartBus {
        fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), AccessError> {
            let a = addr as usize;
            let src = self.mem.get(a..a + buf.len()).ok_or(AccessError {
                addr,
                message: "unmapped".into(),
            })?;
            buf.copy_from_slice(src);
            Ok(())
        }
        fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), AccessError> {
            let a = addr as usize;
            let dst = self.mem.get_mut(a..a + data.len()).ok_or(AccessError {
                addr,
                message: "unmapped".into(),
            })?;
            dst.copy_from_slice(data);
            Ok(())
        }
        fn partition_stride(&self, addr: u64) -> Option<u64> {
            (PART0..PART0 + 4 * STRIDE)
                .contains(&addr)
                .then_some(STRIDE)
        }
    }

    fn piece(idx: u32, len: u32, word1: u32, buf_ptr: u64) -> Piece {
        Piece {
            idx,
            desc: RawDesc {
                word0: len,
                word1,
                buf_ptr,
            },
        }
    }

    fn bus() -> PartBus {
        let mut mem = vec![0u8; 0x2000];
        for (i, b) in mem[..0x100].iter_mut().enumerate() {
            *b = i as u8;
        }
        PartBus { mem }
    }

    fn xbar_word(dtype: cme::Dtype) -> u32 {
        CmeWord::DEFAULT_COPY
            .with_xbar(dtype.code())
            .map(CmeWord::raw)
            .unwrap_or_default()
    }

    fn run(bus: &mut PartBus, tx: &[Piece], rx: &[Piece]) -> Result<Moved, MoveError> {
        let mut cache = CrcCache::default();
        move_packet(bus, tx, rx, false, 0xFFFF_FFFF, 0, &mut cache)
    }

    #[test]
    fn the_nan_of_each_float_type_as_it_lies_in_memory() {
        let nan = |d| nan_of(d).map(|n| n.as_slice().to_vec());
        assert_eq!(nan(cme::Dtype::Bf16), Some(vec![0xc0, 0x7f]));
        assert_eq!(nan(cme::Dtype::Fp16), Some(vec![0x00, 0x7e]));
        assert_eq!(nan(cme::Dtype::Fp32), Some(vec![0x00, 0x00, 0xc0, 0x7f]));
        assert_eq!(nan(cme::Dtype::Fp32r), Some(vec![0x00, 0x00, 0xc0, 0x7f]));
        assert_eq!(nan(cme::Dtype::Fp8Exp4), Some(vec![0x7f]));
        assert_eq!(nan(cme::Dtype::Fp8Exp5), Some(vec![0x7e]));
        assert_eq!(nan(cme::Dtype::Fp8Exp3), Some(vec![0x78]));
        for d in [
            cme::Dtype::Fp4Exp2,
            cme::Dtype::Int8,
            cme::Dtype::Uint16,
            cme::Dtype::Int32,
        ] {
            assert_eq!(nan(d), None, "{d}: no NaN");
        }
    }

    #[test]
    fn cross_bar_packet_lands_each_column_in_its_partition() {
        // Two source rows of four bf16 elements (8 bytes) at 0x00 and 0x40.
        let w = xbar_word(cme::Dtype::Bf16);
        let tx = [piece(0, 8, w, 0x00), piece(1, 8, w, 0x40)];
        let rx = [piece(0, 16, 0, PART0 + 0x10)];
        let mut b = bus();
        let moved = run(&mut b, &tx, &rx).unwrap();
        assert_eq!(moved.written, 16);
        // Column c = [row0[c], row1[c]] at partition c, +0x10.
        for c in 0..4u8 {
            let at = (PART0 + u64::from(c) * STRIDE + 0x10) as usize;
            assert_eq!(
                &b.mem[at..at + 4],
                &[2 * c, 2 * c + 1, 0x40 + 2 * c, 0x41 + 2 * c],
                "column {c}"
            );
            // Nothing else in the partition was written.
            assert_eq!(b.mem[at + 4], 0, "column {c}");
        }
    }

    #[test]
    fn cross_bar_with_four_byte_elements() {
        let w = xbar_word(cme::Dtype::Fp32);
        let tx = [piece(0, 8, w, 0x00), piece(1, 8, w, 0x80)];
        let rx = [piece(0, 16, 0, PART0)];
        let mut b = bus();
        run(&mut b, &tx, &rx).unwrap();
        let p1 = (PART0 + STRIDE) as usize;
        assert_eq!(&b.mem[p1..p1 + 8], &[4, 5, 6, 7, 0x84, 0x85, 0x86, 0x87]);
    }

    #[test]
    fn cross_bar_faults_are_errors_not_panics() {
        let w = xbar_word(cme::Dtype::Bf16);
        let mut b = bus();
        // Destination outside partitioned memory.
        let e = run(&mut b, &[piece(0, 8, w, 0)], &[piece(0, 8, 0, 0x800)]).unwrap_err();
        assert!(matches!(e, MoveError::Length(ref m) if m.contains("not in partitioned memory")));
        // Unequal rows.
        let tx = [piece(0, 8, w, 0), piece(1, 6, w, 0x40)];
        let e = run(&mut b, &tx, &[piece(0, 16, 0, PART0)]).unwrap_err();
        assert!(matches!(e, MoveError::Length(ref m) if m.contains("equal whole numbers")));
        // An S2M buffer shorter than the tile, or the tile split over two.
        let e = run(&mut b, &[piece(0, 8, w, 0)], &[piece(0, 4, 0, PART0)]).unwrap_err();
        assert!(matches!(e, MoveError::Length(ref m) if m.contains("1 S2M buffers")));
        let rx2 = [piece(0, 4, 0, PART0), piece(1, 4, 0, PART0 + 4)];
        let e = run(&mut b, &[piece(0, 8, w, 0)], &rx2).unwrap_err();
        assert!(matches!(e, MoveError::Length(ref m) if m.contains("2 S2M buffers")));
        // A source read that fails is an M2S data error.
        let e = run(
            &mut b,
            &[piece(0, 8, w, 0x10_0000)],
            &[piece(0, 8, 0, PART0)],
        )
        .unwrap_err();
        assert!(matches!(e, MoveError::Read(_)));
    }

    #[test]
    fn the_inline_fill_word_stays_a_plain_copy() {
        // The inline path's never-written word1 reads as DRE (P9.1 §5),
        // and the seed describes that descriptor as a CME copy.
        let tx = [piece(0, 8, INLINE_FILL_WORD1, 0x00)];
        let rx = [piece(0, 8, 0, PART0)];
        let mut b = bus();
        run(&mut b, &tx, &rx).unwrap();
        let p0 = PART0 as usize;
        assert_eq!(&b.mem[p0..p0 + 8], &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(b.mem[(PART0 + STRIDE) as usize], 0);
    }

    /// DGE MULTIPLY as the firmware lays it out (B, an FMA meta descriptor
    /// selecting stored × input + scale, then A): with the scale
    /// `cme::MULTIPLY_FMA_SCALE` every product keeps its IEEE sign, exact
    /// zeros included (docs/cme.md §3.1).
    #[test]
    fn cce_multiply_packet_keeps_signed_zero_products() {
        let fma = CmeWord::DEFAULT_COPY
            .with_cce(dma_abi::CceType::Fma, 0xA, 0xA)
            .map_or(0, CmeWord::raw);
        let w2 = (cme::FmaOperand::Stored.bits() << 24)
            | (cme::FmaOperand::Input.bits() << 26)
            | (cme::FmaOperand::Scale.bits() << 28);
        let w3 = cme::MULTIPLY_FMA_SCALE.to_bits();
        let meta = Piece {
            idx: 1,
            desc: RawDesc {
                word0: 1 << 23,
                word1: 0x0210_0000 | (0xA << 8) | (0xA << 12) | (0xA << 16),
                buf_ptr: u64::from(w2) | (u64::from(w3) << 32),
            },
        };
        let b_vals = [-1.0f32, 0.0, -0.0, 3.0, 2.5];
        let a_vals = [0.0f32, -5.0, 7.0, -0.0, 4.0];
        let mut bus = bus();
        let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        bus.mem[0x400..0x414].copy_from_slice(&f(&b_vals));
        bus.mem[0x500..0x514].copy_from_slice(&f(&a_vals));
        let tx = [piece(0, 20, fma, 0x400), meta, piece(2, 20, fma, 0x500)];
        let rx = [piece(0, 20, 0, 0x600)];
        assert_eq!(run(&mut bus, &tx, &rx).unwrap().written, 20);
        for (i, (b, a)) in b_vals.iter().zip(a_vals).enumerate() {
            let got = u32::from_le_bytes(bus.mem[0x600 + 4 * i..0x604 + 4 * i].try_into().unwrap());
            assert_eq!(got, (b * a).to_bits(), "{b} x {a}");
        }
    }

    fn crc32() -> CmeWord {
        CmeWord::DEFAULT_COPY.with_cme_type(CmeType::Crc32)
    }

    /// A CRC32 packet over bus bytes 0..16 with `word1`, data into 0x800 and,
    /// with send_crc, the result after it; init register `iv`.
    fn crc_run(
        bus: &mut PartBus,
        w: CmeWord,
        iv: u32,
        cache: &mut CrcCache,
    ) -> Result<Moved, MoveError> {
        let tx = [piece(0, 16, w.raw(), 0x00)];
        let rx = [piece(0, 20, 0, 0x800)];
        move_packet(bus, &tx, &rx, false, iv, 0, cache)
    }

    fn crc32_of(iv: u32, data: &[u8]) -> u32 {
        cme::checksum_with_iv(cme::ChecksumKind::Crc32, iv, data)
    }

    #[test]
    fn result_swaps_apply_to_the_sent_and_reported_crc() {
        let plain = crc32_of(0xFFFF_FFFF, &bus().mem[..16]);
        for (w, want) in [
            (crc32().with_result_byte_swap(true), plain.swap_bytes()),
            (crc32().with_result_bit_swap(true), plain.reverse_bits()),
            (
                crc32()
                    .with_result_byte_swap(true)
                    .with_result_bit_swap(true),
                plain.swap_bytes().reverse_bits(),
            ),
        ] {
            let mut b = bus();
            let moved = crc_run(
                &mut b,
                w.with_send_crc(true),
                0xFFFF_FFFF,
                &mut CrcCache::default(),
            )
            .unwrap();
            assert_eq!(moved.checksum, Some(want), "{w:?}");
            assert_eq!(&b.mem[0x810..0x814], &want.to_le_bytes(), "{w:?}");
        }
    }

    #[test]
    fn source_swaps_change_what_the_crc_sees_not_the_copied_data() {
        let src: Vec<u8> = bus().mem[..16].to_vec();
        for (sw, w) in [
            (
                cme::Swap {
                    byte: true,
                    bit: false,
                },
                crc32().with_src_byte_swap(true),
            ),
            (
                cme::Swap {
                    byte: false,
                    bit: true,
                },
                crc32().with_src_bit_swap(true),
            ),
        ] {
            let mut seen = src.clone();
            sw.data(&mut seen);
            let mut b = bus();
            let moved = crc_run(&mut b, w, 0xFFFF_FFFF, &mut CrcCache::default()).unwrap();
            assert_eq!(moved.checksum, Some(crc32_of(0xFFFF_FFFF, &seen)), "{w:?}");
            assert_eq!(
                &b.mem[0x800..0x810],
                &src[..],
                "{w:?}: data copied unswapped"
            );
        }
    }

    #[test]
    fn init_swaps_apply_to_the_queue_iv() {
        let data = bus().mem[..16].to_vec();
        let mut b = bus();
        let w = crc32().with_init_byte_swap(true);
        let moved = crc_run(&mut b, w, 0x1234_5678, &mut CrcCache::default()).unwrap();
        assert_eq!(moved.checksum, Some(crc32_of(0x7856_3412, &data)));
        let w = crc32().with_init_bit_swap(true);
        let moved = crc_run(&mut b, w, 0x0000_0001, &mut CrcCache::default()).unwrap();
        assert_eq!(moved.checksum, Some(crc32_of(0x8000_0000, &data)));
    }

    #[test]
    fn intermediate_value_swaps_apply_to_a_stored_iv() {
        let data = bus().mem[..16].to_vec();
        let mut cache = CrcCache::default();
        cache.slots[1] = Some(cme::ChecksumState {
            kind: cme::ChecksumKind::Crc32,
            value: 0x1234_5678,
            phase: 0,
        });
        let w = crc32()
            .with_use_stored_crc_iv(true)
            .with_cached_crc_iv_index(1);
        let mut b = bus();
        let moved = crc_run(&mut b, w, 0xFFFF_FFFF, &mut cache).unwrap();
        assert_eq!(moved.checksum, Some(crc32_of(0x1234_5678, &data)));
        let moved = crc_run(
            &mut b,
            w.with_intr_val_byte_swap(true),
            0xFFFF_FFFF,
            &mut cache,
        )
        .unwrap();
        assert_eq!(moved.checksum, Some(crc32_of(0x7856_3412, &data)));
        // The init swaps do not touch a stored IV, nor the intermediate
        // swaps the queue IV.
        let moved = crc_run(&mut b, w.with_init_byte_swap(true), 0xFFFF_FFFF, &mut cache).unwrap();
        assert_eq!(moved.checksum, Some(crc32_of(0x1234_5678, &data)));
        let moved = crc_run(
            &mut b,
            crc32().with_intr_val_bit_swap(true),
            0x1,
            &mut cache,
        )
        .unwrap();
        assert_eq!(moved.checksum, Some(crc32_of(0x1, &data)));
    }

    #[test]
    fn store_source_crc_and_validate_crc() {
        let data = bus().mem[..16].to_vec();
        let want = crc32_of(0xFFFF_FFFF, &data);
        let mut cache = CrcCache::default();
        let mut b = bus();
        let w = crc32().with_cached_crc_iv_index(3);
        crc_run(
            &mut b,
            w.with_store_source_crc(true),
            0xFFFF_FFFF,
            &mut cache,
        )
        .unwrap();
        assert_eq!(cache.source_crcs[3], Some(want));
        assert_eq!(cache.slots[3], None, "the IV cache is separate");
        // The stored value is the result as reported, result swaps included.
        let mut c2 = CrcCache::default();
        crc_run(
            &mut b,
            w.with_store_source_crc(true).with_result_byte_swap(true),
            0xFFFF_FFFF,
            &mut c2,
        )
        .unwrap();
        assert_eq!(c2.source_crcs[3], Some(want.swap_bytes()));
        // Validation against it.
        assert!(crc_run(&mut b, w.with_validate_crc(true), 0xFFFF_FFFF, &mut cache).is_ok());
        let e = crc_run(&mut b, w.with_validate_crc(true), 0x1234_5678, &mut cache).unwrap_err();
        assert!(
            matches!(e, MoveError::CrcMismatch(ref m) if m.contains("slot 3")),
            "{e:?}"
        );
        let e = crc_run(
            &mut b,
            crc32().with_validate_crc(true),
            0xFFFF_FFFF,
            &mut cache,
        )
        .unwrap_err();
        assert!(
            matches!(e, MoveError::CrcMismatch(ref m) if m.contains("no source CRC")),
            "{e:?}"
        );
    }

    #[test]
    fn unsupported_words_move_nothing() {
        for w in [
            0u32,
            CmeWord::DEFAULT_COPY.with_op(SdmaOp::Unknown(5)).raw(),
            CmeWord::DEFAULT_COPY.with_op(SdmaOp::Dre).raw(),
            xbar_word(cme::Dtype::Uint8),
        ] {
            let mut b = bus();
            let e = run(&mut b, &[piece(0, 8, w, 0x00)], &[piece(0, 8, 0, 0x800)]).unwrap_err();
            assert!(matches!(e, MoveError::Unsupported(_)), "{w:#x}: {e:?}");
            assert_eq!(&b.mem[0x800..0x808], &[0; 8], "{w:#x}");
        }
    }
}
