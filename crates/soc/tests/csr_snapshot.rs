//! `Device::csr_snapshot`: registers away from reset, by block address.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{addr, device};
use soc::Device;
use soc_map::Hex32;

fn write(d: &mut Device, name: &str, value: u32) {
    let a = addr(d, name);
    d.write32(a, value).unwrap();
}

#[test]
fn fresh_device_has_an_empty_snapshot() {
    let mut d = device();
    // Touching blocks without changing them does not add them.
    d.read32(addr(&d, "eng0.m2s.q0.q_cfg")).unwrap();
    write(&mut d, "eng0.m2s.q0.q_cfg", 0x0300_0000);
    write(&mut d, "eng0.s2m.q1.comp_cfg", 0xf);
    write(&mut d, "tpb0.sem.set[1]", 0);
    let s = d.csr_snapshot();
    assert!(s.blocks.is_empty(), "{s:?}");
    assert_eq!(
        s.to_yaml(),
        "# neuron-sim CSR snapshot: registers that differ from reset\nblocks: []\n"
    );
}

#[test]
fn only_changed_registers_appear() {
    let mut d = device();
    write(&mut d, "eng0.m2s.q0.q_cfg", 0x0303_0000);
    write(&mut d, "eng0.m2s.q0.tdrl", 0x40);
    let s = d.csr_snapshot();
    assert_eq!(s.blocks.len(), 1);
    let b = &s.blocks[0];
    assert_eq!(b.region, "eng0.m2s.q0");
    assert_eq!(b.block, "udma_m2s_q");
    assert_eq!(b.base.0, 0x10_0200_1000);
    let regs: Vec<(&str, u32)> = b.registers.iter().map(|(k, v)| (k.as_str(), v.0)).collect();
    assert_eq!(regs, vec![("Q_CFG", 0x0303_0000), ("TDRL", 0x40)]);
}

#[test]
fn blocks_are_sorted_by_address() {
    let mut d = device();
    // Written in an order unlike both address order and region-id order
    // (eng127 is expanded before the TPBs but sits above them all:
    // 0x8050_05f0_0000 > tpb4's 0x8020_0000_0000).
    write(&mut d, "tpb4.sem.set[1]", 1);
    write(&mut d, "eng127.m2s.q0.q_cfg", 0x0303_0000);
    write(&mut d, "tpb0.sem.set[2]", 2);
    write(&mut d, "eng1.m2s.q15.tdrl", 1);
    write(&mut d, "eng0.s2m.q2.comp_cfg", 0);
    write(&mut d, "eng1.m2s.q0.tdrl", 1);
    let s = d.csr_snapshot();
    let names: Vec<&str> = s.blocks.iter().map(|b| b.region.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "eng0.s2m.q2",
            "eng1.m2s.q0",
            "eng1.m2s.q15",
            "tpb0.evt_sem",
            "tpb4.evt_sem",
            "eng127.m2s.q0",
        ]
    );
    assert!(s.blocks.windows(2).all(|w| w[0].base < w[1].base));
}

#[test]
fn writing_the_reset_value_back_removes_the_register() {
    let mut d = device();
    write(&mut d, "eng0.m2s.q0.q_cfg", 0x0303_0000);
    write(&mut d, "eng0.m2s.q0.tdrl", 0x40);
    write(&mut d, "eng0.m2s.q0.q_cfg", 0x0300_0000);
    let s = d.csr_snapshot();
    assert_eq!(s.blocks.len(), 1);
    assert_eq!(
        s.blocks[0].registers.keys().collect::<Vec<_>>(),
        vec!["TDRL"]
    );
    write(&mut d, "eng0.m2s.q0.tdrl", 0);
    assert!(d.csr_snapshot().blocks.is_empty());
    // A semaphore back at 0 disappears too.
    write(&mut d, "tpb0.sem.inc[5]", 2);
    assert_eq!(
        d.csr_snapshot().blocks[0].registers.get("SEM_READ[5]"),
        Some(&Hex32(2))
    );
    write(&mut d, "tpb0.sem.dec[5]", 2);
    assert!(d.csr_snapshot().blocks.is_empty());
}

#[test]
fn yaml_of_a_small_scenario() {
    let mut d = device();
    write(&mut d, "tpb0.sem.set[3]", 7);
    write(&mut d, "tpb0.sem.inc[3]", 1);
    write(&mut d, "eng0.m2s.q0.q_cfg", 0x0303_0000);
    write(&mut d, "eng0.m2s.q0.tdrbp_low", 0x1000);
    write(&mut d, "eng0.m2s.q0.tdrl", 0x40);
    write(&mut d, "eng0.s2m.q0.comp_cfg", 0);
    write(&mut d, "tpb0.q7_local_reg.lr[39]", 0x0010_0020);
    write(&mut d, "eng12.gen.axi_queue_cfg[2]", 0x0001_0010);
    let yaml = d.csr_snapshot().to_yaml();
    insta::assert_snapshot!(yaml);
    // The text is stable: the same scenario on another device gives the same bytes.
    let mut e = device();
    write(&mut e, "eng12.gen.axi_queue_cfg[2]", 0x0001_0010);
    write(
        &mut e,
        "tpb0.q7_local_reg.memcopy_carveout_cfg",
        0x0010_0020,
    );
    write(&mut e, "eng0.s2m.q0.comp_cfg", 0);
    write(&mut e, "eng0.m2s.q0.tdrl", 0x40);
    write(&mut e, "eng0.m2s.q0.tdrbp_low", 0x1000);
    write(&mut e, "eng0.m2s.q0.q_cfg", 0x0303_0000);
    write(&mut e, "tpb0.sem.set[3]", 8);
    assert_eq!(e.csr_snapshot().to_yaml(), yaml);
    assert_eq!(e.csr_snapshot(), d.csr_snapshot());
}

#[test]
fn json_form_uses_hex_strings() {
    let mut d = device();
    write(&mut d, "eng0.m2s.q0.tdrl", 0x40);
    let v = serde_json::to_value(d.csr_snapshot()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "blocks": [{
                "region": "eng0.m2s.q0",
                "block": "udma_m2s_q",
                "base": "0x1002001000",
                "registers": { "TDRL": "0x40" }
            }]
        })
    );
}
