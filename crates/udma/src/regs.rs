//! The register files of one UDMA unit and the offsets the engine model
//! uses, looked up once from the CSR maps by name (registers are data).

use std::sync::OnceLock;

use csr::{Catalog, CsrMap, RegFile};

use crate::block::{QUEUES, UnitBlock};

/// Offsets of the queue-block registers the model uses (same names resolve
/// in both directions: the ring registers are identical in position;
/// COMP_CFG and Q_SW_CTRL differ, docs/references/driver.md §2.5).
#[derive(Clone, Copy, Debug)]
pub struct QueueOffsets {
    pub cfg: u64,
    pub status: u64,
    pub drbp_low: u64,
    pub drbp_high: u64,
    pub drl: u64,
    pub drhp: u64,
    pub drtp_inc: u64,
    pub drtp: u64,
    pub dcp: u64,
    pub crbp_low: u64,
    pub crbp_high: u64,
    pub crhp: u64,
    pub comp_cfg: u64,
    pub sw_ctrl: u64,
    pub pkt_count: u64,
    /// M2S only: RLIMIT_MASK (DMB pause, docs/references/driver.md §2.4).
    pub rlimit_mask: Option<u64>,
    /// S2M only: PKT_CFG (header split, P9.1 §4.2).
    pub pkt_cfg: Option<u64>,
}

/// Offsets of engine-level, GEN and SDMA-app registers.
#[derive(Clone, Copy, Debug)]
pub struct UnitOffsets {
    pub m2s_q: QueueOffsets,
    pub s2m_q: QueueOffsets,
    pub m2s_state: u64,
    pub m2s_change_state: u64,
    pub m2s_err_log_mask: u64,
    pub m2s_cfg_len: u64,
    pub m2s_desc_pref_cfg_2: u64,
    pub m2s_pref_queue_en: u64,
    /// DESC_PREF_CFG_3 of (M2S, S2M); `None` where a map has none.
    pub desc_pref_cfg_3: [Option<u64>; 2],
    pub s2m_state: u64,
    pub s2m_change_state: u64,
    pub s2m_err_log_mask: u64,
    /// (cause, cause_set, mask, mask_clear, status, abort_mask) for the
    /// secondary IOFIC groups A, B, D.
    pub sec: [IoficOffsets; 3],
    pub axi_queue_error_status: [u64; QUEUES],
    pub axi_queue_cfg: [u64; QUEUES],
    pub m2s_crc_init: [u64; QUEUES],
    /// The scheduler's registers (looked up by name once, not at every
    /// configuration refresh); `None` where a map has no such register.
    pub sched: SchedOffsets,
}

/// Scheduler and rate-limiter registers (docs/timing.md).
#[derive(Clone, Copy, Debug)]
pub struct SchedOffsets {
    /// M2S queue DWRR_CFG_1..3.
    pub q_dwrr: [Option<u64>; 3],
    /// M2S queue rate limiter (`RLIMIT_*`, `RLIMIT_MASK`).
    pub q_rlimit: RlimitOffsets,
    /// M2S stream rate limiter (`STREAM_RLIMIT_*`, `STREAM_RLIMIT_MASK`).
    pub stream_rlimit: RlimitOffsets,
    /// M2S DWRR_CFG_SCHED.
    pub dwrr_cfg_sched: Option<u64>,
    /// M2S RLIMIT_GEN_CFG.
    pub rlimit_gen_cfg: Option<u64>,
}

/// One token bucket's registers.
#[derive(Clone, Copy, Debug)]
pub struct RlimitOffsets {
    /// `…CFG_1S`.
    pub cfg_1s: Option<u64>,
    /// `…TOKEN_SIZE_1`.
    pub token_size_1: Option<u64>,
    /// `…CFG_CYCLE`.
    pub cfg_cycle: Option<u64>,
    /// The bucket's mask register.
    pub mask: Option<u64>,
}

