//! The built-in Trn2 map: decode examples from the foundation issue and the
//! spec sections they come from, plus validation of bad maps.
#![allow(clippy::unwrap_used)]

use soc_map::{Hole, RegionKind, SocMap, trn2};

fn name_of(map: &SocMap, addr: u64) -> Option<String> {
    map.decode(addr).region.map(|r| map.name(r).to_string())
}

#[test]
fn builtin_map_loads_and_has_every_engine() {
    let map = trn2().unwrap();
    for e in 0..132 {
        for sub in ["m2s", "s2m", "gen", "gen_ex", "sdma_app", "notific"] {
            assert!(
                map.by_name(&format!("eng{e}.{sub}")).is_some(),
                "eng{e}.{sub}"
            );
        }
        for q in 0..16 {
            assert!(map.by_name(&format!("eng{e}.m2s.q{q}")).is_some());
            assert!(map.by_name(&format!("eng{e}.s2m.q{q}")).is_some());
        }
    }
    assert!(map.by_name("eng132.m2s").is_none());
    // Broadcast mirrors only on SDMA_0 and SDMA_16 of each cluster (docs/references/wiki.md §I.3).
    let with_bcast: Vec<u32> = (0..132)
        .filter(|e| map.by_name(&format!("eng{e}.bcast")).is_some())
        .collect();
    assert_eq!(with_bcast, vec![0, 16, 32, 48, 64, 80, 96, 112]);
    for t in 0..8 {
        for sub in [
            "sbuf",
            "psum",
            "evt_sem",
            "dge_memory",
            "scratch",
            "q7_local_reg",
        ] {
            assert!(map.by_name(&format!("tpb{t}.{sub}")).is_some());
        }
    }
}

#[test]
fn issue_examples_decode() {
    let map = trn2().unwrap();
    // SBUF partition 1, offset 0x10.
    let d = map.decode(0x20_0004_0010);
    assert_eq!(name_of(&map, 0x20_0004_0010).as_deref(), Some("tpb0.sbuf"));
    assert_eq!((d.partition, d.offset, d.hole), (Some(1), 0x10, None));
    // The SBUF partition pad (224 KiB..256 KiB) is not mapped.
    let d = map.decode(0x20_0003_8000);
    assert_eq!(
        d.hole,
        Some(Hole::PartitionPad {
            partition: 0,
            offset: 0x38000
        })
    );
    // PSUM partition 1 offset 0x10, bank 0.
    let d = map.decode(0x28_0200_8010);
    assert_eq!(name_of(&map, 0x28_0200_8010).as_deref(), Some("tpb0.psum"));
    assert_eq!(
        (d.partition, d.offset, d.bank, d.hole),
        (Some(1), 0x10, Some(0), None)
    );
    assert_eq!(map.decode(0x28_0200_8810).bank, Some(1));
    assert!(matches!(
        map.decode(0x28_0200_4000).hole,
        Some(Hole::PartitionPad { partition: 0, .. })
    ));
    // EVT_SEM increment window, semaphore 1 → offset 0x1804 in the block.
    let d = map.decode(0x28_0270_1804);
    assert_eq!(
        name_of(&map, 0x28_0270_1804).as_deref(),
        Some("tpb0.evt_sem")
    );
    assert_eq!(d.offset, 0x1804);
    // Engine 0 M2S queue 0 doorbell, S2M queue 0 doorbell (docs/references/driver.md §6.2).
    assert_eq!(
        name_of(&map, 0x10_0200_1038).as_deref(),
        Some("eng0.m2s.q0")
    );
    assert_eq!(map.decode(0x10_0200_1038).offset, 0x38);
    assert_eq!(
        name_of(&map, 0x10_0202_1038).as_deref(),
        Some("eng0.s2m.q0")
    );
    // SE_0 channel 5 queue 5 doorbell (docs/references/wiki.md §I.3).
    assert_eq!(
        name_of(&map, 0x10_0250_6038).as_deref(),
        Some("eng5.m2s.q5")
    );
}

