//! Property tests for the ADDR4/ADDR8 encodings and address decoding.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use soc_map::{Addr4, Addr8, PartitionOffset, trn2};

proptest! {
    #[test]
    fn partition_offset_round_trips(offset in 0u32..(1 << 18), quadrant in 0u8..4, psum: bool) {
        let p = PartitionOffset { offset, quadrant, psum };
        let raw = p.encode().unwrap();
        prop_assert_eq!(raw & (0x1F << 18), 0);
        prop_assert_eq!(PartitionOffset::decode(raw).unwrap(), p);
    }

    #[test]
    fn addr4_decode_encode_is_identity_when_valid(raw: u32) {
        if let Ok(a) = Addr4::decode(raw) {
            prop_assert_eq!(a.encode().unwrap(), raw);
        }
    }

    #[test]
    fn addr8_decode_encode_is_identity_when_valid(raw: u64) {
        if let Ok(a) = Addr8::decode(raw) {
            prop_assert_eq!(a.encode().unwrap(), raw);
        }
    }

    #[test]
    fn addr8_immediates_round_trip(addr in 0u64..(1 << 58), shape_reg: bool) {
        let a = Addr8::Immediate { addr, shape_reg };
        prop_assert_eq!(Addr8::decode(a.encode().unwrap()).unwrap(), a);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn decode_never_panics_and_offsets_are_consistent(addr: u64) {
        let map = map();
        let d = map.decode(addr);
        if let Some(id) = d.region {
            let r = map.region(id);
            prop_assert!(addr >= r.base);
            if d.partition.is_none() && d.hole.is_none() {
                prop_assert_eq!(r.base + d.offset, addr);
            }
        }
    }

    #[test]
    fn sbuf_partition_offsets_decode(tpb in 0usize..8, partition in 0u32..128, offset in 0u32..(256 * 1024)) {
        let map = map();
        let sbuf = map.region(map.by_name(&format!("tpb{tpb}.sbuf")).unwrap());
        let d = map.decode(sbuf.base + u64::from(partition) * 0x40000 + u64::from(offset));
        prop_assert_eq!(d.partition, Some(partition));
        prop_assert_eq!(d.offset, u64::from(offset));
        prop_assert_eq!(d.hole.is_some(), offset >= 224 * 1024);
    }
}

fn map() -> &'static soc_map::SocMap {
    static MAP: std::sync::OnceLock<soc_map::SocMap> = std::sync::OnceLock::new();
    MAP.get_or_init(|| trn2().unwrap())
}
