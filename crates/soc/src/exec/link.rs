//! Linking: a parsed trace's names resolved against the device's maps
//! before anything runs (`docs/trace-format.md` §3).

use super::*;
use trace_format::DescFlag;

/// A queue named by `desc` / `doorbell`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueTarget {
    /// Region name, e.g. `eng0.m2s.q3`.
    pub region: String,
    /// Engine id.
    pub engine: u16,
    /// Direction.
    pub dir: Dir,
    /// Queue index.
    pub queue: u8,
    /// Queue block base address.
    pub base: u64,
}

/// What a statement's names resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Linked {
    /// An address (v1 directives, `wait`).
    Addr(Resolved),
    /// `desc`: the queue, and the resolved data/second-buffer addresses.
    Desc {
        /// The queue.
        queue: QueueTarget,
        /// `src=`/`dst=`/`addr=`.
        addr: Option<u64>,
        /// `buf2=`.
        buf2: Option<u64>,
    },
    /// `doorbell`.
    Doorbell(QueueTarget),
    /// `expect_fault`: the queue whose faults it checks.
    ExpectFault(QueueTarget),
    /// `inst`: the core and the decoded word.
    Inst {
        /// TPB index.
        core: u8,
        /// The word.
        word: Box<dma_abi::inst::InstWord>,
    },
    /// `run`.
    Run,
    /// A host operation (v3).
    Host,
    /// A statement naming `@tensor` addresses: linked when it runs, once
    /// the host has allocated the tensors.
    Deferred,
}

impl Linked {
    /// The address a step record shows for the statement (its target, a
    /// queue's base; 0 when it has none).
    pub fn addr(&self) -> u64 {
        match self {
            Linked::Addr(r) => r.addr,
            Linked::Desc { queue, .. } | Linked::Doorbell(queue) | Linked::ExpectFault(queue) => {
                queue.base
            }
            Linked::Run | Linked::Inst { .. } | Linked::Host | Linked::Deferred => 0,
        }
    }
}

pub(super) fn resolve_queue(device: &Device, q: &QueueRef) -> Result<QueueTarget, ResolveError> {
    let name: Vec<&str> = q.path.iter().map(|c| c.name.as_str()).collect();
    let name = name.join(".");
    let err = |message: String| ResolveError {
        span: q.span,
        message,
    };
    if let Some(c) = q.path.iter().find(|c| c.index.is_some()) {
        return Err(ResolveError {
            span: c.span,
            message: format!(
                "`{}`: a queue path takes no index (the ring slot goes last: eng0.m2s.q0[5])",
                c.name
            ),
        });
    }
    let Some(region) = device.map().by_name(&name) else {
        return Err(err(format!(
            "unknown queue `{name}` (expected engN.m2s.qQ or engN.s2m.qQ, N < 132, Q < 16)"
        )));
    };
    let parsed = name
        .strip_prefix("eng")
        .and_then(|r| r.split_once('.'))
        .and_then(|(n, path)| Some((n.parse::<u16>().ok()?, UnitBlock::from_suffix(path)?)));
    match parsed {
        Some((engine, UnitBlock::M2sQ(queue))) => Ok(QueueTarget {
            region: name,
            engine,
            dir: Dir::M2s,
            queue,
            base: device.map().region(region).base,
        }),
        Some((engine, UnitBlock::S2mQ(queue))) => Ok(QueueTarget {
            region: name,
            engine,
            dir: Dir::S2m,
            queue,
            base: device.map().region(region).base,
        }),
        _ => Err(err(format!(
            "`{name}` is not a DMA queue (expected engN.m2s.qQ or engN.s2m.qQ)"
        ))),
    }
}

/// The keys and flags of a `desc` that the queue's direction has no place
/// for (`docs/trace-format.md` §4.2): word 1 of an S2M descriptor is
/// `buf2_ptr_lo`, so the M2S CME-command arguments (`op=`, `cce=` and its
/// dtypes and scale, `crc_iv=`, the word-1 flags) are errors there, and
/// `buf2=` is an error on an M2S queue; so are `src=` on an S2M queue and
/// `dst=` on an M2S one. The first misfit in the line is blamed, at its
/// argument (`src=`/`dst=` at the address).
fn check_desc_direction(queue: &QueueTarget, fields: &DescFields) -> Result<(), ResolveError> {
    let role = fields.addr.as_ref().and_then(|a| match (a.role, queue.dir) {
        (AddrRole::Src, Dir::S2m) | (AddrRole::Dst, Dir::M2s) => Some((
            a.addr.span,
            format!(
                "`{}` is an {} queue: use {} (src= names an M2S source, dst= an S2M destination)",
                queue.region,
                queue.dir.name().to_uppercase(),
                if queue.dir == Dir::M2s {
                    "src="
                } else {
                    "dst="
                }
            ),
        )),
        _ => None,
    });
    let word1 = match queue.dir {
        Dir::S2m => fields.m2s_word1_args().next().map(|(name, span)| {
            let what = if DescFlag::from_name(name).is_some() {
                format!("the flag `{name}`")
            } else {
                format!("{name}=")
            };
            (
                span,
                format!(
                    "`{}` is an S2M queue: {what} sets word 1 of an M2S descriptor (the CME command); \
                     word 1 of an S2M descriptor is buf2_ptr_lo (buf2=ADDR or word1=V)",
                    queue.region
                ),
            )
        }),
        Dir::M2s => fields.span_of("buf2").map(|span| {
            (
                span,
                format!(
                    "`{}` is an M2S queue: buf2= is the second buffer of an S2M descriptor (its word 1); \
                     word 1 of an M2S descriptor is the CME command (op=, cce=, crc_iv=, the word-1 flags or word1=V)",
                    queue.region
                ),
            )
        }),
    };
    match role
        .into_iter()
        .chain(word1)
        .min_by_key(|(span, _)| span.column)
    {
        Some((span, message)) => Err(ResolveError { span, message }),
        None => Ok(()),
    }
}