#[test]
fn fabric_layout_facts() {
    let map = trn2().unwrap();
    let base = |n: &str| map.region(map.by_name(n).unwrap()).base;
    assert_eq!(base("hbm0"), 0);
    assert_eq!(base("hbm1"), 0x40_0000_0000);
    assert_eq!(base("hbm2"), 0x8000_0000_0000);
    assert_eq!(base("hbm3"), 0x8040_0000_0000);
    assert_eq!(base("tpb1"), 0x30_0000_0000);
    assert_eq!(base("tpb4"), 0x8020_0000_0000);
    assert_eq!(base("tpb7"), 0x8070_0000_0000);
    assert_eq!(base("tpb0.dge_memory"), 0x20_4000_0000);
    assert_eq!(base("tpb0.psum"), 0x28_0200_0000);
    assert_eq!(base("tpb0.evt_sem"), 0x28_0270_0000);
    assert_eq!(base("tpb0.q7_local_reg"), 0x28_0306_0000);
    assert_eq!(base("tpb0.q7_iram1"), 0x28_0320_0000);
    assert_eq!(base("tpb0.q7_dram0"), 0x28_0318_0000);
    assert_eq!(base("eng31.m2s"), 0x10_0200_0000 + 31 * 0x10_0000);
    assert_eq!(base("eng32.m2s"), 0x50_0400_0000);
    assert_eq!(base("eng64.m2s"), 0x8010_0200_0000);
    assert_eq!(base("eng96.m2s"), 0x8050_0400_0000);
    assert_eq!(base("eng128.m2s"), 0x80_0680_0000);
    assert_eq!(base("eng131.m2s"), 0x8080_0690_0000);
    assert_eq!(base("eng0.gen"), 0x10_0203_8000);
    assert_eq!(base("eng0.gen_ex"), 0x10_0203_C000);
    assert_eq!(base("eng0.sdma_app"), 0x10_0204_0000);
    assert_eq!(base("eng0.notific"), 0x10_0204_1000);
    assert_eq!(base("eng16.bcast.m2s"), 0x10_0308_0000);
    assert_eq!(base("eng0.bcast.s2m"), 0x10_020A_0000);
    assert_eq!(base("eng0.s2m.q15"), 0x10_0202_0000 + 0x1000 + 15 * 0x1000);
    assert_eq!(base("host"), 1 << 46);
    // The Q7 dataram aperture: cpu n at SoC_BASE + ((2n+9) << 16), aliasing q7_dram n.
    let ap = map.by_name("tpb0.q7_dataram3").unwrap();
    assert_eq!(map.region(ap).base, 0x28_0280_0000 + ((2 * 3 + 9) << 16));
    assert_eq!(map.region(ap).alias_of, map.by_name("tpb0.q7_dram3"));
}

#[test]
fn holes_are_reported() {
    let map = trn2().unwrap();
    // Between queues' engine registers and past the last queue: container gap.
    let d = map.decode(0x10_0201_1000);
    assert_eq!(name_of(&map, 0x10_0201_1000).as_deref(), Some("eng0.m2s"));
    assert_eq!(
        d.hole, None,
        "m2s has its own register block; the csr layer decides"
    );
    // Past HBM0's 24 GiB inside its 64 GiB window.
    let d = map.decode(0x6_0000_0000);
    assert_eq!(d.hole, Some(Hole::WindowGap));
    assert_eq!(name_of(&map, 0x6_0000_0000).as_deref(), Some("hbm0"));
    // Nothing at all.
    assert_eq!(map.decode(0xFFFF_FFFF_FFFF_FFFF).hole, Some(Hole::Unmapped));
    // Reserved SBUF decode aperture.
    assert_eq!(map.decode(0x28_0000_0000).hole, Some(Hole::Reserved));
    // A TPB hole between the SBUF window and the scratch RAM.
    let d = map.decode(0x20_0200_0000);
    assert_eq!(d.hole, Some(Hole::ContainerGap));
    assert_eq!(name_of(&map, 0x20_0200_0000).as_deref(), Some("tpb0"));
}

#[test]
fn every_region_fits_and_kinds_are_consistent() {
    let map = trn2().unwrap();
    for id in map.walk() {
        let r = map.region(id);
        if let Some(p) = r.parent {
            let p = map.region(p);
            assert!(r.base >= p.base && r.end() <= p.end(), "{}", r.name);
        }
        if matches!(r.kind, RegionKind::Csr) {
            assert!(r.block.is_some(), "{}", r.name);
        }
    }
}

fn bad(json: &str) -> String {
    SocMap::from_json(json, "test.json")
        .unwrap_err()
        .to_string()
}

