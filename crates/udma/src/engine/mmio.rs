//! Register access of a unit: MMIO reads and writes, the configuration
//! the hot paths read from the registers, the IOFIC owner semantics and the
//! engine state machine (docs/references/driver.md §2.2, §2.6, §2.8; docs/references/wiki.md §B.2).

use csr::{Delta, RegFile};
use sim_core::Cycle;

use super::{Cfg, DirState, Engine, Ev, dir_idx};
use crate::block::{Dir, QUEUES, UnitBlock};
use crate::event::EventKind;

impl Engine {
    /// A software read of a register (read side effects apply).
    pub fn mmio_read(&mut self, b: UnitBlock, offset: u64) -> Option<u32> {
        let out = self.regs.file_mut(b)?.read(offset).ok()?;
        if out.cleared != 0 {
            self.reg_epoch += 1;
            self.sw_epoch += 1;
        }
        Some(out.value)
    }

    /// A counter that moves whenever any register of the engine may have
    /// changed: at every hardware step, register write and read that
    /// cleared bits. Equal epochs mean equal register contents.
    pub fn reg_epoch(&self) -> u64 {
        self.reg_epoch
    }

    /// A counter that moves whenever a completion head register (TCRHP,
    /// RCRHP of any queue) may have changed: when the hardware moves one
    /// ([`Engine::crhp_moves`]), at every register write and at a read that
    /// cleared bits. Coarser steps than [`Engine::reg_epoch`]: the engine's
    /// hardware steps that leave every completion head where it was do not
    /// move it. Equal values mean equal completion heads (docs/firmware.md
    /// §Stalls).
    pub fn head_epoch(&self) -> u64 {
        self.sw_epoch + self.crhp_moves
    }

    /// A register value without side effects.
    pub fn peek(&self, b: UnitBlock, offset: u64) -> Option<u32> {
        self.regs.file(b)?.value(offset).ok()
    }

