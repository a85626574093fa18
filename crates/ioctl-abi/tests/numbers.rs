//! Every computed request number against the published one (docs/references/driver.md
//! §1.2, tdrv-dmem), and the lookup / argument errors.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use ioctl_abi::args::{MemAllocV2MemType64, MemCopyAsync64, MemFree, Semaphore};
use ioctl_abi::encoding::{Dir, dir_of, nr_of, size_of, type_of};
use ioctl_abi::{Errno, Ioctl, IoctlArg, SizeFrom, TABLE, by_name, cmd, lookup, parse_arg};
use zerocopy::IntoBytes;

/// docs/references/driver.md §1.2, typed in from the reference (the table computes its
/// own values; this is what they must equal).
const PUBLISHED: &[(&str, u32)] = &[
    ("DEVICE_RESET", 0x0000_4E01),
    ("DEVICE_READY", 0x8001_4E02),
    ("DEVICE_RELEASE", 0x0000_4E05),
    ("DEVICE_APP_PID", 0x8004_4E06),
    ("MEM_ALLOC", 0x8008_4E15),
    ("MEM_FREE", 0x8008_4E16),
    ("MEM_COPY", 0x8008_4E17),
    ("MEM_COPY64_DEPRECATED", 0x8028_4E17),
    ("MEM_COPY64", 0x8038_4E17),
    ("MEM_BUF_COPY", 0xC008_4E18),
    ("MEM_BUF_COPY64", 0xC028_4E18),
    ("MEM_GET_PA", 0x8008_4E19),
    ("MEM_GET_INFO", 0x8008_4E1A),
    ("MEMSET", 0x8008_4E1C),
    ("MEMSET64", 0x8020_4E1C),
    ("MEM_GET_EXTENDED_INFO", 0x8008_4E1D),
    ("DMA_ENG_INIT", 0x8008_4E1E),
    ("DMA_ENG_SET_STATE", 0x8008_4E1F),
    ("DMA_ENG_GET_STATE", 0xC008_4E20),
    ("DMA_QUEUE_INIT", 0x8008_4E21),
    ("DMA_QUEUE_RELEASE", 0x8008_4E22),
    ("DMA_QUEUE_COPY_START", 0x8008_4E23),
    ("DMA_ACK_COMPLETED", 0x8008_4E24),
    ("DMA_QUEUE_GET_STATE", 0xC008_4E25),
    ("DMA_COPY_DESCRIPTORS", 0x8008_4E26),
    ("DMA_COPY_DESCRIPTORS64", 0x8028_4E26),
    ("DMA_DESCRIPTOR_COPYOUT", 0xC008_4E27),
    ("SEMAPHORE_INCREMENT", 0x8008_4E29),
    ("SEMAPHORE_DECREMENT", 0x8008_4E2A),
    ("SEMAPHORE_READ", 0xC008_4E2B),
    ("SEMAPHORE_WRITE", 0x8008_4E2C),
    ("EVENT_SET", 0x8008_4E2D),
    ("EVENT_GET", 0xC008_4E2E),
    ("MEM_ALLOC_V2", 0x8008_4E66),
    ("MEM_ALLOC_V2MT", 0x8030_4E66),
    ("MEM_ALLOC_V2MT64", 0x8038_4E66),
    ("MEM_ALLOC_V2MT64_PA", 0xC040_4E66),
    ("MEM_COPY_ASYNC", 0xC030_4E6C),
    ("MEM_COPY_ASYNC64", 0xC038_4E6C),
    ("MEM_COPY_ASYNC_WAIT", 0x4018_4E6D),
    ("MEM_MC_GET_INFO", 0xC018_4E6F),
    ("MEM_MC_GET_INFO_V2", 0xC020_4E6F),
    ("RESOURCE_MMAP_INFO", 0xC020_4E70),
    ("MEM_BUF_ZEROCOPY64_LEGACY", 0xC028_4E7C),
    ("MEM_BUF_ZEROCOPY64_DEPRECATED", 0xC030_4E7C),
    ("MEM_BUF_ZEROCOPY64", 0xC040_4E7C),
    ("H2T_DMA_ALLOC_QUEUES", 0xC014_4E7D),
    ("H2T_DMA_FREE_QUEUES", 0xC008_4E7E),
    ("MEM_BUF_ZEROCOPY64_BATCHES", 0xC020_4E81),
    ("DMA_QUEUE_INIT_BATCH", 0xB008_4E85),
    ("HOST_MEM_PIN", 0xC018_4E88),
    ("HOST_MEM_UNPIN", 0x4008_4E89),
];

