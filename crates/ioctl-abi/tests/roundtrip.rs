//! Any bytes parse into every argument struct and serialize back to the
//! same bytes (no invalid bit patterns, no hidden padding).
#![allow(clippy::unwrap_used)]

use ioctl_abi::IoctlArg;
use ioctl_abi::args::*;
use proptest::prelude::*;

fn round_trip<T: IoctlArg>(bytes: &[u8]) {
    let size = T::INFO.size;
    assert_eq!(bytes.len(), size);
    let v = T::read_from_bytes(bytes).unwrap();
    assert_eq!(v.as_bytes(), bytes, "{}", T::INFO.name);
    // From a longer, unaligned buffer.
    let mut longer = vec![0xA5];
    longer.extend_from_slice(bytes);
    longer.push(0x5A);
    let (w, rest) = T::read_from_prefix(&longer[1..]).unwrap();
    assert_eq!(w.as_bytes(), bytes);
    assert_eq!(rest, &[0x5A]);
}

macro_rules! round_trips {
    ($($test:ident: $ty:ty;)+) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            $(
                #[test]
                fn $test(bytes in proptest::collection::vec(any::<u8>(), <$ty as IoctlArg>::INFO.size)) {
                    round_trip::<$ty>(&bytes);
                }
            )+
        }
    };
}

round_trips! {
    mem_alloc: MemAlloc;
    mem_alloc_v2: MemAllocV2;
    mem_alloc_v2_mem_type: MemAllocV2MemType;
    mem_alloc_v2_mem_type64: MemAllocV2MemType64;
    mem_alloc_v2_mem_type64_pa: MemAllocV2MemType64Pa;
    mem_get_pa: MemGetPa;
    mem_get_info: MemGetInfo;
    mem_get_extended_info: MemGetExtendedInfo;
    mem_free: MemFree;
    mem_copy: MemCopy;
    mem_copy64_deprecated: MemCopy64Deprecated;
    mem_copy64: MemCopy64;
    mem_copy_async: MemCopyAsync;
    mem_copy_async64: MemCopyAsync64;
    mem_copy_async_wait: MemCopyAsyncWait;
    memset: Memset;
    memset64: Memset64;
    mem_buf_copy: MemBufCopy;
    mem_buf_copy64: MemBufCopy64;
    mem_buf_copy64zc_deprecated: MemBufCopy64ZcDeprecated;
    mem_buf_copy64zc: MemBufCopy64Zc;
    mem_buf_copy64zc_batches: MemBufCopy64ZcBatches;
    memcpy_batch: MemcpyBatch;
    tensor_batch_op: TensorBatchOp;
    mem_get_mc_mmap_info: MemGetMcMmapInfo;
    mem_get_mc_mmap_info_v2: MemGetMcMmapInfoV2;
    dma_eng_init: DmaEngInit;
    dma_eng_set_state: DmaEngSetState;
    dma_eng_get_state: DmaEngGetState;
    dma_eng_state: DmaEngState;
    dma_queue_init: DmaQueueInit;
    dma_queue_init_batch: DmaQueueInitBatch;
    dma_queue_release: DmaQueueRelease;
    dma_queue_copy_start: DmaQueueCopyStart;
    dma_ack_completed: DmaAckCompleted;
    dma_queue_get_state: DmaQueueGetState;
    dma_queue_state: DmaQueueState;
    dma_copy_descriptors: DmaCopyDescriptors;
    dma_copy_descriptors64: DmaCopyDescriptors64;
    dma_descriptor_copyout: DmaDescriptorCopyout;
    semaphore: Semaphore;
    event: Event;
    resource_mmap_info: ResourceMmapInfo;
    h2t_dma_alloc_queues: H2tDmaAllocQueues;
    h2t_dma_free_queues: H2tDmaFreeQueues;
    host_mem_pin: HostMemPin;
    host_mem_unpin: HostMemUnpin;
}

proptest! {
    /// Any request number: the decoders invert the encoder, and lookup
    /// never panics and names only table entries.
    #[test]
    fn any_number_decodes_and_looks_up(cmd in any::<u32>()) {
        let d = ioctl_abi::encoding::Decoded::new(cmd);
        prop_assert_eq!(d.encode(), cmd);
        match ioctl_abi::lookup(cmd) {
            Ok(def) => prop_assert_eq!(def.value, cmd),
            Err(e) => prop_assert!(matches!(e, ioctl_abi::Errno::ENOTTY | ioctl_abi::Errno::EINVAL)),
        }
    }

    /// Any argument bytes for any ioctl: parsing the right type never
    /// panics, fails exactly when the bytes are short.
    #[test]
    fn parse_arg_fails_exactly_on_short_input(len in 0usize..80) {
        let def = ioctl_abi::lookup(ioctl_abi::cmd::MEM_BUF_ZEROCOPY64).unwrap();
        let bytes = vec![0x11; len];
        let r = ioctl_abi::parse_arg::<MemBufCopy64Zc>(def, &bytes);
        prop_assert_eq!(r.is_ok(), len >= 64);
    }
}
