//! The dmem enums and the usage → category byte tables (tdrv-dmem §1–§2,
//! docs/references/wiki.md §H.1–H.2).

use ioctl_abi::enums::MemAllocCategory;
use serde::Serialize;

/// `dma_mem_usage_type_t`: what an allocation is for (tdrv-dmem §1, 22
/// members; `MAX` = 22 is also the DML per-NC grand-total column).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[repr(u32)]
pub enum UsageType {
    Generic = 0,
    InstrPe = 1,
    InstrAct = 2,
    InstrPool = 3,
    Io = 4,
    DramSpill = 5,
    Weight = 6,
    Notification = 7,
    ActTable = 8,
    InstrDve = 9,
    InstrSp = 10,
    Scratchpad = 11,
    Tensor = 12,
    UcodeLib = 13,
    PoolStdio = 14,
    Cc = 15,
    ScratchpadNotShared = 16,
    XtCc = 17,
    DmaRing = 18,
    DmaRingSpill = 19,
    DmaRingIo = 20,
    DmaRingCollectives = 21,
}

/// Number of usage types (`MAX`), and the index of the DML grand-total
/// column.
pub const USAGE_TYPES: usize = 22;

impl UsageType {
    /// Every usage type, in numeric order.
    pub const ALL: [UsageType; USAGE_TYPES] = [
        Self::Generic,
        Self::InstrPe,
        Self::InstrAct,
        Self::InstrPool,
        Self::Io,
        Self::DramSpill,
        Self::Weight,
        Self::Notification,
        Self::ActTable,
        Self::InstrDve,
        Self::InstrSp,
        Self::Scratchpad,
        Self::Tensor,
        Self::UcodeLib,
        Self::PoolStdio,
        Self::Cc,
        Self::ScratchpadNotShared,
        Self::XtCc,
        Self::DmaRing,
        Self::DmaRingSpill,
        Self::DmaRingIo,
        Self::DmaRingCollectives,
    ];

    /// The raw value (0..=21).
    #[must_use]
    pub const fn raw(self) -> u32 {
        self as u32
    }

    /// The usage type with this raw value.
    #[must_use]
    pub fn from_raw(raw: u32) -> Option<Self> {
        Self::ALL.get(usize::try_from(raw).ok()?).copied()
    }

    /// The runtime's name without prefix, e.g. `TENSOR`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Generic => "GENERIC",
            Self::InstrPe => "INSTR_PE",
            Self::InstrAct => "INSTR_ACT",
            Self::InstrPool => "INSTR_POOL",
            Self::Io => "IO",
            Self::DramSpill => "DRAM_SPILL",
            Self::Weight => "WEIGHT",
            Self::Notification => "NOTIFICATION",
            Self::ActTable => "ACT_TABLE",
            Self::InstrDve => "INSTR_DVE",
            Self::InstrSp => "INSTR_SP",
            Self::Scratchpad => "SCRATCHPAD",
            Self::Tensor => "TENSOR",
            Self::UcodeLib => "UCODE_LIB",
            Self::PoolStdio => "POOL_STDIO",
            Self::Cc => "CC",
            Self::ScratchpadNotShared => "SCRATCHPAD_NOT_SHARED",
            Self::XtCc => "XT_CC",
            Self::DmaRing => "DMA_RING",
            Self::DmaRingSpill => "DMA_RING_SPILL",
            Self::DmaRingIo => "DMA_RING_IO",
            Self::DmaRingCollectives => "DMA_RING_COLLECTIVES",
        }
    }

    /// The usage type with this name (case-insensitive).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|u| u.name().eq_ignore_ascii_case(name))
    }
}

/// Where an allocation lives (`dma_mem_location`: 0 INVALID, 1 HOST_DRAM,
/// 2 TONGA_DRAM = HBM; docs/references/wiki.md §H.1).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[repr(u32)]
pub enum MemLocation {
    /// Host memory pinned by the driver.
    HostDram = 1,
    /// Device HBM.
    TongaDram = 2,
}

