//! Register accesses through `Device::read32` / `write32` on the Trn2 maps:
//! reset values, access kinds, side effects (doorbells, pulses, semaphores)
//! and the faults of bad register addresses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{addr, changed, device};
use csr::Catalog;
use soc::{BusFault, Device, DeviceEvent};
use soc_map::Hex32;

const ENG0: u64 = 0x10_0200_0000;
const M2S_Q0: u64 = ENG0 + 0x1000;
const GEN0: u64 = ENG0 + 0x3_8000;

#[test]
fn reset_values_read_back() {
    let mut d = device();
    let cases = [
        ("eng0.m2s.q0.q_cfg", 0x0300_0000),
        ("eng0.m2s.q0.tdrhp", 0x4000_0000),
        ("eng0.m2s.q0.tdrtp", 0x4000_0000),
        ("eng0.m2s.q0.desc_pref_cfg", 0x80),
        ("eng0.m2s.q0.rlimit_mask", 0x7),
        ("eng5.s2m.q7.comp_cfg", 0xf),
        ("eng5.s2m.q7.pkt_cfg", 0x40),
        ("eng0.m2s.q0.comp_cfg", 0),
        ("eng0.m2s.pref_queue_en", 0xffff),
        ("eng9.gen.dma_misc_revision", 0x1c36_0003),
        ("eng9.gen.spare_ones0", 0xffff_ffff),
        ("eng9.gen.axi_queue_cfg[5]", 0x0001_0000),
        ("tpb0.sem.read[0]", 0),
    ];
    for (name, want) in cases {
        let a = addr(&d, name);
        assert_eq!(d.read32(a).unwrap(), want, "{name}");
    }
    // Reads of plain registers have no side effects.
    assert!(d.take_events().is_empty());
    for block in ["eng0.m2s.q0", "eng5.s2m.q7", "eng0.m2s", "tpb0.evt_sem"] {
        assert!(changed(&d, block).is_empty(), "{block}");
    }
}

#[test]
fn peek_reg_matches_reset_without_instantiating() {
    let d = device();
    let t = d.reg_target(M2S_Q0 + 0x20).unwrap().unwrap();
    assert_eq!(d.peek_reg(t), Some(0x0300_0000));
    assert_eq!(d.reg_target(0x1000).unwrap(), None, "HBM is not a register");
}

#[test]
fn rw_register_ignores_reserved_bits() {
    let mut d = device();
    let q_cfg = M2S_Q0 + 0x20;
    // Q_CFG fields cover every bit except 18, 19, 21, 22, 23.
    let reserved = 0x00ec_0000;
    let w = d.write32(q_cfg, 0xffff_ffff).unwrap().unwrap();
    assert_eq!(w.region, "eng0.m2s.q0");
    assert_eq!(w.register, "Q_CFG");
    assert_eq!(w.old, 0x0300_0000);
    assert_eq!(w.new, !reserved);
    assert_eq!(w.ignored, reserved);
    assert!(!w.read_only);
    assert_eq!(d.read32(q_cfg).unwrap(), !reserved);
    assert_eq!(
        d.take_events(),
        vec![DeviceEvent::IgnoredWrite {
            region: "eng0.m2s.q0".into(),
            register: "Q_CFG".into(),
            written: Hex32(0xffff_ffff),
            ignored: Hex32(reserved),
            read_only: false,
            cycle: 0,
        }]
    );
    // A write that only touches real fields reports nothing.
    let w = d.write32(q_cfg, 0x0303_0000).unwrap().unwrap();
    assert_eq!((w.old, w.new, w.ignored), (!reserved, 0x0303_0000, 0));
    assert!(d.take_events().is_empty());
    assert_eq!(d.read32(q_cfg).unwrap(), 0x0303_0000);
}

