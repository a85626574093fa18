//! Where one core's firmware finds things: its local registers, semaphores,
//! the DGE carve-out and the queue CSRs of its 16 engines. The device builds
//! a [`CoreLayout`] from the SoC map and the CSR maps (registers are data,
//! docs/references/design.md §3); this crate only does arithmetic on it.

/// Engines per NeuronCore (docs/references/figures.md §A.3).
pub const ENGINES_PER_CORE: usize = 16;
/// SBUF partitions each engine covers: 128 / 16 (docs/references/figures.md §A.3).
pub const PARTITIONS_PER_ENGINE: u16 = 8;
/// Largest descriptor: 64 KiB (P9.1 §3, length 0 = 64 KiB).
pub const MAX_DESC_BYTES: u64 = 65536;
/// Bytes of one descriptor (P9.1 §3).
pub const DESC_BYTES: u64 = 16;
/// Ring id the hardware expects after a queue reset (docs/references/driver.md §3.6).
pub const INITIAL_RING_ID: u8 = 1;
/// Ring stride in the carve-out: rings start on 256-byte boundaries
/// (docs/references/driver.md §3.4 ring alignment).
pub const RING_ALIGN_BYTES: u64 = 256;
/// Entries of the semaphore-payload table (one 4-byte little-endian value
/// per possible `sem_increment` / EVENTS add, 0..=255).
pub const PAYLOAD_ENTRIES: u64 = 256;

/// Byte offsets of the per-queue registers inside a queue block, and of the
/// unit registers inside the M2S / S2M blocks (from `csr-maps/udma_*.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QueueRegs {
    /// Q_CFG (same offset in both directions).
    pub q_cfg: u64,
    /// *DRBP_LOW.
    pub drbp_low: u64,
    /// *DRBP_HIGH.
    pub drbp_high: u64,
    /// *DRL.
    pub drl: u64,
    /// *DRTP (the tail, read at init to seed the software producer).
    pub drtp: u64,
    /// *DRTP_INC, the doorbell.
    pub drtp_inc: u64,
    /// *CRBP_LOW.
    pub crbp_low: u64,
    /// *CRBP_HIGH.
    pub crbp_high: u64,
    /// *CRHP, the completion head the firmware polls.
    pub crhp: u64,
    /// COMP_CFG of M2S.
    pub m2s_comp_cfg: u64,
    /// COMP_CFG of S2M.
    pub s2m_comp_cfg: u64,
    /// CHANGE_STATE in the M2S unit.
    pub m2s_change_state: u64,
    /// CHANGE_STATE in the S2M unit.
    pub s2m_change_state: u64,
    /// CFG_LEN in the M2S unit.
    pub m2s_cfg_len: u64,
    /// SEC_A_INT_ABORT_MSK in the GEN block.
    pub sec_a_abort_mask: u64,
    /// NQ_BASE_LO[0] in the notification block.
    pub nq_base_lo: u64,
    /// NQ_BASE_HI[0] in the notification block.
    pub nq_base_hi: u64,
    /// NQ_SIZE[0] in the notification block.
    pub nq_size: u64,
    /// Distance between notification queues' registers.
    pub nq_stride: u64,
    /// Notification queues per engine.
    pub nq_count: u32,
}

/// One engine of the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineLayout {
    /// Device engine id (`engN`).
    pub id: u16,
    /// Base of the M2S unit block.
    pub m2s_unit: u64,
    /// Base of the S2M unit block.
    pub s2m_unit: u64,
    /// Base of the GEN block (interrupt controllers).
    pub gen_block: u64,
    /// Base of the notification-queue block, if the engine has one.
    pub notific: Option<u64>,
    /// Base of M2S queue 0's block.
    pub m2s_q0: u64,
    /// Base of S2M queue 0's block.
    pub s2m_q0: u64,
    /// Distance between queue blocks (0x1000, P9.1 §4).
    pub q_stride: u64,
}

impl EngineLayout {
    /// M2S queue block of queue `q`.
    pub fn m2s_q(&self, q: u8) -> u64 {
        self.m2s_q0 + u64::from(q) * self.q_stride
    }

    /// S2M queue block of queue `q`.
    pub fn s2m_q(&self, q: u8) -> u64 {
        self.s2m_q0 + u64::from(q) * self.q_stride
    }
}