#[test]
fn malformed_maps_are_rejected_with_the_field_named() {
    let e = bad(
        r#"{"device": "x", "regions": [ {"name": "a", "kind": "memory", "size": "0x10", "bas": "0x0"} ]}"#,
    );
    assert!(e.contains("unknown field `bas`"), "{e}");
    assert!(e.contains("line 1"), "{e}");
    let e = bad(r#"{"device": "x", "regions": [ {"name": "a", "kind": "memory", "size": "zz"} ]}"#);
    assert!(e.contains("`zz` is not a number"), "{e}");
    let e = bad(r#"{"device": "x", "regions": [
        {"name": "a", "kind": "memory", "base": "0x0", "size": "0x100"},
        {"name": "b", "kind": "memory", "base": "0x80", "size": "0x100"} ]}"#);
    assert!(
        e.contains("overlap") && e.contains("`a`") && e.contains("`b`"),
        "{e}"
    );
    let e = bad(r#"{"device": "x", "regions": [
        {"name": "a", "base": "0x0", "size": "0x100", "children": [
            {"name": "c", "kind": "memory", "base": "0xf0", "size": "0x20"} ]} ]}"#);
    assert!(e.contains("does not fit inside `a`"), "{e}");
    assert!(e.contains("regions[0] \"a\" / children[0] \"c\""), "{e}");
    // alias_of errors name the JSON path too (they named the region only).
    let e = bad(r#"{"device": "x", "regions": [
        {"name": "a", "kind": "memory", "base": "0x0", "size": "0x100"},
        {"name": "h", "kind": "memory", "base": "0x1000", "size": "0x100", "alias_of": "nope"} ]}"#);
    assert!(e.contains("regions[1] \"h\""), "{e}");
    assert!(e.contains("alias_of names `nope`"), "{e}");
    let e = bad(r#"{"device": "x", "regions": [
        {"name": "a", "kind": "memory", "base": "0x0", "size": "0x100"},
        {"name": "h", "kind": "memory", "base": "0x1000", "size": "0x200", "alias_of": "a"} ]}"#);
    assert!(e.contains("regions[1] \"h\""), "{e}");
    assert!(e.contains("is larger"), "{e}");
    let e = bad(
        r#"{"device": "x", "regions": [ {"name": "a", "kind": "sbuf", "size": "0x100",
        "partitions": {"count": 4, "stride": "0x80", "populated": "0x40"}} ]}"#,
    );
    assert!(e.contains("does not fit in size"), "{e}");
    let e = bad(r#"{"device": "x", "regions": [ {"name": "a", "kind": "csr", "size": "0x100"} ]}"#);
    assert!(e.contains("needs `block`"), "{e}");
    let e = bad(
        r#"{"device": "x", "regions": [ {"name": "a", "size": "0x100", "include": ["nope"]} ]}"#,
    );
    assert!(e.contains("unknown template `nope`"), "{e}");
    let e = bad(
        r#"{"device": "x", "regions": [ {"name": "a", "kind": "memory", "count": 2, "size": "0x100"} ]}"#,
    );
    assert!(e.contains("needs `stride`"), "{e}");
    let e = bad(
        r#"{"device": "x", "regions": [ {"name": "a", "kind": "memory", "base": "0xffffffffffffff00", "size": "0x1000"} ]}"#,
    );
    assert!(e.contains("overflows"), "{e}");
    let e = bad("{ not json");
    assert!(e.contains("test.json") && e.contains("line 1"), "{e}");
}

#[test]
fn region_table_snapshot() {
    let map = trn2().unwrap();
    let table = soc_map::table::render_table(&soc_map::table::region_table(&map));
    insta::assert_snapshot!("trn2_region_table", table);
}

#[test]
fn expanded_regions_snapshot_for_one_core_and_engines() {
    let map = trn2().unwrap();
    let rows: Vec<_> = soc_map::table::expanded(&map)
        .into_iter()
        .filter(|r| {
            r.name == "tpb0"
                || r.name.starts_with("tpb0.")
                || r.name == "eng0"
                || r.name.starts_with("eng0.")
                || r.name.starts_with("eng128")
                || r.name.starts_with("hbm")
                || r.name == "host"
        })
        .collect();
    insta::assert_yaml_snapshot!("trn2_expanded_tpb0_eng0_eng128", rows);
    // Sanity on the whole expansion: 132 engines × (m2s + s2m + 32 queues +
    // gen + gen_ex + sdma_app + notific + the engine itself) + bcast mirrors.
    let all = soc_map::table::expanded(&map);
    let queues = all
        .iter()
        .filter(|r| r.name.contains(".m2s.q") || r.name.contains(".s2m.q"))
        .count();
    assert_eq!(queues, 132 * 32 + 8 * 32);
}

