//! Operands as the firmware reads them: ADDR8 resolution (immediate,
//! register, table), the bound-check registers and the active-channel
//! check (docs/firmware.md "What is modelled": Operands, Bound checks).

use dma_abi::inst::BoundCheckReg;
use soc_map::{Addr8, TableOffset};

use super::{Operands, OutOfBounds, PlanError};

/// A register an operand was read from: (operand, register, value).
pub(super) type RegOperand = (&'static str, u8, u64);

/// An operand resolved, with the registers it read.
pub(super) struct Resolved {
    pub(super) addr: u64,
    pub(super) regs: Vec<(&'static str, u8, u64)>,
}

pub(super) fn reg64(ops: &dyn Operands, reg: u8) -> u64 {
    u64::from(ops.reg(reg)) | (u64::from(ops.reg(reg.wrapping_add(1) & 63)) << 32)
}

/// ADDR8 → SoC address. Register mode reads REG[r] (low) and REG[r+1]
/// (high); table mode adds the offset to the entry (wiki-facts §C.4;
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
            "{what}.{field}: shapes from a shape register"
        )));
    }
    Ok(match a {
        Addr8::Immediate { addr, .. } => Resolved {
            addr,
            regs: Vec::new(),
        },
        Addr8::Register { reg, .. } => {
            let v = reg64(ops, reg);
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
                        reg64(ops, reg)
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

    /// The gate `reg` of the address operand `addr`.
    pub(super) fn of(reg: BoundCheckReg, addr: Addr8) -> Self {
        let wide = matches!(
            addr,
            Addr8::Table {
                offset: TableOffset::Immediate { wide: true, .. }
                    | TableOffset::Register { wide: true, .. },
                ..
            }
        );
        Self { reg, wide }
    }

    /// A gate on 32-bit values (an index bound).
    pub(super) fn narrow(reg: BoundCheckReg) -> Self {
        Self { reg, wide: false }
    }

    /// The limit the gate compares with (the last value allowed).
    pub(super) fn limit(&self, ops: &dyn Operands) -> u64 {
        if self.wide {
            reg64(ops, self.reg.bc_reg)
        } else {
            u64::from(ops.reg(self.reg.bc_reg))
        }
    }
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
/// partition channels (wiki-facts §G.1, §G.2).
pub(super) fn check_active_channels(word: &str, n: u8) -> Result<(), PlanError> {
    if n == 128 {
        return Ok(());
    }
    Err(PlanError::Invalid(format!(
        "{word}.idx_num_active_channels = {n}: must be 128 (the index drives all 128 partition channels)"
    )))
}
