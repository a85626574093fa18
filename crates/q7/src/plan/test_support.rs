//! Test doubles shared by the word tests of `plan`: an [`Operands`] with
//! TPB 0's SBUF geometry and builders for each word.

use dma_abi::inst::{Indirect1d, IndirectMode, InstKind, InstWord};
use soc_map::{Addr4, Addr8, PartitionTarget};

use super::{Operands, Plan};
use crate::layout::{DgeConfig, PeerLayout};

/// SBUF of TPB 0 (partition stride 256 KiB) and registers from a list.
pub(crate) struct Ops {
    pub(crate) regs: Vec<(u8, u32)>,
    pub(crate) table: Vec<(u8, u64)>,
    /// Index vectors: (address, words).
    pub(crate) mem: Vec<(u64, Vec<u32>)>,
    /// Whether the SBUF reports its partition stride (the cross-bar
    /// transpose path).
    pub(crate) xbar: bool,
}

pub(crate) const SBUF: u64 = 0x20_0000_0000;
pub(crate) const STRIDE: u64 = 256 << 10;

impl Operands for Ops {
    fn reg(&self, n: u8) -> u32 {
        self.regs.iter().find(|r| r.0 == n).map_or(0, |r| r.1)
    }
    fn table_entry(&self, e: u8) -> u64 {
        self.table.iter().find(|t| t.0 == e).map_or(0, |t| t.1)
    }
    fn partition_of(&self, addr: u64) -> Option<u16> {
        (SBUF..SBUF + 128 * STRIDE)
            .contains(&addr)
            .then(|| ((addr - SBUF) / STRIDE) as u16)
    }
    fn partition_stride(&self, addr: u64) -> Option<u64> {
        (self.xbar && self.partition_of(addr).is_some()).then_some(STRIDE)
    }
    fn partition_addr(&self, t: PartitionTarget) -> u64 {
        match t {
            PartitionTarget::Sbuf(a) => {
                SBUF + u64::from(a.partition) * STRIDE + u64::from(a.offset)
            }
            PartitionTarget::Psum(_) => 0,
        }
    }
    fn sem_inc_addr(&self, idx: u8) -> u64 {
        0x28_0270_1800 + 4 * u64::from(idx)
    }
    fn peer(&self, tpb: u32) -> Option<PeerLayout> {
        (tpb < 8).then(|| PeerLayout {
            sbuf_base: 0x100_0000_0000 + u64::from(tpb) * 0x10_0000_0000,
            sbuf_stride: STRIDE,
            psum_base: 0,
            psum_stride: 0,
            sem_inc0: 0x200_0000_0000 + u64::from(tpb) * 0x1000,
            sem_stride: 4,
        })
    }
    fn read_u32s(&mut self, addr: u64, n: usize) -> Result<Vec<u32>, String> {
        let at = self
            .mem
            .iter()
            .find(|(a, _)| *a == addr)
            .ok_or_else(|| format!("nothing at {addr:#x}"))?;
        Ok(at.1.iter().copied().take(n).collect())
    }
}

pub(crate) fn ops() -> Ops {
    Ops {
        regs: Vec::new(),
        table: Vec::new(),
        mem: Vec::new(),
        xbar: false,
    }
}

pub(crate) fn cfg(engine_mask: u16) -> DgeConfig {
    DgeConfig {
        carveout_offset_descs: 0,
        carveout_size_descs: 1024,
        engine_mask,
        queue_mask: 1,
    }
}

pub(crate) fn word(
    src: u64,
    ss: [i32; 2],
    sn: [u16; 2],
    dst: u64,
    ds: [i32; 2],
    dn: [u16; 2],
    e: u16,
) -> InstWord {
    let InstWord::Direct2d(mut w) = InstWord::default_of(InstKind::Direct2d) else {
        unreachable!()
    };
    w.semaphore = 3;
    w.sem_increment = 1;
    w.src_start_addr = Addr8::Immediate {
        addr: src,
        shape_reg: false,
    };
    w.src_step_elem = ss;
    w.src_num_elem = sn;
    w.src_elem_size = e;
    w.dst_start_addr = Addr8::Immediate {
        addr: dst,
        shape_reg: false,
    };
    w.dst_step_elem = ds;
    w.dst_num_elem = dn;
    w.dst_elem_size = e;
    InstWord::Direct2d(w)
}

/// An ADDR4 partition-offset immediate in SBUF quadrant 0.
pub(crate) fn sbuf_q0(off: u32) -> Addr4 {
    Addr4::Immediate {
        offset: soc_map::PartitionOffset {
            offset: off,
            quadrant: 0,
            psum: false,
        },
        shape_reg: false,
    }
}

pub(crate) fn indirect(mode: IndirectMode, n: u16) -> Indirect1d {
    let InstWord::Indirect1d(mut w) = InstWord::default_of(InstKind::Indirect1d) else {
        unreachable!()
    };
    w.idx_num_active_channels = 128;
    w.flags.indirect_mode = mode;
    w.semaphore = 2;
    w.sem_increment = 1;
    w.src_start_addr = Addr8::Immediate {
        addr: 0x1000_0000,
        shape_reg: false,
    };
    w.dst_start_addr = Addr8::Immediate {
        addr: SBUF,
        shape_reg: false,
    };
    w.src_step_elem = 1;
    w.dst_step_elem = (STRIDE / 64) as i32;
    w.src_num_elem = n;
    w.dst_num_elem = n;
    w.src_elem_size = 64;
    w.dst_elem_size = 64;
    let at = sbuf_q0;
    w.src_idx_start_addr = at(0x100);
    w.dst_idx_start_addr = at(0x200);
    w
}

pub(crate) fn index_ops(src_idx: Vec<u32>, dst_idx: Vec<u32>) -> Ops {
    Ops {
        regs: vec![(9, 10)],
        table: Vec::new(),
        mem: vec![(SBUF + 0x100, src_idx), (SBUF + 0x200, dst_idx)],
        xbar: false,
    }
}

pub(crate) fn pairs(p: &Plan) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = p
        .engines
        .iter()
        .flat_map(|e| e.pairs.iter().map(|x| (x.src, x.dst)))
        .collect();
    v.sort_unstable();
    v
}