/// The category sentinel: this usage is invalid for this location.
pub const CATEGORY_INVALID: u8 = 20;

/// `dmem_usage_type_to_host_category` (@0x9b9640), indexed by usage type
/// (docs/references/wiki.md §H.2 bytes). 20 = invalid for host.
pub const USAGE_TO_HOST_CATEGORY: [u8; USAGE_TYPES] = [
    0x04, 0x01, 0x01, 0x04, 0x01, 0x04, 0x03, 0x06, 0x04, 0x01, 0x01, 0x14, 0x02, 0x01, 0x04, 0x14,
    0x14, 0x04, 0x11, 0x11, 0x11, 0x11,
];

/// `dmem_usage_type_to_device_category` (@0x9b9660), indexed by usage type.
pub const USAGE_TO_DEVICE_CATEGORY: [u8; USAGE_TYPES] = [
    0x0c, 0x08, 0x08, 0x0c, 0x08, 0x0c, 0x0a, 0x10, 0x0c, 0x08, 0x08, 0x0b, 0x09, 0x08, 0x0c, 0x0e,
    0x0f, 0x0c, 0x12, 0x12, 0x12, 0x12,
];

/// The kernel category byte for `usage` at `loc`; `None` for the sentinel
/// 20 (tdrv-dmem §2 step 1: "Invalid mem_usage_type %d for host/device").
#[must_use]
pub fn category_for(loc: MemLocation, usage: UsageType) -> Option<MemAllocCategory> {
    let table = match loc {
        MemLocation::HostDram => &USAGE_TO_HOST_CATEGORY,
        MemLocation::TongaDram => &USAGE_TO_DEVICE_CATEGORY,
    };
    let byte = table[usage.raw() as usize];
    if byte == CATEGORY_INVALID {
        return None;
    }
    MemAllocCategory::from_raw(u32::from(byte))
}

/// `NRT_STATUS`: what the runtime's calls return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub enum NrtStatus {
    /// `NRT_SUCCESS` = 0.
    Success = 0,
    /// `NRT_FAILURE` = 1: generic failure (e.g. the driver refused).
    Failure = 1,
    /// `NRT_INVALID` = 2: invalid argument (e.g. usage invalid for location).
    Invalid = 2,
    /// `NRT_INVALID_HANDLE` = 3 (public `nrt_status.h`): no dmem call
    /// returns it (a dead handle is `NRT_INVALID`, `docs/host-runtime.md`
    /// §4.10).
    InvalidHandle = 3,
    /// `NRT_RESOURCE` = 4: out of a resource (device OOM, calloc failure).
    Resource = 4,
    /// `NRT_TIMEOUT` = 5: an operation timed out.
    Timeout = 5,
    /// `NRT_FAIL_HOST_MEM_ALLOC` = 11: host memory allocation failed
    /// (public `nrt_status.h`).
    FailHostMemAlloc = 11,
}

impl NrtStatus {
    /// The runtime's name, e.g. `NRT_RESOURCE`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Success => "NRT_SUCCESS",
            Self::Failure => "NRT_FAILURE",
            Self::Invalid => "NRT_INVALID",
            Self::InvalidHandle => "NRT_INVALID_HANDLE",
            Self::Resource => "NRT_RESOURCE",
            Self::Timeout => "NRT_TIMEOUT",
            Self::FailHostMemAlloc => "NRT_FAIL_HOST_MEM_ALLOC",
        }
    }
}

impl std::fmt::Display for NrtStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), *self as u32)
    }
}