#[test]
fn register_without_fields_stores_all_bits() {
    let mut d = device();
    let a = M2S_Q0 + 0x2c; // TDRBP_HIGH
    let w = d.write32(a, 0xdead_beef).unwrap().unwrap();
    assert_eq!((w.new, w.ignored), (0xdead_beef, 0));
    assert_eq!(d.read32(a).unwrap(), 0xdead_beef);
}

#[test]
fn read_only_write_leaves_the_value() {
    let mut d = device();
    let tdrhp = M2S_Q0 + 0x34;
    let w = d.write32(tdrhp, 0x1234).unwrap().unwrap();
    assert!(w.read_only);
    assert_eq!((w.old, w.new), (0x4000_0000, 0x4000_0000));
    assert_eq!(d.read32(tdrhp).unwrap(), 0x4000_0000);
    let events = d.take_events();
    assert!(
        matches!(
            events.as_slice(),
            [DeviceEvent::IgnoredWrite { register, read_only: true, written: Hex32(0x1234), .. }]
                if register == "TDRHP"
        ),
        "{events:?}"
    );
    assert!(changed(&d, "eng0.m2s.q0").is_empty());
}

#[test]
fn read_only_fields_inside_a_rw_register() {
    let mut d = device();
    let a = addr(&d, "eng2.gen.axi_queue_cfg[3]");
    // RX_STATE (bit 0) and TX_STATE (bit 12) are RO fields.
    let w = d.write32(a, 0x0000_1001 | 0x0004_0000).unwrap().unwrap();
    assert!(!w.read_only);
    assert_eq!(w.new, 0x0004_0000);
    assert_eq!(w.ignored, 0x0000_1001);
    assert_eq!(d.read32(a).unwrap(), 0x0004_0000);
}

#[test]
fn w0c_and_rc_on_the_real_maps() {
    let mut d = device();
    // SEC_A_INT_CAUSE is W0C with reserved bits 31:28; hardware sets it,
    // so software can neither set a bit nor store the reserved ones.
    let cause = GEN0 + 0x2000;
    let w = d.write32(cause, 0xffff_ffff).unwrap().unwrap();
    assert!(!w.read_only);
    assert_eq!((w.old, w.new, w.ignored), (0, 0, 0xf000_0000));
    assert_eq!(d.read32(cause).unwrap(), 0);
    // AXI_QUEUE_ERROR_STATUS is RC: a write has no effect at all.
    let status = addr(&d, "eng0.gen.axi_queue_error_status[4]");
    assert_eq!(status, GEN0 + 0x2c04 + 4 * 0xc);
    let w = d.write32(status, 0xffff_ffff).unwrap().unwrap();
    assert!(w.read_only);
    assert_eq!(d.read32(status).unwrap(), 0);
}

/// The Trn2 device with udma_gen patched so that its W0C/RC registers come
/// out of reset with bits set, and PRI_A_INT_CAUSE made W1C: the access
/// semantics can then be observed through the bus.
fn device_with_set_cause_bits() -> Device {
    let json = csr::BUILTIN_MAPS
        .iter()
        .find(|b| b.block == "udma_gen")
        .unwrap()
        .json;
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    for r in v["registers"].as_array_mut().unwrap() {
        match r["name"].as_str().unwrap() {
            "SEC_A_INT_CAUSE" => r["reset"] = "0x000300f5".into(),
            "AXI_QUEUE_ERROR_STATUS" => r["reset"] = "0x00000005".into(),
            "PRI_A_INT_CAUSE" => {
                r["access"] = "W1C".into();
                r["reset"] = "0x000000f0".into();
            }
            _ => {}
        }
    }
    let map = csr::CsrMap::from_json(&v.to_string(), "patched udma_gen").unwrap();
    let mut catalog = Catalog::builtin().unwrap();
    catalog.insert(map);
    let catalog: &'static Catalog = Box::leak(Box::new(catalog));
    Device::new(soc_map::trn2().unwrap(), catalog).unwrap()
}