    /// A software write of a register at cycle `now`: access semantics, then
    /// the engine reacts (doorbells, resets, state changes, enables).
    pub fn mmio_write(
        &mut self,
        b: UnitBlock,
        offset: u64,
        value: u32,
        now: Cycle,
    ) -> Option<csr::WriteOutcome<'static>> {
        self.now = self.now.max(now);
        self.reg_epoch += 1;
        self.sw_epoch += 1;
        let out = self.regs.file_mut(b)?.write(offset, value).ok()?;
        let o = self.maps.offsets;
        let doorbell = matches!(b, UnitBlock::M2sQ(_)) && offset == o.m2s_q.drtp_inc
            || matches!(b, UnitBlock::S2mQ(_)) && offset == o.s2m_q.drtp_inc;
        if !doorbell {
            self.refresh_after_write(b, offset);
        }
        match b {
            UnitBlock::M2sQ(q) | UnitBlock::S2mQ(q) => {
                let dir = if matches!(b, UnitBlock::M2sQ(_)) {
                    Dir::M2s
                } else {
                    Dir::S2m
                };
                let qo = if dir == Dir::M2s { o.m2s_q } else { o.s2m_q };
                if offset == qo.drtp_inc {
                    if let Some(Delta::Inc(n)) = out.delta {
                        let at = now.after(self.timing_doorbell());
                        self.events.push(at, Ev::Doorbell { dir, q, n });
                    }
                } else if offset == qo.sw_ctrl && out.pulses != 0 {
                    self.queue_sw_ctrl(dir, q, out.pulses);
                } else if dir == Dir::M2s && offset != qo.cfg {
                    // Scheduler and rate-limiter settings: re-arbitrate.
                    self.schedule_kick(now);
                } else if offset == qo.cfg && out.rose_bits() != 0 {
                    // An enable rose: resume prefetch and scheduling.
                    self.events.push(
                        now,
                        Ev::FetchDone {
                            dir,
                            q,
                            epoch: u32::MAX,
                            n: 0,
                        },
                    );
                    self.schedule_kick(now);
                }
            }
            UnitBlock::M2s if offset == o.m2s_change_state && out.pulses != 0 => {
                self.change_state(Dir::M2s, out.pulses);
            }
            UnitBlock::S2m if offset == o.s2m_change_state && out.pulses != 0 => {
                self.change_state(Dir::S2m, out.pulses);
            }
            UnitBlock::M2s => {
                if offset == o.m2s_pref_queue_en {
                    // Queues whose prefetch enable rose: resume prefetch.
                    let mut rose = out.rose_bits() & 0xFFFF;
                    while rose != 0 {
                        let q = rose.trailing_zeros() as u8;
                        rose &= rose - 1;
                        self.wake_prefetch(Dir::M2s, q, now);
                    }
                }
                self.schedule_kick(now);
            }
            UnitBlock::Gen => self.iofic_write(offset, &out),
            _ => {}
        }
        Some(out)
    }

    /// Re-reads every register the hot paths need into `self.cfg` and each
    /// queue's configuration.
    pub(super) fn refresh_config(&mut self) {
        for q in 0..QUEUES as u8 {
            self.refresh_queue_config(q);
        }
        self.refresh_engine_config();
    }

    /// Refreshes what a register write of block `b` at `offset` can change:
    /// a queue block feeds only that queue's configuration (only the part
    /// the register feeds, [`Engine::refresh_queue_part`]); the M2S and S2M
    /// engine blocks feed the engine configuration (and, through
    /// RLIMIT_GEN_CFG, every queue's rate limiter); the SDMA-app block feeds
    /// the queues' CRC seeds. No other block is read by the refresh.
    fn refresh_after_write(&mut self, b: UnitBlock, offset: u64) {
        match b {
            UnitBlock::M2sQ(q) => self.refresh_queue_part(Dir::M2s, q, offset),
            UnitBlock::S2mQ(q) => self.refresh_queue_part(Dir::S2m, q, offset),
            UnitBlock::M2s if Some(offset) == self.maps.offsets.sched.rlimit_gen_cfg => {
                self.refresh_config()
            }
            UnitBlock::M2s | UnitBlock::S2m => self.refresh_engine_config(),
            UnitBlock::SdmaApp => self.refresh_config(),
            _ => {}
        }
    }

    /// Re-reads queue `q`'s configuration registers (both directions, its
    /// scheduler, rate limiter and CRC seed) into the queue.
    fn refresh_queue_config(&mut self, q: u8) {
        let qc = self.queue_config(q);
        if let Some(queue) = self.q.get_mut(usize::from(q) % QUEUES) {
            queue.cfg = qc;
        }
    }

    /// [`Engine::queue_config`] by register offsets, each through the map:
    /// the reference the slot reads are tested against.
    #[cfg(test)]
    pub(super) fn queue_config_by_offset(&self, q: u8) -> super::QueueCfg {
        let qi = usize::from(q) % QUEUES;
        let mut qc = super::QueueCfg::default();
        for dir in [Dir::M2s, Dir::S2m] {
            let d = dir_idx(dir);
            let qo = self.qoff(dir);
            let cfg = self.qval(dir, q, qo.cfg);
            qc.en[d] = (cfg & (1 << 16) != 0, cfg & (1 << 17) != 0);
            let lo = u64::from(self.qval(dir, q, qo.drbp_low) & 0xFFFF_FFC0);
            let hi = u64::from(self.qval(dir, q, qo.drbp_high));
            qc.ring_base[d] = (hi << 32) | lo;
            qc.ring_len[d] = self.qval(dir, q, qo.drl) & 0xFF_FFFF;
            qc.comp_en[d] = self.qval(dir, q, qo.comp_cfg) & 1 != 0;
            let lo = u64::from(self.qval(dir, q, qo.crbp_low) & 0xFFFF_FFC0);
            let hi = u64::from(self.qval(dir, q, qo.crbp_high));
            qc.comp_base[d] = (hi << 32) | lo;
        }
        let mask_off = self.maps.offsets.m2s_q.rlimit_mask.unwrap_or(0x74);
        qc.dmb_pause = self.regs.q[qi][0].value(mask_off).unwrap_or(0x7) & 0x4 == 0;
        let pkt_off = self.maps.offsets.s2m_q.pkt_cfg.unwrap_or(0x5C);
        let pkt = self.regs.q[qi][1].value(pkt_off).unwrap_or(0);
        qc.hdr_split = if pkt & (3 << 16) != 0 {
            u64::from(pkt & 0xFFFF)
        } else {
            0
        };
        qc.crc_init = self
            .regs
            .sdma_app
            .value(self.maps.offsets.m2s_crc_init[qi])
            .unwrap_or(0xFFFF_FFFF);
        let dwrr = self.maps.offsets.sched.q_dwrr;
        let d1 = self.q_reg(q, dwrr[0]);
        qc.dwrr = (
            d1 & (1 << 24) != 0,
            self.q_reg(q, dwrr[1]) & 0xFF,
            self.q_reg(q, dwrr[2]) & 0xFF,
            d1 & 0xFF_FFFF,
            d1 & (1 << 25) != 0,
        );
        qc.bucket = self.bucket_cfg(&self.regs.q[qi][0], self.maps.offsets.sched.q_rlimit);
        qc
    }

    /// Re-reads the engine-level configuration (M2S and S2M unit registers).
    fn refresh_engine_config(&mut self) {
        let mut c = Cfg::default();
        let cfg_len = self
            .regs
            .m2s
            .value(self.maps.offsets.m2s_cfg_len)
            .unwrap_or(0);
        c.encode_64k = cfg_len & (1 << 24) != 0;
        c.max_pkt = u64::from(cfg_len & 0xF_FFFF);
        c.max_descs = self
            .regs
            .m2s
            .value(self.maps.offsets.m2s_desc_pref_cfg_2)
            .unwrap_or(0)
            & 0xFFF;
        c.pref_queue_en = self
            .regs
            .m2s
            .value(self.maps.offsets.m2s_pref_queue_en)
            .unwrap_or(0xFFFF) as u16;
        c.arb = self.arbitration();
        let pref3 = self.maps.offsets.desc_pref_cfg_3;
        for (d, file) in [(0, &self.regs.m2s), (1, &self.regs.s2m)] {
            let v = pref3[d].and_then(|o| file.value(o).ok()).unwrap_or(0);
            c.pref[d] = (
                (v & 0xF) as u8,
                ((v >> 4) & 0xF) as u8,
                ((v >> 8) & 0xFF) as u8,
            );
        }
        c.stream_bucket = self.bucket_cfg(&self.regs.m2s, self.maps.offsets.sched.stream_rlimit);
        self.cfg = c;
    }

    pub(super) fn timing_doorbell(&self) -> u64 {
        self.doorbell_latency
    }

    /// IOFIC owner semantics (docs/references/driver.md §2.6): CAUSE_SET sets cause bits,
    /// MASK_CLEAR clears the mask bits written as 0; STATUS = cause & !mask.
    pub(super) fn iofic_write(&mut self, offset: u64, out: &csr::WriteOutcome<'static>) {
        for g in self.maps.offsets.sec {
            if offset == g.cause_set {
                let _ = self.regs.udma_gen.hw_update(g.cause, |c| c | out.written);
            } else if offset == g.mask_clear {
                let _ = self.regs.udma_gen.hw_update(g.mask, |m| m & out.written);
            } else if offset != g.cause && offset != g.mask {
                continue;
            }
            let cause = self.regs.udma_gen.value(g.cause).unwrap_or(0);
            let mask = self.regs.udma_gen.value(g.mask).unwrap_or(0);
            let _ = self.regs.udma_gen.hw_set(g.status, cause & !mask);
        }
    }

    pub(super) fn change_state(&mut self, dir: Dir, bits: u32) {
        let new = if bits & 0x4 != 0 {
            DirState::Aborted
        } else if bits & 0x2 != 0 {
            DirState::Disabled
        } else {
            DirState::Normal
        };
        self.set_state(dir, new, bits & 0x7);
        if new == DirState::Normal {
            for q in 0..QUEUES as u8 {
                self.events.push(
                    self.now,
                    Ev::FetchDone {
                        dir,
                        q,
                        epoch: u32::MAX,
                        n: 0,
                    },
                );
            }
            self.schedule_kick(self.now);
        }
    }

    pub(super) fn set_state(&mut self, dir: Dir, new: DirState, cmd: u32) {
        self.state[dir_idx(dir)] = new;
        let s = new.code();
        let value = s | (s << 4) | (s << 8) | (s << 12) | (cmd << 16);
        let (file, off) = match dir {
            Dir::M2s => (&mut self.regs.m2s, self.maps.offsets.m2s_state),
            Dir::S2m => (&mut self.regs.s2m, self.maps.offsets.s2m_state),
        };
        let _ = file.hw_set(off, value);
        if new == DirState::Aborted {
            for q in 0..QUEUES {
                let qd = &mut self.q[q][dir_idx(dir)];
                qd.fetched.clear();
                qd.epoch = qd.epoch.wrapping_add(1);
                qd.cancel_fetch();
            }
        }
        self.log(EventKind::State {
            dir,
            state: new.name().to_string(),
        });
    }

    pub(super) fn qfile(&mut self, dir: Dir, q: u8) -> &mut RegFile<'static> {
        let i = usize::from(q) % QUEUES;
        match dir {
            Dir::M2s => &mut self.regs.q[i][0],
            Dir::S2m => &mut self.regs.q[i][1],
        }
    }

    pub(super) fn qoff(&self, dir: Dir) -> crate::regs::QueueOffsets {
        match dir {
            Dir::M2s => self.maps.offsets.m2s_q,
            Dir::S2m => self.maps.offsets.s2m_q,
        }
    }

    #[cfg(test)]
    pub(super) fn qval(&self, dir: Dir, q: u8, off: u64) -> u32 {
        let i = usize::from(q) % QUEUES;
        let f = match dir {
            Dir::M2s => &self.regs.q[i][0],
            Dir::S2m => &self.regs.q[i][1],
        };
        f.value(off).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use proptest::prelude::*;
    use sim_core::{Cycle, TimingConfig};

    use super::*;
    use crate::UnitMaps;

    /// Every register-derived setting, printed (the settings hold no
    /// comparable types of their own).
    fn derived(e: &Engine) -> String {
        let queues: Vec<String> = e.q.iter().map(|q| format!("{:?}", q.cfg)).collect();
        format!("{:?} {queues:?}", e.cfg)
    }

    /// The blocks a write may reach, the queue blocks by index.
    fn block(i: u8, q: u8) -> UnitBlock {
        match i % 6 {
            0 => UnitBlock::M2s,
            1 => UnitBlock::M2sQ(q % QUEUES as u8),
            2 => UnitBlock::S2m,
            3 => UnitBlock::S2mQ(q % QUEUES as u8),
            4 => UnitBlock::SdmaApp,
            _ => UnitBlock::Gen,
        }
    }

    proptest! {
        /// The refresh after a write (one queue, the engine block, or all)
        /// leaves exactly the settings a refresh of everything computes.
        #[test]
        fn a_partial_refresh_equals_a_full_one(
            writes in proptest::collection::vec((0u8..6, 0u8..16, 0usize..512, any::<u32>()), 1..40)
        ) {
            let timing = TimingConfig::default_config().unwrap();
            let mut e = Engine::new(0, UnitMaps::builtin().unwrap(), &timing);
            for (i, (b, q, reg, value)) in writes.into_iter().enumerate() {
                let b = block(b, q);
                let offsets: Vec<u64> = e
                    .regs
                    .file(b)
                    .unwrap()
                    .map()
                    .elements()
                    .map(|r| r.offset())
                    .collect();
                let offset = offsets[reg % offsets.len()];
                e.mmio_write(b, offset, value, Cycle(i as u64));
                let partial = derived(&e);
                e.refresh_config();
                prop_assert_eq!(partial, derived(&e), "after {:?} {:#x} = {:#x}", b, offset, value);
            }
        }
    }

    #[test]
    fn the_register_epoch_moves_with_writes_not_with_plain_reads() {
        let timing = TimingConfig::default_config().unwrap();
        let mut e = Engine::new(0, UnitMaps::builtin().unwrap(), &timing);
        let crhp = e.maps.offsets.m2s_q.crhp;
        let before = e.reg_epoch();
        e.mmio_read(UnitBlock::M2sQ(0), crhp);
        assert_eq!(e.reg_epoch(), before, "a plain read changes nothing");
        let cfg = e.maps.offsets.m2s_q.cfg;
        e.mmio_write(UnitBlock::M2sQ(0), cfg, 0x3_0000, Cycle(1));
        assert!(e.reg_epoch() > before, "a write moves the epoch");
    }
}