/// What a core needs to know of another core (RDMA peers, P9.1 §2.6):
/// its partitions and its semaphore increment window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerLayout {
    /// SoC address of SBUF partition 0.
    pub sbuf_base: u64,
    /// Distance between SBUF partitions.
    pub sbuf_stride: u64,
    /// SoC address of PSUM partition 0.
    pub psum_base: u64,
    /// Distance between PSUM partitions.
    pub psum_stride: u64,
    /// `SEM_INC[0]`.
    pub sem_inc0: u64,
    /// Distance between semaphores.
    pub sem_stride: u64,
}

impl PeerLayout {
    /// The SoC address of a partition byte (an ADDR4 lane, P9.1 §6.1).
    pub fn partition_addr(&self, t: soc_map::PartitionTarget) -> u64 {
        match t {
            soc_map::PartitionTarget::Sbuf(a) => {
                self.sbuf_base + u64::from(a.partition) * self.sbuf_stride + u64::from(a.offset)
            }
            soc_map::PartitionTarget::Psum(a) => {
                self.psum_base + u64::from(a.partition) * self.psum_stride + u64::from(a.offset)
            }
        }
    }

    /// SEM_INC of semaphore `i`.
    pub fn sem_inc(&self, i: u8) -> u64 {
        self.sem_inc0 + u64::from(i) * self.sem_stride
    }
}

/// Everything one core's firmware addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreLayout {
    /// TPB (NeuronCore) index.
    pub tpb: u8,
    /// Address of general register 0 (`q7_local_reg.REG[0]`).
    pub reg0: u64,
    /// Distance between general registers.
    pub reg_stride: u64,
    /// Address of MEMCOPY_CARVEOUT_CFG (local reg 39).
    pub carveout_cfg: u64,
    /// Address of MEMCOPY_DMA_CFG (local reg 40).
    pub dma_cfg: u64,
    /// Address of the Q7's MEM_WINDOW0_LO (the APB window base that
    /// `init_dma_queue` asserts, docs/firmware.md).
    pub mem_window0_lo: u64,
    /// Address of `ADDR_TABLE_LO[0]`; HI is +4.
    pub table0: u64,
    /// Distance between address-table entries.
    pub table_stride: u64,
    /// Address of `SEM_READ[0]` of the core's EVT_SEM block.
    pub sem_read0: u64,
    /// Address of `SEM_INC[0]`.
    pub sem_inc0: u64,
    /// Address of `SEM_SET[0]`.
    pub sem_set0: u64,
    /// Distance between semaphores in each window.
    pub sem_stride: u64,
    /// Number of semaphores.
    pub sem_count: u32,
    /// Base of DGE_MEMORY (P9.1 §6.3).
    pub dge_memory: u64,
    /// Size of DGE_MEMORY.
    pub dge_memory_bytes: u64,
    /// SoC address of SBUF partition 0, byte 0.
    pub sbuf_base: u64,
    /// Distance between SBUF partitions.
    pub sbuf_stride: u64,
    /// SoC address of PSUM partition 0, byte 0.
    pub psum_base: u64,
    /// Distance between PSUM partitions.
    pub psum_stride: u64,
    /// Every core of the device by TPB index (this one included).
    pub peers: Vec<PeerLayout>,
    /// SoC address of local dataram 0x80000 (`q7_dataram0`, P9.1 §6.2).
    pub dataram_soc: u64,
    /// SoC address of the core's Q7 DRAM (`q7_dram0`), whose start holds the
    /// DGE priority-class map (+0x18) and mailboxes (+0x28).
    pub q7_dram: u64,
    /// SoC address of the core's Q7 instruction RAM (`q7_iram0`).
    pub q7_iram: u64,
    /// Its size.
    pub q7_iram_bytes: u64,
    /// The 16 engines, in the order the engine mask numbers them.
    pub engines: Vec<EngineLayout>,
    /// Register offsets shared by all engines.
    pub regs: QueueRegs,
}

impl CoreLayout {
    /// Address of general register `n`.
    pub fn reg(&self, n: u8) -> u64 {
        self.reg0 + u64::from(n) * self.reg_stride
    }

    /// Address of address-table entry `e` (low word).
    pub fn table(&self, e: u8) -> u64 {
        self.table0 + u64::from(e) * self.table_stride
    }

    /// SEM_READ of semaphore `i`.
    pub fn sem_read(&self, i: u8) -> u64 {
        self.sem_read0 + u64::from(i) * self.sem_stride
    }

    /// SEM_INC of semaphore `i`.
    pub fn sem_inc(&self, i: u8) -> u64 {
        self.sem_inc0 + u64::from(i) * self.sem_stride
    }

