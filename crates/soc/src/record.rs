//! Recording what happens on the device, for golden files and waveforms
//! (issue 6 items 2–3, `docs/user-guide.md` §Register-access log and
//! waveforms).
//!
//! Two recorders, both off by default and enabled on the [`Device`]
//! (`record_reg_log`, `record_waves`):
//!
//! - the **register-access log**: one stable text line per CSR access by a
//!   bus master (trace, kernel driver, firmware, a DMA engine's 4-byte
//!   register write or read), with the register and fields it changed;
//! - the **waveforms**: hardware state in simulated time (queue head/tail
//!   and ring ids, engine M2S/S2M state, SEC_A/B/D interrupt causes,
//!   semaphore values), sampled after every bus access and every engine
//!   step, written as a VCD ([`Waves::write_vcd`]).
//!
//! Who drives an access is the [`Master`] the caller set on the device
//! (`Device::set_bus_master`): the trace executor, the kernel-driver model
//! and the firmware bus say who they are; DMA engines are known to the
//! device. Nothing is guessed from addresses.
//!
//! When nothing records, the device pays one `Option` test per bus access
//! and per engine step; nothing is formatted or stored.
//!
//! [`Device`]: crate::Device

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};

use csr::RegRef;
use udma::{Dir, Engine, UnitBlock, UnitMaps};
use vcd::{SimulationCommand, TimescaleUnit, Value};

/// Who drives a register access (the bus master), as set by the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Master {
    /// A caller that did not say who it is (library use, tests).
    #[default]
    Host,
    /// A trace statement (`write32`, `read32`, `doorbell`, …): set by
    /// [`crate::exec`].
    Trace,
    /// The kernel-driver model, inside an ioctl: set by `kdriver`.
    Driver,
    /// The Q7 firmware of core `tpbN`, through its `FwBus`.
    Firmware(u8),
    /// DMA engine N: a descriptor's 4-byte write into (or read from) a
    /// register aperture — semaphore increments, doorbells rung by DMA.
    Engine(u16),
}

impl fmt::Display for Master {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Master::Host => f.write_str("host"),
            Master::Trace => f.write_str("trace"),
            Master::Driver => f.write_str("driver"),
            Master::Firmware(t) => write!(f, "fw:tpb{t}"),
            Master::Engine(e) => write!(f, "eng:{e}"),
        }
    }
}

/// One register access as the log records it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access<'a> {
    pub cycle: u64,
    pub master: Master,
    pub write: bool,
    pub addr: u64,
    /// Region name, e.g. `eng2.m2s.q0`.
    pub region: &'a str,
    /// The register element accessed.
    pub reg: RegRef<'a>,
    /// Writes: the value on the bus. Reads: the value returned.
    pub value: u32,
    /// Writes: the stored value before. Reads: the value returned.
    pub old: u32,
    /// Writes: the stored value after. Reads: what a read returns now
    /// (differs from `old` only when read-to-clear bits were cleared).
    pub new: u32,
}

/// The log line of one access (format in `docs/user-guide.md`):
///
/// `<cycle> <master> <R|W>32 <addr> <region>.<REG>[.<FIELD>[,<FIELD>…]] <old> -> <new>[ (wrote <value>)]`
///
/// Fields are named when the register has more than one: those whose value
/// changed, and for writes also the write-only, INC and DEC fields the
/// write hit with a non-zero value (command pulses, doorbells).
/// `(wrote …)` appears on writes whose bus value differs from the stored
/// value after the write (read-only, write-1-to-clear, write-only bits).
pub(crate) fn access_line(a: &Access<'_>) -> String {
    let spec = a.reg.spec();
    let m = spec.masks();
    let mut effect = a.old ^ a.new;
    if a.write {
        effect |= a.value & (m.wo | m.inc | m.dec);
    }
    let mut name = format!("{}.{}", a.region, a.reg.name());
    if spec.fields().len() > 1 {
        let mut sep = '.';
        for f in spec.fields() {
            if f.mask() & effect != 0 {
                name.push(sep);
                name.push_str(f.name());
                sep = ',';
            }
        }
    }
    let op = if a.write { 'W' } else { 'R' };
    let mut line = format!(
        "{} {} {op}32 {:#012x} {name} {:#010x} -> {:#010x}",
        a.cycle, a.master, a.addr, a.old, a.new
    );
    if a.write && a.value != a.new {
        line.push_str(&format!(" (wrote {:#010x})", a.value));
    }
    line
}

