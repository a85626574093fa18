//! Operands as the firmware reads them: ADDR8 resolution (immediate,
//! register, table), the bound-check registers and the active-channel
//! check (docs/firmware.md "What is modelled": Operands, Bound checks).

use dma_abi::inst::BoundCheckReg;
use soc_map::{Addr4, Addr4Mode, Addr8, TableOffset};

use super::{Operands, OutOfBounds, PlanError};

/// A register an operand was read from: (operand, register, value).
pub(super) type RegOperand = (&'static str, u8, u64);

/// An operand resolved, with the registers it read.
pub(super) struct Resolved {
    pub(super) addr: u64,
    pub(super) regs: Vec<(&'static str, u8, u64)>,
}

/// The 64-bit value of the register pair `REG[reg]` (low), `REG[reg + 1]`
/// (high). The register file has 64 registers, so a pair cannot start at
/// `REG[63]`: its high half would be a register that does not exist, and
/// no source says what the firmware reads there — refused, naming the
/// field (docs/firmware.md "Bound checks").
pub(super) fn reg64(
    ops: &dyn Operands,
    reg: u8,
    what: &str,
    field: &str,
) -> Result<u64, PlanError> {
    if usize::from(reg) + 1 >= REG_COUNT {
        return Err(PlanError::Invalid(format!(
            "{what}.{field}: a 64-bit register pair cannot start at REG[{reg}]: its high half \
             would be REG[{}], and the register file has {REG_COUNT} registers",
            u16::from(reg) + 1
        )));
    }
    Ok(u64::from(ops.reg(reg)) | (u64::from(ops.reg(reg + 1)) << 32))
}

/// Registers in a core's file (`q7_local_reg.REG[64]`, docs/references/wiki.md §C.4).
pub(super) const REG_COUNT: usize = 64;

/// ADDR8 → SoC address. Register mode reads REG[r] (low) and REG[r+1]
/// (high); table mode adds the offset to the entry (docs/references/wiki.md §C.4;
/// register pairing: docs/firmware.md).
pub(super) fn resolve_addr8(
    what: &'static str,
    field: &'static str,
    a: Addr8,
    ops: &dyn Operands,
) -> Result<Resolved, PlanError> {
    let shape = match a {
        Addr8::Immediate { shape_reg, .. }
        | Addr8::Register { shape_reg, .. }
        | Addr8::Table { shape_reg, .. } => shape_reg,
    };
    if shape {
        return Err(PlanError::Unsupported(format!(
            "{what}.{field}: ADDR8 marker {:#04x} {SHAPE_REASON}",
            a.marker()
        )));
    }
    Ok(match a {
        Addr8::Immediate { addr, .. } => Resolved {
            addr,
            regs: Vec::new(),
        },
        Addr8::Register { reg, .. } => {
            let v = reg64(ops, reg, what, field)?;
            Resolved {
                addr: v,
                regs: vec![(field, reg, v)],
            }
        }
        Addr8::Table { entry, offset, .. } => {
            let base = ops.table_entry(entry);
            let (off, regs) = match offset {
                TableOffset::Immediate { value, .. } => (value, Vec::new()),
                TableOffset::Register { reg, wide } => {
                    let v = if wide {
                        reg64(ops, reg, what, field)?
                    } else {
                        u64::from(ops.reg(reg))
                    };
                    (v, vec![(field, reg, v)])
                }
            };
            let addr = base.checked_add(off).ok_or_else(|| {
                PlanError::Invalid(format!(
                    "{what}.{field}: table entry {entry} ({base:#x}) + offset {off:#x} overflows"
                ))
            })?;
            Resolved { addr, regs }
        }
    })
}

/// Why shape-register operands are refused (docs/firmware.md "Not
/// modelled"): the sources name the shape register file and its contents
/// but not how a word picks a register or how one is loaded.
const SHAPE_REASON: &str = "(SHAPE_REG) takes the shape from a DGE shape register \
     ($S[0..4]: elem_size, num_elem[4], step_elem[4]); no published source says which \
     register a word selects or how software loads one, so the firmware refuses the word";

/// The ADDR8 operand `field` of `word` in a shape-register mode (markers
/// 0x40/0xC0/0x60/0x68 and their +0x04 variants, docs/firmware.md "Not
/// modelled"): the word's own counts must be 0 — and, for DIRECT2D, its
/// row step (`step1`) — since the register supplies them; otherwise the
/// field is named. A valid one is refused as not modelled. Nothing for the
/// other modes.
pub(super) fn shape_reg_operand(
    word: &str,
    field: &str,
    a: Addr8,
    (num_field, nums): (&str, &[u16]),
    step1: Option<(&str, i32)>,
) -> Result<(), PlanError> {
    let marker = a.marker();
    if marker & soc_map::addr8::SHAPE_REG == 0 {
        return Ok(());
    }
    if nums.iter().any(|&n| n != 0) {
        let shown = if nums.len() == 1 {
            nums[0].to_string()
        } else {
            format!("{nums:?}")
        };
        return Err(PlanError::Invalid(format!(
            "{word}.{num_field} = {shown}: must be 0 when {word}.{field} takes its shape \
             from a shape register (ADDR8 marker {marker:#04x})"
        )));
    }
    if let Some((step_field, s)) = step1
        && s != 0
    {
        return Err(PlanError::Invalid(format!(
            "{word}.{step_field}[1] = {s}: must be 0 when {word}.{field} takes its shape \
             from a shape register (ADDR8 marker {marker:#04x})"
        )));
    }
    Err(PlanError::Unsupported(format!(
        "{word}.{field}: ADDR8 marker {marker:#04x} {SHAPE_REASON}"
    )))
}

/// Why an ADDR4 operand in mode `a` is refused: shape registers (0x40,
/// 0xC0) and the indirect modes (0x20 INDIRECT_IMM, 0xA0 INDIRECT_REG)
/// are named by the ISA without a published meaning (docs/firmware.md
/// "Not modelled"). `None` for the other modes (the caller knows which
/// it takes).
pub(super) fn addr4_refusal(word: &str, field: &str, a: Addr4) -> Option<PlanError> {
    let marker = match a {
        Addr4::Immediate { shape_reg, .. } => {
            if shape_reg {
                Addr4Mode::ShapeReg.marker()
            } else {
                Addr4Mode::Immediate.marker()
            }
        }
        Addr4::Register { mode, .. } => mode.marker(),
        Addr4::IndirectImm { .. } => Addr4Mode::IndirectImm.marker(),
    };
    let why = match Addr4Mode::from_marker(marker) {
        Some(Addr4Mode::ShapeReg | Addr4Mode::AddrShapeReg) => SHAPE_REASON,
        Some(Addr4Mode::IndirectImm) => {
            "(INDIRECT_IMM): the ISA names the indirect ADDR4 modes but no published source \
             says what the indirection reads, so the firmware refuses the word"
        }
        Some(Addr4Mode::IndirectReg) => {
            "(INDIRECT_REG): the ISA names the indirect ADDR4 modes but no published source \
             says what the indirection reads, so the firmware refuses the word"
        }
        _ => return None,
    };
    Some(PlanError::Unsupported(format!(
        "{word}.{field}: ADDR4 marker {marker:#04x} {why}"
    )))
}

/// A BOUND_CHECK_REG gate with the width of its limit (docs/firmware.md
/// "Bound checks"): `REG[bc_reg]` is the limit; `REG[bc_reg + 1]` holds its
/// high 32 bits only in wide-offset mode, when the gated ADDR8 operand is a
/// table operand with OFFSET_WIDE. Index bounds are always one register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Gate {
    pub(super) reg: BoundCheckReg,
    pub(super) wide: bool,
}

impl Gate {
    /// No check.
    pub(super) const INERT: Gate = Gate {
        reg: BoundCheckReg::INERT,
        wide: false,
    };

    /// The gate `reg` of the address operand `addr`; an armed wide gate
    /// whose limit pair would start at `REG[63]` is refused (see [`reg64`]).
    pub(super) fn of(
        reg: BoundCheckReg,
        addr: Addr8,
        what: &str,
        field: &str,
    ) -> Result<Self, PlanError> {
        let wide = matches!(
            addr,
            Addr8::Table {
                offset: TableOffset::Immediate { wide: true, .. }
                    | TableOffset::Register { wide: true, .. },
                ..
            }
        );
        if wide && reg.bc_enabled && usize::from(reg.bc_reg) + 1 >= REG_COUNT {
            return Err(PlanError::Invalid(format!(
                "{what}.{field}.bc_reg = {}: a wide-offset bound is a 64-bit register pair, \
                 and its high half would be REG[{}] (the register file has {REG_COUNT} registers)",
                reg.bc_reg,
                u16::from(reg.bc_reg) + 1
            )));
        }
        Ok(Self { reg, wide })
    }

    /// A gate on 32-bit values (an index bound).
    pub(super) fn narrow(reg: BoundCheckReg) -> Self {
        Self { reg, wide: false }
    }

    /// The limit the gate compares with (the last value allowed).
    pub(super) fn limit(&self, ops: &dyn Operands) -> u64 {
        if self.wide && usize::from(self.reg.bc_reg) + 1 < REG_COUNT {
            // Checked in `Gate::of`.
            u64::from(ops.reg(self.reg.bc_reg)) | (u64::from(ops.reg(self.reg.bc_reg + 1)) << 32)
        } else if self.wide {
            0
        } else {
            u64::from(ops.reg(self.reg.bc_reg))
        }
    }
}

/// The firmware's bounds trace of a memcopy with an armed gate, src then
/// dst: `bounds:(%1d 0x%llx<=0x%llx, %1d 0x%llx<=0x%llx)` — each {enabled,
/// effective start address <= limit}, the limit 0 for a disabled gate
/// (docs/firmware.md "Firmware log lines"). `None` when neither is armed.
pub(super) fn bounds_line(ops: &dyn Operands, gates: [Gate; 2], addrs: [u64; 2]) -> Option<String> {
    if !gates.iter().any(|g| g.reg.bc_enabled) {
        return None;
    }
    let part = |g: Gate, a: u64| {
        let on = g.reg.bc_enabled;
        let limit = if on { g.limit(ops) } else { 0 };
        format!("{} {a:#x}<={limit:#x}", u8::from(on))
    };
    Some(format!(
        "bounds:({}, {})",
        part(gates[0], addrs[0]),
        part(gates[1], addrs[1])
    ))
}

pub(super) fn bound_check(
    side: &'static str,
    gate: Gate,
    addr: u64,
    len: u32,
    ops: &dyn Operands,
) -> Option<OutOfBounds> {
    if !gate.reg.bc_enabled {
        return None;
    }
    let limit = gate.limit(ops);
    let last = addr.saturating_add(u64::from(len) - 1);
    (last > limit).then_some(OutOfBounds {
        side,
        addr,
        len_bytes: len,
        reg: gate.reg.bc_reg,
        limit,
        notify: !gate.reg.bc_disable_oob_error_notif,
    })
}

/// `idx_num_active_channels` must be 128: the index drives all 128
/// partition channels (docs/references/wiki.md §G.1, §G.2).
pub(super) fn check_active_channels(word: &str, n: u8) -> Result<(), PlanError> {
    if n == 128 {
        return Ok(());
    }
    Err(PlanError::Invalid(format!(
        "{word}.idx_num_active_channels = {n}: must be 128 (the index drives all 128 partition channels)"
    )))
}
