//! Names typed at the prompt: a place (an engine, one direction of it, a
//! queue, a core's firmware) and a value (a register, a field of one, a
//! semaphore, a memory word). Both resolve through the trace resolver
//! ([`soc::resolve`], docs/trace-format.md §2), so a typo gets the same
//! "did you mean" as in a trace.

use std::fmt;

use soc::Device;
use soc::device::RegTarget;
use soc::exec::{QueueTarget, queue_target};
use udma::Dir;

/// Where an event happens, as a breakpoint names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// Anywhere.
    Any,
    /// One DMA engine (`eng3`).
    Engine(u16),
    /// One direction of an engine (`eng3.m2s`).
    EngineDir(u16, Dir),
    /// One queue (`eng3.m2s.q0`).
    Queue(QueueTarget),
    /// A core's Q7 firmware (`tpb0`).
    Core(u8),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Any => f.write_str("any"),
            Place::Engine(e) => write!(f, "eng{e}"),
            Place::EngineDir(e, d) => write!(f, "eng{e}.{}", d.name()),
            Place::Queue(q) => f.write_str(&q.region),
            Place::Core(t) => write!(f, "tpb{t}"),
        }
    }
}

/// The trace resolver's verdict on `text`: the address, or its message.
fn resolved(device: &Device, text: &str) -> Result<soc::Resolved, String> {
    let expr = trace_format::parse_addr(text, "<debugger>").map_err(|e| e.message)?;
    soc::resolve(device, &expr).map_err(|e| e.message)
}

impl Place {
    /// Parses `eng3`, `eng3.m2s`, `eng3.s2m.q0` or `tpb0`.
    ///
    /// # Errors
    ///
    /// The resolver's message for an unknown name (with its "did you
    /// mean"), or why the name is no engine, queue or core.
    pub fn parse(device: &Device, text: &str) -> Result<Place, String> {
        resolved(device, text)?;
        let name = text.trim().to_ascii_lowercase();
        if let Some(q) = queue_target(device, &name) {
            return Ok(Place::Queue(q));
        }
        if let Some(n) = name.strip_prefix("tpb")
            && let Ok(t) = n.parse::<u8>()
            && device.map().by_name(&name).is_some()
        {
            return Ok(Place::Core(t));
        }
        if let Some(rest) = name.strip_prefix("eng") {
            let (n, dir) = match rest.split_once('.') {
                Some((n, "m2s")) => (n, Some(Dir::M2s)),
                Some((n, "s2m")) => (n, Some(Dir::S2m)),
                Some(_) => ("", None),
                None => (rest, None),
            };
            if let Ok(e) = n.parse::<u16>()
                && device.map().by_name(&name).is_some()
            {
                return Ok(match dir {
                    Some(d) => Place::EngineDir(e, d),
                    None => Place::Engine(e),
                });
            }
        }
        Err(format!(
            "`{text}` is not an engine, an engine direction, a queue or a core (e.g. eng3, eng3.m2s, eng3.m2s.q0, tpb0)"
        ))
    }

    /// Whether an engine event of `engine`, in direction `dir` (if it has
    /// one) on queue index `queue` (if it has one), happens here. A queue
    /// place needs the queue; an event with no direction (a packet moves
    /// both) matches either.
    pub fn has_engine_event(&self, engine: u16, dir: Option<Dir>, queue: Option<u8>) -> bool {
        match self {
            Place::Any => true,
            Place::Engine(e) => *e == engine,
            Place::EngineDir(e, d) => *e == engine && dir.is_none_or(|x| x == *d),
            Place::Queue(q) => {
                q.engine == engine && queue == Some(q.queue) && dir.is_none_or(|x| x == q.dir)
            }
            Place::Core(_) => false,
        }
    }
}

/// A comparison of a watchpoint or condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Cmp {
    /// The operator as typed.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }

    /// `lhs OP rhs`.
    pub fn holds(self, lhs: u32, rhs: u32) -> bool {
        match self {
            Cmp::Eq => lhs == rhs,
            Cmp::Ne => lhs != rhs,
            Cmp::Lt => lhs < rhs,
            Cmp::Le => lhs <= rhs,
            Cmp::Gt => lhs > rhs,
            Cmp::Ge => lhs >= rhs,
        }
    }

    fn parse(text: &str) -> Option<Cmp> {
        Some(match text {
            "==" => Cmp::Eq,
            "!=" => Cmp::Ne,
            "<" => Cmp::Lt,
            "<=" => Cmp::Le,
            ">" => Cmp::Gt,
            ">=" => Cmp::Ge,
            _ => return None,
        })
    }
}