#[test]
fn geometry_constants_match_the_map() {
    use soc_map::addr::*;
    let map = trn2().unwrap();
    for t in 0..8 {
        let sbuf = map.region(map.by_name(&format!("tpb{t}.sbuf")).unwrap());
        let p = sbuf.partitions.unwrap();
        assert_eq!(p.count, PARTITIONS);
        assert_eq!(p.stride_bytes, u64::from(SBUF_PARTITION_STRIDE_BYTES));
        assert_eq!(p.populated_bytes, u64::from(SBUF_PARTITION_BYTES));
        let psum = map.region(map.by_name(&format!("tpb{t}.psum")).unwrap());
        let p = psum.partitions.unwrap();
        assert_eq!(p.count, PARTITIONS);
        assert_eq!(p.stride_bytes, u64::from(PSUM_PARTITION_STRIDE_BYTES));
        assert_eq!(p.populated_bytes, u64::from(PSUM_PARTITION_BYTES));
        assert_eq!(p.bank_bytes, Some(u64::from(PSUM_BANK_BYTES)));
        // The TPB-local PSUM window sits at TPB base + 0x8_0000_0000 + 0x200_0000.
        let tpb = map.region(map.by_name(&format!("tpb{t}")).unwrap());
        assert_eq!(
            psum.base - tpb.base,
            0x8_0000_0000 + u64::from(TPB_LOCAL_PSUM_BASE)
        );
        assert_eq!(
            psum.size_bytes,
            u64::from(TPB_LOCAL_PSUM_END - TPB_LOCAL_PSUM_BASE)
        );
    }
}

/// The built-in map with one JSON edit applied (the shape of the fuzz
/// reproducers: one number changed in the real map).
fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v: serde_json::Value = serde_json::from_str(soc_map::TRN2_MAP_JSON).unwrap();
    edit(&mut v);
    serde_json::to_string(&v).unwrap()
}

/// Loads `json`, expecting an error, and checks it came back fast.
fn bad_fast(json: &str) -> String {
    let started = std::time::Instant::now();
    let e = bad(json);
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_millis(500),
        "took {took:?} to report: {e}"
    );
    e
}

#[test]
fn an_absurd_count_is_refused_before_any_instance_is_built() {
    // The second SENG cluster with 100,000 engines instead of 32: the old
    // loader built 3.8 M regions (11 s, 2.3 GB) before it reported a
    // duplicate name.
    for count in [100_000_u64, 32_000_000, u64::from(u32::MAX)] {
        let e = bad_fast(&edited(|v| v["regions"][2]["count"] = count.into()));
        assert!(e.contains("regions[2] \"eng\""), "{e}");
        assert!(e.contains(&format!("count {count} is too large")), "{e}");
        assert!(e.contains("at most 65536 regions"), "{e}");
    }
    // A count that fits the budget but collides with the next cluster's
    // names: reported from the declarations, naming both.
    let e = bad_fast(&edited(|v| v["regions"][2]["count"] = 33.into()));
    assert!(e.contains("regions[3] \"eng\""), "{e}");
    assert!(e.contains("duplicate region name `eng64`"), "{e}");
    assert!(e.contains("regions[2] \"eng\" (eng32..eng64)"), "{e}");
}

#[test]
fn an_array_past_its_parent_is_refused_from_its_declaration() {
    // 17 queues of 0x1000 from 0x1000 in a 0x20000 M2S block fit; 32 do not:
    // queue 31 is the first past the block.
    let e = bad_fast(&edited(|v| {
        v["templates"]["udma_unit"][0]["children"][0]["count"] = 32.into();
    }));
    assert!(
        e.contains("regions[1] \"eng\" / children[0] \"m2s\" / children[0] \"q\""),
        "{e}"
    );
    assert!(e.contains("instance 31 (`q31`)"), "{e}");
    assert!(
        e.contains("does not fit inside the parent `m2s` (size 0x20000)"),
        "{e}"
    );
    let e = bad_fast(&edited(|v| {
        v["templates"]["udma_unit"][0]["children"][0]["count"] = 4_000_000_000_u64.into();
    }));
    assert!(e.contains("does not fit inside the parent `m2s`"), "{e}");
    // Instances closer than their size overlap each other.
    let e = bad_fast(&edited(|v| {
        v["templates"]["udma_unit"][0]["children"][0]["stride"] = "0x800".into();
    }));
    assert!(
        e.contains("stride 0x800 is smaller than the instance size 0x1000"),
        "{e}"
    );
}