    /// This core as a peer sees it.
    pub fn as_peer(&self) -> PeerLayout {
        PeerLayout {
            sbuf_base: self.sbuf_base,
            sbuf_stride: self.sbuf_stride,
            psum_base: self.psum_base,
            psum_stride: self.psum_stride,
            sem_inc0: self.sem_inc0,
            sem_stride: self.sem_stride,
        }
    }

    /// The SoC address of a partition byte (an ADDR4 lane, P9.1 §6.1).
    pub fn partition_addr(&self, t: soc_map::PartitionTarget) -> u64 {
        self.as_peer().partition_addr(t)
    }

    /// SEM_SET of semaphore `i`.
    pub fn sem_set(&self, i: u8) -> u64 {
        self.sem_set0 + u64::from(i) * self.sem_stride
    }
}

/// The DGE memcopy configuration of local registers 39 and 40 (P9.1
/// §6.3; docs/references/wiki.md §D.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DgeConfig {
    /// MEMCOPY_CARVEOUT_CFG bits 15:0: carve-out offset in 16-byte
    /// descriptors.
    pub carveout_offset_descs: u16,
    /// MEMCOPY_CARVEOUT_CFG bits 31:16: carve-out size in descriptors — the
    /// ring length of every queue the firmware drives, which caps the
    /// descriptors one memcopy may give one engine.
    pub carveout_size_descs: u16,
    /// MEMCOPY_DMA_CFG bits 15:0: which of the 16 engines may be used.
    pub engine_mask: u16,
    /// MEMCOPY_DMA_CFG bits 31:16: which queues may be used (the firmware
    /// takes the lowest).
    pub queue_mask: u16,
}

/// Where the carve-out puts one engine's rings and the payload table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingAddrs {
    /// M2S descriptor ring.
    pub m2s_ring: u64,
    /// S2M descriptor ring.
    pub s2m_ring: u64,
    /// M2S completion ring.
    pub m2s_comp: u64,
    /// S2M completion ring.
    pub s2m_comp: u64,
}

impl DgeConfig {
    /// Decodes the two local registers.
    pub fn from_regs(carveout_cfg: u32, dma_cfg: u32) -> Self {
        Self {
            carveout_offset_descs: carveout_cfg as u16,
            carveout_size_descs: (carveout_cfg >> 16) as u16,
            engine_mask: dma_cfg as u16,
            queue_mask: (dma_cfg >> 16) as u16,
        }
    }

    /// The queue every engine of a transfer uses: one queue id across all
    /// engines (docs/references/figures.md §A.3), the lowest allowed.
    pub fn queue(&self) -> Option<u8> {
        (self.queue_mask != 0).then(|| self.queue_mask.trailing_zeros() as u8)
    }

    /// Engine slots (0..16) allowed by the mask, ascending.
    pub fn engine_slots(&self) -> Vec<u8> {
        self.slots().collect()
    }

    /// [`DgeConfig::engine_slots`] without a list: the mask's set bits,
    /// lowest first.
    pub fn slots(&self) -> impl Iterator<Item = u8> + use<> {
        let mut mask = self.engine_mask;
        std::iter::from_fn(move || {
            (mask != 0).then(|| {
                let slot = mask.trailing_zeros() as u8;
                mask &= mask - 1;
                slot
            })
        })
    }

    /// Bytes one ring occupies in the carve-out (rounded up to 256 B).
    pub fn ring_stride_bytes(&self) -> u64 {
        (u64::from(self.carveout_size_descs) * DESC_BYTES).next_multiple_of(RING_ALIGN_BYTES)
    }

    /// Bytes of the whole carve-out: four rings per engine slot and the
    /// payload table.
    pub fn carveout_bytes(&self) -> u64 {
        ENGINES_PER_CORE as u64 * 4 * self.ring_stride_bytes() + PAYLOAD_ENTRIES * 4
    }

    /// Offset of the carve-out inside DGE_MEMORY.
    pub fn carveout_offset_bytes(&self) -> u64 {
        u64::from(self.carveout_offset_descs) * DESC_BYTES
    }