impl RlimitOffsets {
    fn of(map: &CsrMap, prefix: &str, mask: &str) -> Self {
        RlimitOffsets {
            cfg_1s: map.find(&format!("{prefix}CFG_1S"), None),
            token_size_1: map.find(&format!("{prefix}TOKEN_SIZE_1"), None),
            cfg_cycle: map.find(&format!("{prefix}CFG_CYCLE"), None),
            mask: map.find(mask, None),
        }
    }
}

/// One secondary IOFIC group's registers (docs/references/driver.md §2.6).
#[derive(Clone, Copy, Debug)]
pub struct IoficOffsets {
    pub cause: u64,
    pub cause_set: u64,
    pub mask: u64,
    pub mask_clear: u64,
    pub status: u64,
    pub abort_mask: u64,
}

/// Secondary IOFIC group: A = M2S errors, B = S2M errors, D = simulator-defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// M2S errors.
    A = 0,
    /// S2M errors.
    B = 1,
    /// Doorbell overruns (simulator-defined).
    D = 2,
}

/// The built-in maps every unit uses.
#[derive(Debug)]
pub struct UnitMaps {
    pub m2s: &'static CsrMap,
    pub m2s_q: &'static CsrMap,
    pub s2m: &'static CsrMap,
    pub s2m_q: &'static CsrMap,
    pub udma_gen: &'static CsrMap,
    pub gen_ex: &'static CsrMap,
    pub sdma_app: &'static CsrMap,
    pub notific: &'static CsrMap,
    pub offsets: UnitOffsets,
    /// Storage slots of the registers the engine's hot paths and its
    /// configuration refresh reach, resolved once per map: every unit
    /// reads the same few cache lines.
    pub(crate) slots: crate::engine::UnitSlots,
}

/// A register file at reset of each block whose storage slots
/// [`crate::engine::UnitSlots`] resolves (only their maps matter).
pub(crate) struct UnitFiles {
    pub m2s_q: RegFile<'static>,
    pub s2m_q: RegFile<'static>,
    pub m2s: RegFile<'static>,
    pub sdma_app: RegFile<'static>,
}

/// Why the unit maps cannot drive the model (a map lacks a register the
/// model needs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapMismatch(pub String);

impl std::fmt::Display for MapMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MapMismatch {}

fn block<'c>(catalog: &'c Catalog, name: &str) -> Result<&'c CsrMap, MapMismatch> {
    catalog
        .block(name)
        .ok_or_else(|| MapMismatch(format!("CSR map `{name}` is missing")))
}

fn off(map: &CsrMap, names: &[&str], index: Option<u32>) -> Result<u64, MapMismatch> {
    names
        .iter()
        .find_map(|n| map.find(n, index))
        .ok_or_else(|| {
            MapMismatch(format!(
                "CSR map `{}` has no register {}{}",
                map.block(),
                names.join(" / "),
                index.map(|i| format!("[{i}]")).unwrap_or_default()
            ))
        })
}

fn queue_offsets(map: &CsrMap, m2s: bool) -> Result<QueueOffsets, MapMismatch> {
    let (p, c) = if m2s { ("T", "T") } else { ("R", "R") };
    Ok(QueueOffsets {
        cfg: off(map, &["Q_CFG"], None)?,
        status: off(map, &["Q_STATUS"], None)?,
        drbp_low: off(map, &[&format!("{p}DRBP_LOW")], None)?,
        drbp_high: off(map, &[&format!("{p}DRBP_HIGH")], None)?,
        drl: off(map, &[&format!("{p}DRL")], None)?,
        drhp: off(map, &[&format!("{p}DRHP")], None)?,
        drtp_inc: off(map, &[&format!("{p}DRTP_INC")], None)?,
        drtp: off(map, &[&format!("{p}DRTP")], None)?,
        dcp: off(map, &[&format!("{p}DCP")], None)?,
        crbp_low: off(map, &[&format!("{c}CRBP_LOW")], None)?,
        crbp_high: off(map, &[&format!("{c}CRBP_HIGH")], None)?,
        crhp: off(map, &[&format!("{c}CRHP")], None)?,
        comp_cfg: off(map, &["COMP_CFG"], None)?,
        sw_ctrl: off(map, &["Q_SW_CTRL"], None)?,
        pkt_count: off(map, &[if m2s { "Q_TX_PKT" } else { "Q_RX_PKT" }], None)?,
        rlimit_mask: if m2s {
            Some(off(map, &["RLIMIT_MASK"], None)?)
        } else {
            None
        },
        pkt_cfg: if m2s {
            None
        } else {
            Some(off(map, &["PKT_CFG"], None)?)
        },
    })
}

