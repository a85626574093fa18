//! `soc::describe`: what lives at one address (backs `neuron-sim map ADDR`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::device;
use soc::{AddressInfo, describe};
use soc_map::{Hex, Hex32, RegionKind};

fn info(addr: u64) -> AddressInfo {
    describe(&device(), addr)
}

#[test]
fn sbuf_partition_and_offset() {
    let i = info(0x20_0004_0010);
    assert!(i.mapped);
    assert_eq!(i.region.as_deref(), Some("tpb0.sbuf"));
    assert_eq!(i.kind, Some(RegionKind::Sbuf));
    assert_eq!(i.region_base, Some(Hex(0x20_0000_0000)));
    assert_eq!(i.partition, Some(1));
    assert_eq!(i.offset, Some(Hex(0x10)));
    assert_eq!(i.bank, None);
    assert_eq!(i.register, None);
    assert_eq!(i.reason, None);
    let text = i.to_text();
    assert!(
        text.starts_with("0x2000040010  tpb0.sbuf partition 1 + 0x10"),
        "{text}"
    );
}

#[test]
fn sbuf_pad_is_not_mapped() {
    let i = info(0x20_0003_8000);
    assert!(!i.mapped);
    assert_eq!(i.region.as_deref(), Some("tpb0.sbuf"));
    assert_eq!(i.partition, Some(0));
    assert_eq!(i.offset, Some(Hex(0x3_8000)));
    let reason = i.reason.as_deref().unwrap();
    assert!(reason.contains("pad"), "{reason}");
    assert!(i.to_text().contains("NOT MAPPED"));
}

#[test]
fn psum_partition_and_bank() {
    let i = info(0x28_0200_8010);
    assert!(i.mapped);
    assert_eq!(i.region.as_deref(), Some("tpb0.psum"));
    assert_eq!(i.kind, Some(RegionKind::Psum));
    assert_eq!(i.partition, Some(1));
    assert_eq!(i.offset, Some(Hex(0x10)));
    assert_eq!(i.bank, Some(0));
    // Bank 7 is the last 2 KiB of the populated 16 KiB.
    let i = info(0x28_0200_8000 + 0x3ff0);
    assert_eq!((i.partition, i.bank), (Some(1), Some(7)));
    // The pad of a PSUM partition.
    let i = info(0x28_0200_8000 + 0x4000);
    assert!(!i.mapped);
    assert_eq!(i.bank, None);
}

#[test]
fn semaphore_increment_window() {
    let i = info(0x28_0270_1804);
    assert!(i.mapped);
    assert_eq!(i.region.as_deref(), Some("tpb0.evt_sem"));
    assert_eq!(i.kind, Some(RegionKind::Csr));
    assert_eq!(i.block.as_deref(), Some("evt_sem"));
    assert_eq!(i.register.as_deref(), Some("SEM_INC"));
    assert_eq!(i.index, Some(1));
    assert_eq!(i.element.as_deref(), Some("SEM_INC[1]"));
    assert_eq!(i.access.as_deref(), Some("INC"));
    assert_eq!(i.reset, Some(Hex32(0)));
    assert_eq!(i.offset, Some(Hex(0x1804)));
}

#[test]
fn queue_doorbells() {
    let i = info(0x10_0200_1038);
    assert!(i.mapped);
    assert_eq!(i.region.as_deref(), Some("eng0.m2s.q0"));
    assert_eq!(i.block.as_deref(), Some("udma_m2s_q"));
    assert_eq!(i.element.as_deref(), Some("TDRTP_INC"));
    assert_eq!(i.index, None);
    assert_eq!(i.access.as_deref(), Some("INC"));
    let text = i.to_text();
    assert!(
        text.contains("eng0.m2s.q0 + 0x38  register TDRTP_INC [INC]"),
        "{text}"
    );

    let i = info(0x10_0202_1038);
    assert_eq!(i.region.as_deref(), Some("eng0.s2m.q0"));
    assert_eq!(i.element.as_deref(), Some("RDRTP_INC"));
}

