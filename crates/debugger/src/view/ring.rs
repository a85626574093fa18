//! A queue's ring as a firmware engineer reads it (docs/user-guide.md §12
//! "Views"): every slot flagged — `fetched` (prefetched, its packet not
//! done: in flight), `posted` (between head and tail), `new` (what the
//! doorbell at the stop posts), `beyond` (past the tail: done or never
//! used) — with a ring id the prefetch will reject called out, and the
//! buffer addresses named.

use soc::Device;
use soc::exec::{QueueTarget, ring_of};
use udma::{Dir, DirState, PrefetchOff};

use super::symbolic;

/// Slots shown at most by one `ring` command.
const MAX_SLOTS: u32 = 256;

/// A ring's pointers, from the queue's registers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingState {
    pub(crate) base: u64,
    pub(crate) len: u32,
    pub(crate) head: u32,
    pub(crate) head_id: u8,
    pub(crate) tail: u32,
    pub(crate) tail_id: u8,
    /// Descriptors posted and not completed (`Q_STATUS`).
    pub(crate) outstanding: u32,
}

impl RingState {
    pub(crate) fn read(device: &Device, q: &QueueTarget) -> Option<RingState> {
        let (base, len, tail, tail_id) = ring_of(device, q)?;
        let p = if q.dir == Dir::M2s { "T" } else { "R" };
        let head_raw = reg(device, &q.region, &format!("{p}DRHP")).unwrap_or(0);
        let status = reg(device, &q.region, "Q_STATUS").unwrap_or(0);
        Some(RingState {
            base,
            len,
            head: head_raw & 0xFF_FFFF,
            head_id: (head_raw >> 30) as u8,
            tail,
            tail_id,
            outstanding: status & 0x1FF_FFFF,
        })
    }

    /// Descriptors between head and tail (posted, not prefetched).
    pub(crate) fn posted(&self) -> u32 {
        (self.tail + self.len - self.head % self.len) % self.len
    }

    /// Prefetched descriptors whose packets have not completed.
    pub(crate) fn fetched(&self) -> u32 {
        self.outstanding.saturating_sub(self.posted())
    }

    /// The first slot not completed.
    fn done_ptr(&self) -> u32 {
        (self.head % self.len + self.len - self.fetched() % self.len) % self.len
    }