/// Where log lines go.
enum LogOut {
    /// Kept for [`crate::Device::take_reg_log`].
    Buffer(String),
    /// Streamed as they happen.
    Writer(Box<dyn Write + Send>),
}

/// The register-access log.
pub(crate) struct RegLog {
    out: LogOut,
    lines: u64,
    /// The first write error; later lines are dropped.
    error: Option<io::Error>,
}

impl fmt::Debug for RegLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegLog")
            .field("lines", &self.lines)
            .field("streaming", &matches!(self.out, LogOut::Writer(_)))
            .finish()
    }
}

impl RegLog {
    pub(crate) fn new(sink: Option<Box<dyn Write + Send>>) -> Self {
        Self {
            out: sink.map_or_else(|| LogOut::Buffer(String::new()), LogOut::Writer),
            lines: 0,
            error: None,
        }
    }

    pub(crate) fn push(&mut self, line: &str) {
        self.lines += 1;
        match &mut self.out {
            LogOut::Buffer(b) => {
                b.push_str(line);
                b.push('\n');
            }
            LogOut::Writer(w) => {
                if self.error.is_none()
                    && let Err(e) = w
                        .write_all(line.as_bytes())
                        .and_then(|()| w.write_all(b"\n"))
                {
                    self.error = Some(e);
                }
            }
        }
    }

    /// The buffered lines (empty when streaming).
    pub(crate) fn take(&mut self) -> String {
        match &mut self.out {
            LogOut::Buffer(b) => std::mem::take(b),
            LogOut::Writer(_) => String::new(),
        }
    }

    /// Flushes a streaming log; returns the number of lines or the first
    /// write error.
    pub(crate) fn finish(mut self) -> io::Result<u64> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let LogOut::Writer(w) = &mut self.out {
            w.flush()?;
        }
        Ok(self.lines)
    }
}

/// Everything the device records (boxed in the device: one pointer when
/// off).
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    /// The cycle of the access being handled (set at each entry point).
    pub cycle: u64,
    pub log: Option<RegLog>,
    pub waves: Option<Waves>,
}

// ------------------------------------------------------------ waveforms

