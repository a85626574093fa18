//! A queue's configuration as the hot paths read it (ring bases and
//! lengths, enables, DWRR, rate limiter, CRC seed), re-read from the
//! registers after every register write (docs/references/driver.md §2.4,
//! §3.6; docs/timing.md "Arbitration and rate limits"). The registers are
//! reached through storage slots resolved once per unit: no map lookup
//! per write.

use csr::{HwSlot, RegFile};

use super::{BucketCfg, Engine, QueueCfg, dir_idx};
use crate::block::{Dir, QUEUES};
use crate::regs::{QueueOffsets, RlimitOffsets, UnitFiles, UnitOffsets};

/// M2S queue RLIMIT_MASK where a map has none by that name
/// (docs/references/driver.md §2.4).
const RLIMIT_MASK_OFFSET: u64 = 0x74;
/// S2M queue PKT_CFG where a map has none by that name (P9.1 §4.2).
const PKT_CFG_OFFSET: u64 = 0x5C;

/// Slots of one direction's queue configuration registers (the same map
/// for every queue of a direction).
#[derive(Clone, Copy, Debug, Default)]
struct DirCfgSlots {
    cfg: HwSlot,
    drbp_low: HwSlot,
    drbp_high: HwSlot,
    drl: HwSlot,
    comp_cfg: HwSlot,
    crbp_low: HwSlot,
    crbp_high: HwSlot,
}

/// Slots of a token bucket's registers.
#[derive(Clone, Copy, Debug, Default)]
struct RlimitSlots {
    cfg_1s: HwSlot,
    token_size_1: HwSlot,
    cfg_cycle: HwSlot,
    mask: HwSlot,
}

/// Every register slot [`Engine::queue_config`] reads. A register the map
/// lacks has the default slot, which reads as `None` — as the offset
/// lookup it replaces reads an error.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QueueCfgSlots {
    dir: [DirCfgSlots; 2],
    /// M2S queue RLIMIT_MASK (DMB pause).
    rlimit_mask: HwSlot,
    /// S2M queue PKT_CFG (header split).
    pkt_cfg: HwSlot,
    /// M2S queue DWRR_CFG_1..3.
    dwrr: [HwSlot; 3],
    /// M2S queue rate limiter.
    rlimit: RlimitSlots,
    /// M2S RLIMIT_GEN_CFG (the rate limiters' short cycle).
    rlimit_gen_cfg: HwSlot,
    /// SDMA-app M2S CRC seed of each queue.
    crc_init: [HwSlot; QUEUES],
}

fn slot(f: &RegFile<'static>, off: Option<u64>) -> HwSlot {
    off.and_then(|o| f.slot_of(o)).unwrap_or_default()
}

impl QueueCfgSlots {
    /// Resolves the slots of a unit's maps (`files`: a unit's files at
    /// reset, only their maps matter).
    pub(crate) fn new(o: &UnitOffsets, files: &UnitFiles) -> Self {
        let dir = |f: &RegFile<'static>, qo: QueueOffsets| DirCfgSlots {
            cfg: slot(f, Some(qo.cfg)),
            drbp_low: slot(f, Some(qo.drbp_low)),
            drbp_high: slot(f, Some(qo.drbp_high)),
            drl: slot(f, Some(qo.drl)),
            comp_cfg: slot(f, Some(qo.comp_cfg)),
            crbp_low: slot(f, Some(qo.crbp_low)),
            crbp_high: slot(f, Some(qo.crbp_high)),
        };
        let (m2s_q, s2m_q) = (&files.m2s_q, &files.s2m_q);
        let rl: RlimitOffsets = o.sched.q_rlimit;
        Self {
            dir: [dir(m2s_q, o.m2s_q), dir(s2m_q, o.s2m_q)],
            rlimit_mask: slot(
                m2s_q,
                Some(o.m2s_q.rlimit_mask.unwrap_or(RLIMIT_MASK_OFFSET)),
            ),
            pkt_cfg: slot(s2m_q, Some(o.s2m_q.pkt_cfg.unwrap_or(PKT_CFG_OFFSET))),
            dwrr: o.sched.q_dwrr.map(|d| slot(m2s_q, d)),
            rlimit: RlimitSlots {
                cfg_1s: slot(m2s_q, rl.cfg_1s),
                token_size_1: slot(m2s_q, rl.token_size_1),
                cfg_cycle: slot(m2s_q, rl.cfg_cycle),
                mask: slot(m2s_q, rl.mask),
            },
            rlimit_gen_cfg: slot(&files.m2s, o.sched.rlimit_gen_cfg),
            crc_init: o.m2s_crc_init.map(|c| slot(&files.sdma_app, Some(c))),
        }
    }
}