/// A register field: its name, bit position and mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSel {
    /// `REGISTER.FIELD`.
    pub name: String,
    /// Lowest bit.
    pub lsb: u32,
    /// Mask within the register.
    pub mask: u32,
}

/// Where a value is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A register (or one of its fields), read without side effects.
    Reg {
        /// The register.
        target: RegTarget,
        /// Its address.
        addr: u64,
        /// A field of it.
        field: Option<FieldSel>,
    },
    /// Four little-endian bytes of memory.
    Mem {
        /// The first byte.
        addr: u64,
    },
}

/// A 32-bit value the debugger can watch or test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    /// As typed.
    pub text: String,
    /// Where it is read.
    pub source: Source,
}

impl Value {
    /// Parses a register (`eng0.m2s.q0.tdrhp`), a field
    /// (`eng0.m2s.q0.q_cfg.en_pref`), a semaphore (`tpb0.sem.read[3]`) or a
    /// memory address (`hbm0+0x1000`: the 32-bit word there).
    ///
    /// # Errors
    ///
    /// The resolver's message, or why the word cannot be read.
    pub fn parse(device: &Device, text: &str) -> Result<Value, String> {
        let text = text.trim();
        let whole = resolved(device, text);
        let (addr, field) = match whole {
            Ok(r) => (r.addr, None),
            Err(message) => match field_of(device, text) {
                Some((addr, f)) => (addr, Some(f)),
                None => return Err(message),
            },
        };
        let source = match device.reg_target(addr) {
            Ok(Some(target)) => Source::Reg {
                target,
                addr,
                field,
            },
            Ok(None) => {
                let mut b = [0u8; 4];
                device
                    .read_bytes(addr, &mut b)
                    .map_err(|e| format!("`{text}`: {e}"))?;
                Source::Mem { addr }
            }
            Err(e) => return Err(format!("`{text}`: {e}")),
        };
        Ok(Value {
            text: text.to_string(),
            source,
        })
    }

    /// The value now (`None` when it cannot be read).
    pub fn read(&self, device: &Device) -> Option<u32> {
        match &self.source {
            Source::Reg { target, field, .. } => {
                let v = device.peek_reg(*target)?;
                Some(match field {
                    Some(f) => (v & f.mask) >> f.lsb,
                    None => v,
                })
            }
            Source::Mem { addr } => {
                let mut b = [0u8; 4];
                device.read_bytes(*addr, &mut b).ok()?;
                Some(u32::from_le_bytes(b))
            }
        }
    }
}

/// `REGISTER_PATH.FIELD`: the register's address and the field.
fn field_of(device: &Device, text: &str) -> Option<(u64, FieldSel)> {
    let (head, field) = text.rsplit_once('.')?;
    let r = resolved(device, head).ok()?;
    let reg = r.register?;
    let t = device.reg_target(r.addr).ok()??;
    let block = device.block_of(t.region)?;
    let spec = block.register_at(t.offset)?.spec();
    let f = spec.field(field)?;
    Some((
        r.addr,
        FieldSel {
            name: format!("{reg}.{}", f.name()),
            lsb: f.lsb(),
            mask: f.mask(),
        },
    ))
}

/// A test of a value: `VALUE OP NUMBER`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Test {
    /// The value.
    pub value: Value,
    /// The comparison.
    pub cmp: Cmp,
    /// The number compared with.
    pub rhs: u32,
}

impl Test {
    /// Parses `VALUE OP NUMBER` (spaces around OP optional).
    ///
    /// # Errors
    ///
    /// A malformed test, an unknown name or a number that is not 32-bit.
    pub fn parse(device: &Device, text: &str) -> Result<Test, String> {
        let (lhs, cmp, rhs) = split_test(text).ok_or_else(|| {
            format!("`{text}`: expected VALUE OP NUMBER with OP one of == != < <= > >=")
        })?;
        let value = Value::parse(device, lhs)?;
        let rhs = parse_u32(rhs)?;
        Ok(Test { value, cmp, rhs })
    }

    /// Whether it holds now (`None`: the value cannot be read).
    pub fn holds(&self, device: &Device) -> Option<bool> {
        self.value.read(device).map(|v| self.cmp.holds(v, self.rhs))
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {:#x}",
            self.value.text,
            self.cmp.symbol(),
            self.rhs
        )
    }
}

