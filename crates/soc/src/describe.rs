//! What lives at one address: region, offset, partition/bank, register.
//! Backs `neuron-sim map ADDR`.

use serde::Serialize;
use soc_map::{Hex, Hex32, Hole, RegionKind};

use crate::device::Device;

/// Everything the map and CSR maps say about one address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct AddressInfo {
    /// The address (hex string).
    pub address: Hex,
    /// True when a memory byte or a register is there.
    pub mapped: bool,
    /// Dotted region name (`tpb0.sbuf`, `eng0.m2s.q0`, `hbm1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Region kind (`memory`, `sbuf`, `psum`, `csr`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<RegionKind>,
    /// Region base.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region_base: Option<Hex>,
    /// Offset inside the region (inside the partition for SBUF/PSUM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<Hex>,
    /// SBUF/PSUM partition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<u32>,
    /// PSUM bank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bank: Option<u32>,
    /// The region this one mirrors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
    /// CSR block map name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// Register name from the CSR map (`TDRTP_INC`, `SEM_INC`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub register: Option<String>,
    /// Element index, for register arrays (`SEM_INC[1]` → 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// The register element as traces name it (`SEM_INC[1]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub element: Option<String>,
    /// Register access kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<String>,
    /// Register reset value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reset: Option<Hex32>,
    /// Register or region description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Why nothing is there, when not mapped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An address as a name: `tpb0.sbuf[p24]+0x40`, `hbm0+0x100000`,
/// `tpb0.evt_sem.SEM_INC[7]`; the number when nothing is mapped there.
pub fn symbolic(device: &Device, addr: u64) -> String {
    let info = describe(device, addr);
    let Some(region) = info.region else {
        return format!("unmapped {addr:#x}");
    };
    let off = info.offset.map_or(0, |o| o.0);
    let plus = if off == 0 {
        String::new()
    } else {
        format!("+{off:#x}")
    };
    if let Some(e) = info.element {
        return format!("{region}.{e}");
    }
    match (info.kind, info.partition) {
        (Some(RegionKind::Sbuf | RegionKind::Psum), Some(p)) => format!("{region}[p{p}]{plus}"),
        _ => format!("{region}{plus}"),
    }
}

/// Describes one address.
pub fn describe(device: &Device, addr: u64) -> AddressInfo {
    let map = device.map();
    let d = map.decode(addr);
    let mut info = AddressInfo {
        address: Hex(addr),
        mapped: false,
        region: None,
        kind: None,
        region_base: None,
        offset: None,
        partition: d.partition,
        bank: d.bank,
        alias_of: None,
        block: None,
        register: None,
        index: None,
        element: None,
        access: None,
        reset: None,
        description: None,
        reason: d.hole.map(|h| h.to_string()),
    };
    let Some(id) = d.region else {
        return info;
    };
    let r = map.region(id);
    info.region = Some(r.name.to_string());
    info.kind = Some(r.kind);
    info.region_base = Some(Hex(r.base));
    info.offset = Some(Hex(d.offset));
    info.alias_of = r.alias_of.map(|a| map.name(a).to_string());
    if !r.description().is_empty() {
        info.description = Some(r.description().to_string());
    }
    let has_regs = matches!(r.kind, RegionKind::Csr)
        || (matches!(r.kind, RegionKind::Container) && r.block.is_some());
    if has_regs {
        info.block = r.block.as_deref().map(str::to_string);
        info.reason = None;
        match device.block_of(id).map(|b| (b, b.element_at(d.offset))) {
            Some((block, Ok(reg))) => {
                let spec = reg.spec();
                info.mapped = true;
                info.register = Some(spec.name().to_string());
                info.index = reg.index();
                info.element = Some(reg.name());
                info.access = Some(spec.access().as_str().to_string());
                info.reset = block.reset_values().get(reg.slot()).copied().map(Hex32);
                if !spec.description().is_empty() {
                    info.description = Some(spec.description().to_string());
                }
            }
            Some((_, Err(e))) => info.reason = Some(e.to_string()),
            None => info.reason = Some(Hole::ContainerGap.to_string()),
        }
    } else {
        info.mapped = d.hole.is_none();
    }
    info
}

impl AddressInfo {
    /// One human-readable line (plus a description line when known).
    pub fn to_text(&self) -> String {
        let mut s = format!("{}", self.address);
        match &self.region {
            None => s.push_str("  not mapped"),
            Some(region) => {
                s.push_str(&format!("  {region}"));
                if let Some(p) = self.partition {
                    s.push_str(&format!(" partition {p}"));
                }
                if let Some(o) = self.offset {
                    s.push_str(&format!(" + {o}"));
                }
                if let Some(b) = self.bank {
                    s.push_str(&format!(" (bank {b})"));
                }
                if let Some(e) = &self.element {
                    s.push_str(&format!(
                        "  register {e} [{}] reset {}",
                        self.access.as_deref().unwrap_or("?"),
                        self.reset.map(|r| r.to_string()).unwrap_or_default()
                    ));
                }
                if let Some(a) = &self.alias_of {
                    s.push_str(&format!("  (mirrors {a})"));
                }
                if !self.mapped {
                    s.push_str("  NOT MAPPED");
                }
            }
        }
        if let Some(r) = &self.reason {
            s.push_str(&format!(": {r}"));
        }
        if let Some(d) = &self.description {
            s.push_str(&format!("\n    {d}"));
        }
        s
    }
}