#[test]
fn w0c_write_zero_clears_write_one_keeps() {
    let mut d = device_with_set_cause_bits();
    let cause = GEN0 + 0x2000;
    assert_eq!(d.read32(cause).unwrap(), 0x0003_00f5);
    // Zeros in bits 7:4 clear them; every other bit is written as 1.
    let w = d.write32(cause, !0x0000_00f0).unwrap().unwrap();
    assert_eq!((w.old, w.new), (0x0003_00f5, 0x0003_0005));
    assert_eq!(d.read32(cause).unwrap(), 0x0003_0005);
    // Writing 0 clears everything.
    d.write32(cause, 0).unwrap();
    assert_eq!(d.read32(cause).unwrap(), 0);
    // Another engine's block is untouched.
    assert_eq!(d.read32(cause + 0x10_0000).unwrap(), 0x0003_00f5);
}

#[test]
fn w1c_write_one_clears_write_zero_keeps() {
    let mut d = device_with_set_cause_bits();
    let cause = GEN0;
    assert_eq!(d.read32(cause).unwrap(), 0xf0);
    let w = d.write32(cause, 0x30).unwrap().unwrap();
    assert_eq!((w.old, w.new, w.read_only), (0xf0, 0xc0, false));
    d.write32(cause, 0).unwrap();
    assert_eq!(d.read32(cause).unwrap(), 0xc0);
    d.write32(cause, 0xffff_ffff).unwrap();
    assert_eq!(d.read32(cause).unwrap(), 0);
}

#[test]
fn rc_read_returns_then_clears() {
    let mut d = device_with_set_cause_bits();
    let status = GEN0 + 0x2c04 + 2 * 0xc;
    let t = d.reg_target(status).unwrap().unwrap();
    // A peek has no side effect.
    assert_eq!(d.peek_reg(t), Some(5));
    assert_eq!(d.peek_reg(t), Some(5));
    assert_eq!(d.read32(status).unwrap(), 5);
    assert_eq!(d.read32(status).unwrap(), 0);
    assert_eq!(d.peek_reg(t), Some(0));
    // Only this element was cleared.
    assert_eq!(d.read32(status + 0xc).unwrap(), 5);
}

#[test]
fn doorbell_takes_the_masked_increment_and_faults_on_an_unconfigured_ring() {
    let mut d = device();
    let tdrtp_inc = addr(&d, "eng0.m2s.q0.tdrtp_inc");
    assert_eq!(tdrtp_inc, M2S_Q0 + 0x38);
    d.write32(tdrtp_inc, 0x0100_0005).unwrap();
    let events = d.take_events();
    // Bit 24 is outside the 24-bit VAL field: reported as ignored.
    assert!(events.iter().any(|e| matches!(
        e,
        DeviceEvent::IgnoredWrite {
            ignored: Hex32(0x0100_0000),
            ..
        }
    )));
    // INC registers read 0.
    assert_eq!(d.read32(tdrtp_inc).unwrap(), 0);
    // The doorbell reaches the queue after the doorbell latency; a ring of
    // length 0 cannot take 5 descriptors: the simulator-defined overrun
    // cause, and the tail stays put.
    d.run(None);
    let events = d.take_events();
    let overrun = events.iter().any(|e| match e {
        DeviceEvent::Engine(ev) => matches!(
            &ev.kind,
            udma::EventKind::Fault { cause, .. } if cause == "SEC_D_INT_CAUSE.M2S_DOORBELL_OVERRUN"
        ),
        _ => false,
    });
    assert!(overrun, "{events:?}");
    assert_eq!(
        d.read32(addr(&d, "eng0.gen.sec_d_int_cause")).unwrap() & 1,
        1
    );
    assert_eq!(
        d.read32(addr(&d, "eng0.m2s.q0.tdrtp")).unwrap(),
        0x4000_0000
    );

    // With a ring, the full 24-bit increment is taken (up to the ring size).
    let q = "eng12.s2m.q3";
    d.write32(addr(&d, &format!("{q}.rdrl")), 256).unwrap();
    d.write32(addr(&d, &format!("{q}.rdrtp_inc")), 200).unwrap();
    d.run(None);
    assert_eq!(
        d.read32(addr(&d, &format!("{q}.rdrtp"))).unwrap(),
        0x4000_0000 | 200
    );
}

