//! The C layouts of `dmem_t` and `dmem_allocator_t` (tdrv-dmem §1,
//! docs/references/wiki.md §H.3), and of the NDL handle record, `ndl_device_t` and its
//! bounce buffers (`docs/host-runtime.md` §4.1), as documentation and data.
//!
//! The Rust runtime does not store these bytes; [`crate::DmemT`] keeps the
//! same fields as a struct and the allocator list is index-linked. The
//! tables pin what a byte-level consumer (a core dump reader, a trace
//! decoder) would need, and the tests check the two properties the seed
//! calls out: `ref_count` sits on its own 64-byte line away from the hot
//! `mem_handle`/`_pa` words, and the allocator-create "pcore stash"
//! arithmetic lands on `pcore@8`.

use serde::Serialize;

/// One field of a C struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FieldLayout {
    /// The C field name.
    pub name: &'static str,
    /// Byte offset (DWARF `data_member_location`).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

const fn f(name: &'static str, offset: usize, size: usize) -> FieldLayout {
    FieldLayout { name, offset, size }
}

/// A cache line on the host (x86-64).
pub const CACHE_LINE_BYTES: usize = 64;

/// `sizeof(dmem_t)`: `calloc(0xC0, 1)` (tdrv-dmem §1).
pub const DMEM_T_BYTES: usize = 192;

/// `dmem_t` field offsets (tdrv-dmem §1, docs/references/wiki.md §H.3). Bytes
/// 0x44..0x7F are never touched (QUIRK: padding that moves `ref_count` to
/// its own cache line at 128, so the atomic refcount RMW does not
/// false-share with `mem_handle`/`_pa`); 176..192 is tail padding.
pub const DMEM_T_LAYOUT: [FieldLayout; 16] = [
    f("pcore", 0, 8),
    f("mem_handle", 8, 8),
    f("size", 16, 8),
    f("_pa", 24, 8),
    f("_va", 32, 8),
    f("align_offset", 40, 8),
    f("allocated_size", 48, 8),
    f("mem_type", 56, 4),
    f("mem_usage_type", 60, 4),
    f("tdram_channel", 64, 4),
    f("ref_count", 128, 8),
    f("hint", 136, 8),
    f("cpy_buf", 144, 8),
    f("next", 152, 8),
    f("prev", 160, 8),
    f("allocator", 168, 8),
];

/// `sizeof(dmem_allocator_t)` (docs/references/wiki.md §H.3).
pub const DMEM_ALLOCATOR_T_BYTES: usize = 512;

/// `dmem_allocator_t` field offsets (docs/references/wiki.md §H.3): the two sentinels
/// are whole embedded `dmem_t`s; the mutex is a glibc `pthread_mutex_t`
/// (40 bytes on x86-64).
pub const DMEM_ALLOCATOR_T_LAYOUT: [FieldLayout; 6] = [
    f("type", 0, 4),
    f("pcore", 8, 8),
    f("lock", 16, 40),
    f("dummy_head", 64, DMEM_T_BYTES),
    f("dummy_tail", 256, DMEM_T_BYTES),
    f("largest_oversized_scratchpad_var", 448, 8),
];

/// `sizeof(dma_mem_log_t)`: `dml_init` clears 0x640 bytes
/// (`docs/host-runtime.md` §4.9).
pub const DMA_MEM_LOG_T_BYTES: usize = 1600;

/// `dma_mem_log_t`, the DML counter block (`docs/host-runtime.md` §4.9):
/// the per-HBM counters, the per-NC matrix `[8][23]` (22 usages + the NC
/// total), the ring cursors and the ring pointer. The Rust logger
/// ([`crate::dml::DmemLogger`]) keeps the same fields as a struct.
pub const DMA_MEM_LOG_T_LAYOUT: [FieldLayout; 10] = [
    f("lock", 0, 40),
    f("mla_idx", 40, 4),
    f("max_entries", 48, 8),
    f("entry_count", 56, 8),
    f("next_entry_idx", 64, 8),
    f("entries_dropped", 72, 8),
    f("memory_usage", 80, 4 * 8),
    f("memory_usage_nc", 112, 8 * 23 * 8),
    f("entries", 1584, 8),
    f("verbose_log_dev_mem", 1592, 4),
];

