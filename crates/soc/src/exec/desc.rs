//! The `desc` directive: a 16-byte descriptor built from its fields and
//! placed in a ring slot (`docs/trace-format.md`, `docs/descriptors.md`).

use super::*;

pub(super) fn build_descriptor(
    q: &QueueTarget,
    fields: &DescFields,
    addr: Option<u64>,
    buf2: Option<u64>,
    ring_id: u8,
) -> Result<[u8; 16], (&'static str, String)> {
    if let Some(raw) = fields.raw {
        return Ok(raw);
    }
    let len = fields
        .len
        .ok_or(("len", "desc: len= is required (or raw=)".to_string()))?;
    let f = &fields.flags;
    let flags = dma_abi::Flags {
        first: f.first,
        last: f.last,
        int_en: f.int,
        dmb: f.dmb,
        sow: f.sow,
        concat: f.concat,
        meta: f.meta,
        ring_id: fields.ring_id.unwrap_or(ring_id),
    };
    let w0 = dma_abi::LenCtrl::from_raw(0)
        .with_len_bytes(len)
        .map_err(|e| ("len", format!("desc: len={len}: {e}")))?
        .with_flags(flags);
    let word1 = match q.dir {
        // S2M word 1 is `buf2_ptr_lo`; the engine takes the second buffer's
        // high half from the first buffer's address: a buf2 in another
        // 4 GiB window would land elsewhere, so it is bad input, not its
        // low half (docs/trace-format.md §4.2). `word1=` (which the parser
        // keeps apart from `buf2=`) gives `buf2_ptr_lo` directly.
        Dir::S2m => match (buf2, fields.word1) {
            (Some(b), _) if b >> 32 == addr.unwrap_or(0) >> 32 => b as u32,
            (Some(b), _) => {
                return Err((
                    "buf2",
                    format!(
                        "desc: buf2={b:#x} is not in the first buffer's 4 GiB window ({:#x}..): S2M word 1 holds buf2_ptr_lo, its high half is the first buffer's",
                        addr.unwrap_or(0) >> 32 << 32
                    ),
                ));
            }
            (None, Some(w)) => w,
            (None, None) => 0,
        },
        Dir::M2s => match fields.word1 {
            Some(w) => w,
            None => {
                let mut w = dma_abi::CmeWord::DEFAULT_COPY;
                if let Some(op) = fields.op {
                    w = w.with_cme_type(cme_type(op));
                }
                if let Some(iv) = fields.crc_iv {
                    w = w.with_cached_crc_iv_index(iv);
                }
                w = w
                    .with_write_barrier(f.write_barrier)
                    .with_send_crc(f.send_crc)
                    .with_store_crc_result(f.store_crc)
                    .with_store_source_crc(f.store_source_crc)
                    .with_validate_crc(f.validate_crc)
                    .with_use_stored_crc_iv(f.use_stored_iv);
                if f.no_copy {
                    w = w.with_copy_src_data(false);
                }
                if let Some(c) = fields.cce {
                    let code = |d: Option<trace_format::Dtype>| d.map_or(0xA, dtype_code) & 0xF;
                    if let Some(cce) =
                        w.with_cce(cce_type(c), code(fields.in_dtype), code(fields.out_dtype))
                    {
                        w = cce;
                    }
                }
                w.raw()
            }
        },
    };
    let d = dma_abi::Descriptor::new(w0, word1, addr.unwrap_or(0));
    Ok(d.to_bytes())
}

pub(super) fn cme_type(op: trace_format::CmeOp) -> dma_abi::CmeType {
    use dma_abi::CmeType as C;
    use trace_format::CmeOp as T;
    match op {
        T::Copy => C::Copy,
        T::Crc32 => C::Crc32,
        T::Crc32c => C::Crc32c,
        T::Cksum16 => C::Cksum16,
        T::Cksum32 => C::Cksum32,
        T::Crc16 => C::Crc16,
        T::Adler32 => C::Cksum32Adler,
        T::Crc8 => C::Crc8,
    }
}

pub(super) fn cce_type(op: trace_format::CceOp) -> dma_abi::CceType {
    use dma_abi::CceType as C;
    use trace_format::CceOp as T;
    match op {
        T::Add => C::Add,
        T::Fma => C::Fma,
        T::Max => C::Max,
        T::Min => C::Min,
    }
}

pub(super) fn dtype_code(d: trace_format::Dtype) -> u8 {
    use trace_format::Dtype as T;
    match d {
        T::Int8 => 0x2,
        T::Uint8 => 0x3,
        T::Int16 => 0x4,
        T::Uint16 => 0x5,
        T::Uint32 => 0x9,
        T::Bf16 => 0x6,
        T::Fp16 => 0x7,
        T::Int32 => 0x8,
        T::Fp32 => 0xA,
        T::Fp32r => 0xB,
        T::Fp8e3 => 0xD,
        T::Fp8e4 => 0xE,
        T::Fp8e5 => 0xF,
        T::Fp4 => 0x10,
    }
}

