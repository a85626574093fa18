//! Specific facts of the built-in maps, each checked against the spec section
//! it comes from.
#![allow(clippy::unwrap_used)]

use csr::{Access, Catalog, CsrMap, RegFile, catalog};

fn block(name: &str) -> &'static CsrMap {
    catalog().unwrap().block(name).unwrap()
}

fn reg_at(map: &CsrMap, offset: u64) -> (String, Access, u32) {
    let r = map.register_at(offset).unwrap();
    (r.name(), r.spec().access(), r.spec().reset())
}

#[test]
fn every_builtin_map_loads_and_is_named_after_its_file() {
    let c = Catalog::builtin().unwrap();
    let names: Vec<&str> = c.block_names().collect();
    assert_eq!(
        names,
        [
            "udma_m2s",
            "udma_m2s_q",
            "udma_s2m",
            "udma_s2m_q",
            "udma_gen",
            "udma_gen_ex",
            "sdma_app",
            "notific",
            "evt_sem",
            "q7_local_reg"
        ]
    );
    for b in csr::BUILTIN_MAPS {
        let m = c.block(b.block).unwrap();
        assert_eq!(m.block(), b.block);
        assert_eq!(b.path, format!("csr-maps/{}.json", b.block));
        // Every register cites a source and describes itself.
        for r in m.registers() {
            assert!(!r.source().trim().is_empty(), "{}.{}", m.block(), r.name());
            assert!(
                !r.description().trim().is_empty(),
                "{}.{}",
                m.block(),
                r.name()
            );
        }
    }
    assert!(c.block("UDMA_M2S_Q").is_some(), "block lookup ignores case");
}

#[test]
fn m2s_queue_comp_cfg_at_0xa0_resets_to_0() {
    // docs/references/driver.md §2.4; docs/references/wiki.md §B.5
    assert_eq!(
        reg_at(block("udma_m2s_q"), 0xA0),
        ("COMP_CFG".into(), Access::Rw, 0)
    );
}

#[test]
fn s2m_queue_comp_cfg_at_0x54_resets_to_0xf() {
    // P9.1 §4.2; docs/references/design.md §8
    assert_eq!(
        reg_at(block("udma_s2m_q"), 0x54),
        ("COMP_CFG".into(), Access::Rw, 0xF)
    );
}

#[test]
fn s2m_pkt_cfg_resets_to_0x40() {
    let m = block("udma_s2m_q");
    assert_eq!(m.find("pkt_cfg", None), Some(0x5C));
    assert_eq!(m.register("PKT_CFG").unwrap().reset(), 0x40);
}

#[test]
fn q_cfg_resets_to_0x03000000_in_both_directions() {
    for b in ["udma_m2s_q", "udma_s2m_q"] {
        let m = block(b);
        let (name, access, reset) = reg_at(m, 0x20);
        assert_eq!(
            (name.as_str(), access, reset),
            ("Q_CFG", Access::Rw, 0x0300_0000)
        );
        let q_cfg = m.register("Q_CFG").unwrap();
        assert_eq!(q_cfg.field("EN_PREF").unwrap().mask(), 1 << 16);
    }
    assert_eq!(
        block("udma_m2s_q")
            .register("Q_CFG")
            .unwrap()
            .field("EN_SCHEDULING")
            .unwrap()
            .mask(),
        1 << 17
    );
    assert_eq!(
        block("udma_s2m_q")
            .register("Q_CFG")
            .unwrap()
            .field("EN_STREAM")
            .unwrap()
            .mask(),
        1 << 17
    );
}

#[test]
fn rlimit_mask_resets_to_0x7() {
    let m = block("udma_m2s_q");
    assert_eq!(reg_at(m, 0x74), ("RLIMIT_MASK".into(), Access::Rw, 0x7));
    let f = m
        .register("RLIMIT_MASK")
        .unwrap()
        .field("INTERNAL_PAUSE_DMB")
        .unwrap();
    assert_eq!(f.mask(), 1 << 2);
}

#[test]
fn doorbells_at_0x38_with_24_bit_increment() {
    for (b, name) in [("udma_m2s_q", "TDRTP_INC"), ("udma_s2m_q", "RDRTP_INC")] {
        let m = block(b);
        assert_eq!(m.find(&name.to_ascii_lowercase(), None), Some(0x38));
        let spec = m.register(name).unwrap();
        assert_eq!(spec.access(), Access::Inc);
        assert_eq!(spec.masks().inc, 0x00FF_FFFF);
        let mut rf = RegFile::new(m);
        let out = rf.write(0x38, 0x0100_0010).unwrap();
        assert_eq!(out.increment(), Some(0x10));
        assert_eq!(out.ignored, 0x0100_0000);
        assert_eq!(rf.read(0x38).unwrap().value, 0, "the doorbell reads 0");
    }
}