impl Engine {
    /// Queue `q`'s configuration from its registers (both directions, its
    /// scheduler, rate limiter and CRC seed).
    pub(super) fn queue_config(&self, q: u8) -> QueueCfg {
        let qi = usize::from(q) % QUEUES;
        let mut qc = QueueCfg::default();
        for d in 0..2 {
            self.read_queue_dir(d, qi, &mut qc);
        }
        if qi >= self.regs.q.len() {
            return qc;
        }
        self.read_queue_sched(qi, &mut qc);
        self.read_queue_split(qi, &mut qc);
        qc.crc_init = self
            .regs
            .sdma_app
            .value_slot(self.maps.slots.cfg.crc_init[qi])
            .unwrap_or(0xFFFF_FFFF);
        qc
    }

    /// Refreshes what a write of the register at `offset` of queue `q`'s
    /// `dir` block can change in the queue's configuration, part by part
    /// (the direction's ring and enables; the M2S scheduler, rate limiter
    /// and DMB pause; the S2M header split): the same configuration as
    /// [`Engine::queue_config`] reads, for a fraction of the reads (a
    /// ring's set-up writes seven queue registers in a row). A register
    /// no part reads (status, Q_SW_CTRL, pointers) changes nothing.
    pub(super) fn refresh_queue_part(&mut self, dir: Dir, q: u8, offset: u64) {
        let qi = usize::from(q) % QUEUES;
        let o = &self.maps.offsets;
        let mut qc = self.q[qi].cfg;
        let d = dir_idx(dir);
        let qo = if d == 0 { o.m2s_q } else { o.s2m_q };
        let ring = [
            qo.cfg,
            qo.drbp_low,
            qo.drbp_high,
            qo.drl,
            qo.comp_cfg,
            qo.crbp_low,
            qo.crbp_high,
        ];
        if ring.contains(&offset) {
            self.read_queue_dir(d, qi, &mut qc);
        }
        match dir {
            Dir::M2s => {
                let sched = o.sched;
                let rl = sched.q_rlimit;
                let feeds = offset == o.m2s_q.rlimit_mask.unwrap_or(RLIMIT_MASK_OFFSET)
                    || [
                        sched.q_dwrr[0],
                        sched.q_dwrr[1],
                        sched.q_dwrr[2],
                        rl.cfg_1s,
                        rl.token_size_1,
                        rl.cfg_cycle,
                        rl.mask,
                    ]
                    .contains(&Some(offset));
                if feeds && qi < self.regs.q.len() {
                    self.read_queue_sched(qi, &mut qc);
                }
            }
            Dir::S2m => {
                if offset == o.s2m_q.pkt_cfg.unwrap_or(PKT_CFG_OFFSET) && qi < self.regs.q.len() {
                    self.read_queue_split(qi, &mut qc);
                }
            }
        }
        self.q[qi].cfg = qc;
    }

    /// Direction `d`'s enables, ring and completion ring of queue `qi`.
    fn read_queue_dir(&self, d: usize, qi: usize, qc: &mut QueueCfg) {
        let Some(f) = self.regs.q.get(qi).and_then(|f| f.0.get(d)) else {
            return;
        };
        let ds = self.maps.slots.cfg.dir[d];
        let get = |h: HwSlot| f.value_slot(h).unwrap_or(0);
        let cfg = get(ds.cfg);
        qc.en[d] = (cfg & (1 << 16) != 0, cfg & (1 << 17) != 0);
        let lo = u64::from(get(ds.drbp_low) & 0xFFFF_FFC0);
        let hi = u64::from(get(ds.drbp_high));
        qc.ring_base[d] = (hi << 32) | lo;
        qc.ring_len[d] = get(ds.drl) & 0xFF_FFFF;
        qc.comp_en[d] = get(ds.comp_cfg) & 1 != 0;
        let lo = u64::from(get(ds.crbp_low) & 0xFFFF_FFC0);
        let hi = u64::from(get(ds.crbp_high));
        qc.comp_base[d] = (hi << 32) | lo;
    }

    /// Queue `qi`'s M2S DMB pause, DWRR settings and rate limiter.
    fn read_queue_sched(&self, qi: usize, qc: &mut QueueCfg) {
        let Some(m2s_q) = self.regs.q.get(qi).map(|f| &f[0]) else {
            return;
        };
        let s = &self.maps.slots.cfg;
        qc.dmb_pause = m2s_q.value_slot(s.rlimit_mask).unwrap_or(0x7) & 0x4 == 0;
        let dwrr = |i: usize| m2s_q.value_slot(s.dwrr[i]).unwrap_or(0);
        let d1 = dwrr(0);
        qc.dwrr = (
            d1 & (1 << 24) != 0,
            dwrr(1) & 0xFF,
            dwrr(2) & 0xFF,
            d1 & 0xFF_FFFF,
            d1 & (1 << 25) != 0,
        );
        qc.bucket = self.queue_bucket_cfg(m2s_q);
    }

