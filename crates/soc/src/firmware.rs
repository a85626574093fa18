//! The Q7 firmware cores attached to the device: their layouts, built from
//! the SoC map and the CSR maps (registers are data, docs/references/design.md §3), and the
//! [`FwBus`] the firmware drives the device through.

use csr::Catalog;
use q7::{CoreLayout, EngineLayout, FwBus, QueueRegs};
use soc_map::SocMap;

use crate::device::Device;

/// Cores per device (TPB tiles, P9.1 §6).
pub const CORES: u8 = 8;

fn offset(catalog: &Catalog, block: &str, reg: &str) -> Result<u64, String> {
    catalog
        .block(block)
        .and_then(|m| m.find(reg, None))
        .ok_or_else(|| format!("csr-maps/{block}.json has no register {reg}"))
}

fn element(catalog: &Catalog, block: &str, reg: &str, i: u32) -> Result<u64, String> {
    catalog
        .block(block)
        .and_then(|m| m.find(reg, Some(i)))
        .ok_or_else(|| format!("csr-maps/{block}.json has no register {reg}[{i}]"))
}

/// `a` followed by `b`: a region name built without the formatting
/// machinery (booting the firmware looks up some 150 names per core).
fn cat(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + b.len());
    s.push_str(a);
    s.push_str(b);
    s
}

/// `stem` followed by the decimal `index` (`tpb3`, `eng17`).
fn indexed(stem: &str, index: u16) -> String {
    let mut digits = [0u8; 5];
    let mut k = digits.len();
    let mut n = index;
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut s = String::with_capacity(stem.len() + digits.len() - k);
    s.push_str(stem);
    s.extend(digits[k..].iter().map(|&d| char::from(d)));
    s
}

fn base(map: &SocMap, name: &str) -> Result<u64, String> {
    map.by_name(name)
        .map(|id| map.region(id).base)
        .ok_or_else(|| format!("the SoC map has no region {name}"))
}

/// The blocks of engine `id` (`eng{id}` in the SoC map): M2S/S2M units,
/// GEN and the queue-0 blocks with their stride.
///
/// # Errors
///
/// When the map has no such engine.
pub fn engine_layout(map: &SocMap, id: u16) -> Result<EngineLayout, String> {
    // `eng{id}` and a suffix, in one buffer (a core's layout looks up 112
    // such names).
    let mut name = indexed("eng", id);
    let stem = name.len();
    let mut base_of = |suffix: &str| {
        name.truncate(stem);
        name.push_str(suffix);
        base(map, &name)
    };
    let m2s_q0 = base_of(".m2s.q0")?;
    let q1 = base_of(".m2s.q1")?;
    Ok(EngineLayout {
        id,
        m2s_unit: base_of(".m2s")?,
        s2m_unit: base_of(".s2m")?,
        gen_block: base_of(".gen")?,
        notific: base_of(".notific").ok(),
        m2s_q0,
        s2m_q0: base_of(".s2m.q0")?,
        q_stride: q1 - m2s_q0,
    })
}