#[test]
fn q_sw_ctrl_offsets_differ_per_direction() {
    // docs/references/design.md §8: M2S +0xB0, S2M +0x64; RST_Q = 0x100.
    for (b, off) in [("udma_m2s_q", 0xB0), ("udma_s2m_q", 0x64)] {
        let m = block(b);
        assert_eq!(m.find("q_sw_ctrl", None), Some(off));
        let mut rf = RegFile::new(m);
        let out = rf.write(off, 0x100).unwrap();
        assert!(out.pulsed("RST_Q"));
        assert_eq!(out.pulses, 0x100);
        assert_eq!(rf.read(off).unwrap().value, 0);
    }
    // S2M has no RST_DMB (bit 0 reserved).
    let s2m = block("udma_s2m_q");
    assert!(
        s2m.register("Q_SW_CTRL")
            .unwrap()
            .field("RST_DMB")
            .is_none()
    );
    let mut rf = RegFile::new(s2m);
    let out = rf.write(0x64, 0x1).unwrap();
    assert_eq!(out.pulses, 0);
    assert_eq!(out.ignored, 1);
}

#[test]
fn ring_pointer_registers_match_between_directions() {
    // docs/references/driver.md §2.5: 0x20..0x4C identical in position.
    let m2s = block("udma_m2s_q");
    let s2m = block("udma_s2m_q");
    for off in (0x20..=0x50).step_by(4) {
        let a = m2s.register_at(off).unwrap().name();
        let b = s2m.register_at(off).unwrap().name();
        if a.starts_with('Q') {
            assert_eq!(a, b);
        } else {
            // TDRBP_LOW vs RDRBP_LOW: same register, direction prefix T/R.
            assert_eq!((&a[..1], &a[1..]), ("T", &b[1..]), "{a} vs {b}");
            assert!(b.starts_with('R'), "{b}");
        }
    }
    // Ring ids start at 1 after reset (docs/references/driver.md §3.6).
    for (m, name) in [(m2s, "TDRHP"), (m2s, "TDRTP"), (s2m, "RCRHP")] {
        let spec = m.register(name).unwrap();
        assert_eq!(spec.field("RING_ID").unwrap().reset(), 1);
        assert_eq!(spec.access(), Access::Ro);
    }
}

#[test]
fn memcopy_cfg_registers_at_lr_39_and_40() {
    // docs/references/wiki.md §D.3: lr[i] at LOCAL_REG + 0x1000 + i*0x20.
    let m = block("q7_local_reg");
    assert_eq!(
        m.find("MEMCOPY_CARVEOUT_CFG", None),
        Some(0x1000 + 39 * 0x20)
    );
    assert_eq!(m.find("memcopy_dma_cfg", None), Some(0x1000 + 40 * 0x20));
    assert_eq!(m.lookup("lr[39]").unwrap().name(), "MEMCOPY_CARVEOUT_CFG");
    assert_eq!(m.lookup("LR[40]").unwrap().name(), "MEMCOPY_DMA_CFG");
    assert_eq!(m.find("LR", Some(38)), Some(0x1000 + 38 * 0x20));
    assert_eq!(m.find("LR", Some(41)), Some(0x1000 + 41 * 0x20));
    assert_eq!(m.find("LR", Some(60)), None);
    assert_eq!(
        m.decode("memcopy_dma_cfg", 0x0003_ffff),
        Some(vec![("DMA_ENGINE_MASK", 0xffff), ("QUEUE_MASK", 3)])
    );
    assert_eq!(m.find("REG", Some(63)), Some(0x2000 + 63 * 4));
}

#[test]
fn evt_sem_windows() {
    // docs/references/driver.md §6.4: events +0, read +0x1000, set +0x1400, inc +0x1800, dec +0x1C00.
    let m = block("evt_sem");
    assert_eq!(m.find("sem_inc", Some(1)), Some(0x1804));
    assert_eq!(m.register_at(0x1804).unwrap().name(), "SEM_INC[1]");
    assert_eq!(m.find("SEM_READ", Some(255)), Some(0x13FC));
    assert_eq!(m.find("SEM_SET", Some(0)), Some(0x1400));
    assert_eq!(m.find("SEM_DEC", Some(2)), Some(0x1C08));
    assert_eq!(m.find("EVENT", Some(3)), Some(0xC));
    let mut rf = RegFile::new(m);
    assert_eq!(rf.write(0x1804, 16).unwrap().increment(), Some(16));
    assert_eq!(rf.write(0x1C04, 2).unwrap().decrement(), Some(2));
    assert!(rf.write(0x1004, 1).unwrap().read_only);
    assert_eq!(m.element_count(), 5 * 256);
}