#[test]
fn change_state_commands_drive_the_engine_state() {
    let mut d = device();
    let change_state = addr(&d, "eng0.m2s.change_state");
    let state = addr(&d, "eng0.m2s.state");
    assert_eq!(change_state, ENG0 + 0x204);
    assert_eq!(
        d.read32(state).unwrap(),
        0,
        "disabled until NORMAL is written"
    );
    let w = d.write32(change_state, 0x1).unwrap().unwrap();
    assert!(!w.read_only);
    // NORMAL: every 2-bit sub-state reads 1, the last command in 18:16.
    assert_eq!(d.read32(state).unwrap(), 0x0001_1111);
    // WO: reads 0.
    assert_eq!(d.read32(change_state).unwrap(), 0);
    d.write32(change_state, 0x4).unwrap();
    assert_eq!(d.read32(state).unwrap(), 0x0004_2222, "ABORT");
    let events = d.take_events();
    let states: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            DeviceEvent::Engine(ev) => match &ev.kind {
                udma::EventKind::State { state, .. } => Some(state.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(states, vec!["normal", "abort"]);
}

#[test]
fn semaphores_set_inc_dec_with_wrap_around() {
    let mut d = device();
    let read = addr(&d, "tpb0.sem.read[3]");
    let set = addr(&d, "tpb0.sem.set[3]");
    let inc = addr(&d, "tpb0.sem.inc[3]");
    let dec = addr(&d, "tpb0.sem.dec[3]");
    let sem = |old, new| DeviceEvent::Semaphore {
        region: "tpb0.evt_sem".into(),
        index: 3,
        old,
        new,
        cycle: 0,
    };

    d.write32(set, 10).unwrap();
    assert_eq!(d.read32(read).unwrap(), 10);
    d.write32(inc, 5).unwrap();
    assert_eq!(d.read32(read).unwrap(), 15);
    d.write32(dec, 20).unwrap();
    assert_eq!(d.read32(read).unwrap(), 0xffff_fffb);
    d.write32(inc, 6).unwrap();
    assert_eq!(d.read32(read).unwrap(), 1);
    d.write32(set, 0xffff_ffff).unwrap();
    d.write32(inc, 1).unwrap();
    assert_eq!(d.read32(read).unwrap(), 0);
    assert_eq!(
        d.take_events(),
        vec![
            sem(0, 10),
            sem(10, 15),
            sem(15, 0xffff_fffb),
            sem(0xffff_fffb, 1),
            sem(1, 0xffff_ffff),
            sem(0xffff_ffff, 0),
        ]
    );
    // The windows themselves read 0.
    for a in [set, inc, dec] {
        assert_eq!(d.read32(a).unwrap(), 0);
    }
    // Neighbouring semaphores and other TPBs are untouched.
    d.write32(inc, 7).unwrap();
    assert_eq!(d.read32(read + 4).unwrap(), 0);
    assert_eq!(d.read32(addr(&d, "tpb1.sem.read[3]")).unwrap(), 0);
    assert_eq!(d.read32(read).unwrap(), 7);
}

#[test]
fn semaphore_read_window_is_read_only() {
    let mut d = device();
    let read = addr(&d, "tpb2.sem.read[9]");
    d.write32(addr(&d, "tpb2.sem.set[9]"), 4).unwrap();
    d.take_events();
    let w = d.write32(read, 99).unwrap().unwrap();
    assert!(w.read_only);
    assert_eq!(d.read32(read).unwrap(), 4);
    let events = d.take_events();
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, DeviceEvent::Semaphore { .. })),
        "{events:?}"
    );
}