/// The numbers tdrv-dmem issues (its §"The NDL boundary"), with the name the
/// driver gives them and the name the seed uses.
const SEED_000: &[(u32, &str, &str)] = &[
    (0x8038_4E66, "MEM_ALLOC_V2MT64", "MEM_ALLOC"),
    (0x8008_4E19, "MEM_GET_PA", "get-PA"),
    (0xC038_4E6C, "MEM_COPY_ASYNC64", "MEM_COPY_ASYNC"),
    (
        0xC020_4E81,
        "MEM_BUF_ZEROCOPY64_BATCHES",
        "MEM_BUF_BATCH_COPY",
    ),
    (0x8008_4E16, "MEM_FREE", "MEM_FREE"),
];

#[test]
fn every_computed_number_matches_the_published_one() {
    for &(name, value) in PUBLISHED {
        let def = by_name(name).unwrap_or_else(|| panic!("{name} missing from the table"));
        assert_eq!(
            def.value, value,
            "{name}: computed {:#010X}, published {value:#010X}",
            def.value
        );
    }
    // ... and the published list covers the whole table.
    let published: BTreeSet<_> = PUBLISHED.iter().map(|p| p.0).collect();
    for def in TABLE {
        assert!(
            published.contains(def.name),
            "{} has no published value",
            def.name
        );
    }
    assert_eq!(PUBLISHED.len(), TABLE.len());
}

#[test]
fn seed_000_numbers_resolve_to_the_driver_names() {
    for &(value, driver_name, seed_name) in SEED_000 {
        let def = lookup(value).unwrap();
        assert_eq!(def.name, driver_name);
        if seed_name != driver_name {
            assert!(
                def.aliases.iter().any(|a| a.name == seed_name),
                "{driver_name} lacks alias {seed_name}"
            );
        }
    }
    assert_eq!(cmd::MEM_ALLOC_V2MT64, 0x8038_4E66);
    assert_eq!(cmd::MEM_GET_PA, 0x8008_4E19);
    assert_eq!(cmd::MEM_COPY_ASYNC64, 0xC038_4E6C);
    assert_eq!(cmd::MEM_BUF_ZEROCOPY64_BATCHES, 0xC020_4E81);
    assert_eq!(cmd::MEM_FREE, 0x8008_4E16);
}

#[test]
fn entries_are_consistent_with_their_encoding() {
    for (i, def) in TABLE.iter().enumerate() {
        assert_eq!(def.ioctl as usize, i, "{}", def.name);
        assert_eq!(def.ioctl.def().name, def.name);
        assert_eq!(Ioctl::ALL[i], def.ioctl);
        assert_eq!(dir_of(def.value), def.dir, "{}", def.name);
        assert_eq!(nr_of(def.value), def.nr, "{}", def.name);
        assert_eq!(type_of(def.value), b'N', "{}", def.name);
        assert_eq!(size_of(def.value), def.arg_size, "{}", def.name);
        assert_eq!(def.struct_size, def.arg.size, "{}", def.name);
        match def.size_from {
            SizeFrom::Pointer => assert_eq!(def.arg_size, 8, "{}", def.name),
            SizeFrom::Struct => assert_eq!(def.arg_size, def.struct_size, "{}", def.name),
        }
        if def.dir == Dir::None {
            assert_eq!(def.struct_size, 0, "{}", def.name);
        }
    }
}