fn iofic(gen_map: &CsrMap, g: &str) -> Result<IoficOffsets, MapMismatch> {
    let r = |s: &str| off(gen_map, &[&format!("SEC_{g}_{s}")], None);
    Ok(IoficOffsets {
        cause: r("INT_CAUSE")?,
        cause_set: r("INT_CAUSE_SET")?,
        mask: r("INT_MASK")?,
        mask_clear: r("INT_MASK_CLEAR")?,
        status: r("INT_STATUS")?,
        abort_mask: r("INT_ABORT_MSK")?,
    })
}

impl UnitMaps {
    /// Resolves the maps and offsets from a catalog.
    pub fn from_catalog(catalog: &'static Catalog) -> Result<Self, MapMismatch> {
        let m2s = block(catalog, "udma_m2s")?;
        let m2s_q = block(catalog, "udma_m2s_q")?;
        let s2m = block(catalog, "udma_s2m")?;
        let s2m_q = block(catalog, "udma_s2m_q")?;
        let udma_gen = block(catalog, "udma_gen")?;
        let gen_ex = block(catalog, "udma_gen_ex")?;
        let sdma_app = block(catalog, "sdma_app")?;
        let notific = block(catalog, "notific")?;
        let arr = |map: &CsrMap, name: &str| -> Result<[u64; QUEUES], MapMismatch> {
            let mut out = [0u64; QUEUES];
            for (q, slot) in out.iter_mut().enumerate() {
                *slot = off(map, &[name], Some(q as u32))?;
            }
            Ok(out)
        };
        let offsets = UnitOffsets {
            m2s_q: queue_offsets(m2s_q, true)?,
            s2m_q: queue_offsets(s2m_q, false)?,
            m2s_state: off(m2s, &["STATE"], None)?,
            m2s_change_state: off(m2s, &["CHANGE_STATE"], None)?,
            m2s_err_log_mask: off(m2s, &["ERR_LOG_MASK"], None)?,
            m2s_cfg_len: off(m2s, &["CFG_LEN"], None)?,
            m2s_desc_pref_cfg_2: off(m2s, &["DESC_PREF_CFG_2"], None)?,
            m2s_pref_queue_en: off(m2s, &["PREF_QUEUE_EN"], None)?,
            desc_pref_cfg_3: [
                m2s.find("DESC_PREF_CFG_3", None),
                s2m.find("DESC_PREF_CFG_3", None),
            ],
            s2m_state: off(s2m, &["STATE"], None)?,
            s2m_change_state: off(s2m, &["CHANGE_STATE"], None)?,
            s2m_err_log_mask: off(s2m, &["ERR_LOG_MASK"], None)?,
            sec: [
                iofic(udma_gen, "A")?,
                iofic(udma_gen, "B")?,
                iofic(udma_gen, "D")?,
            ],
            axi_queue_error_status: arr(udma_gen, "AXI_QUEUE_ERROR_STATUS")?,
            axi_queue_cfg: arr(udma_gen, "AXI_QUEUE_CFG")?,
            m2s_crc_init: arr(sdma_app, "NOTIFIC_M2S_CRC_INIT")?,
            sched: SchedOffsets {
                q_dwrr: [
                    m2s_q.find("DWRR_CFG_1", None),
                    m2s_q.find("DWRR_CFG_2", None),
                    m2s_q.find("DWRR_CFG_3", None),
                ],
                q_rlimit: RlimitOffsets::of(m2s_q, "RLIMIT_", "RLIMIT_MASK"),
                stream_rlimit: RlimitOffsets::of(m2s, "STREAM_RLIMIT_", "STREAM_RLIMIT_MASK"),
                dwrr_cfg_sched: m2s.find("DWRR_CFG_SCHED", None),
                rlimit_gen_cfg: m2s.find("RLIMIT_GEN_CFG", None),
            },
        };
        let files = UnitFiles {
            m2s_q: RegFile::new(m2s_q),
            s2m_q: RegFile::new(s2m_q),
            m2s: RegFile::new(m2s),
            sdma_app: RegFile::new(sdma_app),
        };
        let slots = crate::engine::UnitSlots::new(&offsets, &files);
        Ok(Self {
            m2s,
            m2s_q,
            s2m,
            s2m_q,
            udma_gen,
            gen_ex,
            sdma_app,
            notific,
            offsets,
            slots,
        })
    }