#[test]
fn events_accumulate_until_taken() {
    let mut d = device();
    let inc = addr(&d, "tpb0.sem.inc[1]");
    d.write32(inc, 1).unwrap();
    d.write32(inc, 2).unwrap();
    assert_eq!(d.events().len(), 2);
    let taken = d.take_events();
    assert_eq!(taken.len(), 2);
    assert!(matches!(
        taken[1],
        DeviceEvent::Semaphore { old: 1, new: 3, .. }
    ));
    assert!(d.events().is_empty());
    assert!(d.take_events().is_empty());
}

#[test]
fn unaligned_register_access_faults() {
    let mut d = device();
    for a in [M2S_Q0 + 0x21, M2S_Q0 + 0x22, M2S_Q0 + 0x23] {
        assert_eq!(
            d.read32(a),
            Err(BusFault::Unaligned {
                addr: a,
                region: "eng0.m2s.q0".into()
            })
        );
        assert!(matches!(d.write32(a, 1), Err(BusFault::Unaligned { .. })));
    }
    let a = addr(&d, "tpb0.sem.inc[0]") + 1;
    assert!(matches!(d.write32(a, 1), Err(BusFault::Unaligned { .. })));
    assert!(d.take_events().is_empty());
    assert!(changed(&d, "eng0.m2s.q0").is_empty());
    let msg = d.read32(M2S_Q0 + 0x22).unwrap_err().to_string();
    assert!(msg.contains("unaligned"), "{msg}");
}

#[test]
fn hole_in_a_register_block_faults() {
    let mut d = device();
    let hole = M2S_Q0 + 0x54;
    let want = BusFault::NoRegister {
        addr: hole,
        region: "eng0.m2s.q0".into(),
        offset: 0x54,
    };
    assert_eq!(d.read32(hole), Err(want.clone()));
    assert_eq!(d.write32(hole, 1), Err(want.clone()));
    assert!(d.take_events().is_empty());
    assert!(changed(&d, "eng0.m2s.q0").is_empty());
    assert!(want.to_string().contains("no register at offset 0x54"));
    // Past the engine registers of a container block, before nothing.
    assert!(matches!(
        d.read32(ENG0 + 0x1_1000),
        Err(BusFault::NoRegister {
            offset: 0x1_1000,
            ..
        })
    ));
    // EVT_SEM decodes 1 MiB but only the first 8 KiB hold registers.
    let evt_sem = addr(&d, "tpb0.evt_sem");
    assert!(matches!(
        d.read32(evt_sem + 0x2000),
        Err(BusFault::NoRegister { offset: 0x2000, .. })
    ));
}

#[test]
fn register_block_is_not_memory() {
    let mut d = device();
    let mut buf = [0u8; 4];
    assert!(matches!(
        d.read_bytes(M2S_Q0 + 0x20, &mut buf),
        Err(BusFault::NotMemory { .. })
    ));
    assert!(matches!(
        d.write_bytes(M2S_Q0 + 0x20, &[1, 2, 3, 4]),
        Err(BusFault::NotMemory { .. })
    ));
    assert!(matches!(
        d.fill(M2S_Q0, 16, 0xff),
        Err(BusFault::NotMemory { .. })
    ));
    // Register reads still see the reset value.
    assert_eq!(d.read32(M2S_Q0 + 0x20).unwrap(), 0x0300_0000);
}

#[test]
fn device_refuses_a_map_naming_a_missing_block() {
    let mut catalog = Catalog::default();
    for b in csr::BUILTIN_MAPS.iter().filter(|b| b.block != "evt_sem") {
        catalog.insert(csr::CsrMap::from_json(b.json, b.path).unwrap());
    }
    let catalog: &'static Catalog = Box::leak(Box::new(catalog));
    let err = Device::new(soc_map::trn2().unwrap(), catalog).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("evt_sem") && msg.contains("tpb0.evt_sem"),
        "{msg}"
    );
}

