//! A one-engine test rig: a UDMA unit on a flat sparse memory, driven
//! through its registers by name, stepped event by event.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use sim_core::{AccessError, Bus, Cycle, PacketScope, TimingConfig};
use udma::{Dir, Engine, EngineEvent, EventKind, UnitBlock, UnitMaps};

/// Memory below this address exists; above it accesses fail.
pub const MEM_TOP: u64 = 1 << 40;
const PAGE: u64 = 4096;

/// Sparse flat memory; it records the packet scopes it is given.
#[derive(Debug, Default)]
pub struct Mem {
    pages: BTreeMap<u64, Vec<u8>>,
    /// Every `packet_scope` hint, in order.
    pub scopes: Vec<Option<PacketScope>>,
    /// Says no observer takes packet scopes (`observes_packets`).
    pub unobserved: bool,
}

impl Mem {
    fn check(addr: u64, len: usize) -> Result<(), AccessError> {
        if addr.checked_add(len as u64).is_none_or(|end| end > MEM_TOP) {
            return Err(AccessError {
                addr,
                message: "unmapped".into(),
            });
        }
        Ok(())
    }

    pub fn put(&mut self, addr: u64, data: &[u8]) {
        for (i, b) in data.iter().enumerate() {
            let a = addr + i as u64;
            self.pages
                .entry(a / PAGE)
                .or_insert_with(|| vec![0; PAGE as usize])[(a % PAGE) as usize] = *b;
        }
    }

    pub fn get(&self, addr: u64, len: usize) -> Vec<u8> {
        (0..len as u64)
            .map(|i| {
                let a = addr + i;
                self.pages
                    .get(&(a / PAGE))
                    .map_or(0, |p| p[(a % PAGE) as usize])
            })
            .collect()
    }
}

impl Bus for Mem {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), AccessError> {
        Self::check(addr, buf.len())?;
        buf.copy_from_slice(&self.get(addr, buf.len()));
        Ok(())
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), AccessError> {
        Self::check(addr, data.len())?;
        self.put(addr, data);
        Ok(())
    }

    fn packet_scope(&mut self, scope: Option<PacketScope>) {
        self.scopes.push(scope);
    }

    fn observes_packets(&self) -> bool {
        !self.unobserved
    }
}

/// Word 0 flags of a test descriptor.
#[derive(Clone, Copy, Debug, Default)]
pub struct F {
    pub first: bool,
    pub last: bool,
    pub dmb: bool,
    pub ring_id: u8,
}

/// FIRST | LAST, ring id 1.
pub const WHOLE: F = F {
    first: true,
    last: true,
    dmb: false,
    ring_id: 1,
};

/// Ring id 1, no flags (an RX descriptor).
pub const RX: F = F {
    first: false,
    last: false,
    dmb: false,
    ring_id: 1,
};

pub fn word0(len: u32, f: F) -> u32 {
    (len & 0xFFFF)
        | (u32::from(f.ring_id & 3) << 24)
        | (u32::from(f.first) << 26)
        | (u32::from(f.last) << 27)
        | (u32::from(f.dmb) << 30)
}

pub fn desc_bytes(word0: u32, word1: u32, buf: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&word0.to_le_bytes());
    b[4..8].copy_from_slice(&word1.to_le_bytes());
    b[8..].copy_from_slice(&buf.to_le_bytes());
    b
}

/// Ring layout of a queue in the rig: M2S ring, S2M ring.
pub fn ring_base(dir: Dir, q: u8) -> u64 {
    0x100_0000
        + u64::from(q) * 0x2_0000
        + match dir {
            Dir::M2s => 0,
            Dir::S2m => 0x1_0000,
        }
}

pub const RING_LEN: u32 = 64;

/// One engine, its memory and the time.
#[derive(Debug)]
pub struct Rig {
    pub e: Engine,
    pub mem: Mem,
    pub timing: TimingConfig,
    pub now: u64,
    pub events: Vec<EngineEvent>,
}

pub fn block(dir: Dir, q: u8) -> UnitBlock {
    match dir {
        Dir::M2s => UnitBlock::M2sQ(q),
        Dir::S2m => UnitBlock::S2mQ(q),
    }
}

impl Rig {
    /// Engine `id` at reset (SENG engines below 128).
    pub fn new(id: u16) -> Self {
        let timing = TimingConfig::default_config().unwrap();
        let mut e = Engine::new(id, UnitMaps::builtin().unwrap(), &timing);
        e.set_trace(true);
        Self {
            e,
            mem: Mem::default(),
            timing,
            now: 0,
            events: Vec::new(),
        }
    }

    fn offset(&self, b: UnitBlock, reg: &str) -> u64 {
        let (name, index) = match reg.split_once('[') {
            Some((n, i)) => (n, Some(i.trim_end_matches(']').parse::<u32>().unwrap())),
            None => (reg, None),
        };
        self.e
            .regs(b)
            .unwrap()
            .map()
            .find(name, index)
            .unwrap_or_else(|| panic!("no register {reg} in {b:?}"))
    }