/// The register offsets the firmware and the driver use, from the udma
/// maps.
///
/// # Errors
///
/// When a map lacks a register, or M2S and S2M disagree on one.
pub fn queue_regs(catalog: &Catalog) -> Result<QueueRegs, String> {
    let m = "udma_m2s_q";
    let s = "udma_s2m_q";
    // The firmware addresses both directions with one set of offsets; the
    // maps must agree (P9.1 §4.1: the ring header is identical).
    let same = |a: &str, b: &str| -> Result<u64, String> {
        let (x, y) = (offset(catalog, m, a)?, offset(catalog, s, b)?);
        if x != y {
            return Err(format!("{m}.{a} ({x:#x}) and {s}.{b} ({y:#x}) differ"));
        }
        Ok(x)
    };
    Ok(QueueRegs {
        q_cfg: same("Q_CFG", "Q_CFG")?,
        drbp_low: same("TDRBP_LOW", "RDRBP_LOW")?,
        drbp_high: same("TDRBP_HIGH", "RDRBP_HIGH")?,
        drl: same("TDRL", "RDRL")?,
        drtp: same("TDRTP", "RDRTP")?,
        drtp_inc: same("TDRTP_INC", "RDRTP_INC")?,
        crbp_low: same("TCRBP_LOW", "RCRBP_LOW")?,
        crbp_high: same("TCRBP_HIGH", "RCRBP_HIGH")?,
        crhp: same("TCRHP", "RCRHP")?,
        m2s_comp_cfg: offset(catalog, m, "COMP_CFG")?,
        s2m_comp_cfg: offset(catalog, s, "COMP_CFG")?,
        m2s_change_state: offset(catalog, "udma_m2s", "CHANGE_STATE")?,
        s2m_change_state: offset(catalog, "udma_s2m", "CHANGE_STATE")?,
        m2s_cfg_len: offset(catalog, "udma_m2s", "CFG_LEN")?,
        sec_a_abort_mask: offset(catalog, "udma_gen", "SEC_A_INT_ABORT_MSK")?,
        nq_base_lo: element(catalog, "notific", "NQ_BASE_LO", 0)?,
        nq_base_hi: element(catalog, "notific", "NQ_BASE_HI", 0)?,
        nq_size: element(catalog, "notific", "NQ_SIZE", 0)?,
        nq_stride: element(catalog, "notific", "NQ_SIZE", 1)?
            - element(catalog, "notific", "NQ_SIZE", 0)?,
        nq_count: catalog
            .block("notific")
            .and_then(|m| m.register("NQ_SIZE"))
            .and_then(|r| r.array())
            .map_or(0, |a| a.count()),
    })
}

/// The layout of core `tpb`: engines `eng{16·tpb} ..= eng{16·tpb + 15}`
/// (16 per core, docs/references/figures.md §A.3; the engine↔core numbering is
/// a simulator decision, docs/firmware.md).
pub fn core_layout(map: &SocMap, catalog: &Catalog, tpb: u8) -> Result<CoreLayout, String> {
    core_layout_with(map, catalog, tpb, queue_regs)
}

/// [`core_layout`] with the register offsets of a catalog the process
/// keeps (a device's): [`queue_regs`] is read once per catalog, not once
/// per core.
pub(crate) fn core_layout_of(
    map: &SocMap,
    catalog: &'static Catalog,
    tpb: u8,
) -> Result<CoreLayout, String> {
    core_layout_with(map, catalog, tpb, |_| queue_regs_of(catalog))
}

/// [`queue_regs`] of a `'static` catalog, read once.
fn queue_regs_of(catalog: &'static Catalog) -> Result<QueueRegs, String> {
    type Cache = std::sync::Mutex<Vec<(usize, QueueRegs)>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let key = std::ptr::from_ref(catalog) as usize;
    let cache = CACHE.get_or_init(Cache::default);
    if let Ok(c) = cache.lock()
        && let Some(&(_, regs)) = c.iter().find(|(k, _)| *k == key)
    {
        return Ok(regs);
    }
    let regs = queue_regs(catalog)?;
    if let Ok(mut c) = cache.lock() {
        c.push((key, regs));
    }
    Ok(regs)
}

