//! Every argument struct's size and field offsets against docs/references/driver.md
//! §1.4 (x86-64 LP64), checked with `size_of` / `offset_of!` and against the
//! layout data the docs are rendered from.
#![allow(clippy::unwrap_used)]

use std::mem::{offset_of, size_of};

use ioctl_abi::IoctlArg;
use ioctl_abi::args::*;

/// `check!(Type, size, [field @ offset, …])`: the named (non-padding)
/// fields in order, at these offsets.
macro_rules! check {
    ($ty:ty, $size:literal, [$($field:ident @ $off:literal),+ $(,)?]) => {{
        assert_eq!(size_of::<$ty>(), $size, "sizeof {}", stringify!($ty));
        $(
            assert_eq!(
                offset_of!($ty, $field),
                $off,
                "{}.{}",
                stringify!($ty),
                stringify!($field)
            );
        )+
        let info = <$ty as IoctlArg>::INFO;
        assert_eq!(info.size, $size);
        let named: Vec<(&str, usize)> = info
            .fields
            .iter()
            .filter(|f| !f.is_padding())
            .map(|f| (f.name, f.offset))
            .collect();
        let expect: Vec<(&str, usize)> = vec![$((stringify!($field), $off)),+];
        assert_eq!(named, expect, "{}", stringify!($ty));
        // Alignment 1: readable from any offset in a buffer.
        assert_eq!(std::mem::align_of::<$ty>(), 1);
        stringify!($ty)
    }};
}