/// What a recorded signal is; the order is the VCD declaration order
/// (engines by id, each with its own signals before its queues; then
/// cores).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SigKey {
    /// A register of engine `eng`.
    Engine { eng: u16, what: EngSig },
    /// Semaphore `index` of core `tpb` (its SEM_READ value).
    Sem { tpb: u8, index: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EngSig {
    /// STATE of M2S (0) or S2M (1).
    State(u8),
    /// SEC_A (0), SEC_B (1), SEC_D (2) INT_CAUSE.
    Cause(u8),
    /// A queue pointer register: DRHP (`tail` false) or DRTP.
    Queue { dir: u8, q: u8, tail: bool },
}

const DIRS: [Dir; 2] = [Dir::M2s, Dir::S2m];
const GROUPS: [&str; 3] = ["sec_a_int_cause", "sec_b_int_cause", "sec_d_int_cause"];

fn dir_index(d: Dir) -> u8 {
    match d {
        Dir::M2s => 0,
        Dir::S2m => 1,
    }
}

/// The VCD variables a register value is shown as: (name, lsb, width).
fn parts(key: SigKey) -> Vec<(String, u32, u32)> {
    match key {
        SigKey::Engine {
            what: EngSig::State(d),
            ..
        } => vec![(format!("{}_state", DIRS[usize::from(d % 2)].name()), 0, 2)],
        SigKey::Engine {
            what: EngSig::Cause(g),
            ..
        } => vec![(GROUPS[usize::from(g % 3)].to_string(), 0, 32)],
        SigKey::Engine {
            what: EngSig::Queue { tail, .. },
            ..
        } => {
            let n = if tail { "tail" } else { "head" };
            vec![(n.to_string(), 0, 24), (format!("{n}_ring_id"), 30, 2)]
        }
        SigKey::Sem { index, .. } => vec![(format!("sem_{index}"), 0, 32)],
    }
}

fn extract(v: u32, lsb: u32, width: u32) -> u32 {
    let mask = if width >= 32 {
        u32::MAX
    } else {
        (1 << width) - 1
    };
    (v >> lsb) & mask
}

/// The signals watched on one engine.
#[derive(Debug, Default)]
struct EngineWatch {
    /// Signal ids: M2S/S2M STATE, SEC_A/B/D INT_CAUSE.
    state: [usize; 2],
    cause: [usize; 3],
    /// Touched queues: (block, head signal, tail signal).
    queues: Vec<(UnitBlock, usize, usize)>,
}

/// Recorded hardware state changes, in simulated time.
#[derive(Debug, Default)]
pub struct Waves {
    ids: BTreeMap<SigKey, usize>,
    keys: Vec<SigKey>,
    /// Value when the signal was first seen (the VCD's time-0 value).
    init: Vec<u32>,
    last: Vec<u32>,
    /// (cycle, signal, new value), in the order they happened.
    changes: Vec<(u64, usize, u32)>,
    /// Watched engines by id.
    engines: Vec<Option<EngineWatch>>,
}

fn reg_value(e: &Engine, b: UnitBlock, off: u64) -> u32 {
    e.regs(b).and_then(|f| f.value(off).ok()).unwrap_or(0)
}

impl Waves {
    fn signal(&mut self, key: SigKey, value: u32) -> usize {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.keys.len();
        self.ids.insert(key, id);
        self.keys.push(key);
        self.init.push(value);
        self.last.push(value);
        id
    }

    fn set(&mut self, cycle: u64, id: usize, value: u32) {
        if let Some(last) = self.last.get_mut(id)
            && *last != value
        {
            *last = value;
            self.changes.push((cycle, id, value));
        }
    }

    /// Starts watching engine `e` (its current values are the baseline)
    /// and, for a queue block, that queue. Call before the access that
    /// touches it.
    pub(crate) fn watch(&mut self, e: &Engine, maps: &UnitMaps, block: UnitBlock) {
        let id = e.id();
        let i = usize::from(id);
        if self.engines.len() <= i {
            self.engines.resize_with(i + 1, || None);
        }
        let o = &maps.offsets;
        if self.engines[i].is_none() {
            let mut w = EngineWatch::default();
            for (d, (b, off)) in [(UnitBlock::M2s, o.m2s_state), (UnitBlock::S2m, o.s2m_state)]
                .into_iter()
                .enumerate()
            {
                let key = SigKey::Engine {
                    eng: id,
                    what: EngSig::State(d as u8),
                };
                w.state[d] = self.signal(key, reg_value(e, b, off));
            }
            for (g, io) in o.sec.iter().enumerate() {
                let key = SigKey::Engine {
                    eng: id,
                    what: EngSig::Cause(g as u8),
                };
                w.cause[g] = self.signal(key, reg_value(e, UnitBlock::Gen, io.cause));
            }
            self.engines[i] = Some(w);
        }
        let (dir, q, qo) = match block {
            UnitBlock::M2sQ(q) => (Dir::M2s, q, o.m2s_q),
            UnitBlock::S2mQ(q) => (Dir::S2m, q, o.s2m_q),
            _ => return,
        };
        let known = self.engines[i]
            .as_ref()
            .is_some_and(|w| w.queues.iter().any(|(b, _, _)| *b == block));
        if known {
            return;
        }
        let key = |tail| SigKey::Engine {
            eng: id,
            what: EngSig::Queue {
                dir: dir_index(dir),
                q,
                tail,
            },
        };
        let head = self.signal(key(false), reg_value(e, block, qo.drhp));
        let tail = self.signal(key(true), reg_value(e, block, qo.drtp));
        if let Some(w) = self.engines[i].as_mut() {
            w.queues.push((block, head, tail));
        }
    }

    /// Samples the watched registers of engine `e` at `cycle`.
    pub(crate) fn sample(&mut self, cycle: u64, e: &Engine, maps: &UnitMaps) {
        let Some(Some(w)) = self.engines.get(usize::from(e.id())) else {
            return;
        };
        let o = &maps.offsets;
        let mut vals: Vec<(usize, u32)> = Vec::with_capacity(5 + 2 * w.queues.len());
        vals.push((w.state[0], reg_value(e, UnitBlock::M2s, o.m2s_state)));
        vals.push((w.state[1], reg_value(e, UnitBlock::S2m, o.s2m_state)));
        for (g, io) in o.sec.iter().enumerate() {
            vals.push((w.cause[g], reg_value(e, UnitBlock::Gen, io.cause)));
        }
        for &(b, head, tail) in &w.queues {
            let qo = if matches!(b, UnitBlock::M2sQ(_)) {
                o.m2s_q
            } else {
                o.s2m_q
            };
            vals.push((head, reg_value(e, b, qo.drhp)));
            vals.push((tail, reg_value(e, b, qo.drtp)));
        }
        for (id, v) in vals {
            self.set(cycle, id, v);
        }
    }

    /// A semaphore of core `tpb` changed from `old` to `new` at `cycle`.
    pub(crate) fn semaphore(&mut self, cycle: u64, tpb: u8, index: u32, old: u32, new: u32) {
        let id = self.signal(SigKey::Sem { tpb, index }, old);
        self.set(cycle, id, new);
    }

    /// Signal changes recorded so far.
    pub fn change_count(&self) -> usize {
        self.changes.len()
    }

    /// Writes the recorded signals as a VCD (IEEE 1364 value change dump).
    ///
    /// Layout: `$timescale 1 ps`; a change at DMA cycle `c` is at time
    /// [`cycle_to_ps`]`(c, clock_ghz)`. Top scope `trn2` holds `cycle` (64
    /// bits: the cycle number of the current time) and one scope per
    /// engine (`engN`: `m2s_state`, `s2m_state` — 0 disable, 1 normal,
    /// 2 abort — and `sec_{a,b,d}_int_cause`) with one scope per touched
    /// queue (`m2s_qN`/`s2m_qN`: `head`, `head_ring_id`, `tail`,
    /// `tail_ring_id`, the DRHP/DRTP offset and ring-id fields), and one
    /// scope per core (`tpbN`: `sem_I` for each semaphore that changed).
    ///
    /// # Errors
    ///
    /// Errors of the writer.
    pub fn write_vcd(&self, out: &mut dyn Write, clock_ghz: f64) -> io::Result<()> {
        let mut w = vcd::Writer::new(out);
        w.version(concat!("neuron-sim ", env!("CARGO_PKG_VERSION")))?;
        w.comment(&format!(
            "simulated time: 1 DMA cycle = {:.3} ps (clock {clock_ghz} GHz); trn2.cycle holds the cycle number",
            1000.0 / clock_ghz
        ))?;
        w.timescale(1, TimescaleUnit::PS)?;
        w.add_module("trn2")?;
        let cycle_id = w.add_wire(64, "cycle")?;
        // Declarations, grouped by engine / queue / core in key order.
        let mut codes: Vec<Vec<vcd::IdCode>> = vec![Vec::new(); self.keys.len()];
        let mut open: Vec<String> = Vec::new();
        for (&key, &id) in &self.ids {
            let path = match key {
                SigKey::Engine {
                    eng,
                    what: EngSig::Queue { dir, q, .. },
                } => vec![
                    format!("eng{eng}"),
                    format!("{}_q{q}", DIRS[usize::from(dir % 2)].name()),
                ],
                SigKey::Engine { eng, .. } => vec![format!("eng{eng}")],
                SigKey::Sem { tpb, .. } => vec![format!("tpb{tpb}")],
            };
            let common = open.iter().zip(&path).take_while(|(a, b)| a == b).count();
            while open.len() > common {
                w.upscope()?;
                open.pop();
            }
            for s in &path[common..] {
                w.add_module(s)?;
                open.push(s.clone());
            }
            for (name, _, width) in parts(key) {
                let code = w.add_wire(width, &name)?;
                if let Some(c) = codes.get_mut(id) {
                    c.push(code);
                }
            }
        }
        for _ in open {
            w.upscope()?;
        }
        w.upscope()?;
        w.enddefinitions()?;

        // Binary, most significant bit first, leading zeros dropped (VCD
        // zero-extends a shorter value to the variable's width).
        let vector = |v: u64, width: u32| {
            let top = (64 - v.leading_zeros()).clamp(1, width.max(1));
            (0..top).rev().map(move |b| Value::from((v >> b) & 1 == 1))
        };
        w.timestamp(0)?;
        w.begin(SimulationCommand::Dumpvars)?;
        w.change_vector(cycle_id, vector(0, 64))?;
        let mut shown: Vec<Vec<u32>> = vec![Vec::new(); self.keys.len()];
        for (&key, &id) in &self.ids {
            let init = self.init.get(id).copied().unwrap_or(0);
            for ((_, lsb, width), code) in parts(key).into_iter().zip(codes[id].iter()) {
                let v = extract(init, lsb, width);
                w.change_vector(*code, vector(u64::from(v), width))?;
                shown[id].push(v);
            }
        }
        w.end()?;

        let mut changes = self.changes.clone();
        changes.sort_by_key(|c| c.0); // stable: same-cycle order kept
        let mut i = 0;
        while i < changes.len() {
            let cycle = changes[i].0;
            // The last value of each signal in this cycle.
            let mut at: BTreeMap<usize, u32> = BTreeMap::new();
            while i < changes.len() && changes[i].0 == cycle {
                at.insert(changes[i].1, changes[i].2);
                i += 1;
            }
            let mut stamped = false;
            for (id, v) in at {
                let Some(key) = self.keys.get(id) else {
                    continue;
                };
                for (k, ((_, lsb, width), code)) in
                    parts(*key).into_iter().zip(codes[id].iter()).enumerate()
                {
                    let x = extract(v, lsb, width);
                    if shown[id].get(k) == Some(&x) {
                        continue;
                    }
                    if !stamped {
                        // Changes at time 0 follow the initial values.
                        let t = checked_cycle_to_ps(cycle, clock_ghz).ok_or_else(|| {
                            io::Error::other(format!(
                                "cycle {cycle} at {clock_ghz} GHz is past the VCD's 64-bit picosecond time"
                            ))
                        })?;
                        if t != 0 {
                            w.timestamp(t)?;
                            w.change_vector(cycle_id, vector(cycle, 64))?;
                        }
                        stamped = true;
                    }
                    w.change_vector(*code, vector(u64::from(x), width))?;
                    if let Some(s) = shown[id].get_mut(k) {
                        *s = x;
                    }
                }
            }
        }
        w.flush()
    }
}

/// The VCD time (picoseconds) of DMA cycle `cycle` at `clock_ghz`:
/// `round(cycle × 1000 / clock_ghz)`. Distinct cycles get distinct times
/// for any clock below 1 THz. Saturates at `u64::MAX` (see
/// [`checked_cycle_to_ps`]).
pub fn cycle_to_ps(cycle: u64, clock_ghz: f64) -> u64 {
    (cycle as f64 * 1000.0 / clock_ghz).round() as u64
}

/// [`cycle_to_ps`], or None when the time does not fit 64 bits (a clock
/// far below `sim_core::CLOCK_GHZ_RANGE`, which a timing file cannot
/// give): a saturated time would repeat.
pub fn checked_cycle_to_ps(cycle: u64, clock_ghz: f64) -> Option<u64> {
    let t = (cycle as f64 * 1000.0 / clock_ghz).round();
    // 2^64 as f64 is exact; every f64 below it converts without saturating.
    (t.is_finite() && (0.0..18_446_744_073_709_551_616.0).contains(&t)).then_some(t as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masters_print_as_documented() {
        assert_eq!(Master::Trace.to_string(), "trace");
        assert_eq!(Master::Driver.to_string(), "driver");
        assert_eq!(Master::Firmware(3).to_string(), "fw:tpb3");
        assert_eq!(Master::Engine(17).to_string(), "eng:17");
        assert_eq!(Master::default().to_string(), "host");
    }

    #[test]
    fn cycles_map_to_distinct_picoseconds() {
        assert_eq!(cycle_to_ps(0, 0.85), 0);
        assert_eq!(cycle_to_ps(1, 0.85), 1176);
        assert_eq!(cycle_to_ps(85, 0.85), 100_000);
        let ts: Vec<u64> = (0..1000).map(|c| cycle_to_ps(c, 0.85)).collect();
        assert!(ts.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(checked_cycle_to_ps(85, 0.85), Some(100_000));
        assert_eq!(checked_cycle_to_ps(194, 1e-300), None);
        assert_eq!(checked_cycle_to_ps(0, 1e-300), Some(0));
        assert_eq!(checked_cycle_to_ps(u64::MAX, 0.1), None);
        assert_eq!(
            checked_cycle_to_ps(1 << 48, 0.1),
            Some(2_814_749_767_106_560_000)
        );
    }

    #[test]
    fn access_lines_name_changed_fields() {
        let catalog = csr::catalog().unwrap();
        let map = catalog.block("udma_m2s_q").unwrap();
        let reg = map.lookup("Q_CFG").unwrap();
        let a = Access {
            cycle: 12,
            master: Master::Trace,
            write: true,
            addr: 0x10_0200_1020,
            region: "eng0.m2s.q0",
            reg,
            value: 0x0303_0000,
            old: 0x0300_0000,
            new: 0x0303_0000,
        };
        assert_eq!(
            access_line(&a),
            "12 trace W32 0x1002001020 eng0.m2s.q0.Q_CFG.EN_PREF,EN_SCHEDULING 0x03000000 -> 0x03030000"
        );
        let inc = map.lookup("TDRTP_INC").unwrap();
        let a = Access {
            reg: inc,
            value: 2,
            old: 0,
            new: 0,
            ..a
        };
        assert!(access_line(&a).ends_with("TDRTP_INC 0x00000000 -> 0x00000000 (wrote 0x00000002)"));
    }
}