/// DML action (`DMEM_ACTION_ALLOC` = 1, `DMEM_ACTION_FREE` = 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub enum DmemAction {
    Alloc = 1,
    Free = 2,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn device_only_usages_are_invalid_for_host() {
        // tdrv-dmem §1: SCRATCHPAD, CC and SCRATCHPAD_NOT_SHARED map to 20.
        let invalid: Vec<_> = UsageType::ALL
            .iter()
            .filter(|&&u| category_for(MemLocation::HostDram, u).is_none())
            .map(|u| u.name())
            .collect();
        assert_eq!(invalid, ["SCRATCHPAD", "CC", "SCRATCHPAD_NOT_SHARED"]);
        assert!(
            UsageType::ALL
                .iter()
                .all(|&u| category_for(MemLocation::TongaDram, u).is_some())
        );
    }

    #[test]
    fn category_bytes_are_not_usage_numbers() {
        // tdrv-dmem GOTCHA: the category byte (not the usage) goes to the
        // kernel; e.g. TENSOR (12) → TENSORS_DEVICE (9) / TENSORS_HOST (2).
        let dev = category_for(MemLocation::TongaDram, UsageType::Tensor).map(|c| c.raw());
        let host = category_for(MemLocation::HostDram, UsageType::Tensor).map(|c| c.raw());
        assert_eq!((dev, host), (Some(9), Some(2)));
        assert_eq!(
            category_for(MemLocation::TongaDram, UsageType::DmaRingIo).map(|c| c.name()),
            Some("DMA_RINGS_DEVICE")
        );
    }

    /// A category byte and its name.
    pub(crate) type Category = (u8, &'static str);

    /// The usage → category table as published (`docs/host-runtime.md`
    /// §4.3, the bytes of `@0x9b9640` and `@0x9b9660`), typed in row by row
    /// with the category names: an oracle independent of the arrays above.
    /// `None` is the host sentinel 0x14 (invalid for host).
    pub(crate) const SPEC_TABLE: [(&str, Option<Category>, Category); USAGE_TYPES] = [
        ("GENERIC", Some((0x04, "MISC_HOST")), (0x0c, "MISC_DEVICE")),
        ("INSTR_PE", Some((0x01, "CODE_HOST")), (0x08, "CODE_DEVICE")),
        (
            "INSTR_ACT",
            Some((0x01, "CODE_HOST")),
            (0x08, "CODE_DEVICE"),
        ),
        (
            "INSTR_POOL",
            Some((0x04, "MISC_HOST")),
            (0x0c, "MISC_DEVICE"),
        ),
        ("IO", Some((0x01, "CODE_HOST")), (0x08, "CODE_DEVICE")),
        (
            "DRAM_SPILL",
            Some((0x04, "MISC_HOST")),
            (0x0c, "MISC_DEVICE"),
        ),
        (
            "WEIGHT",
            Some((0x03, "CONSTANTS_HOST")),
            (0x0a, "CONSTANTS_DEVICE"),
        ),
        (
            "NOTIFICATION",
            Some((0x06, "NOTIFICATION_HOST")),
            (0x10, "NOTIFICATION_DEVICE"),
        ),
        (
            "ACT_TABLE",
            Some((0x04, "MISC_HOST")),
            (0x0c, "MISC_DEVICE"),
        ),
        (
            "INSTR_DVE",
            Some((0x01, "CODE_HOST")),
            (0x08, "CODE_DEVICE"),
        ),
        ("INSTR_SP", Some((0x01, "CODE_HOST")), (0x08, "CODE_DEVICE")),
        ("SCRATCHPAD", None, (0x0b, "SCRATCHPAD_DEVICE")),
        (
            "TENSOR",
            Some((0x02, "TENSORS_HOST")),
            (0x09, "TENSORS_DEVICE"),
        ),
        (
            "UCODE_LIB",
            Some((0x01, "CODE_HOST")),
            (0x08, "CODE_DEVICE"),
        ),
        (
            "POOL_STDIO",
            Some((0x04, "MISC_HOST")),
            (0x0c, "MISC_DEVICE"),
        ),
        ("CC", None, (0x0e, "COLLECTIVES_DEVICE")),
        (
            "SCRATCHPAD_NOT_SHARED",
            None,
            (0x0f, "SCRATCHPAD_NONSHARED_DEVICE"),
        ),
        ("XT_CC", Some((0x04, "MISC_HOST")), (0x0c, "MISC_DEVICE")),
        (
            "DMA_RING",
            Some((0x11, "DMA_RINGS_HOST")),
            (0x12, "DMA_RINGS_DEVICE"),
        ),
        (
            "DMA_RING_SPILL",
            Some((0x11, "DMA_RINGS_HOST")),
            (0x12, "DMA_RINGS_DEVICE"),
        ),
        (
            "DMA_RING_IO",
            Some((0x11, "DMA_RINGS_HOST")),
            (0x12, "DMA_RINGS_DEVICE"),
        ),
        (
            "DMA_RING_COLLECTIVES",
            Some((0x11, "DMA_RINGS_HOST")),
            (0x12, "DMA_RINGS_DEVICE"),
        ),
    ];

    /// All 44 bytes of the two tables, and what `category_for` makes of
    /// each, against the published table.
    #[test]
    fn usage_category_tables_match_the_spec() {
        for (i, (name, host, (dev_byte, dev_name))) in SPEC_TABLE.iter().enumerate() {
            let u = UsageType::ALL[i];
            assert_eq!(u.name(), *name, "usage {i}");
            assert_eq!(u.raw() as usize, i);
            assert_eq!(
                USAGE_TO_DEVICE_CATEGORY[i], *dev_byte,
                "device byte of {name}"
            );
            assert_eq!(
                category_for(MemLocation::TongaDram, u).map(|c| (c.raw(), c.name())),
                Some((u32::from(*dev_byte), *dev_name)),
                "device category of {name}"
            );
            match host {
                Some((byte, cat)) => {
                    assert_eq!(USAGE_TO_HOST_CATEGORY[i], *byte, "host byte of {name}");
                    assert_eq!(
                        category_for(MemLocation::HostDram, u).map(|c| (c.raw(), c.name())),
                        Some((u32::from(*byte), *cat)),
                        "host category of {name}"
                    );
                }
                None => {
                    assert_eq!(USAGE_TO_HOST_CATEGORY[i], 0x14, "host sentinel of {name}");
                    assert_eq!(category_for(MemLocation::HostDram, u), None);
                }
            }
        }
        assert_eq!(CATEGORY_INVALID, 0x14);
    }

    /// The enum values of the C enums (`docs/host-runtime.md` §4.2, §4.9,
    /// §4.10).
    #[test]
    fn enum_values_match_the_c_enums() {
        assert_eq!(
            (MemLocation::HostDram as u32, MemLocation::TongaDram as u32),
            (1, 2)
        );
        assert_eq!((DmemAction::Alloc as u32, DmemAction::Free as u32), (1, 2));
        let status = [
            (NrtStatus::Success, 0, "NRT_SUCCESS"),
            (NrtStatus::Failure, 1, "NRT_FAILURE"),
            (NrtStatus::Invalid, 2, "NRT_INVALID"),
            (NrtStatus::InvalidHandle, 3, "NRT_INVALID_HANDLE"),
            (NrtStatus::Resource, 4, "NRT_RESOURCE"),
            (NrtStatus::Timeout, 5, "NRT_TIMEOUT"),
            (NrtStatus::FailHostMemAlloc, 11, "NRT_FAIL_HOST_MEM_ALLOC"),
        ];
        for (s, v, n) in status {
            assert_eq!((s as u32, s.name()), (v, n));
        }
    }

    #[test]
    fn raw_and_name_round_trip() {
        for (i, u) in UsageType::ALL.iter().enumerate() {
            assert_eq!(u.raw() as usize, i);
            assert_eq!(UsageType::from_raw(u.raw()), Some(*u));
            assert_eq!(UsageType::from_name(&u.name().to_lowercase()), Some(*u));
        }
        assert_eq!(UsageType::from_raw(22), None);
    }
}