    /// Checks the configuration against DGE_MEMORY; the message names the
    /// register and field.
    pub fn validate(&self, dge_memory_bytes: u64) -> Result<(), String> {
        if self.carveout_size_descs < 2 {
            return Err(format!(
                "MEMCOPY_CARVEOUT_CFG.CARVEOUT_SIZE_DESCS = {}: the firmware needs rings of at least 2 descriptors",
                self.carveout_size_descs
            ));
        }
        if !self.carveout_offset_bytes().is_multiple_of(64) {
            return Err(format!(
                "MEMCOPY_CARVEOUT_CFG.CARVEOUT_OFFSET_DESCS = {}: the carve-out must be 64-byte aligned (a multiple of 4 descriptors)",
                self.carveout_offset_descs
            ));
        }
        if self.engine_mask == 0 {
            return Err("MEMCOPY_DMA_CFG.DMA_ENGINE_MASK = 0: no engine may be used".into());
        }
        if self.queue_mask == 0 {
            return Err("MEMCOPY_DMA_CFG.QUEUE_MASK = 0: no queue may be used".into());
        }
        let end = self.carveout_offset_bytes() + self.carveout_bytes();
        if end > dge_memory_bytes {
            return Err(format!(
                "MEMCOPY_CARVEOUT_CFG: the carve-out ends at DGE_MEMORY + {end:#x}, past its {dge_memory_bytes:#x} bytes"
            ));
        }
        Ok(())
    }

    /// The rings of engine slot `slot` (simulator layout, docs/firmware.md).
    pub fn rings(&self, dge_memory: u64, slot: u8) -> RingAddrs {
        let base = dge_memory + self.carveout_offset_bytes();
        let stride = self.ring_stride_bytes();
        let at = |k: u64| base + (u64::from(slot) * 4 + k) * stride;
        RingAddrs {
            m2s_ring: at(0),
            s2m_ring: at(1),
            m2s_comp: at(2),
            s2m_comp: at(3),
        }
    }

    /// Address of the 4-byte payload holding `value` (the source of every
    /// semaphore-increment descriptor).
    pub fn payload(&self, dge_memory: u64, value: u8) -> u64 {
        dge_memory
            + self.carveout_offset_bytes()
            + ENGINES_PER_CORE as u64 * 4 * self.ring_stride_bytes()
            + 4 * u64::from(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_decode_and_rings_do_not_overlap() {
        let c = DgeConfig::from_regs(0x0100_0040, 0x0004_00ff);
        assert_eq!(c.carveout_offset_descs, 0x40);
        assert_eq!(c.carveout_size_descs, 0x100);
        assert_eq!(c.engine_slots(), (0..8).collect::<Vec<u8>>());
        assert_eq!(c.queue(), Some(2));
        assert_eq!(c.ring_stride_bytes(), 4096);
        let r0 = c.rings(0x1000_0000, 0);
        let r1 = c.rings(0x1000_0000, 1);
        assert_eq!(r0.m2s_ring, 0x1000_0000 + 0x400);
        assert_eq!(r0.s2m_ring, r0.m2s_ring + 4096);
        assert_eq!(r1.m2s_ring, r0.s2m_comp + 4096);
        assert_eq!(c.payload(0x1000_0000, 0), 0x1000_0000 + 0x400 + 64 * 4096);
        assert!(c.validate(1 << 30).is_ok());
    }

    /// The mask's bits read lowest first are the slots the mask allows, for
    /// every mask.
    #[test]
    fn slots_are_the_set_bits_ascending() {
        for mask in 0..=u16::MAX {
            let c = DgeConfig {
                engine_mask: mask,
                ..DgeConfig::from_regs(0, 0)
            };
            let want: Vec<u8> = (0..16u8).filter(|i| mask & (1 << i) != 0).collect();
            assert_eq!(c.slots().collect::<Vec<u8>>(), want, "mask {mask:#x}");
        }
    }

    #[test]
    fn validation_names_the_field() {
        let e = DgeConfig::from_regs(0x0100_0041, 0x0001_ffff)
            .validate(1 << 30)
            .unwrap_err();
        assert!(e.contains("CARVEOUT_OFFSET_DESCS = 65"), "{e}");
        let e = DgeConfig::from_regs(0, 0x0001_ffff)
            .validate(1 << 30)
            .unwrap_err();
        assert!(e.contains("CARVEOUT_SIZE_DESCS = 0"), "{e}");
        let e = DgeConfig::from_regs(0x0100_0000, 0x0001_0000)
            .validate(1 << 30)
            .unwrap_err();
        assert!(e.contains("DMA_ENGINE_MASK"), "{e}");
        let e = DgeConfig::from_regs(0xffff_0000, 0x0001_ffff)
            .validate(1 << 20)
            .unwrap_err();
        assert!(e.contains("past its"), "{e}");
    }
}
