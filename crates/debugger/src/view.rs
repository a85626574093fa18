//! What the debugger shows, as text (docs/user-guide.md §12 "What a stop
//! shows", "Commands"): a stop, a ring with its descriptors decoded, the
//! registers of a region, memory, the breakpoint table.

use soc::Device;
use soc::exec::{QueueTarget, ring_of};
use udma::Dir;

use crate::breakpoint::Breakpoints;
use crate::session::{FwDoorbell, Stop, StopKind};

/// The header of a stop: why it stopped, each breakpoint that fired, and
/// for a doorbell the ring (and the queue's registers for a trace one).
pub fn stop_text(device: &Device, stop: &Stop) -> String {
    let mut out = String::new();
    let line = stop.position.as_ref().map_or(0, |p| p.line);
    match &stop.kind {
        StopKind::Doorbell { queue, increment } => {
            let dir = match queue.dir {
                Dir::M2s => "M2S (TX, reads the source)",
                Dir::S2m => "S2M (RX, writes the destination)",
            };
            out.push_str(&format!(
                "== doorbell at line {line}, cycle {}: engine {} queue {} {dir}: tail += {increment}\n",
                stop.cycle, queue.engine, queue.queue
            ));
        }
        StopKind::FwDoorbell(fw) => out.push_str(&fw_doorbell_header(fw)),
        StopKind::Statement { line } => {
            out.push_str(&format!("== stepped line {line} (cycle {})\n", stop.cycle));
        }
        StopKind::Cycle { goal } if *goal == stop.cycle => {
            out.push_str(&format!("== reached cycle {goal}\n"));
        }
        StopKind::Cycle { goal } => {
            out.push_str(&format!(
                "== reached cycle {} (asked for {goal}; a host operation or an idle jump passed it)\n",
                stop.cycle
            ));
        }
        StopKind::Events(events) => {
            out.push_str(&format!(
                "== {} device event{} at cycle {}:\n",
                events.len(),
                if events.len() == 1 { "" } else { "s" },
                stop.cycle
            ));
            for e in events {
                out.push_str(&soc::exec::event_line(e));
            }
        }
        StopKind::Finished { what } => out.push_str(&format!("== finished: {what}\n")),
        StopKind::Breakpoint => {}
        StopKind::End => {
            out.push_str(&format!("== end of trace at cycle {}\n", stop.cycle));
        }
    }
    for h in &stop.hits {
        out.push_str(&format!("== breakpoint {} ({}): {}\n", h.id, h.spec, h.why));
    }
    match &stop.kind {
        StopKind::Doorbell { queue, increment } => {
            out.push_str(&show_ring(device, queue, *increment));
            out.push_str(&show_regs(device, &queue.region));
        }
        StopKind::FwDoorbell(fw) => out.push_str(&fw_doorbell_rings(device, fw)),
        _ => {}
    }
    out
}

fn fw_doorbell_header(fw: &FwDoorbell) -> String {
    let mut out = format!(
        "== firmware doorbell at cycle {}: tpb{} inst#{} ({}) rang engine {} queue {}: S2M tail += {}, M2S tail += {}, {} bytes\n",
        fw.at, fw.tpb, fw.seq, fw.source, fw.engine, fw.queue, fw.count, fw.m2s_count, fw.bytes
    );
    for op in &fw.micro_ops {
        out.push_str(&format!("  {op}\n"));
    }
    out
}

/// Both rings of a firmware doorbell: the tails move
/// `doorbell_latency_cycles` after the write, so what they have not taken
/// yet shows as `new`.
fn fw_doorbell_rings(device: &Device, fw: &FwDoorbell) -> String {
    let (Some(tx), Some(rx)) = (
        soc::exec::queue_target(device, &format!("eng{}.m2s.q{}", fw.engine, fw.queue)),
        soc::exec::queue_target(device, &format!("eng{}.s2m.q{}", fw.engine, fw.queue)),
    ) else {
        return String::new();
    };
    let not_taken = |q: &QueueTarget, first: u32, count: u32| {
        ring_of(device, q).map_or(0, |(_, len, tail, _)| {
            let len = len.max(1);
            (first % len + count + len - tail % len) % len
        })
    };
    let mut out = show_ring(device, &rx, not_taken(&rx, fw.s2m_first, fw.count));
    out.push_str(&show_ring(
        device,
        &tx,
        not_taken(&tx, fw.m2s_first, fw.m2s_count),
    ));
    out
}