#[test]
fn comp_cfg_differs_between_directions() {
    let s2m = info(0x10_0202_1054);
    assert_eq!(s2m.region.as_deref(), Some("eng0.s2m.q0"));
    assert_eq!(s2m.element.as_deref(), Some("COMP_CFG"));
    assert_eq!(s2m.reset, Some(Hex32(0xf)));
    assert_eq!(s2m.access.as_deref(), Some("RW"));
    let m2s = info(0x10_0200_10a0);
    assert_eq!(m2s.region.as_deref(), Some("eng0.m2s.q0"));
    assert_eq!(m2s.element.as_deref(), Some("COMP_CFG"));
    assert_eq!(m2s.reset, Some(Hex32(0)));
    // M2S 0x54 is a hole of the queue block.
    let hole = info(0x10_0200_1054);
    assert!(!hole.mapped);
    assert_eq!(hole.region.as_deref(), Some("eng0.m2s.q0"));
    assert_eq!(hole.register, None);
    assert!(hole.reason.is_some());
}

#[test]
fn unmapped_addresses() {
    for a in [0x10_0100_0000u64, 0xffff_ffff_ffff_ffff, 0x2_0000_0000_0000] {
        let i = info(a);
        assert!(!i.mapped, "{a:#x}");
        assert_eq!(i.region, None, "{a:#x}");
        assert_eq!(i.kind, None);
        assert_eq!(i.address, Hex(a));
        assert!(i.reason.is_some(), "{a:#x}");
        assert!(i.to_text().contains("not mapped"), "{}", i.to_text());
    }
    // Inside the HBM window but past its 24 GiB.
    let i = info(0x6_0000_0000);
    assert!(!i.mapped);
    assert_eq!(i.region.as_deref(), Some("hbm0"));
}

#[test]
fn container_gap_inside_a_tpb() {
    // Between SBUF (32 MiB) and scratch (+0x400_0000).
    let i = info(0x20_0300_0000);
    assert!(!i.mapped);
    assert_eq!(i.region.as_deref(), Some("tpb0"));
    assert_eq!(i.kind, Some(RegionKind::Container));
    let reason = i.reason.as_deref().unwrap();
    assert!(reason.contains("hole between the regions"), "{reason}");
    // A reserved region is decoded but not mapped.
    let i = info(0x28_0000_0100);
    assert!(!i.mapped);
    assert_eq!(i.region.as_deref(), Some("tpb0.reserved_sbuf"));
}

#[test]
fn alias_names_its_target() {
    let i = info(0x28_0289_0000);
    assert!(i.mapped);
    assert_eq!(i.region.as_deref(), Some("tpb0.q7_dataram0"));
    assert_eq!(i.alias_of.as_deref(), Some("tpb0.q7_dram0"));
    assert!(i.to_text().contains("(mirrors tpb0.q7_dram0)"));
}

#[test]
fn json_omits_absent_fields() {
    let v = serde_json::to_value(info(0x10_0200_1038)).unwrap();
    assert_eq!(v["address"], "0x1002001038");
    assert_eq!(v["element"], "TDRTP_INC");
    assert_eq!(v["kind"], "csr");
    assert!(v.get("partition").is_none());
    assert!(v.get("reason").is_none());
    let v = serde_json::to_value(info(0x10_0100_0000)).unwrap();
    assert_eq!(v["mapped"], false);
    assert!(v.get("region").is_none());
}

#[test]
fn local_register_alias_is_described_by_its_own_name() {
    let base = 0x28_0306_0000u64;
    let i = info(base + 0x14e0);
    assert!(i.mapped);
    assert_eq!(i.region.as_deref(), Some("tpb0.q7_local_reg"));
    assert_eq!(i.element.as_deref(), Some("MEMCOPY_CARVEOUT_CFG"));
    assert_eq!(i.index, None);
    let i = info(base + 0x1000 + 38 * 0x20);
    assert_eq!(i.element.as_deref(), Some("LR[38]"));
    assert_eq!(i.index, Some(38));
    // Between array elements (stride 0x20) there is nothing.
    assert!(!info(base + 0x1004).mapped);
}