#[test]
fn duplicate_sibling_names_are_found_from_the_declarations() {
    let e = bad(r#"{"device": "x", "regions": [
        {"name": "a", "kind": "memory", "base": "0x0", "count": 4, "stride": "0x100", "size": "0x100"},
        {"name": "a2", "kind": "memory", "base": "0x1000", "size": "0x100"} ]}"#);
    assert!(
        e.contains("regions[1] \"a2\": duplicate region name `a2`"),
        "{e}"
    );
    assert!(e.contains("regions[0] \"a\" (a0..a3)"), "{e}");
    let e = bad(r#"{"device": "x", "regions": [
        {"name": "b", "kind": "memory", "base": "0x0", "size": "0x100"},
        {"name": "b", "kind": "memory", "base": "0x1000", "size": "0x100"} ]}"#);
    assert!(
        e.contains("regions[1] \"b\": duplicate region name `b`"),
        "{e}"
    );
}

#[test]
fn long_text_copied_into_every_instance_is_bounded() {
    // A 1 MiB description on an array of 4,096 regions would be copied
    // 4,096 times (4 GiB).
    let desc = "x".repeat(1 << 20);
    let json = format!(
        r#"{{"device": "x", "regions": [ {{"name": "a", "kind": "memory", "base": "0x0",
        "count": 4096, "stride": "0x100", "size": "0x100", "description": "{desc}"}} ]}}"#
    );
    let e = bad_fast(&json);
    assert!(e.contains("regions[0] \"a\""), "{e}");
    assert!(e.contains("MiB of names and text"), "{e}");
    let long = "n".repeat(300);
    let e = bad(&format!(
        r#"{{"device": "x", "regions": [ {{"name": "{long}", "kind": "memory", "size": "0x100"}} ]}}"#
    ));
    assert!(e.contains("longer than 64 bytes"), "{e}");
}

/// Addresses that stress a decode: every region's first, last and
/// one-past-last byte, the byte before it, and its middle.
fn edges(map: &SocMap) -> Vec<u64> {
    let mut at = vec![0, u64::MAX];
    for r in &map.regions {
        let last = r.base.saturating_add(r.size_bytes.saturating_sub(1));
        at.extend([
            r.base,
            r.base.wrapping_sub(1),
            last,
            last.wrapping_add(1),
            r.base + r.size_bytes / 2,
        ]);
        if let Some(w) = r.window_bytes {
            at.extend([r.base.saturating_add(w), r.base.saturating_add(w - 1)]);
        }
    }
    at
}

#[test]
fn flattened_decode_agrees_with_the_tree_walk() {
    let map = trn2().unwrap();
    let at = edges(&map);
    assert!(at.len() > 25_000, "{}", at.len());
    for a in at {
        assert_eq!(map.deepest(a), map.deepest_by_levels(a), "{a:#x}");
    }
}

#[test]
fn flattened_decode_agrees_on_a_map_with_windows_and_gaps() {
    // A container with a gap before, between and after its children, a
    // window larger than a region, nested children, a region just below
    // the top of the address space.
    let json = r#"{
        "device": "t",
        "regions": [
            {"name": "a", "base": "0x1000", "size": "0x1000", "children": [
                {"name": "x", "base": "0x100", "size": "0x100", "kind": "memory"},
                {"name": "y", "base": "0x400", "size": "0x200", "children": [
                    {"name": "z", "base": "0x10", "size": "0x10", "kind": "memory"}
                ]}
            ]},
            {"name": "w", "base": "0x4000", "size": "0x100", "window": "0x1000", "kind": "memory"},
            {"name": "top", "base": "0xffffffffffffe000", "size": "0x1000", "kind": "memory"}
        ]
    }"#;
    let map = SocMap::from_json(json, "t.json").unwrap();
    let mut at = edges(&map);
    at.extend((0..0x6000u64).step_by(8));
    for a in at {
        assert_eq!(map.deepest(a), map.deepest_by_levels(a), "{a:#x}");
    }
    assert_eq!(name_of(&map, 0x1410), Some("a.y.z".into()));
    assert_eq!(name_of(&map, 0x1300), Some("a".into()));
}

/// Regions nested past the limit are refused with what is wrong (the
/// message spoke of templates when the map had none). Found by a review.
#[test]
fn too_deep_a_nesting_says_so() {
    let chain = |levels: usize| {
        let mut node =
            r#"{"name": "d0", "base": "0x0", "size": "0x10", "kind": "memory"}"#.to_string();
        for k in 1..levels {
            node = format!(
                r#"{{"name": "d{k}", "base": "0x0", "size": "0x10", "children": [{node}]}}"#
            );
        }
        format!(r#"{{"device": "t", "regions": [{node}]}}"#)
    };
    let e = bad(&chain(18));
    assert!(
        e.contains("regions nest more than 16 levels below the top"),
        "{e}"
    );
    assert!(!e.contains("templates include"), "{e}");
    assert!(SocMap::from_json(&chain(17), "t.json").is_ok());
}