/// A map whose region names a CSR block the catalog does not have is bad
/// input, named: the region and the block (every instance of the node
/// shares the name, and the check sees it once per node).
#[test]
fn a_map_naming_an_unknown_block_is_refused() {
    let mut spec: serde_json::Value = serde_json::from_str(soc_map::TRN2_MAP_JSON).unwrap();
    let node = &mut spec["templates"]["udma_unit"][0];
    assert_eq!(node["block"], "udma_m2s");
    node["block"] = "udma_m2x".into();
    let map = soc_map::SocMap::from_json(&spec.to_string(), "t.json").unwrap();
    let err = Device::new(map, csr::catalog().unwrap()).unwrap_err();
    assert!(
        err.0
            .contains("names CSR block `udma_m2x`, which is not in csr-maps/"),
        "{}",
        err.0
    );
    assert!(err.0.contains("region `eng0.m2s`"), "{}", err.0);
}

/// The firmware's register snapshot (`Device::read32_run`) reads what one
/// `read32` per register reads: inside a block, across its end, with and
/// without the firmware as master.
#[test]
fn read32_run_matches_one_read_per_register() {
    let mut d = device();
    let reg0 = addr(&d, "tpb0.q7_local_reg.reg[0]");
    for n in 0..64u64 {
        d.write32(reg0 + 4 * n, 0x1000_0000 + n as u32 * 7).unwrap();
    }
    let id = d.map().by_name("tpb0.q7_local_reg").unwrap();
    let block = d.map().region(id);
    let block_end = block.base + block.size_bytes;
    for master in [soc::Master::Firmware(0), soc::Master::Host] {
        let prev = d.set_bus_master(master);
        for (start, n) in [(reg0, 64usize), (reg0 + 8, 5), (block_end - 8, 4)] {
            let mut run = vec![0u32; n];
            d.read32_run(start, &mut run);
            let one: Vec<u32> = (0..n as u64)
                .map(|i| d.read32(start + 4 * i).unwrap_or(0))
                .collect();
            assert_eq!(run, one, "{master:?} at {start:#x} x{n}");
        }
        d.set_bus_master(prev);
    }
    let mut run = [0u32; 3];
    d.set_bus_master(soc::Master::Firmware(0));
    d.read32_run(reg0 + 4, &mut run);
    assert_eq!(run, [0x1000_0007, 0x1000_000e, 0x1000_0015]);
}

/// A probe's finding: on the SENG engines six mask registers read the
/// driver's boot masks at cycle 0 while `csr list`, `map` and docs/csr said
/// only "reset 0", so `read32 … == 0` written from the docs failed. Their
/// descriptions now say the value the device starts with; this holds them
/// to it, on a SENG engine, and the reset value on an H2T engine.
#[test]
fn the_seng_boot_masks_are_the_values_their_descriptions_give() {
    let mut d = device();
    for reg in [
        "m2s.err_log_mask",
        "s2m.err_log_mask",
        "gen.sec_a_int_mask",
        "gen.sec_a_int_abort_msk",
        "gen.sec_b_int_mask",
        "gen.sec_b_int_abort_msk",
    ] {
        let seng = addr(&d, &format!("eng7.{reg}"));
        let info = soc::describe(&d, seng);
        let text = info.description.unwrap();
        let stated = text
            .split("read32 there gives ")
            .nth(1)
            .and_then(|t| t.get(..10))
            .and_then(|h| u32::from_str_radix(h.trim_start_matches("0x"), 16).ok())
            .unwrap_or_else(|| panic!("{reg}: no power-on value in {text:?}"));
        assert_ne!(stated, 0, "{reg}");
        assert_eq!(d.read32(seng).unwrap(), stated, "{reg}");
        let h2t = addr(&d, &format!("eng128.{reg}"));
        assert_eq!(
            Some(Hex32(d.read32(h2t).unwrap())),
            soc::describe(&d, h2t).reset,
            "{reg} on an H2T engine"
        );
    }
}
