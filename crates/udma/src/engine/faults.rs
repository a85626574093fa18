//! Hardware errors: secondary IOFIC cause bits, abort, and the per-queue
//! AXI NON_ACTIVE state (docs/references/driver.md §2.6, docs/references/wiki.md §B.2, §I.4).

use super::{DirState, Engine, dir_idx};
use crate::block::{Dir, QUEUES};
use crate::event::EventKind;
use crate::regs::Group;
use crate::stats::FaultTally;

/// SEC_A (M2S) cause bits (docs/references/driver.md §2.6, docs/references/wiki.md §B.2).
pub(super) mod sec_a {
    pub const DATA_AXI_RESPONSE: u32 = 1 << 8;
    pub const PREF_AXI_RESPONSE: u32 = 1 << 11;
    pub const PKT_LEN: u32 = 1 << 13;
    pub const MAX_DESC: u32 = 1 << 14;
    pub const FIRST: u32 = 1 << 15;
    pub const LAST: u32 = 1 << 16;
    pub const PREF_RING_ID: u32 = 1 << 17;
}

/// SEC_B (S2M) cause bits (docs/references/driver.md §2.6).
pub(super) mod sec_b {
    pub const DATA_WR_AXI_RESPONSE: u32 = 1 << 1;
    pub const PREF_AXI_RESPONSE: u32 = 1 << 9;
    pub const PREF_RING_ID: u32 = 1 << 11;
    pub const COMP_AXI: u32 = 1 << 14;
    pub const PKT_LEN_MISMATCH: u32 = 1 << 24;
}

/// SEC_D (simulator-defined) cause bits (csr-maps/udma_gen.json).
pub(super) mod sec_d {
    pub const M2S_DOORBELL_OVERRUN: u32 = 1 << 0;
    pub const S2M_DOORBELL_OVERRUN: u32 = 1 << 1;
    /// A packet's TX word 1 the simulator has no description of
    /// (docs/cme.md §4).
    pub const M2S_UNSUPPORTED_OP: u32 = 1 << 2;
    /// validate_crc failed (docs/cme.md §4).
    pub const M2S_CRC_MISMATCH: u32 = 1 << 3;
}

/// Every cause a fault names, as the engine reports it (the bits above, by
/// their cause register, and a queue's AXI NON_ACTIVE): what
/// `expect_fault … cause=` and the debugger's `break fault CAUSE` may name
/// (docs/trace-format.md §4.9). Several are one bit of a wider field of
/// the register map (`DATA_WR_AXI_RESPONSE` of `DATA_WR_AXI`).
pub const FAULT_CAUSES: &[&str] = &[
    "SEC_A_INT_CAUSE.DATA_AXI_RESPONSE",
    "SEC_A_INT_CAUSE.PREF_AXI_RESPONSE",
    "SEC_A_INT_CAUSE.PKT_LEN",
    "SEC_A_INT_CAUSE.MAX_DESC",
    "SEC_A_INT_CAUSE.FIRST",
    "SEC_A_INT_CAUSE.LAST",
    "SEC_A_INT_CAUSE.PREF_RING_ID",
    "SEC_A_INT_CAUSE.COMP_AXI_RESPONSE",
    "SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE",
    "SEC_B_INT_CAUSE.PREF_AXI_RESPONSE",
    "SEC_B_INT_CAUSE.PREF_RING_ID",
    "SEC_B_INT_CAUSE.COMP_AXI_RESPONSE",
    "SEC_B_INT_CAUSE.PKT_LEN_MISMATCH",
    "SEC_D_INT_CAUSE.M2S_DOORBELL_OVERRUN",
    "SEC_D_INT_CAUSE.S2M_DOORBELL_OVERRUN",
    "SEC_D_INT_CAUSE.M2S_UNSUPPORTED_OP",
    "SEC_D_INT_CAUSE.M2S_CRC_MISMATCH",
    "AXI_QUEUE_CFG.NON_ACTIVE",
];

impl Engine {
    /// Raises a cause bit in secondary IOFIC group `g`; aborts the direction
    /// unless the abort mask has the bit (docs/references/driver.md §2.6).
    pub(super) fn raise(
        &mut self,
        g: Group,
        bit: u32,
        dir: Dir,
        queue: Option<u8>,
        cause: &str,
        detail: String,
    ) -> bool {
        let io = self.maps.offsets.sec[g as usize];
        let _ = self.regs.udma_gen.hw_update(io.cause, |c| c | bit);
        let cause_v = self.regs.udma_gen.value(io.cause).unwrap_or(0);
        let mask = self.regs.udma_gen.value(io.mask).unwrap_or(0);
        let _ = self.regs.udma_gen.hw_set(io.status, cause_v & !mask);
        let abort_mask = self.regs.udma_gen.value(io.abort_mask).unwrap_or(0);
        let aborts = abort_mask & bit == 0;
        let gname = match g {
            Group::A => "SEC_A",
            Group::B => "SEC_B",
            Group::D => "SEC_D",
        };
        let action = if aborts {
            "abort"
        } else if mask & bit != 0 {
            "masked"
        } else {
            "logged"
        };
        let cause = format!("{gname}_INT_CAUSE.{cause}");
        debug_assert!(
            FAULT_CAUSES.contains(&cause.as_str()),
            "{cause} is not in FAULT_CAUSES"
        );
        self.tally_fault(dir, queue, &cause, action, &detail);
        self.log(EventKind::Fault {
            dir,
            queue,
            cause,
            detail,
            action: action.to_string(),
        });
        if aborts {
            self.set_state(dir, DirState::Aborted, 0);
        }
        aborts
    }

    /// Counts one raised cause in the engine's fault record.
    fn tally_fault(
        &mut self,
        dir: Dir,
        queue: Option<u8>,
        cause: &str,
        action: &'static str,
        detail: &str,
    ) {
        let now = self.now.0;
        match self
            .faults
            .iter_mut()
            .find(|f| f.dir == dir && f.queue == queue && f.action == action && f.cause == cause)
        {
            Some(f) => f.count += 1,
            None => self.faults.push(FaultTally {
                dir,
                queue,
                cause: cause.to_string(),
                action,
                count: 1,
                first_cycle: now,
                detail: detail.to_string(),
            }),
        }
    }

    /// An AXI error on queue `q`: the queue goes NON_ACTIVE (GEN axi_queue,
    /// docs/references/wiki.md §I.4) and the cause bit is raised.
    pub(super) fn axi_error(
        &mut self,
        dir: Dir,
        q: u8,
        g: Group,
        bit: u32,
        cause: &str,
        detail: String,
    ) {
        let qi = usize::from(q) % QUEUES;
        let cfg_off = self.maps.offsets.axi_queue_cfg[qi];
        let err_off = self.maps.offsets.axi_queue_error_status[qi];
        let state_bit = match dir {
            Dir::M2s => 1 << 12,
            Dir::S2m => 1 << 0,
        };
        let _ = self.regs.udma_gen.hw_update(cfg_off, |c| c | state_bit);
        let _ = self.regs.udma_gen.hw_update(err_off, |e| e | bit);
        self.q[qi][dir_idx(dir)].non_active = true;
        self.log(EventKind::Fault {
            dir,
            queue: Some(q),
            cause: "AXI_QUEUE_CFG.NON_ACTIVE".to_string(),
            detail: detail.clone(),
            action: "queue_non_active".to_string(),
        });
        self.raise(g, bit, dir, Some(q), cause, detail);
    }
}