/// The ring of a queue: registers and the descriptors from the hardware
/// head to the tail plus `pending` (what the next doorbell will post).
pub fn show_ring(device: &Device, q: &QueueTarget, pending: u32) -> String {
    let Some((base, len, tail, tail_id)) = ring_of(device, q) else {
        return format!("{}: cannot read the ring registers\n", q.region);
    };
    let p = if q.dir == Dir::M2s { "T" } else { "R" };
    let head_raw = reg(device, &q.region, &format!("{p}DRHP")).unwrap_or(0);
    let (head, head_id) = (head_raw & 0xFF_FFFF, head_raw >> 30);
    let mut out = format!(
        "ring {}: base {base:#x}, {len} descriptors; head {head} (ring id {head_id}), tail {tail} (ring id {tail_id})\n",
        q.region
    );
    if len == 0 {
        out.push_str("  (ring not configured)\n");
        return out;
    }
    let posted = (tail + len - head) % len;
    let show = (posted + pending).min(len).min(64);
    if show == 0 {
        out.push_str("  (no descriptors between head and tail)\n");
    }
    for i in 0..show {
        let idx = (head + i) % len;
        let addr = base + 16 * u64::from(idx);
        let mut raw = [0u8; 16];
        let tag = if i < posted { "posted " } else { "new    " };
        match device.read_bytes(addr, &mut raw) {
            Ok(()) => {
                let d = dma_abi::Descriptor::from_bytes(&raw);
                let w0 = d.len_ctrl();
                let cme = dma_abi::CmeWord::from_raw(d.word1());
                let word1 = match q.dir {
                    Dir::M2s => format!("op {} {}", cme.op().name(), cme.optype().name()),
                    Dir::S2m => format!("buf2_lo {:#x}", d.word1()),
                };
                out.push_str(&format!(
                    "  {tag}[{idx:>4}] {addr:#014x}: len {:>6} ring_id {}{}{}{}{} {} {:#x}  {word1}\n",
                    w0.len_bytes(true),
                    w0.ring_id(),
                    if w0.first() { " FIRST" } else { "" },
                    if w0.last() { " LAST" } else { "" },
                    if w0.dmb() { " DMB" } else { "" },
                    if w0.sow() { " SOW" } else { "" },
                    if q.dir == Dir::M2s { "src" } else { "dst" },
                    d.buf_ptr()
                ));
            }
            Err(e) => out.push_str(&format!("  [{idx:>4}] {addr:#x}: {e}\n")),
        }
    }
    if posted + pending > show {
        out.push_str(&format!("  … {} more\n", posted + pending - show));
    }
    out
}

fn reg(device: &Device, region: &str, name: &str) -> Option<u32> {
    let id = device.map().by_name(region)?;
    let block = device.block_of(id)?;
    let off = block.find(name, None)?;
    let t = device
        .reg_target(device.map().region(id).base + off)
        .ok()??;
    device.peek_reg(t)
}

/// Every register of a region with its value (non-zero array elements only
/// for arrays), fields decoded for registers away from reset.
pub fn show_regs(device: &Device, region: &str) -> String {
    let Some(id) = device.map().by_name(region) else {
        return format!("unknown region `{region}`\n");
    };
    let Some(block) = device.block_of(id) else {
        return format!("{region} has no registers\n");
    };
    let base = device.map().region(id).base;
    let mut out = format!("registers of {region} ({}):\n", block.block());
    for r in block.elements() {
        let Ok(Some(t)) = device.reg_target(base + r.offset()) else {
            continue;
        };
        let v = device.peek_reg(t).unwrap_or(0);
        let reset = block.reset_values().get(r.slot()).copied().unwrap_or(0);
        if r.index().is_some() && v == reset {
            continue;
        }
        let fields: Vec<String> = if v != reset {
            r.spec()
                .decode(v)
                .into_iter()
                .filter(|(_, fv)| *fv != 0)
                .map(|(n, fv)| format!("{n}={fv:#x}"))
                .collect()
        } else {
            Vec::new()
        };
        out.push_str(&format!(
            "  {:#06x} {:<24} {v:#010x}{}\n",
            r.offset(),
            r.name(),
            if fields.is_empty() {
                String::new()
            } else {
                format!("  {}", fields.join(" "))
            }
        ));
    }
    out
}

/// A hexdump of `len` bytes at `addr` (a number or a trace address).
pub fn show_mem(device: &Device, addr: &str, len: &str) -> String {
    let addr = match trace_format::parse_addr(addr, "<debugger>")
        .map_err(|e| e.message)
        .and_then(|a| soc::resolve(device, &a).map_err(|e| e.message))
    {
        Ok(r) => r.addr,
        Err(e) => return format!("{e}\n"),
    };
    let Ok(len) = soc_map::parse_u64(len) else {
        return format!("`{len}` is not a length\n");
    };
    let len = len.min(4096) as usize;
    let mut buf = vec![0u8; len];
    match device.read_bytes(addr, &mut buf) {
        Ok(()) => format!("{}\n", soc::exec::hexdump(addr, &buf)),
        Err(e) => format!("{e}\n"),
    }
}

/// `info break`: the table.
pub fn breakpoint_table(bps: &Breakpoints) -> String {
    let mut rows: Vec<String> = Vec::new();
    for b in bps.iter() {
        rows.push(format!(
            "{:<4} {:<6} {:<4} {:<5} {}",
            b.id,
            b.kind.type_name(),
            if b.enabled { "y" } else { "n" },
            b.hits,
            b.kind.describe()
        ));
        if let Some(c) = &b.condition {
            rows.push(format!("{:22}stop only if {c}", ""));
        }
        if b.ignore > 0 {
            rows.push(format!("{:22}ignore next {} hits", "", b.ignore));
        }
    }
    if rows.is_empty() {
        return "no breakpoints or watchpoints\n".into();
    }
    let mut out = format!(
        "{:<4} {:<6} {:<4} {:<5} What\n",
        "Num", "Type", "Enb", "Hits"
    );
    for r in rows {
        out.push_str(&r);
        out.push('\n');
    }
    out
}