    /// The built-in maps (resolved once per process).
    pub fn builtin() -> Result<&'static UnitMaps, MapMismatch> {
        static MAPS: OnceLock<Result<UnitMaps, MapMismatch>> = OnceLock::new();
        MAPS.get_or_init(|| {
            let catalog = csr::catalog().map_err(|e| MapMismatch(e.to_string()))?;
            UnitMaps::from_catalog(catalog)
        })
        .as_ref()
        .map_err(Clone::clone)
    }
}

/// The register files of one unit.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct UnitRegs {
    /// The queue files first, inline, each queue's two side by side: the
    /// engine's hot paths reach them per packet.
    pub q: [QueueFiles; QUEUES],
    pub m2s: RegFile<'static>,
    pub s2m: RegFile<'static>,
    pub udma_gen: RegFile<'static>,
    pub gen_ex: RegFile<'static>,
    pub sdma_app: RegFile<'static>,
    pub notific: RegFile<'static>,
}

/// One queue's register files, (M2S, S2M), in one cache line.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct QueueFiles(pub [RegFile<'static>; 2]);

impl std::ops::Index<usize> for QueueFiles {
    type Output = RegFile<'static>;
    fn index(&self, d: usize) -> &RegFile<'static> {
        &self.0[d]
    }
}

impl std::ops::IndexMut<usize> for QueueFiles {
    fn index_mut(&mut self, d: usize) -> &mut RegFile<'static> {
        &mut self.0[d]
    }
}

impl UnitRegs {
    /// Reset state.
    pub fn new(maps: &'static UnitMaps) -> Self {
        Self {
            q: std::array::from_fn(|_| {
                QueueFiles([RegFile::new(maps.m2s_q), RegFile::new(maps.s2m_q)])
            }),
            m2s: RegFile::new(maps.m2s),
            s2m: RegFile::new(maps.s2m),
            udma_gen: RegFile::new(maps.udma_gen),
            gen_ex: RegFile::new(maps.gen_ex),
            sdma_app: RegFile::new(maps.sdma_app),
            notific: RegFile::new(maps.notific),
        }
    }

    /// The register file of a block.
    pub fn file(&self, b: UnitBlock) -> Option<&RegFile<'static>> {
        Some(match b {
            UnitBlock::M2s => &self.m2s,
            UnitBlock::M2sQ(q) => &self.q.get(usize::from(q))?.0[0],
            UnitBlock::S2m => &self.s2m,
            UnitBlock::S2mQ(q) => &self.q.get(usize::from(q))?.0[1],
            UnitBlock::Gen => &self.udma_gen,
            UnitBlock::GenEx => &self.gen_ex,
            UnitBlock::SdmaApp => &self.sdma_app,
            UnitBlock::Notific => &self.notific,
        })
    }

    /// The register file of a block, mutably.
    pub fn file_mut(&mut self, b: UnitBlock) -> Option<&mut RegFile<'static>> {
        Some(match b {
            UnitBlock::M2s => &mut self.m2s,
            UnitBlock::M2sQ(q) => &mut self.q.get_mut(usize::from(q))?.0[0],
            UnitBlock::S2m => &mut self.s2m,
            UnitBlock::S2mQ(q) => &mut self.q.get_mut(usize::from(q))?.0[1],
            UnitBlock::Gen => &mut self.udma_gen,
            UnitBlock::GenEx => &mut self.gen_ex,
            UnitBlock::SdmaApp => &mut self.sdma_app,
            UnitBlock::Notific => &mut self.notific,
        })
    }
}