    /// The ring id the hardware expects at `slot` if it lies `ahead` slots
    /// after the head (negative: before it).
    fn expected_id(&self, ahead: i64) -> u8 {
        let laps = (i64::from(self.head) + ahead).div_euclid(i64::from(self.len));
        (i64::from(self.head_id) + laps).rem_euclid(4) as u8
    }
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

/// Whether the engine drops a doorbell of `increment` on `q` that takes
/// effect now: the engine's own rule ([`udma::Engine::doorbell_drops`]).
/// An engine never written is at reset, with no ring: it drops it.
fn doorbell_dropped(device: &Device, q: &QueueTarget, increment: u32) -> bool {
    device
        .engine(q.engine)
        .is_none_or(|e| e.doorbell_drops(q.dir, q.queue, increment))
}

/// Why `q` does not prefetch now, if it does not: the engine's own rule
/// ([`udma::Engine::prefetch_off`]); an engine never written is disabled.
fn prefetch_off(device: &Device, q: &QueueTarget) -> Option<PrefetchOff> {
    match device.engine(q.engine) {
        Some(e) => e.prefetch_off(q.dir, q.queue),
        None => Some(PrefetchOff::State(DirState::Disabled)),
    }
}

/// The ring as at a stop: the slots in flight, posted, and the `pending`
/// the doorbell at the stop will post (none when the engine drops it:
/// docs/user-guide.md §12 "What a stop shows").
pub fn show_ring(device: &Device, q: &QueueTarget, pending: u32) -> String {
    let Some(st) = RingState::read(device, q) else {
        return format!("{}: cannot read the ring registers\n", q.region);
    };
    let pending = if pending > 0 && doorbell_dropped(device, q, pending) {
        0
    } else {
        pending
    };
    let mut out = header(q, &st);
    if st.len == 0 {
        out.push_str("  (ring not configured)\n");
        return out;
    }
    let window = (st.fetched() + st.posted() + pending).min(st.len);
    if window == 0 {
        out.push_str("  (no descriptors in flight or between head and tail)\n");
    }
    let show = window.min(64);
    let from = st.done_ptr();
    for k in 0..show {
        out.push_str(&slot_line(device, q, &st, (from + k) % st.len, pending));
    }
    if window > show {
        out.push_str(&format!("  … {} more\n", window - show));
    }
    out
}

/// `ring QUEUE FROM..TO`: any slots, each flagged.
pub fn show_ring_range(device: &Device, q: &QueueTarget, from: u32, to: u32) -> String {
    let Some(st) = RingState::read(device, q) else {
        return format!("{}: cannot read the ring registers\n", q.region);
    };
    let mut out = header(q, &st);
    if st.len == 0 {
        out.push_str("  (ring not configured)\n");
        return out;
    }
    if from > to || to >= st.len {
        return format!(
            "{}: slots {from}..{to} are not in the ring (0..{})\n",
            q.region,
            st.len - 1
        );
    }
    let last = to.min(from.saturating_add(MAX_SLOTS - 1));
    for idx in from..=last {
        out.push_str(&slot_line(device, q, &st, idx, 0));
    }
    if last < to {
        out.push_str(&format!(
            "  … {} more (at most {MAX_SLOTS} slots at a time)\n",
            to - last
        ));
    }
    out
}

fn header(q: &QueueTarget, st: &RingState) -> String {
    format!(
        "ring {}: base {:#x}, {} descriptors; head {} (ring id {}), tail {} (ring id {}), {} outstanding\n",
        q.region, st.base, st.len, st.head, st.head_id, st.tail, st.tail_id, st.outstanding
    )
}

/// One slot: its flag, the descriptor decoded, its buffer named, and a
/// ring id the prefetch will reject.
fn slot_line(device: &Device, q: &QueueTarget, st: &RingState, idx: u32, pending: u32) -> String {
    let len = st.len;
    let k = (idx + len - st.done_ptr()) % len;
    let (fetched, posted) = (st.fetched(), st.posted());
    let (tag, in_window) = if k < fetched {
        ("fetched", true)
    } else if k < fetched + posted {
        ("posted", true)
    } else if k < fetched + posted + pending {
        ("new", true)
    } else {
        ("beyond", false)
    };
    let ahead = i64::from(k) - i64::from(fetched);
    let addr = st.base + 16 * u64::from(idx);
    let mut raw = [0u8; 16];
    if let Err(e) = device.read_bytes(addr, &mut raw) {
        return format!("  {tag:<7}[{idx:>4}] {addr:#x}: {e}\n");
    }
    let d = dma_abi::Descriptor::from_bytes(&raw);
    let w0 = d.len_ctrl();
    let cme = dma_abi::CmeWord::from_raw(d.word1());
    let word1 = match q.dir {
        Dir::M2s => format!("op {} {}", cme.op().name(), cme.optype().name()),
        Dir::S2m => format!("buf2_lo {:#x}", d.word1()),
    };
    let buf = d.buf_ptr();
    let mut line = format!(
        "  {tag:<7}[{idx:>4}] {addr:#014x}: len {:>6} ring_id {}{}{}{}{} {} {buf:#x} ({})  {word1}",
        w0.len_bytes(true),
        w0.ring_id(),
        if w0.first() { " FIRST" } else { "" },
        if w0.last() { " LAST" } else { "" },
        if w0.dmb() { " DMB" } else { "" },
        if w0.sow() { " SOW" } else { "" },
        if q.dir == Dir::M2s { "src" } else { "dst" },
        symbolic(device, buf),
    );
    let expected = st.expected_id(ahead);
    if in_window && tag != "fetched" && w0.ring_id() != expected {
        line.push_str(&format!(
            "  <- stale ring id: the queue expects {expected} here (PREF_RING_ID when prefetched)"
        ));
    }
    line.push('\n');
    line
}

/// What a doorbell about to be written will do wrong: overrun the ring,
/// or post descriptors whose ring id the prefetch will reject — when the
/// queue prefetches; a queue that does not (its engine disabled, its
/// enables clear) raises nothing until it does (docs/user-guide.md §12
/// "What a stop shows"). Overrun and prefetch are judged by the engine's
/// own rules.
pub fn doorbell_warnings(device: &Device, q: &QueueTarget, increment: u32) -> Vec<String> {
    let Some(st) = RingState::read(device, q) else {
        return Vec::new();
    };
    let dir = if q.dir == Dir::M2s { "M2S" } else { "S2M" };
    if st.len == 0 {
        return vec![format!(
            "warning: {} has no ring (length 0): the engine drops this doorbell and raises SEC_D_INT_CAUSE.{dir}_DOORBELL_OVERRUN",
            q.region
        )];
    }
    let mut out = Vec::new();
    if doorbell_dropped(device, q, increment) {
        out.push(format!(
            "warning: this doorbell overruns the ring: {} outstanding + {increment} > {} descriptors; the engine drops it and raises SEC_D_INT_CAUSE.{dir}_DOORBELL_OVERRUN (doorbells rung since time last passed are not counted yet)",
            st.outstanding, st.len
        ));
        return out;
    }
    let mut stale = Vec::new();
    let posted = st.posted();
    for j in 0..increment.min(st.len) {
        let ahead = i64::from(posted) + i64::from(j);
        let idx = ((i64::from(st.head) + ahead).rem_euclid(i64::from(st.len))) as u32;
        let mut raw = [0u8; 16];
        if device
            .read_bytes(st.base + 16 * u64::from(idx), &mut raw)
            .is_err()
        {
            continue;
        }
        let id = dma_abi::Descriptor::from_bytes(&raw).len_ctrl().ring_id();
        let expected = st.expected_id(ahead);
        if id != expected {
            stale.push(format!("[{idx}] has {id}, expects {expected}"));
        }
    }
    if !stale.is_empty() {
        let n = stale.len();
        stale.truncate(4);
        let outcome = match prefetch_off(device, q) {
            None => "the prefetch will raise PREF_RING_ID".to_string(),
            Some(why) => format!(
                "the queue does not prefetch now ({why}), so PREF_RING_ID is raised only once it does"
            ),
        };
        out.push(format!(
            "warning: {n} of the {increment} descriptors this doorbell posts carry a stale ring id ({}{}): {outcome}",
            stale.join(", "),
            if n > 4 { ", …" } else { "" }
        ));
    }
    out
}