#[test]
fn engine_level_facts() {
    let m2s = block("udma_m2s");
    assert_eq!(reg_at(m2s, 0x204).1, Access::Wo);
    assert_eq!(
        m2s.register("ERR_LOG_MASK")
            .unwrap()
            .field("PREF_RING_ID")
            .unwrap()
            .mask(),
        1 << 17
    );
    assert_eq!(m2s.register("PREF_QUEUE_EN").unwrap().offset(), 0x25C);
    assert_eq!(m2s.register("PREF_QUEUE_EN").unwrap().reset(), 0xFFFF);
    assert_eq!(
        m2s.register("DESC_PREF_CFG_2").unwrap().reset(),
        0x0001_0040
    );
    assert_eq!(m2s.register("DESC_PREF_CFG_3").unwrap().reset(), 0x1041);
    assert_eq!(m2s.register("DWRR_CFG_SCHED").unwrap().reset(), 0x0007_0200);
    assert_eq!(m2s.register("COMP_CFG_COAL").unwrap().reset(), 0x186A0);
    assert_eq!(m2s.register("STREAM_RLIMIT_MASK").unwrap().offset(), 0x3D4);
    let s2m = block("udma_s2m");
    assert_eq!(
        s2m.register("ERR_LOG_MASK")
            .unwrap()
            .field("PREF_RING_ID")
            .unwrap()
            .mask(),
        1 << 11
    );
    assert_eq!(s2m.register("COMP_CFG_1C").unwrap().reset(), 4);
    let gen_block = block("udma_gen");
    assert_eq!(
        gen_block.register("DMA_MISC_REVISION").unwrap().reset(),
        0x1C36_0003
    );
    assert_eq!(gen_block.register("AXI_CFG_1").unwrap().reset(), 0x2710);
    assert_eq!(
        gen_block.find("AXI_QUEUE_CFG", Some(15)),
        Some(0x2C08 + 15 * 12)
    );
    assert_eq!(gen_block.find("SEC_A_INT_MASK", None), Some(0x2010));
    let sdma = block("sdma_app");
    assert_eq!(sdma.register("ROBERT_TXDF").unwrap().reset(), 0x14);
    assert_eq!(
        sdma.register("BROADCAST_CFG_GROUP").unwrap().reset(),
        0xFFFF
    );
    assert_eq!(
        sdma.register("NOTIFIC_S2M_CRC_INIT").unwrap().reset(),
        0xFFFF_FFFF
    );
    let nq = block("notific");
    assert_eq!(nq.find("NQ_HEAD", Some(2)), Some(0x10C + 2 * 0x28));
}

#[test]
fn axi_queue_error_status_is_read_clear_and_state_bits_are_ro() {
    let m = block("udma_gen");
    let mut rf = RegFile::new(m);
    let err = m.find("AXI_QUEUE_ERROR_STATUS", Some(3)).unwrap();
    rf.hw_set(err, 0x5).unwrap();
    assert_eq!(rf.read(err).unwrap().value, 0x5);
    assert_eq!(rf.read(err).unwrap().value, 0);
    let cfg = m.find("AXI_QUEUE_CFG", Some(3)).unwrap();
    let out = rf.write(cfg, 1 << 12 | 1).unwrap();
    assert_eq!(out.ignored, 1 << 12 | 1);
}

#[test]
fn lookup_failures_say_what_is_wrong_with_the_name() {
    let m = block("notific");
    let e = |text: &str| m.try_lookup(text).unwrap_err().to_string();
    // Only the index is out of range: the register exists.
    assert_eq!(
        e("NQ_SIZE[16]"),
        "index 16 of NQ_SIZE is out of range: NQ_SIZE has indices 0..=15"
    );
    assert_eq!(
        e("nq_size[0x10]"),
        "index 16 of NQ_SIZE is out of range: NQ_SIZE has indices 0..=15"
    );
    assert_eq!(
        e("NQ_SIZE"),
        "NQ_SIZE is an array: give an index, e.g. NQ_SIZE[0] (indices 0..=15)"
    );
    assert_eq!(e("NOPE"), "no register `NOPE`");
    assert_eq!(
        e("NQ_SIZE[x]"),
        "`NQ_SIZE[x]`: `x` is not an index (a decimal or 0x number)"
    );
    assert_eq!(e("NQ_SIZE[1"), "`NQ_SIZE[1`: expected NAME or NAME[INDEX]");
    assert_eq!(m.try_lookup("NQ_SIZE[15]").unwrap().name(), "NQ_SIZE[15]");
    // Skipped positions of an array are other registers' aliases.
    let lr = block("q7_local_reg");
    assert_eq!(
        lr.try_lookup("LR[39]").unwrap().name(),
        "MEMCOPY_CARVEOUT_CFG"
    );
    let q = block("udma_m2s_q");
    let e = q.try_lookup("q_cfg[0]").unwrap_err().to_string();
    assert_eq!(e, "Q_CFG is not an array: no index");
}