fn core_layout_with(
    map: &SocMap,
    catalog: &Catalog,
    tpb: u8,
    queue_regs: impl FnOnce(&Catalog) -> Result<QueueRegs, String>,
) -> Result<CoreLayout, String> {
    let t = indexed("tpb", u16::from(tpb));
    let lr = "q7_local_reg";
    let local = base(map, &cat(&t, ".q7_local_reg"))?;
    let sem = base(map, &cat(&t, ".evt_sem"))?;
    let dge_id = map
        .by_name(&cat(&t, ".dge_memory"))
        .ok_or_else(|| format!("the SoC map has no region {t}.dge_memory"))?;
    let dge = map.region(dge_id);
    let partitioned = |t: &str, name: &str| -> Result<(u64, u64), String> {
        let mut full = String::with_capacity(t.len() + 1 + name.len());
        full.push_str(t);
        full.push('.');
        full.push_str(name);
        let id = map
            .by_name(&full)
            .ok_or_else(|| format!("the SoC map has no region {t}.{name}"))?;
        let r = map.region(id);
        let p = r
            .partitions
            .as_ref()
            .ok_or_else(|| format!("{t}.{name} has no partition geometry"))?;
        Ok((r.base, p.stride_bytes))
    };
    let (sbuf_base, sbuf_stride) = partitioned(&t, "sbuf")?;
    let (psum_base, psum_stride) = partitioned(&t, "psum")?;
    let sr0 = element(catalog, "evt_sem", "SEM_READ", 0)?;
    let sr1 = element(catalog, "evt_sem", "SEM_READ", 1)?;
    let inc0 = element(catalog, "evt_sem", "SEM_INC", 0)?;
    let mut peers = Vec::new();
    for p in 0..CORES {
        let pt = indexed("tpb", u16::from(p));
        let Ok(sem_p) = base(map, &cat(&pt, ".evt_sem")) else {
            break;
        };
        let (sb, ss) = partitioned(&pt, "sbuf")?;
        let (pb, ps) = partitioned(&pt, "psum")?;
        peers.push(q7::PeerLayout {
            sbuf_base: sb,
            sbuf_stride: ss,
            psum_base: pb,
            psum_stride: ps,
            sem_inc0: sem_p + inc0,
            sem_stride: sr1 - sr0,
        });
    }
    let sem_map = catalog
        .block("evt_sem")
        .ok_or("csr-maps/ has no evt_sem block")?;
    let sem_count = sem_map
        .register("SEM_READ")
        .and_then(|r| r.array())
        .map_or(0, |a| a.count());
    let reg0 = element(catalog, lr, "REG", 0)?;
    let reg1 = element(catalog, lr, "REG", 1)?;
    let t0 = element(catalog, lr, "ADDR_TABLE_LO", 0)?;
    let t1 = element(catalog, lr, "ADDR_TABLE_LO", 1)?;
    let hi0 = element(catalog, lr, "ADDR_TABLE_HI", 0)?;
    if hi0 != t0 + 4 {
        return Err(
            "q7_local_reg: ADDR_TABLE_HI[i] must sit 4 bytes after ADDR_TABLE_LO[i]".into(),
        );
    }
    let engines = (0..16u16)
        .map(|k| engine_layout(map, u16::from(tpb) * 16 + k))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CoreLayout {
        tpb,
        reg0: local + reg0,
        reg_stride: reg1 - reg0,
        carveout_cfg: local + offset(catalog, lr, "MEMCOPY_CARVEOUT_CFG")?,
        dma_cfg: local + offset(catalog, lr, "MEMCOPY_DMA_CFG")?,
        mem_window0_lo: local + offset(catalog, lr, "MEM_WINDOW0_LO")?,
        table0: local + t0,
        table_stride: t1 - t0,
        sem_read0: sem + sr0,
        sem_inc0: sem + inc0,
        sem_set0: sem + element(catalog, "evt_sem", "SEM_SET", 0)?,
        sem_stride: sr1 - sr0,
        sem_count,
        dge_memory: dge.base,
        dge_memory_bytes: dge.size_bytes,
        sbuf_base,
        sbuf_stride,
        psum_base,
        psum_stride,
        peers,
        dataram_soc: base(map, &cat(&t, ".q7_dataram0"))?,
        q7_dram: base(map, &cat(&t, ".q7_dram0"))?,
        q7_iram: base(map, &cat(&t, ".q7_iram0"))?,
        q7_iram_bytes: map
            .by_name(&cat(&t, ".q7_iram0"))
            .map_or(0, |id| map.region(id).size_bytes),
        engines,
        regs: queue_regs(catalog)?,
    })
}

/// The device as core firmware sees it.
pub(crate) struct DeviceFwBus<'a> {
    pub(crate) device: &'a mut Device,
}