    /// A software register write at the current cycle.
    pub fn w(&mut self, b: UnitBlock, reg: &str, v: u32) {
        let off = self.offset(b, reg);
        let out = self.e.mmio_write(b, off, v, Cycle(self.now));
        assert!(out.is_some(), "write of {reg} refused");
        self.collect();
    }

    /// A register value (no read side effects).
    pub fn r(&self, b: UnitBlock, reg: &str) -> u32 {
        self.e.peek(b, self.offset(b, reg)).unwrap()
    }

    pub fn wq(&mut self, dir: Dir, q: u8, reg: &str, v: u32) {
        self.w(block(dir, q), reg, v);
    }

    pub fn rq(&self, dir: Dir, q: u8, reg: &str) -> u32 {
        self.r(block(dir, q), reg)
    }

    fn collect(&mut self) {
        self.events.extend(self.e.take_log());
    }

    /// Rings of `RING_LEN` descriptors for queue `q` both ways, Q_CFG
    /// `m2s_cfg` / `s2m_cfg`; both directions armed (CHANGE_STATE.NORMAL).
    pub fn setup(&mut self, q: u8, m2s_cfg: u32, s2m_cfg: u32) {
        for dir in [Dir::M2s, Dir::S2m] {
            let (lo, len) = match dir {
                Dir::M2s => ("TDRBP_LOW", "TDRL"),
                Dir::S2m => ("RDRBP_LOW", "RDRL"),
            };
            self.wq(dir, q, lo, ring_base(dir, q) as u32);
            self.wq(dir, q, len, RING_LEN);
        }
        self.wq(Dir::S2m, q, "COMP_CFG", 0);
        self.wq(Dir::M2s, q, "Q_CFG", m2s_cfg);
        self.wq(Dir::S2m, q, "Q_CFG", s2m_cfg);
        self.w(UnitBlock::M2s, "CHANGE_STATE", 1);
        self.w(UnitBlock::S2m, "CHANGE_STATE", 1);
    }

    /// Writes descriptor `idx` of queue `q`'s ring.
    pub fn put_desc(&mut self, dir: Dir, q: u8, idx: u32, word0: u32, word1: u32, buf: u64) {
        let at = ring_base(dir, q) + 16 * u64::from(idx);
        self.mem.put(at, &desc_bytes(word0, word1, buf));
    }

    /// A plain copy of `len` bytes at ring index `idx` (TX FIRST|LAST with
    /// `f`, RX one buffer).
    pub fn put_copy(&mut self, q: u8, idx: u32, len: u32, src: u64, dst: u64, f: F) {
        self.put_desc(
            Dir::M2s,
            q,
            idx,
            word0(len, f),
            dma_abi::DEFAULT_COPY_WORD1,
            src,
        );
        self.put_desc(Dir::S2m, q, idx, word0(len, RX), 0, dst);
    }

    /// Rings both doorbells of queue `q` by `n`.
    pub fn doorbells(&mut self, q: u8, n: u32) {
        self.wq(Dir::S2m, q, "RDRTP_INC", n);
        self.wq(Dir::M2s, q, "TDRTP_INC", n);
    }

    /// Processes the next internal event; false when none is left.
    pub fn step_one(&mut self) -> bool {
        let Some(at) = self.e.next_event() else {
            return false;
        };
        self.now = self.now.max(at.0);
        self.e.step(Cycle(self.now), &mut self.mem, &self.timing);
        self.collect();
        true
    }

    /// Runs until the engine is idle (bounded).
    pub fn run(&mut self) {
        for _ in 0..1_000_000 {
            if !self.step_one() {
                return;
            }
        }
        panic!("engine did not go idle");
    }

    /// Runs every event due up to and including `cycle`, then sets the time.
    pub fn run_until(&mut self, cycle: u64) {
        while let Some(at) = self.e.next_event() {
            if at.0 > cycle {
                break;
            }
            self.step_one();
        }
        self.now = self.now.max(cycle);
    }

    /// Steps until `pred` holds for a recorded event; false if the engine
    /// went idle first.
    pub fn run_until_event(&mut self, pred: impl Fn(&EventKind) -> bool) -> bool {
        for _ in 0..1_000_000 {
            if self.events.iter().any(|e| pred(&e.kind)) {
                return true;
            }
            if !self.step_one() {
                return self.events.iter().any(|e| pred(&e.kind));
            }
        }
        false
    }

    /// The recorded events of a kind.
    pub fn count(&self, pred: impl Fn(&EventKind) -> bool) -> usize {
        self.events.iter().filter(|e| pred(&e.kind)).count()
    }

    /// The recorded fault causes (`SEC_D_INT_CAUSE.X`, …).
    pub fn faults(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Fault { cause, .. } => Some(cause.clone()),
                _ => None,
            })
            .collect()
    }
}

pub fn is_start(k: &EventKind) -> bool {
    matches!(k, EventKind::PacketStart { .. })
}

pub fn is_done(k: &EventKind) -> bool {
    matches!(k, EventKind::PacketDone { .. })
}

/// Pointer register value: offset, ring id in bits 31:30.
pub fn ptr(offset: u32, ring_id: u8) -> u32 {
    offset | (u32::from(ring_id) << 30)
}
