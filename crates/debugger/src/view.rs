//! What the debugger shows, as text (docs/user-guide.md §12 "What a stop
//! shows", "Commands"): a stop, a ring with its descriptors decoded, the
//! registers of a region, memory, the breakpoint table.

use soc::Device;
use soc::exec::{QueueTarget, ring_of};
use udma::Dir;

use crate::breakpoint::Breakpoints;
use crate::session::{FwDoorbell, Stop, StopKind};

mod inflight;
mod mem;
mod regs;
mod ring;

pub use inflight::show_inflight;
pub use mem::{MAX_MEM_BYTES, show_mem};
pub(crate) use regs::glob_match;
pub use regs::{RegRow, registers, show_regs};
pub use ring::{doorbell_warnings, show_ring, show_ring_range};

/// A device event as a line (docs/user-guide.md §12 "Views"): an engine
/// or firmware event with each mapped address in it followed by its name
/// (`data write at 0x4000200000 (hbm1+0x200000)`); a register-side event
/// (semaphore, doorbell, pulse, ignored write) with its cycle, `@C`, and
/// its numbers left as they are: they are values, the register is named.
pub fn event_line(device: &Device, e: &soc::DeviceEvent) -> String {
    let text = soc::exec::event_text(e);
    match e {
        soc::DeviceEvent::Engine(_) | soc::DeviceEvent::Firmware(_) => {
            format!("    {}\n", name_addresses(device, &text))
        }
        _ => format!("    @{} {text}\n", e.cycle()),
    }
}

/// Words before a number that make it a value, not an address: a
/// REGWRITE micro-op's `REG[r] = V`, a packet's `checksum C`, a queue
/// reset's `bits B`.
const VALUE_MARKS: [&str; 3] = ["= ", "checksum ", "bits "];

/// `text` with each hex number of at least 5 digits that falls in a mapped
/// region followed by the region's name in parentheses; numbers that are
/// values ([`VALUE_MARKS`]) are left as they are.
pub fn name_addresses(device: &Device, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("0x") {
        let (before, from) = rest.split_at(i);
        out.push_str(before);
        let digits = from[2..]
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(from.len() - 2);
        let token = &from[..2 + digits];
        out.push_str(token);
        rest = &from[2 + digits..];
        // Offsets inside a name (`hbm0+0x200000`) and numbers already
        // named are left as they are.
        if digits < 5
            || rest.starts_with(" (")
            || before.ends_with('+')
            || VALUE_MARKS.iter().any(|m| before.ends_with(m))
        {
            continue;
        }
        if let Ok(addr) = u64::from_str_radix(&token[2..], 16)
            && soc::describe(device, addr).region.is_some()
        {
            out.push_str(&format!(" ({})", symbolic(device, addr)));
        }
    }
    out.push_str(rest);
    out
}

/// An address as a name: `tpb0.sbuf[p24]+0x40`, `hbm0+0x100000`,
/// `eng3.s2m.q1.RDRTP`, `tpb0.evt_sem.SEM_INC[7]`; the number when nothing
/// is mapped there.
pub fn symbolic(device: &Device, addr: u64) -> String {
    soc::describe::symbolic(device, addr)
}

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
                out.push_str(&event_line(device, e));
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
            for w in doorbell_warnings(device, queue, *increment) {
                out.push_str(&w);
                out.push('\n');
            }
            out.push_str(&show_ring(device, queue, *increment));
            out.push_str(&show_regs(device, &queue.region, false, None));
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