pub(super) fn link_one(device: &Device, kind: &StatementKind) -> Result<Linked, ResolveError> {
    let inst_names_tensor = matches!(kind, StatementKind::Inst { text, .. } if text.contains('@'));
    if inst_names_tensor || kind.addrs().iter().any(|a| a.tensor().is_some()) {
        return Ok(Linked::Deferred);
    }
    match kind {
        StatementKind::Host { .. } => Ok(Linked::Host),
        StatementKind::Desc { queue, fields } => {
            let queue = resolve_queue(device, queue)?;
            check_desc_direction(&queue, fields)?;
            let addr = match &fields.addr {
                Some(a) => Some(resolve(device, &a.addr)?.addr),
                None => None,
            };
            let buf2 = match &fields.buf2 {
                Some(b) => Some(resolve(device, b)?.addr),
                None => None,
            };
            Ok(Linked::Desc { queue, addr, buf2 })
        }
        StatementKind::Doorbell { queue, .. } => {
            Ok(Linked::Doorbell(resolve_queue(device, queue)?))
        }
        StatementKind::ExpectFault {
            queue,
            cause,
            cause_span,
            ..
        } => {
            let q = resolve_queue(device, queue)?;
            // A cause no fault can name is a typo, not a failed check:
            // reported at the `cause=` argument.
            if let Some(c) = cause {
                fault_cause(device, c).map_err(|message| ResolveError {
                    span: *cause_span,
                    message: format!("expect_fault cause={c}: {message}"),
                })?;
            }
            Ok(Linked::ExpectFault(q))
        }
        StatementKind::Run { .. } => Ok(Linked::Run),
        StatementKind::Inst {
            core,
            text,
            text_column,
        } => {
            // The word is checked here so a bad field is reported with the
            // other name errors, before anything runs.
            let at = |column: usize, len: u32| Span {
                line: 0,
                column: text_column + column.saturating_sub(1) as u32,
                len,
            };
            // Columns (the error's and any its message names) count from
            // the start of the trace line.
            match dma_abi::inst::parse_line_at(text, 1, *text_column as usize) {
                Ok(Some(word)) => {
                    if let Err(e) = word.encode() {
                        return Err(ResolveError {
                            span: at(1, text.chars().count() as u32),
                            message: e.to_string(),
                        });
                    }
                    Ok(Linked::Inst {
                        core: *core,
                        word: Box::new(word),
                    })
                }
                Ok(None) => Err(ResolveError {
                    span: at(1, 1),
                    message: "inst: the instruction is missing".into(),
                }),
                Err(e) => Err(ResolveError {
                    span: Span {
                        line: 0,
                        column: u32::try_from(e.column).unwrap_or(u32::MAX),
                        len: 1,
                    },
                    message: e.message,
                }),
            }
        }
        other => match other.try_addr() {
            Some(a) => {
                let res = resolve(device, a)?;
                check_reads_something(device, other, a.span, res.addr)?;
                Ok(Linked::Addr(res))
            }
            None => Ok(Linked::Run),
        },
    }
}

/// A `read32 … ==` or a `wait` on a register whose bits under the mask
/// always read 0 (`WO`, `INC`, `DEC`: a command or a doorbell window; or
/// reserved bits) checks nothing: it holds whatever the device does, or never does. It is
/// rejected with the other checks that cannot fail or cannot pass
/// (docs/trace-format.md §3 `read32`, §4.5 `wait`).
fn check_reads_something(
    device: &Device,
    kind: &StatementKind,
    span: Span,
    addr: u64,
) -> Result<(), ResolveError> {
    let (what, mask) = match kind {
        StatementKind::Read32 {
            expect: Some(_),
            mask,
            ..
        } => ("read32", mask),
        StatementKind::Wait { mask, .. } => ("wait", mask),
        _ => return Ok(()),
    };
    let Some((register, read_zero)) = device.reg_read_zero_bits(addr) else {
        return Ok(());
    };
    if mask.unwrap_or(u32::MAX) & !read_zero != 0 {
        return Ok(());
    }
    Err(ResolveError {
        span,
        message: format!(
            "{what}: register {register} always reads 0 under the mask (write-only WO, INC or DEC bits, reserved bits), so the check cannot fail or cannot pass; check the register it acts on (a SEM_READ, the queue's TDRTP/RDRTP, …)"
        ),
    })
}

