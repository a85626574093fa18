//! The legacy iDMA path (P9.1 §7): `DramRingDMA`, the instruction-cache
//! refill that pulls IRAM cache lines of `block_size` bytes from DRAM/HBM
//! into the core's instruction RAM. It drives its own ring pair on the
//! udma engine and shares no code, CSR or 64-byte word with the DGE tensor
//! path — in the model too: its own queue, its own rings in the Q7 DRAM,
//! and the firmware's own log strings (`IRAM cache init, block_size=0x%x`,
//! `start_fill_siram: fetch_addr=0x%llx`, `DramRingDMA::allocate(%zu)
//! submit=%llu`, `submit_pending: first_slot=%zu count=%zu submit=%llu
//! ring_id=%u`).
//!
//! Layout decisions (unpublished; docs/firmware.md): queue 14 of the core's
//! first engine; 32-entry rings at Q7 DRAM + 0x11000 (M2S), + 0x11200
//! (S2M), + 0x11400 (S2M completions) — above the 64 KiB dataram window
//! that `neuron_memcpy` copies into, next to the inline path's scratch;
//! IRAM line `(fetch / block_size + k) mod
//! (IRAM bytes / block_size)` receives block k of a fill.

/// The queue index the iDMA uses on the core's first engine.
pub const IDMA_QUEUE: u8 = 14;
/// Entries per ring.
pub const RING_DESCS: u32 = 32;
/// Ring offsets in the Q7 DRAM.
pub const M2S_RING: u64 = 0x1_1000;
/// S2M ring offset.
pub const S2M_RING: u64 = 0x1_1200;
/// S2M completion ring offset.
pub const COMP_RING: u64 = 0x1_1400;
/// Smallest cache line.
pub const MIN_BLOCK: u32 = 64;
/// Largest cache line (one descriptor).
pub const MAX_BLOCK: u32 = 65536;

/// Why `block_size` is not a cache line the model accepts, if it is not.
pub fn check_block_size(block_size: u32) -> Result<(), String> {
    if block_size.is_power_of_two() && (MIN_BLOCK..=MAX_BLOCK).contains(&block_size) {
        Ok(())
    } else {
        Err(format!(
            "IRAM cache init: block_size = {block_size:#x}: a power of two in {MIN_BLOCK:#x}..={MAX_BLOCK:#x}"
        ))
    }
}

/// The IRAM offset of block `k` of a fill starting at `fetch`.
pub fn line_offset(fetch: u64, k: u64, block_size: u32, iram_bytes: u64) -> u64 {
    let lines = (iram_bytes / u64::from(block_size)).max(1);
    ((fetch / u64::from(block_size) + k) % lines) * u64::from(block_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rings_are_out_of_reach_of_user_copies() {
        // neuron_memcpy reaches Q7 DRAM offsets [0, 0x10000); the inline
        // scratch is [0x10000, 0x10228).
        let window = crate::inline::dram_offset(crate::inline::DATARAM_LOCAL.end);
        let scratch = crate::inline::dram_offset(crate::inline::SCRATCH_LOCAL);
        let scratch_end = scratch + u64::from(crate::inline::SCRATCH_BYTES);
        for ring in [M2S_RING, S2M_RING, COMP_RING] {
            let end = ring + 16 * u64::from(RING_DESCS);
            assert!(ring >= window, "{ring:#x}");
            assert!(end <= scratch || ring >= scratch_end, "{ring:#x}");
            assert!(end <= 256 << 10);
        }
    }

    #[test]
    fn lines_wrap_around_the_iram() {
        // 128 KiB IRAM, 4 KiB lines: 32 lines.
        assert_eq!(line_offset(0x1_0000_0000, 0, 4096, 128 << 10), 0);
        assert_eq!(line_offset(0x3000, 1, 4096, 128 << 10), 0x4000);
        assert_eq!(line_offset(31 * 4096, 1, 4096, 128 << 10), 0);
        assert!(check_block_size(4096).is_ok());
        assert!(check_block_size(48).is_err());
        assert!(check_block_size(3000).is_err());
        assert!(check_block_size(1 << 17).is_err());
    }
}