/// Splits `LHS OP RHS` at its operator, if it has one.
pub fn split_test(text: &str) -> Option<(&str, Cmp, &str)> {
    for op in ["==", "!=", "<=", ">=", "<", ">"] {
        if let Some((l, r)) = text.split_once(op) {
            let cmp = Cmp::parse(op)?;
            let (l, r) = (l.trim(), r.trim());
            // `=<`, `=>`, `<>`: not an operator.
            let stray = |c: char| "=<>!".contains(c);
            if l.is_empty() || r.is_empty() || l.ends_with(stray) || r.starts_with(stray) {
                return None;
            }
            return Some((l, cmp, r));
        }
    }
    None
}

/// A 32-bit number: decimal or `0x` hex, `_` between digits.
///
/// # Errors
///
/// What is wrong with it.
pub fn parse_u32(text: &str) -> Result<u32, String> {
    soc_map::parse_u64(text.trim())
        .ok()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("`{}` is not a 32-bit number", text.trim()))
}

/// A 64-bit number: decimal or `0x` hex.
///
/// # Errors
///
/// What is wrong with it.
pub fn parse_u64(text: &str) -> Result<u64, String> {
    soc_map::parse_u64(text.trim()).map_err(|_| format!("`{}` is not a number", text.trim()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn dev() -> Device {
        Device::trn2().unwrap()
    }

    #[test]
    fn places_resolve_with_suggestions() {
        let d = dev();
        assert_eq!(Place::parse(&d, "eng3").unwrap(), Place::Engine(3));
        assert_eq!(
            Place::parse(&d, "eng3.m2s").unwrap(),
            Place::EngineDir(3, Dir::M2s)
        );
        assert!(
            matches!(Place::parse(&d, "eng3.s2m.q1").unwrap(), Place::Queue(q) if q.queue == 1 && q.dir == Dir::S2m)
        );
        assert_eq!(Place::parse(&d, "tpb2").unwrap(), Place::Core(2));
        let e = Place::parse(&d, "eng200").unwrap_err();
        assert!(e.contains("no such instance (eng0..eng131)"), "{e}");
        let e = Place::parse(&d, "eng0.m2ss.q0").unwrap_err();
        assert!(e.contains("did you mean `m2s`?"), "{e}");
        let e = Place::parse(&d, "hbm0").unwrap_err();
        assert!(e.contains("not an engine"), "{e}");
    }

    #[test]
    fn values_read_registers_fields_and_memory() {
        let mut d = dev();
        let v = Value::parse(&d, "eng0.m2s.q0.q_cfg").unwrap();
        assert_eq!(v.read(&d), Some(0x0300_0000));
        let f = Value::parse(&d, "eng0.m2s.q0.q_cfg.en_pref").unwrap();
        assert_eq!(f.read(&d), Some(0));
        d.write32(0x10_0200_1020, 0x0303_0000).unwrap();
        assert_eq!(f.read(&d), Some(1));
        let m = Value::parse(&d, "hbm0+0x100").unwrap();
        d.write_bytes(0x100, &[1, 2, 3, 4]).unwrap();
        assert_eq!(m.read(&d), Some(0x0403_0201));
        let s = Value::parse(&d, "tpb0.sem.read[3]").unwrap();
        assert_eq!(s.read(&d), Some(0));
        let e = Value::parse(&d, "eng0.m2s.q0.tdrbp_lo").unwrap_err();
        assert!(e.contains("did you mean `tdrbp_low`?"), "{e}");
        let e = Value::parse(&d, "eng0.m2s.q0.q_cfg.en_prf").unwrap_err();
        assert!(e.contains("did you mean `EN_PREF`?"), "{e}");
    }

    #[test]
    fn tests_parse_every_operator() {
        let d = dev();
        for (text, cmp) in [
            ("tpb0.sem.read[3] >= 16", Cmp::Ge),
            ("tpb0.sem.read[3]<=16", Cmp::Le),
            ("tpb0.sem.read[3] < 16", Cmp::Lt),
            ("tpb0.sem.read[3] > 16", Cmp::Gt),
            ("tpb0.sem.read[3] == 0x10", Cmp::Eq),
            ("tpb0.sem.read[3] != 16", Cmp::Ne),
        ] {
            let t = Test::parse(&d, text).unwrap();
            assert_eq!(t.cmp, cmp, "{text}");
            assert_eq!(t.rhs, 16);
        }
        assert!(Test::parse(&d, "tpb0.sem.read[3] 16").is_err());
        assert!(Test::parse(&d, "tpb0.sem.read[3] >= 0x100000000").is_err());
    }
}