/// Resolves every name of a parsed trace; all errors, or the targets.
pub fn link(device: &Device, trace: &Trace, file: &str) -> Result<Vec<Linked>, Vec<ParseError>> {
    let mut out = Vec::with_capacity(trace.statements.len());
    let mut errors = Vec::new();
    for s in &trace.statements {
        match link_one(device, &s.kind) {
            Ok(r) => out.push(r),
            Err(mut e) => {
                if e.span.line == 0 {
                    e.span.line = s.span.line;
                }
                errors.push(located(file, e.span, e.message));
            }
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// A queue by region name (`eng0.m2s.q3`).
pub fn queue_target(device: &Device, name: &str) -> Option<QueueTarget> {
    let region = device.map().by_name(name)?;
    let (n, path) = name.strip_prefix("eng")?.split_once('.')?;
    let engine: u16 = n.parse().ok()?;
    let (dir, queue) = match UnitBlock::from_suffix(path)? {
        UnitBlock::M2sQ(q) => (Dir::M2s, q),
        UnitBlock::S2mQ(q) => (Dir::S2m, q),
        _ => return None,
    };
    Some(QueueTarget {
        region: name.to_string(),
        engine,
        dir,
        queue,
        base: device.map().region(region).base,
    })
}

/// Ring base, length, tail offset and tail ring id of a queue, from its CSRs.
pub fn ring_of(device: &Device, q: &QueueTarget) -> Option<(u64, u32, u32, u8)> {
    let map = device.catalog().block(if q.dir == Dir::M2s {
        "udma_m2s_q"
    } else {
        "udma_s2m_q"
    })?;
    let p = if q.dir == Dir::M2s { "T" } else { "R" };
    let reg = |name: &str| -> Option<u32> {
        let off = map.find(&format!("{p}{name}"), None)?;
        let t = device.reg_target(q.base + off).ok()??;
        device.peek_reg(t)
    };
    let lo = reg("DRBP_LOW")? & 0xFFFF_FFC0;
    let hi = reg("DRBP_HIGH")?;
    let len = reg("DRL")? & 0xFF_FFFF;
    let tail = reg("DRTP")?;
    Some((
        (u64::from(hi) << 32) | u64::from(lo),
        len,
        tail & 0xFF_FFFF,
        (tail >> 30) as u8,
    ))
}

/// The causes a fault can name: those the engine reports
/// ([`udma::FAULT_CAUSES`], some one bit of a wider field) and the fields
/// of the engines' `*_INT_CAUSE` registers (`SEC_A_INT_CAUSE.PREF_RING_ID`).
fn cause_names(device: &Device) -> Vec<String> {
    let mut out: Vec<String> = udma::FAULT_CAUSES
        .iter()
        .map(|c| (*c).to_string())
        .collect();
    if let Some(gen_block) = device.catalog().block("udma_gen") {
        for r in gen_block.registers() {
            if r.name().ends_with("_INT_CAUSE") {
                for f in r.fields() {
                    out.push(format!("{}.{}", r.name(), f.name()));
                }
            }
        }
    }
    out
}

/// A fault cause as typed (`PREF_RING_ID`, `SEC_A_INT_CAUSE.PREF_RING_ID`;
/// any case), checked against the causes a fault can name: upper-cased,
/// or an error that names the closest one (`expect_fault … cause=`, the
/// debugger's `break fault`).
pub fn fault_cause(device: &Device, text: &str) -> Result<String, String> {
    let names = cause_names(device);
    let known = names.iter().any(|n| {
        n.eq_ignore_ascii_case(text)
            || n.rsplit_once('.')
                .is_some_and(|(_, bit)| bit.eq_ignore_ascii_case(text))
    });
    if known {
        return Ok(text.to_ascii_uppercase());
    }
    let bits: Vec<&str> = names
        .iter()
        .map(|n| n.rsplit_once('.').map_or(n.as_str(), |(_, b)| b))
        .collect();
    Err(format!(
        "unknown cause `{text}` (a field of an engine's *_INT_CAUSE register, e.g. PREF_RING_ID, M2S_DOORBELL_OVERRUN){}",
        trace_format::closest_name(text, bits.iter().copied())
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default()
    ))
}