#[test]
fn memory_structs() {
    let mut seen = vec![
        check!(
            MemAlloc,
            32,
            [
                size @ 0,
                host_memory @ 8,
                dram_channel @ 12,
                dram_region @ 16,
                nc_id @ 20,
                mem_handle @ 24,
            ]
        ),
        check!(
            MemAllocV2,
            40,
            [
                size @ 0,
                align @ 8,
                host_memory @ 16,
                dram_channel @ 20,
                dram_region @ 24,
                nc_id @ 28,
                mem_handle @ 32,
            ]
        ),
        check!(
            MemAllocV2MemType,
            48,
            [
                size @ 0,
                align @ 8,
                host_memory @ 16,
                dram_channel @ 20,
                dram_region @ 24,
                nc_id @ 28,
                mem_type @ 32,
                mem_handle @ 40,
            ]
        ),
        check!(
            MemAllocV2MemType64,
            56,
            [
                size @ 0,
                align @ 8,
                host_memory @ 16,
                dram_channel @ 20,
                dram_region @ 24,
                nc_id @ 28,
                mem_type @ 32,
                mem_handle @ 40,
                pad @ 48,
            ]
        ),
        check!(
            MemAllocV2MemType64Pa,
            64,
            [
                size @ 0,
                align @ 8,
                host_memory @ 16,
                dram_channel @ 20,
                dram_region @ 24,
                nc_id @ 28,
                mem_type @ 32,
                mem_handle @ 40,
                pad @ 48,
                pa @ 56,
            ]
        ),
        check!(MemGetPa, 16, [mem_handle @ 0, pa @ 8]),
        check!(MemGetInfo, 24, [mem_handle @ 0, mmap_offset @ 8, pa @ 16]),
        check!(
            MemGetExtendedInfo,
            48,
            [
                mem_handle @ 0,
                version @ 8,
                host_memory @ 12,
                mmap_offset @ 16,
                pa @ 24,
                pid @ 32,
                size @ 40,
            ]
        ),
        check!(MemFree, 8, [mem_handle @ 0]),
        check!(
            MemCopy,
            32,
            [
                src_mem_handle @ 0,
                dst_mem_handle @ 8,
                size @ 16,
                src_offset @ 20,
                dst_offset @ 24,
            ]
        ),
        check!(
            MemCopy64Deprecated,
            40,
            [
                src_mem_handle @ 0,
                dst_mem_handle @ 8,
                size @ 16,
                src_offset @ 24,
                dst_offset @ 32,
            ]
        ),
        check!(
            MemCopy64,
            56,
            [
                src_mem_handle @ 0,
                dst_mem_handle @ 8,
                size @ 16,
                src_offset @ 24,
                dst_offset @ 32,
                sequence_num @ 40,
                context @ 48,
            ]
        ),
        check!(
            MemCopyAsync,
            48,
            [
                src_mem_handle @ 0,
                dst_mem_handle @ 8,
                size @ 16,
                src_offset @ 20,
                dst_offset @ 24,
                host_prefetch_addr @ 32,
                pwait_handle @ 40,
                wait_handle @ 44,
            ]
        ),
        check!(
            MemCopyAsync64,
            56,
            [
                src_mem_handle @ 0,
                dst_mem_handle @ 8,
                size @ 16,
                src_offset @ 24,
                dst_offset @ 32,
                host_prefetch_addr @ 40,
                pwait_handle @ 48,
                wait_handle @ 52,
            ]
        ),
        check!(
            MemCopyAsyncWait,
            24,
            [src_mem_handle @ 0, dst_mem_handle @ 8, pwait_handle @ 16]
        ),
        check!(
            Memset,
            24,
            [mem_handle @ 0, offset @ 8, value @ 16, size @ 20]
        ),
        check!(
            Memset64,
            32,
            [mem_handle @ 0, offset @ 8, value @ 16, size @ 24]
        ),
        check!(
            MemBufCopy,
            32,
            [
                mem_handle @ 0,
                buffer @ 8,
                size @ 16,
                offset @ 20,
                copy_to_mem_handle @ 24,
            ]
        ),
        check!(
            MemBufCopy64,
            40,
            [
                mem_handle @ 0,
                buffer @ 8,
                size @ 16,
                offset @ 24,
                copy_to_mem_handle @ 32,
            ]
        ),
        check!(
            MemBufCopy64ZcDeprecated,
            48,
            [
                mem_handle @ 0,
                buffer @ 8,
                size @ 16,
                offset @ 24,
                is_copy_to_device @ 32,
                bar4_wr_threshold @ 36,
                h2t_qid @ 40,
                dummy @ 44,
            ]
        ),
        check!(
            MemBufCopy64Zc,
            64,
            [
                mem_handle @ 0,
                buffer @ 8,
                size @ 16,
                offset @ 24,
                is_copy_to_device @ 32,
                bar4_wr_threshold @ 36,
                h2t_qid @ 40,
                dummy @ 44,
                sequence_num @ 48,
                context @ 56,
            ]
        ),
        check!(
            MemBufCopy64ZcBatches,
            32,
            [
                sequence_num @ 0,
                batches_ptr @ 8,
                num_batches @ 16,
                is_copy_to_device @ 20,
                h2t_qid @ 24,
                flags @ 28,
            ]
        ),
        check!(
            MemcpyBatch,
            40,
            [
                mem_handle @ 0,
                mem_handle_offset @ 8,
                ops_ptr @ 16,
                num_ops @ 24,
                bar4_wr_threshold @ 28,
                flags @ 30,
                context @ 32,
            ]
        ),
        check!(TensorBatchOp, 24, [offset @ 0, size @ 8, buffer @ 16]),
        check!(MemGetMcMmapInfo, 24, [pa @ 0, mmap_offset @ 8, size @ 16]),
        check!(
            MemGetMcMmapInfoV2,
            32,
            [pa @ 0, mmap_offset @ 8, size @ 16, mem_handle @ 24]
        ),
    ];
    seen.sort_unstable();
    assert_eq!(seen.len(), 26);
}