impl FwBus for DeviceFwBus<'_> {
    fn logs_reads(&self) -> bool {
        self.device.recording()
    }

    fn engine_epoch(&self, engine: u16) -> Option<u64> {
        self.device.engine_head_epoch(engine)
    }

    fn read32(&mut self, addr: u64) -> Result<u32, String> {
        self.device.read32(addr).map_err(|e| e.to_string())
    }

    fn read32_run(&mut self, addr: u64, out: &mut [u32]) {
        self.device.read32_run(addr, out);
    }

    fn write32(&mut self, addr: u64, value: u32) -> Result<(), String> {
        self.device
            .write32_unreported(addr, value)
            .map_err(|e| e.to_string())
    }

    fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.device
            .write_bytes(addr, data)
            .map_err(|e| e.to_string())
    }

    fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String> {
        self.device
            .read_bytes(addr, buf)
            .map_err(|e| e.to_string())?;
        let master = self.device.bus_master();
        self.device
            .note_control_read(addr, buf.len() as u64, || match master {
                crate::Master::Firmware(t) => format!("tpb{t} firmware"),
                _ => "the firmware".to_string(),
            });
        Ok(())
    }

    fn read_payload(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String> {
        self.device.read_bytes(addr, buf).map_err(|e| e.to_string())
    }

    fn stores_whole(&self, addr: u64, len: u64) -> bool {
        self.device.stores_whole(addr, len)
    }

    fn stale(&self, addr: u64, len: u64) -> bool {
        self.device.stale_byte_in(addr, len).is_some()
    }

    fn core_can_reach(&self, addr: u64, len: u64) -> Result<(), String> {
        // A copy is at most the 64 KiB dataram window and PSUM is one
        // region per core: its first and last bytes tell.
        let map = self.device.map();
        for a in [addr, addr.saturating_add(len.saturating_sub(1))] {
            if let Some(id) = map.decode(a).region
                && map.region(id).kind == soc_map::RegionKind::Psum
            {
                return Err(format!(
                    "{} is PSUM, which the Q7 cores cannot reach (no aperture onto it; docs/references/design.md §2)",
                    crate::describe::symbolic(self.device, a)
                ));
            }
        }
        Ok(())
    }

    fn mark_stale(&mut self, addr: u64, len: u64) {
        self.device.mark_stale(addr, len);
    }

    fn note_word(&mut self, tag: &q7::InstTag) {
        if let crate::Master::Firmware(t) = self.device.bus_master() {
            self.device.race_word(t, tag);
        }
    }

    fn note_elements(&mut self, code: Option<u8>) {
        if let crate::Master::Firmware(t) = self.device.bus_master() {
            self.device.race_elements(t, code);
        }
    }

    fn note_scatter_race(&mut self, tag: &q7::InstTag, first: u32, later: u32, index: u32) {
        if let crate::Master::Firmware(t) = self.device.bus_master() {
            self.device.race_scatter(t, tag, first, later, index);
        }
    }

    fn partition_of(&self, addr: u64) -> Option<u16> {
        self.device
            .partition_of(addr)
            .and_then(|(p, _)| u16::try_from(p).ok())
    }

    fn partition_span(&self, addr: u64) -> (Option<u16>, Option<q7::PartitionSpan>) {
        let (p, span) = self.device.partition_span(addr);
        (
            p.and_then(|(p, _)| u16::try_from(p).ok()),
            span.map(|(base, len, stride)| q7::PartitionSpan { base, len, stride }),
        )
    }

    fn partition_stride(&self, addr: u64) -> Option<u64> {
        self.device.partition_of(addr).map(|(_, stride)| stride)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_built_as_formatting_would() {
        for i in [0u16, 7, 10, 127, 131, 9999, u16::MAX] {
            assert_eq!(indexed("eng", i), format!("eng{i}"));
        }
        assert_eq!(cat("tpb3", ".evt_sem"), "tpb3.evt_sem");
    }
}
