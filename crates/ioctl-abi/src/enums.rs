//! The enums carried in argument fields (docs/references/driver.md §1.5, §2.8).
//!
//! Fields stay raw integers in the structs (any bit pattern must parse);
//! these enums give them names. Conversions from raw values are fallible.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Defines a C-like enum with its raw values and driver names.
macro_rules! c_enum {
    (
        $(#[doc = $doc:literal])+
        $name:ident : $repr:ty {
            $( $(#[doc = $vdoc:literal])* $variant:ident = $value:literal => $cname:literal, )+
        }
    ) => {
        $(#[doc = $doc])+
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
        #[repr($repr)]
        pub enum $name {
            $(
                $(#[doc = $vdoc])*
                #[doc = concat!("`", $cname, "` = ", stringify!($value), ".")]
                #[serde(rename = $cname)]
                $variant = $value,
            )+
        }

        impl $name {
            /// Every value, in numeric order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The raw value.
            #[must_use]
            pub const fn raw(self) -> $repr {
                self as $repr
            }

            /// The value with this raw number, if any.
            #[must_use]
            pub const fn from_raw(raw: $repr) -> Option<Self> {
                match raw {
                    $($value => Some(Self::$variant),)+
                    _ => None,
                }
            }

            /// The driver's name, e.g. `TENSORS_DEVICE`.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $cname,)+
                }
            }
        }

        impl TryFrom<$repr> for $name {
            type Error = $repr;
            fn try_from(raw: $repr) -> Result<Self, $repr> {
                Self::from_raw(raw).ok_or(raw)
            }
        }

        impl From<$name> for $repr {
            fn from(v: $name) -> $repr {
                v.raw()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

c_enum! {
    /// Memory-allocation category (`mem_alloc_category_t`), the `mem_type`
    /// of the V2MT allocations. Each maps to one sysfs counter; host
    /// categories count per device, device categories per NeuronCore.
    /// `MAX` (20) is the count, not a category.
    MemAllocCategory: u32 {
        UnknownHost = 0 => "UNKNOWN_HOST",
        CodeHost = 1 => "CODE_HOST",
        TensorsHost = 2 => "TENSORS_HOST",
        ConstantsHost = 3 => "CONSTANTS_HOST",
        MiscHost = 4 => "MISC_HOST",
        NcdevHost = 5 => "NCDEV_HOST",
        NotificationHost = 6 => "NOTIFICATION_HOST",
        UnknownDevice = 7 => "UNKNOWN_DEVICE",
        CodeDevice = 8 => "CODE_DEVICE",
        TensorsDevice = 9 => "TENSORS_DEVICE",
        ConstantsDevice = 10 => "CONSTANTS_DEVICE",
        ScratchpadDevice = 11 => "SCRATCHPAD_DEVICE",
        MiscDevice = 12 => "MISC_DEVICE",
        NcdevDevice = 13 => "NCDEV_DEVICE",
        CollectivesDevice = 14 => "COLLECTIVES_DEVICE",
        ScratchpadNonsharedDevice = 15 => "SCRATCHPAD_NONSHARED_DEVICE",
        NotificationDevice = 16 => "NOTIFICATION_DEVICE",
        DmaRingsHost = 17 => "DMA_RINGS_HOST",
        DmaRingsDevice = 18 => "DMA_RINGS_DEVICE",
        /// Shares the SCRATCHPAD sysfs counter.
        ContiguousScratchpadDevice = 19 => "CONTIGUOUS_SCRATCHPAD_DEVICE",
        /// The number of categories; out of range as a category.
        Max = 20 => "MAX",
    }
}

impl MemAllocCategory {
    /// Number of real categories (`MAX`).
    pub const COUNT: usize = 20;

    /// True for the host-memory categories (0–6 and 17), false for the
    /// device ones and `MAX`.
    #[must_use]
    pub const fn is_host(self) -> bool {
        matches!(self.raw(), 0..=6 | 17)
    }

    /// True for the device-memory categories (7–16, 18, 19).
    #[must_use]
    pub const fn is_device(self) -> bool {
        matches!(self.raw(), 7..=16 | 18 | 19)
    }

    /// The category the driver records for a raw `mem_type`: out-of-range
    /// values (≥ `MAX`) become `UNKNOWN_HOST` or `UNKNOWN_DEVICE` depending
    /// on where the memory is (the driver warns once).
    #[must_use]
    pub const fn coerce(raw: u32, host_memory: bool) -> Self {
        match Self::from_raw(raw) {
            Some(c) if !matches!(c, Self::Max) => c,
            _ if host_memory => Self::UnknownHost,
            _ => Self::UnknownDevice,
        }
    }
}

c_enum! {
    /// Ring kind of `DMA_COPY_DESCRIPTORS*` / `DMA_DESCRIPTOR_COPYOUT`
    /// (`neuron_dma_queue_type`).
    DmaQueueType: u32 {
        /// The M2S (read) ring.
        Tx = 0 => "TX",
        /// The S2M (write) ring.
        Rx = 1 => "RX",
        /// The completion ring.
        Completion = 2 => "COMPLETION",
    }
}

c_enum! {
    /// H2T DMA context / async wait handle (`neuron_dma_h2t_ctx_handle_type`).
    /// Carried in the u32 `pwait_handle`/`wait_handle` fields, where
    /// `NONE` is 0xFFFFFFFF.
    H2tCtxHandleType: i32 {
        /// No previous transfer.
        None = -1 => "NONE",
        /// Synchronous copies.
        Sync = 0 => "SYNC",
        /// First async slot.
        Async1 = 1 => "ASYNC1",
        /// Second async slot.
        Async2 = 2 => "ASYNC2",
    }
}

impl H2tCtxHandleType {
    /// Number of context slots per H2T ring (`CNT`).
    pub const COUNT: usize = 3;

    /// The handle held by a raw u32 field (0xFFFFFFFF = `NONE`).
    #[must_use]
    pub const fn from_field(raw: u32) -> Option<Self> {
        Self::from_raw(raw.cast_signed())
    }

    /// The raw u32 field value of this handle.
    #[must_use]
    pub const fn field(self) -> u32 {
        self.raw().cast_unsigned()
    }

    /// The handle an async copy gets after `self` (docs/references/driver.md §4.6):
    /// NONE → ASYNC1, ASYNC1 → ASYNC2, ASYNC2 → ASYNC1, SYNC → SYNC.
    #[must_use]
    pub const fn next_async(self) -> Self {
        match self {
            Self::None | Self::Async2 => Self::Async1,
            Self::Async1 => Self::Async2,
            Self::Sync => Self::Sync,
        }
    }
}

/// The `H2T` queue id that means "the default queue".
pub const NEURON_DMA_H2T_DEFAULT_QID: i32 = -1;

c_enum! {
    /// UDMA engine state (`enum udma_state`, docs/references/driver.md §2.8).
    UdmaState: u32 {
        Disable = 0 => "DISABLE",
        Idle = 1 => "IDLE",
        Normal = 2 => "NORMAL",
        Abort = 3 => "ABORT",
        Reset = 4 => "RESET",
    }
}

c_enum! {
    /// Queue software status reported by `DMA_QUEUE_GET_STATE`.
    QueueSwStatus: u32 {
        Disabled = 1 => "QUEUE_DISABLED",
        Enabled = 2 => "QUEUE_ENABLED",
        Aborted = 3 => "QUEUE_ABORTED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_0_to_20_in_order() {
        assert_eq!(MemAllocCategory::ALL.len(), 21);
        for (i, c) in MemAllocCategory::ALL.iter().enumerate() {
            assert_eq!(c.raw() as usize, i);
            assert_eq!(MemAllocCategory::from_raw(c.raw()), Some(*c));
        }
        assert_eq!(MemAllocCategory::from_raw(21), None);
        assert_eq!(MemAllocCategory::TensorsDevice.name(), "TENSORS_DEVICE");
        assert_eq!(
            MemAllocCategory::Max.raw() as usize,
            MemAllocCategory::COUNT
        );
        assert_eq!(MemAllocCategory::ContiguousScratchpadDevice.raw(), 19);
    }

    #[test]
    fn host_and_device_categories_partition_the_real_ones() {
        let host = MemAllocCategory::ALL.iter().filter(|c| c.is_host()).count();
        let dev = MemAllocCategory::ALL
            .iter()
            .filter(|c| c.is_device())
            .count();
        assert_eq!((host, dev), (8, 12));
        assert!(!MemAllocCategory::Max.is_host() && !MemAllocCategory::Max.is_device());
        assert!(MemAllocCategory::DmaRingsHost.is_host());
        assert!(MemAllocCategory::DmaRingsDevice.is_device());
    }

    #[test]
    fn out_of_range_categories_are_coerced() {
        use MemAllocCategory as C;
        assert_eq!(C::coerce(9, false), C::TensorsDevice);
        assert_eq!(C::coerce(20, true), C::UnknownHost);
        assert_eq!(C::coerce(20, false), C::UnknownDevice);
        assert_eq!(C::coerce(u32::MAX, false), C::UnknownDevice);
    }

    #[test]
    fn other_enums() {
        assert_eq!(DmaQueueType::try_from(2), Ok(DmaQueueType::Completion));
        assert_eq!(DmaQueueType::try_from(3), Err(3));
        assert_eq!(
            H2tCtxHandleType::from_field(0xFFFF_FFFF),
            Some(H2tCtxHandleType::None)
        );
        assert_eq!(H2tCtxHandleType::None.field(), 0xFFFF_FFFF);
        assert_eq!(H2tCtxHandleType::Async2.raw(), 2);
        assert_eq!(
            H2tCtxHandleType::None.next_async(),
            H2tCtxHandleType::Async1
        );
        assert_eq!(
            H2tCtxHandleType::Async1.next_async(),
            H2tCtxHandleType::Async2
        );
        assert_eq!(
            H2tCtxHandleType::Async2.next_async(),
            H2tCtxHandleType::Async1
        );
        assert_eq!(UdmaState::from_raw(4), Some(UdmaState::Reset));
        assert_eq!(UdmaState::Disable.raw(), 0);
        assert_eq!(QueueSwStatus::from_raw(0), None);
        assert_eq!(QueueSwStatus::Aborted.raw(), 3);
        assert_eq!(QueueSwStatus::Enabled.to_string(), "QUEUE_ENABLED");
    }
}