#[test]
fn names_and_values_are_unique() {
    let names: BTreeSet<_> = TABLE.iter().map(|d| d.name).collect();
    let values: BTreeSet<_> = TABLE.iter().map(|d| d.value).collect();
    assert_eq!(names.len(), TABLE.len());
    assert_eq!(values.len(), TABLE.len());
}

#[test]
fn legacy_pointer_ioctls_encode_8_but_copy_the_struct() {
    let free = lookup(cmd::MEM_FREE).unwrap();
    assert_eq!((free.arg_size, free.struct_size), (8, 8));
    let alloc = lookup(cmd::MEM_ALLOC).unwrap();
    assert_eq!((alloc.arg_size, alloc.struct_size), (8, 32));
    let q = lookup(cmd::DMA_QUEUE_INIT).unwrap();
    assert_eq!((q.arg_size, q.struct_size), (8, 48));
    let batch = lookup(cmd::DMA_QUEUE_INIT_BATCH).unwrap();
    assert_eq!((batch.arg_size, batch.struct_size), (12296, 12296));
}

#[test]
fn mem_buf_copy64_is_copy_in_and_out() {
    // One number; the direction is the copy_to_mem_handle field.
    let def = by_name("MEM_BUF_COPY64").unwrap();
    assert_eq!(def.value, 0xC028_4E18);
    let f = def
        .arg
        .fields
        .iter()
        .find(|f| f.name == "copy_to_mem_handle")
        .unwrap();
    assert_eq!(f.offset, 32);
    assert!(by_name("MEM_BUF_COPYIN").is_none() && by_name("MEM_BUF_COPYOUT").is_none());
}

#[test]
fn both_mem_copy64_forms_exist() {
    assert_eq!(by_name("MEM_COPY64").unwrap().struct_size, 56);
    assert_eq!(by_name("MEM_COPY64_DEPRECATED").unwrap().struct_size, 40);
    let z: Vec<_> = ioctl_abi::family(124).map(|d| d.struct_size).collect();
    assert_eq!(z, [40, 48, 64]);
}

#[test]
fn names_accept_the_driver_prefix() {
    assert_eq!(
        by_name("NEURON_IOCTL_MEM_FREE").unwrap().ioctl,
        Ioctl::MemFree
    );
    // Aliases are not names.
    assert!(by_name("MEM_BUF_BATCH_COPY").is_none());
}

#[test]
fn unknown_numbers_are_enotty() {
    for cmd in [
        0,
        0xFFFF_FFFF,
        0x8008_4EFF, // nr 255
        0x8008_4E28, // DMA_QUIESCE_QUEUES: not supported
        0x4008_4E16, // MEM_FREE with the wrong direction
        0x8010_4E16, // MEM_FREE with a struct size
        0x8038_4D66, // MEM_ALLOC_V2MT64 with type 'M'
        0x8008_4E0B, // BAR_READ: not in the table
    ] {
        assert_eq!(lookup(cmd).unwrap_err(), Errno::ENOTTY, "{cmd:#010X}");
    }
}

#[test]
fn unknown_sizes_in_a_size_dispatched_family_are_einval() {
    for cmd in [
        0x8040_4E66, // nr 102 with 64 bytes and _IOR
        0xC048_4E6C, // nr 108 with 72 bytes
        0x8030_4E17, // nr 23 with 48 bytes
        0xC010_4E18, // nr 24 with 16 bytes
        0x8018_4E1C, // nr 28 with 24 bytes
        0xC050_4E7C, // nr 124 with 80 bytes
    ] {
        assert_eq!(lookup(cmd).unwrap_err(), Errno::EINVAL, "{cmd:#010X}");
    }
}

#[test]
fn short_arguments_are_einval() {
    let def = lookup(cmd::MEM_ALLOC_V2MT64).unwrap();
    let arg = MemAllocV2MemType64::default();
    let bytes = arg.as_bytes();
    assert!(parse_arg::<MemAllocV2MemType64>(def, bytes).is_ok());
    for len in [0, 1, 8, 48, 55] {
        assert_eq!(
            parse_arg::<MemAllocV2MemType64>(def, &bytes[..len]),
            Err(Errno::EINVAL),
            "{len} bytes"
        );
    }
    // The handler copies struct_size bytes; what follows is not read.
    let mut longer = bytes.to_vec();
    longer.extend_from_slice(&[0xAA; 8]);
    assert_eq!(parse_arg::<MemAllocV2MemType64>(def, &longer), Ok(arg));
}