/// `sizeof(dma_mem_log_entry_t)`: the ring is `calloc(0x40, max_entries)`.
pub const DMA_MEM_LOG_ENTRY_T_BYTES: usize = 64;

/// `dma_mem_log_entry_t`, one ring element (`docs/host-runtime.md` §4.9;
/// [`crate::dml::DmlLogEntry`] has the same fields).
pub const DMA_MEM_LOG_ENTRY_T_LAYOUT: [FieldLayout; 10] = [
    f("action", 0, 4),
    f("mem_loc", 4, 4),
    f("mem_usage", 8, 4),
    f("tdram_channel", 12, 4),
    f("hint", 16, 8),
    f("nc_idx", 24, 4),
    f("size", 32, 8),
    f("pa", 40, 8),
    f("align_offset", 48, 8),
    f("total_mem_used", 56, 8),
];

/// `sizeof` of the NDL handle record (`calloc(0x40, 1)`,
/// `docs/host-runtime.md` §4.1).
pub const NDL_RECORD_BYTES: usize = 64;

/// The NDL handle record that a `dmem_t.mem_handle` points at
/// (`docs/host-runtime.md` §4.1). Word 0 is the device back-pointer: the other leaves reach the fd
/// as `*(int*)(*(uint64_t*)mem_handle + 632)`. The seed names the other
/// fields (`nc_id`, `size`, `align`, `host_memory`, the handle word the
/// driver writes through MEM_ALLOC's out-pointer) but not their offsets;
/// these are the simulator's (`docs/host-runtime.md` §6).
pub const NDL_RECORD_LAYOUT: [FieldLayout; 6] = [
    f("device", 0, 8),
    f("nc_id", 8, 4),
    f("host_memory", 12, 4),
    f("size", 16, 8),
    f("align", 24, 8),
    f("kernel_handle", 32, 8),
];

/// Where `ndl_device_t` keeps the fd the leaves issue ioctls on (`+632`,
/// `docs/host-runtime.md` §4.1).
pub const NDL_DEVICE_FD_OFFSET: usize = 632;

/// `sizeof(ndl_copy_buf_t)` as laid out here: two 8-byte words and the
/// 40-byte glibc mutex at +16 (the lock's offset is the runtime's; the
/// placement of `mem_handle` and `mmap_va` before it is ours,
/// `docs/host-runtime.md` §4.1).
pub const NDL_COPY_BUF_T_BYTES: usize = 56;

/// `ndl_copy_buf_t`, one NC's bounce buffer: the fields
/// `dmem_device_copy` reads (`cpy_buf->mem_handle`, `cpy_buf->mmap_va`,
/// `cpy_buf->lock`, `docs/host-runtime.md` §4.6). Only `lock@16` is known.
pub const NDL_COPY_BUF_T_LAYOUT: [FieldLayout; 3] =
    [f("mem_handle", 0, 8), f("mmap_va", 8, 8), f("lock", 16, 40)];

/// NeuronCores per `ndl_device_t` (`cpy_bufs[8]`).
pub const NDL_COPY_BUFS: usize = 8;

/// `sizeof` of the part of `ndl_device_t` the simulation lays out: up to
/// and including the fd at +632 (the real struct is larger; unknown).
pub const NDL_DEVICE_T_BYTES: usize = 640;

/// `ndl_device_t` as far as the runtime pins it (`docs/host-runtime.md`
/// §4.1): the inline
/// `ndl_copy_buf_t[8]` at +104 and the fd at +632.
pub const NDL_DEVICE_T_LAYOUT: [FieldLayout; 2] = [
    f("cpy_bufs", 104, NDL_COPY_BUFS * NDL_COPY_BUF_T_BYTES),
    f("fd", NDL_DEVICE_FD_OFFSET, 4),
];