    /// Queue `qi`'s S2M header split.
    fn read_queue_split(&self, qi: usize, qc: &mut QueueCfg) {
        let Some(s2m_q) = self.regs.q.get(qi).map(|f| &f[1]) else {
            return;
        };
        let pkt = s2m_q.value_slot(self.maps.slots.cfg.pkt_cfg).unwrap_or(0);
        qc.hdr_split = if pkt & (3 << 16) != 0 {
            u64::from(pkt & 0xFFFF)
        } else {
            0
        };
    }

    /// [`Engine::bucket_cfg`] of a queue's rate limiter, through slots.
    fn queue_bucket_cfg(&self, file: &RegFile<'static>) -> Option<BucketCfg> {
        let s = &self.maps.slots.cfg;
        let get = |h: HwSlot| file.value_slot(h).unwrap_or(0);
        let cfg = get(s.rlimit.cfg_1s);
        let mask = file.value_slot(s.rlimit.mask).unwrap_or(0x3);
        let enabled = cfg & (1 << 24) != 0 && mask & 0x2 == 0;
        let paused = cfg & (1 << 25) != 0 && mask & 0x2 == 0;
        if !enabled && !paused {
            return None;
        }
        let short =
            u64::from(self.regs.m2s.value_slot(s.rlimit_gen_cfg).unwrap_or(0) & 0xFFFF).max(1);
        Some(BucketCfg {
            max_burst: cfg & 0xFF_FFFF,
            token_bytes: get(s.rlimit.token_size_1),
            period_cycles: short * (u64::from(get(s.rlimit.cfg_cycle)) + 1),
            paused,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use proptest::prelude::*;
    use sim_core::{Cycle, TimingConfig};

    use super::*;
    use crate::UnitMaps;
    use crate::block::UnitBlock;

    proptest! {
        /// The slot reads give exactly the configuration the offset
        /// lookups give ([`Engine::queue_config_by_offset`]), whatever the
        /// registers hold.
        #[test]
        fn slot_reads_equal_offset_reads(seed in any::<u64>(), sparse in any::<bool>()) {
            let timing = TimingConfig::default_config().unwrap();
            let mut e = Engine::new(0, UnitMaps::builtin().unwrap(), &timing);
            let mut x = seed | 1;
            let blocks: Vec<UnitBlock> = [UnitBlock::M2s, UnitBlock::SdmaApp]
                .into_iter()
                .chain((0..QUEUES as u8).flat_map(|q| [UnitBlock::M2sQ(q), UnitBlock::S2mQ(q)]))
                .collect();
            for b in blocks {
                let f = e.regs.file_mut(b).unwrap();
                let offsets: Vec<u64> = f.map().elements().map(|r| r.offset()).collect();
                for o in offsets {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Sparse: mostly zero, so enables and limiters vary.
                    let v = if sparse && x % 3 != 0 { 0 } else { (x >> 16) as u32 };
                    let _ = f.hw_set(o, v);
                }
            }
            for q in 0..QUEUES as u8 {
                prop_assert_eq!(
                    format!("{:?}", e.queue_config(q)),
                    format!("{:?}", e.queue_config_by_offset(q))
                );
            }
        }

        /// After every register write, each queue's configuration (kept
        /// up to date part by part, [`Engine::refresh_queue_part`]) is the
        /// one read whole from the registers.
        #[test]
        fn writes_keep_every_queue_config_whole(
            writes in prop::collection::vec((any::<u8>(), any::<u16>(), any::<u32>(), any::<bool>()), 1..96),
        ) {
            let timing = TimingConfig::default_config().unwrap();
            let maps = UnitMaps::builtin().unwrap();
            let mut e = Engine::new(3, maps, &timing);
            for (n, &(pick, reg, value, sparse)) in writes.iter().enumerate() {
                let q = pick % QUEUES as u8;
                let b = match pick / QUEUES as u8 % 8 {
                    0..=2 => UnitBlock::M2sQ(q),
                    3..=5 => UnitBlock::S2mQ(q),
                    6 => UnitBlock::M2s,
                    _ => UnitBlock::SdmaApp,
                };
                let offsets: Vec<u64> = e.regs.file(b).unwrap().map().elements().map(|r| r.offset()).collect();
                let offset = offsets[usize::from(reg) % offsets.len()];
                let value = if sparse { value & 0x0003_00FF } else { value };
                let _ = e.mmio_write(b, offset, value, Cycle(n as u64));
                for q in 0..QUEUES as u8 {
                    prop_assert_eq!(
                        format!("{:?}", e.q[usize::from(q)].cfg),
                        format!("{:?}", e.queue_config(q)),
                        "queue {} after {:?} {:#x} = {:#x}", q, b, offset, value
                    );
                }
            }
        }
    }
}