#[test]
fn the_wrong_argument_type_is_einval() {
    let def = lookup(cmd::MEM_COPY_ASYNC64).unwrap();
    // Same size (56 bytes), different type.
    assert_eq!(MemAllocV2MemType64::INFO.size, MemCopyAsync64::INFO.size);
    assert_eq!(
        parse_arg::<MemAllocV2MemType64>(def, &[0; 56]),
        Err(Errno::EINVAL)
    );
    assert!(parse_arg::<MemCopyAsync64>(def, &[0; 56]).is_ok());
    let free = lookup(cmd::MEM_FREE).unwrap();
    assert_eq!(parse_arg::<Semaphore>(free, &[0; 16]), Err(Errno::EINVAL));
}

#[test]
fn fields_read_little_endian_at_their_offsets() {
    let def = lookup(cmd::MEM_COPY_ASYNC64).unwrap();
    let mut bytes = [0u8; 56];
    bytes[16..24].copy_from_slice(&0x1_0000_0000u64.to_le_bytes()); // size
    bytes[48..52].copy_from_slice(&u32::MAX.to_le_bytes()); // pwait_handle = NONE
    bytes[52..56].copy_from_slice(&1u32.to_le_bytes()); // wait_handle
    let a: MemCopyAsync64 = parse_arg(def, &bytes).unwrap();
    assert_eq!(a.size.get(), 1 << 32);
    assert_eq!(a.pwait_handle.get(), u32::MAX);
    assert_eq!(a.wait_handle.get(), 1);
    let (d, f): (_, MemFree) = ioctl_abi::parse_cmd(cmd::MEM_FREE, &9u64.to_le_bytes()).unwrap();
    assert_eq!((d.ioctl, f.mem_handle.get()), (Ioctl::MemFree, 9));
}

#[test]
fn attach_gate_is_the_exact_number_list_of_driver_facts() {
    let gated: BTreeSet<_> = TABLE
        .iter()
        .filter(|d| d.attach_gated)
        .map(|d| d.name)
        .collect();
    let expect: BTreeSet<_> = [
        "DMA_ENG_INIT",
        "DMA_ENG_SET_STATE",
        "DMA_QUEUE_INIT",
        "DMA_ACK_COMPLETED",
        "DMA_QUEUE_RELEASE",
        "DMA_COPY_DESCRIPTORS",
        "MEM_ALLOC",
        "MEM_FREE",
        "MEM_COPY",
        "MEM_GET_PA",
        "MEM_COPY_ASYNC",
        "MEM_COPY_ASYNC_WAIT",
        "MEM_GET_INFO",
    ]
    .into_iter()
    .collect();
    assert_eq!(gated, expect);
}

#[test]
fn listing_serializes_the_required_keys() {
    let v = serde_json::to_value(ioctl_abi::list()).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), TABLE.len());
    for r in rows {
        for key in [
            "name",
            "dir",
            "nr",
            "size",
            "value",
            "struct_size",
            "aliases",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
        // The one JSON form of a number: lower case, no padding.
        let value = r["value"].as_str().unwrap();
        assert!(
            value.starts_with("0x")
                && value[2..]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{value}"
        );
        assert!(!value.starts_with("0x0"), "{value}");
        assert!(["NONE", "W", "R", "RW"].contains(&r["dir"].as_str().unwrap()));
    }
    let batch = rows.iter().find(|r| r["value"] == "0xc0204e81").unwrap();
    assert_eq!(batch["name"], "MEM_BUF_ZEROCOPY64_BATCHES");
    assert_eq!(batch["dir"], "RW");
    assert_eq!(batch["nr"], 129);
    assert_eq!(batch["size"], 32);
    assert_eq!(batch["aliases"][0]["name"], "MEM_BUF_BATCH_COPY");
}