#[test]
fn dma_structs() {
    check!(DmaEngInit, 4, [eng_id @ 0]);
    check!(DmaEngSetState, 8, [eng_id @ 0, state @ 4]);
    check!(DmaEngGetState, 16, [eng_id @ 0, state @ 8]);
    check!(
        DmaEngState,
        20,
        [
            revision_id @ 0,
            max_queues @ 4,
            num_queues @ 8,
            tx_state @ 12,
            rx_state @ 16,
        ]
    );
    check!(
        DmaQueueInit,
        48,
        [
            eng_id @ 0,
            qid @ 4,
            tx_desc_count @ 8,
            rx_desc_count @ 12,
            tx_handle @ 16,
            rx_handle @ 24,
            rxc_handle @ 32,
            axi_port @ 40,
        ]
    );
    check!(DmaQueueInitBatch, 12296, [count @ 0, entries @ 8]);
    check!(DmaQueueRelease, 8, [eng_id @ 0, qid @ 4]);
    check!(
        DmaQueueCopyStart,
        16,
        [eng_id @ 0, qid @ 4, tx_desc_count @ 8, rx_desc_count @ 12]
    );
    check!(DmaAckCompleted, 12, [eng_id @ 0, qid @ 4, count @ 8]);
    check!(DmaQueueGetState, 24, [eng_id @ 0, qid @ 4, tx @ 8, rx @ 16]);
    check!(
        DmaQueueState,
        48,
        [
            hw_status @ 0,
            sw_status @ 4,
            base_addr @ 8,
            length @ 16,
            head_pointer @ 20,
            tail_pointer @ 24,
            completion_base_addr @ 32,
            completion_head @ 40,
        ]
    );
    check!(
        DmaCopyDescriptors,
        32,
        [
            mem_handle @ 0,
            buffer @ 8,
            num_descs @ 16,
            offset @ 20,
            queue_type @ 24,
        ]
    );
    check!(
        DmaCopyDescriptors64,
        40,
        [
            mem_handle @ 0,
            buffer @ 8,
            num_descs @ 16,
            offset @ 24,
            queue_type @ 32,
        ]
    );
    check!(
        DmaDescriptorCopyout,
        32,
        [
            eng_id @ 0,
            qid @ 4,
            queue_type @ 8,
            start_index @ 12,
            count @ 16,
            buffer @ 24,
        ]
    );
    assert_eq!(DMA_QUEUE_INIT_BATCH_ENTRIES, 256);
}

#[test]
fn other_structs() {
    check!(Semaphore, 12, [nc_id @ 0, semaphore_index @ 4, value @ 8]);
    check!(Event, 12, [nc_id @ 0, event_index @ 4, value @ 8]);
    check!(
        ResourceMmapInfo,
        32,
        [
            block @ 0,
            block_id @ 4,
            resource @ 8,
            offset @ 16,
            size @ 24,
        ]
    );
    check!(
        H2tDmaAllocQueues,
        20,
        [
            sz @ 0,
            nc_id @ 2,
            copy_queue_cnt @ 4,
            service_queue_cnt @ 6,
            copy_queue_bmap @ 8,
            service_queue_bmap @ 12,
            copy_default_queue @ 16,
        ]
    );
    check!(
        H2tDmaFreeQueues,
        8,
        [sz @ 0, nc_id @ 2, fill0 @ 3, queue_bmap @ 4]
    );
    check!(HostMemPin, 24, [va @ 0, size @ 8, pa @ 16]);
    check!(HostMemUnpin, 8, [va @ 0]);
}

#[test]
fn every_table_argument_is_a_listed_struct() {
    for def in ioctl_abi::TABLE {
        if def.arg.fields.is_empty() {
            // Scalar / no argument.
            assert!(def.struct_size <= 4, "{}", def.name);
            continue;
        }
        let s = struct_info(def.arg.name).unwrap();
        assert_eq!(s.size, def.struct_size, "{}", def.name);
    }
    assert_eq!(STRUCTS.len(), 47);
}

#[test]
fn batch_entries_start_at_8_and_are_48_bytes_apart() {
    let mut batch = DmaQueueInitBatch::default();
    batch.count.set(2);
    batch.entries[1].qid.set(5);
    batch.entries[255].axi_port.set(0xDEAD_BEEF);
    let bytes = zerocopy::IntoBytes::as_bytes(&batch);
    assert_eq!(&bytes[0..4], &2u32.to_le_bytes());
    assert_eq!(&bytes[8 + 48 + 4..8 + 48 + 8], &5u32.to_le_bytes());
    assert_eq!(
        &bytes[8 + 255 * 48 + 40..8 + 255 * 48 + 44],
        &0xDEAD_BEEFu32.to_le_bytes()
    );
}