/// Places a descriptor (the `desc` directive).
pub(super) fn place_desc(
    device: &mut Device,
    exec: &mut Executor,
    q: &QueueTarget,
    queue: &QueueRef,
    fields: &DescFields,
    addr: Option<u64>,
    buf2: Option<u64>,
) -> Result<String, StepError> {
    let (slot, queue_span) = (queue.slot, queue.span);
    let (base, len, tail, tail_id) = ring_of(device, q).ok_or((
        Some(queue_span),
        format!("{}: cannot read the ring registers", q.region),
    ))?;
    let p = if q.dir == Dir::M2s { "T" } else { "R" };
    if len == 0 {
        return Err((
            Some(queue_span),
            format!(
                "{}: ring not configured ({p}DRL = 0): program {p}DRBP_LOW/{p}DRBP_HIGH/{p}DRL first",
                q.region
            ),
        ));
    }
    let key = (q.engine, q.dir, q.queue);
    let pending = exec.pending.get(&key).copied().unwrap_or(0);
    let (idx, ring_id) = match slot {
        Some(s) => {
            if s >= u64::from(len) {
                return Err((
                    Some(queue_span),
                    format!(
                        "{}[{s}]: slot is outside the ring of {len} descriptors",
                        q.region
                    ),
                ));
            }
            let idx = s as u32;
            // The ring id the hardware expects at this slot on its next pass.
            (
                idx,
                if idx >= tail {
                    tail_id
                } else {
                    (tail_id + 1) & 3
                },
            )
        }
        None => {
            // The software producer slot (seeded from the hardware tail).
            let (idx, id) = exec
                .next
                .get(&key)
                .copied()
                .filter(|&(i, _)| i < len)
                .unwrap_or((tail, tail_id));
            let following = if idx + 1 >= len {
                (0, (id + 1) & 3)
            } else {
                (idx + 1, id)
            };
            exec.next.insert(key, following);
            (idx, id)
        }
    };
    // An error names the argument it is about (the queue when none is).
    let bytes = build_descriptor(q, fields, addr, buf2, ring_id)
        .map_err(|(key, m)| (fields.span_of(key).or(Some(queue_span)), m))?;
    let at = base + 16 * u64::from(idx);
    device.write_bytes(at, &bytes).map_err(fault)?;
    if slot.is_none() {
        exec.pending.insert(key, pending + 1);
    }
    let d = dma_abi::Descriptor::from_bytes(&bytes);
    let w0 = d.len_ctrl();
    let encode_64k = encode_64k(device, q.engine);
    if w0.len_bytes(true) != w0.len_bytes(encode_64k) {
        exec.warnings.push(format!(
            "{}[{idx}]: the engine reads this descriptor's LEN field 0 as 0 bytes, not {}: eng{}.m2s.CFG_LEN.ENCODE_64K is off (its reset state; the driver sets it: write32 eng{}.m2s.cfg_len 0x010fffff)",
            q.region,
            w0.len_bytes(true),
            q.engine,
            q.engine
        ));
    }
    Ok(format!(
        "desc {}[{idx}] at {at:#x}: {} {:#x} len {} ring_id {}{}{}{}{} word1 {:#010x}",
        q.region,
        if q.dir == Dir::M2s { "src" } else { "dst" },
        d.buf_ptr(),
        w0.len_bytes(encode_64k),
        w0.ring_id(),
        if w0.first() { " FIRST" } else { "" },
        if w0.last() { " LAST" } else { "" },
        if w0.dmb() { " DMB" } else { "" },
        if w0.sow() { " SOW" } else { "" },
        d.word1()
    ))
}

/// Whether engine `engine` reads a descriptor LEN of 0 as 64 KiB: its
/// M2S `CFG_LEN.ENCODE_64K` (bit 24) as the register holds it now
/// (docs/descriptors.md, word 0). An engine without the register reads
/// as on.
fn encode_64k(device: &Device, engine: u16) -> bool {
    let Some(off) = device
        .catalog()
        .block("udma_m2s")
        .and_then(|m| m.find("CFG_LEN", None))
    else {
        return true;
    };
    let Some(region) = device.map().by_name(&format!("eng{engine}.m2s")) else {
        return true;
    };
    let base = device.map().region(region).base;
    match device.reg_target(base + off) {
        Ok(Some(t)) => device.peek_reg(t).is_none_or(|v| v & (1 << 24) != 0),
        _ => true,
    }
}