/// The offset of `name` in `layout`.
#[must_use]
pub fn offset_of(layout: &[FieldLayout], name: &str) -> Option<usize> {
    layout.iter().find(|l| l.name == name).map(|l| l.offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_sorted_and_disjoint(layout: &[FieldLayout], total: usize) {
        for w in layout.windows(2) {
            assert!(
                w[0].offset + w[0].size <= w[1].offset,
                "{} overlaps {}",
                w[0].name,
                w[1].name
            );
        }
        let last = layout[layout.len() - 1];
        assert!(last.offset + last.size <= total);
    }

    #[test]
    fn dmem_t_layout_matches_seed() {
        check_sorted_and_disjoint(&DMEM_T_LAYOUT, DMEM_T_BYTES);
        let at = |n| offset_of(&DMEM_T_LAYOUT, n);
        assert_eq!(at("mem_handle"), Some(8));
        assert_eq!(at("_pa"), Some(24));
        assert_eq!(at("mem_type"), Some(0x38));
        assert_eq!(at("mem_usage_type"), Some(0x3C));
        assert_eq!(at("allocator"), Some(168));
        // ref_count starts a cache line of its own, away from the hot words.
        let rc = at("ref_count").unwrap();
        assert_eq!(rc, 128);
        assert_eq!(rc % CACHE_LINE_BYTES, 0);
        for hot in ["mem_handle", "_pa"] {
            assert_ne!(at(hot).unwrap() / CACHE_LINE_BYTES, rc / CACHE_LINE_BYTES);
        }
        // The untouched gap 0x44..0x7F.
        let tdram = DMEM_T_LAYOUT[9];
        assert_eq!(tdram.offset + tdram.size, 0x44);
        assert!(
            DMEM_T_LAYOUT
                .iter()
                .all(|l| l.offset + l.size <= 0x44 || l.offset >= 0x80)
        );
    }

    /// Every `dmem_t` field against the published layout
    /// (`docs/host-runtime.md` §4.2), typed in: offset and size.
    #[test]
    fn every_dmem_t_field_is_where_the_spec_puts_it() {
        let spec: [(&str, usize, usize); 16] = [
            ("pcore", 0, 8),
            ("mem_handle", 8, 8),
            ("size", 16, 8),
            ("_pa", 24, 8),
            ("_va", 32, 8),
            ("align_offset", 40, 8),
            ("allocated_size", 48, 8),
            ("mem_type", 56, 4),
            ("mem_usage_type", 60, 4),
            ("tdram_channel", 64, 4),
            ("ref_count", 128, 8),
            ("hint", 136, 8),
            ("cpy_buf", 144, 8),
            ("next", 152, 8),
            ("prev", 160, 8),
            ("allocator", 168, 8),
        ];
        let got: Vec<(&str, usize, usize)> = DMEM_T_LAYOUT
            .iter()
            .map(|l| (l.name, l.offset, l.size))
            .collect();
        assert_eq!(got, spec);
        assert_eq!(DMEM_T_BYTES, 0xC0);
        let spec: [(&str, usize); 6] = [
            ("type", 0),
            ("pcore", 8),
            ("lock", 16),
            ("dummy_head", 64),
            ("dummy_tail", 256),
            ("largest_oversized_scratchpad_var", 448),
        ];
        let got: Vec<(&str, usize)> = DMEM_ALLOCATOR_T_LAYOUT
            .iter()
            .map(|l| (l.name, l.offset))
            .collect();
        assert_eq!(got, spec);
        assert_eq!(DMEM_ALLOCATOR_T_BYTES, 512);
    }

    /// The DML counter block and ring entry (`docs/host-runtime.md` §4.9),
    /// typed in, and consistent with the logger's dimensions.
    #[test]
    fn dml_layouts_match_the_spec() {
        let spec: [(&str, usize); 11] = [
            ("lock", 0),
            ("mla_idx", 40),
            ("max_entries", 48),
            ("entry_count", 56),
            ("next_entry_idx", 64),
            ("entries_dropped", 72),
            ("memory_usage", 80),
            ("memory_usage_nc", 112),
            ("entries", 1584),
            ("verbose_log_dev_mem", 1592),
            // (tail padding to 1600)
            ("", 1600),
        ];
        let mut got: Vec<(&str, usize)> = DMA_MEM_LOG_T_LAYOUT
            .iter()
            .map(|l| (l.name, l.offset))
            .collect();
        got.push(("", DMA_MEM_LOG_T_BYTES));
        assert_eq!(got, spec);
        check_sorted_and_disjoint(&DMA_MEM_LOG_T_LAYOUT, DMA_MEM_LOG_T_BYTES);
        let size_of = |n| {
            DMA_MEM_LOG_T_LAYOUT
                .iter()
                .find(|l| l.name == n)
                .map(|l| l.size)
        };
        assert_eq!(size_of("memory_usage"), Some(crate::dml::NUM_CHANNELS * 8));
        assert_eq!(
            size_of("memory_usage_nc"),
            Some(crate::dml::NUM_NCS * crate::dml::NC_COLUMNS * 8),
            "[8][23] u64: the grand-total column makes rows 23 wide"
        );
        let spec: [(&str, usize, usize); 10] = [
            ("action", 0, 4),
            ("mem_loc", 4, 4),
            ("mem_usage", 8, 4),
            ("tdram_channel", 12, 4),
            ("hint", 16, 8),
            ("nc_idx", 24, 4),
            ("size", 32, 8),
            ("pa", 40, 8),
            ("align_offset", 48, 8),
            ("total_mem_used", 56, 8),
        ];
        let got: Vec<(&str, usize, usize)> = DMA_MEM_LOG_ENTRY_T_LAYOUT
            .iter()
            .map(|l| (l.name, l.offset, l.size))
            .collect();
        assert_eq!(got, spec);
        assert_eq!(DMA_MEM_LOG_ENTRY_T_BYTES, 64);
        check_sorted_and_disjoint(&DMA_MEM_LOG_ENTRY_T_LAYOUT, DMA_MEM_LOG_ENTRY_T_BYTES);
    }

    #[test]
    fn mem_type_and_usage_share_one_8_byte_word() {
        // tdrv-dmem §2 QUIRK: the scratchpad page sets both with one store.
        let t = offset_of(&DMEM_T_LAYOUT, "mem_type").unwrap();
        let u = offset_of(&DMEM_T_LAYOUT, "mem_usage_type").unwrap();
        assert_eq!(u, t + 4);
        assert_eq!(t % 8, 0);
    }

    #[test]
    fn ndl_layouts_match_seed() {
        check_sorted_and_disjoint(&NDL_RECORD_LAYOUT, NDL_RECORD_BYTES);
        // Word 0 of the record is the device back-pointer.
        assert_eq!(offset_of(&NDL_RECORD_LAYOUT, "device"), Some(0));
        assert_ne!(offset_of(&NDL_RECORD_LAYOUT, "kernel_handle"), Some(0));
        check_sorted_and_disjoint(&NDL_COPY_BUF_T_LAYOUT, NDL_COPY_BUF_T_BYTES);
        assert_eq!(offset_of(&NDL_COPY_BUF_T_LAYOUT, "lock"), Some(16));
        check_sorted_and_disjoint(&NDL_DEVICE_T_LAYOUT, NDL_DEVICE_T_BYTES);
        assert_eq!(offset_of(&NDL_DEVICE_T_LAYOUT, "cpy_bufs"), Some(104));
        assert_eq!(offset_of(&NDL_DEVICE_T_LAYOUT, "fd"), Some(632));
        // The eight copy buffers end before the fd.
        const { assert!(104 + NDL_COPY_BUFS * NDL_COPY_BUF_T_BYTES <= NDL_DEVICE_FD_OFFSET) };
    }

    #[test]
    fn allocator_layout_and_pcore_stash() {
        check_sorted_and_disjoint(&DMEM_ALLOCATOR_T_LAYOUT, DMEM_ALLOCATOR_T_BYTES);
        // tdrv-dmem §1 NOTE: `p_dummy_tail[-2].hint = pcore` is pcore@8:
        // 0x100 − 2·0xC0 + 0x88 = 0x08.
        let tail = offset_of(&DMEM_ALLOCATOR_T_LAYOUT, "dummy_tail").unwrap();
        let hint = offset_of(&DMEM_T_LAYOUT, "hint").unwrap();
        let stash = (tail + hint).checked_sub(2 * DMEM_T_BYTES).unwrap();
        assert_eq!(stash, offset_of(&DMEM_ALLOCATOR_T_LAYOUT, "pcore").unwrap());
        assert_eq!(
            offset_of(&DMEM_ALLOCATOR_T_LAYOUT, "dummy_head").unwrap() + DMEM_T_BYTES,
            tail
        );
    }
}
