//! Unit tests of the runtime and NDL against the test-only fake driver.

use std::cell::RefCell;
use std::rc::Rc;

use ioctl_abi::{Errno, cmd};
use ioctl_bus::{InProcess, IoctlError};

use crate::fake_driver::{FakeConfig, FakeDriver, FakeState, HOST_BIT};
use crate::ndl::{COPY_BUF_BYTES, COPY_BUF_HALF_BYTES};
use crate::*;

const MIB: u64 = 1 << 20;

fn open_with(cfg: DmemConfig, fake: FakeConfig) -> (Dmem, Rc<RefCell<FakeState>>) {
    let (drv, st) = FakeDriver::new(fake);
    let dm = Dmem::open(Box::new(InProcess::new(drv)), cfg).unwrap();
    (dm, st)
}

fn open() -> (Dmem, Rc<RefCell<FakeState>>) {
    open_with(DmemConfig::default(), FakeConfig::default())
}

fn model(dm: &mut Dmem, nc: u32) -> AllocatorId {
    dm.dmem_allocator_create(AllocatorKind::Model, nc).unwrap()
}

fn dev_alloc(dm: &mut Dmem, a: AllocatorId, size: u64) -> DmemId {
    dm.dmem_alloc(
        a,
        size,
        MemLocation::TongaDram,
        0,
        None,
        UsageType::Tensor,
        Some("t"),
    )
    .unwrap()
}

fn pattern(n: u64, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| ((i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8) ^ seed)
        .collect()
}

fn logs(dm: &Dmem) -> Vec<String> {
    dm.events()
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::Log { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn count_log(dm: &Dmem, msg: &str) -> usize {
    logs(dm).iter().filter(|m| *m == msg).count()
}

fn traces(dm: &Dmem) -> Vec<(TracePhase, u32)> {
    dm.events()
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::SysTrace {
                phase, trace_type, ..
            } => Some((*phase, trace_type.code())),
            _ => None,
        })
        .collect()
}

/// The bytes the fake holds for a dmem allocation at logical `offset`.
fn device_bytes(
    dm: &Dmem,
    st: &Rc<RefCell<FakeState>>,
    id: DmemId,
    offset: u64,
    n: u64,
) -> Vec<u8> {
    let m = dm.get(id).unwrap();
    let kh = dm.ndl().record(m.mem_handle).unwrap().kernel_handle;
    let s = st.borrow();
    let c = s.chunk_of_handle(kh).unwrap();
    let at = (m.align_offset_bytes + offset) as usize;
    c.data[at..at + n as usize].to_vec()
}

// ---- NDL ------------------------------------------------------------------

/// `dmem_allocator_type_t` and the sys-trace event types
/// (`docs/host-runtime.md` §4.2, §4.10).
#[test]
fn allocator_kinds_and_trace_types_have_their_c_values() {
    assert_eq!(
        (AllocatorKind::Global as u32, AllocatorKind::Model as u32),
        (0, 1)
    );
    assert_eq!(
        [
            SysTraceType::CopyIn.code(),
            SysTraceType::CopyOut.code(),
            SysTraceType::Alloc.code(),
            SysTraceType::Free.code()
        ],
        [30, 31, 34, 35]
    );
    // The TPB allocators open() creates are GLOBAL, one per NC.
    let (dm, _) = open();
    for nc in 0..8 {
        let a = dm.tpb_allocator(nc).unwrap();
        assert_eq!(dm.allocator_info(a), Some((AllocatorKind::Global, nc)));
    }
}

#[test]
fn open_allocates_one_2mib_ncdev_host_bounce_buffer_per_nc() {
    let (dm, st) = open();
    let s = st.borrow();
    assert_eq!(s.allocs.len(), 8);
    for (nc, a) in s.allocs.iter().enumerate() {
        assert_eq!(a.size, COPY_BUF_BYTES);
        assert!(a.host);
        assert_eq!(a.category, 5, "NCDEV_HOST");
        assert_eq!(a.nc as usize, nc);
    }
    assert_eq!(COPY_BUF_HALF_BYTES * 2, COPY_BUF_BYTES);
    // ndl_get_copy_buf is not an ioctl and returns the same buffer each time.
    let n = s.requests.len();
    drop(s);
    let b0 = dm.ndl().ndl_get_copy_buf(3).unwrap();
    assert_eq!(dm.ndl().ndl_get_copy_buf(3).unwrap(), b0);
    assert_ne!(dm.ndl().ndl_get_copy_buf(2).unwrap(), b0);
    assert!(b0.pa & HOST_BIT != 0);
    assert_eq!(
        dm.ndl().ndl_get_copy_buf(8),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    assert_eq!(st.borrow().requests.len(), n);
}

fn read_u64(dm: &Dmem, addr: u64) -> u64 {
    let mut word = [0u8; 8];
    dm.user().read(addr, &mut word).unwrap();
    u64::from_le_bytes(word)
}

/// The NDL record as the runtime lays it out: word 0 is the device
/// back-pointer (`*(uint64_t*)mem_handle`), whose `+632` holds the fd the
/// other leaves re-enter through; the kernel handle is written by the
/// driver into its own word (`docs/host-runtime.md` §4.1). An earlier
/// version put the kernel handle in word 0, which left the seed's
/// `*(int*)(*(uint64_t*)mem_handle + 632)` nowhere to point.
#[test]
fn ndl_alloc_writes_the_kernel_handle_through_the_record() {
    let (mut dm, st) = open();
    let h = dm
        .ndl_mut()
        .ndl_memory_alloc(
            5000,
            0,
            false,
            2,
            0,
            4,
            ioctl_abi::enums::MemAllocCategory::TensorsDevice,
        )
        .unwrap();
    let rec = dm.ndl().record(h).unwrap().clone();
    // Word 0: the device back-pointer; the fd sits at device + 632.
    let device = read_u64(&dm, h.user_addr());
    assert_eq!(device, dm.ndl().device_addr());
    let mut fd = [0u8; 4];
    dm.user()
        .read(device + layout::NDL_DEVICE_FD_OFFSET as u64, &mut fd)
        .unwrap();
    assert_eq!(i32::from_le_bytes(fd), ndl::NDL_DEVICE_FD);
    // The driver wrote the kernel handle through the record's handle word.
    assert_eq!(
        read_u64(&dm, h.user_addr() + ndl::NDL_RECORD_HANDLE_OFFSET),
        rec.kernel_handle
    );
    assert_ne!(device, rec.kernel_handle);
    // The other words, at the offsets of layout::NDL_RECORD_LAYOUT.
    let at = |n| layout::offset_of(&layout::NDL_RECORD_LAYOUT, n).unwrap() as u64;
    assert_eq!(read_u64(&dm, h.user_addr() + at("size")), 5000);
    assert_eq!(read_u64(&dm, h.user_addr() + at("align")), 0);
    assert_eq!(read_u64(&dm, h.user_addr() + at("nc_id")) & 0xFFFF_FFFF, 4);
    assert_eq!(
        (rec.nc_id, rec.size_bytes, rec.host_memory),
        (4, 5000, false)
    );
    let s = st.borrow();
    assert_eq!(*s.requests.last().unwrap(), 0x8038_4E66);
    let a = s.allocs.last().unwrap();
    assert_eq!((a.category, a.channel, a.nc, a.host), (9, 2, 4, false));
    drop(s);
    let pa = dm.ndl_mut().ndl_memory_get_pa(h).unwrap();
    assert_eq!(pa >> 36, 2, "channel 2");
    assert_eq!(*st.borrow().requests.last().unwrap(), 0x8008_4E19);
    dm.ndl_mut().ndl_memory_free(h).unwrap();
    assert_eq!(*st.borrow().requests.last().unwrap(), 0x8008_4E16);
    assert!(dm.ndl().record(h).is_none());
    // A freed handle is unknown to NDL: EINVAL, no ioctl.
    assert_eq!(
        dm.ndl_mut().ndl_memory_free(h),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
}

/// The device block the records point at also holds the per-NC bounce
/// buffers (`ndl_device_t.cpy_bufs[8]` at +104), at
/// the offsets of `layout::NDL_COPY_BUF_T_LAYOUT`.
#[test]
fn ndl_device_block_holds_the_copy_buffers() {
    let (dm, _) = open();
    let device = dm.ndl().device_addr();
    let base = layout::offset_of(&layout::NDL_DEVICE_T_LAYOUT, "cpy_bufs").unwrap() as u64;
    assert_eq!(base, 104);
    let handle_at = layout::offset_of(&layout::NDL_COPY_BUF_T_LAYOUT, "mem_handle").unwrap() as u64;
    let va_at = layout::offset_of(&layout::NDL_COPY_BUF_T_LAYOUT, "mmap_va").unwrap() as u64;
    for nc in 0..8u32 {
        let b = dm.ndl().ndl_get_copy_buf(nc).unwrap();
        let entry = device + base + u64::from(nc) * layout::NDL_COPY_BUF_T_BYTES as u64;
        assert_eq!(read_u64(&dm, entry + handle_at), b.handle.user_addr());
        assert_eq!(read_u64(&dm, entry + va_at), b.pa);
    }
}

/// `docs/host-runtime.md` §4.1: when the 64-bit request (MEM_ALLOC_V2MT64) fails,
/// `ndl_memory_alloc` falls back to the older MEM_ALLOC_V2MT (0x80304E66)
/// with the same fields — for a size that fits in 32 bits, and not on
/// ENOMEM (`docs/host-runtime.md` §4.1).
#[test]
fn ndl_alloc_falls_back_to_the_32_bit_request() {
    let fake = FakeConfig {
        reject_alloc64: Some(Errno::EINVAL),
        ..FakeConfig::default()
    };
    let (mut dm, st) = open_with(DmemConfig::default(), fake);
    // Open itself went through the fallback for every bounce buffer.
    assert_eq!(st.borrow().count(cmd::MEM_ALLOC_V2MT), 8);
    let a = model(&mut dm, 1);
    let n = st.borrow().requests.len();
    let id = dev_alloc(&mut dm, a, 8192);
    assert_eq!(
        st.borrow().requests[n..n + 2],
        [cmd::MEM_ALLOC_V2MT64, cmd::MEM_ALLOC_V2MT]
    );
    let m = dm.get(id).unwrap().clone();
    let kh = dm.ndl().record(m.mem_handle).unwrap().kernel_handle;
    assert!(st.borrow().chunk_of_handle(kh).is_some());
    assert_eq!(
        read_u64(
            &dm,
            m.mem_handle.user_addr() + ndl::NDL_RECORD_HANDLE_OFFSET
        ),
        kh
    );
    // ENOTTY (a driver that does not know the number) falls back too.
    st.borrow_mut().cfg.reject_alloc64 = Some(Errno::ENOTTY);
    let n = st.borrow().requests.len();
    dev_alloc(&mut dm, a, 4096);
    assert_eq!(
        st.borrow().requests[n..n + 2],
        [cmd::MEM_ALLOC_V2MT64, cmd::MEM_ALLOC_V2MT]
    );
    // A size of 4 GiB or more has no 32-bit request: the error stands.
    st.borrow_mut().cfg.reject_alloc64 = Some(Errno::EINVAL);
    let n = st.borrow().requests.len();
    let r = dm.dmem_alloc(
        a,
        1 << 32,
        MemLocation::TongaDram,
        0,
        None,
        UsageType::Tensor,
        None,
    );
    assert_eq!(r, Err(NrtStatus::Failure));
    assert_eq!(st.borrow().requests[n..], [cmd::MEM_ALLOC_V2MT64]);
    // Out of memory is out of memory: no second request.
    st.borrow_mut().cfg.reject_alloc64 = Some(Errno::ENOMEM);
    let n = st.borrow().requests.len();
    let r = dm.dmem_alloc(
        a,
        4096,
        MemLocation::TongaDram,
        0,
        None,
        UsageType::Tensor,
        None,
    );
    assert_eq!(r, Err(NrtStatus::Resource));
    assert_eq!(st.borrow().requests[n..], [cmd::MEM_ALLOC_V2MT64]);
}

#[test]
fn ndl_errors_keep_their_errno() {
    let (mut dm, st) = open();
    st.borrow_mut().cfg.fail_alloc = Some(Errno::ENOMEM);
    let r = dm.ndl_mut().ndl_memory_alloc(
        4096,
        0,
        true,
        0,
        0,
        0,
        ioctl_abi::enums::MemAllocCategory::MiscHost,
    );
    assert_eq!(r, Err(IoctlError::Errno(Errno::ENOMEM)));
    st.borrow_mut().cfg.fail_alloc = Some(Errno::EFAULT);
    let r = dm.ndl_mut().ndl_alloc_contiguous_scratchpad(4096, 0, 0);
    assert_eq!(r, Err(IoctlError::Errno(Errno::EFAULT)));
}

#[test]
fn copy_as_wait_handles_alternate_and_sync_stays_sync() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let id = dev_alloc(&mut dm, a, 4 * MIB);
    let mem = dm.get(id).unwrap().mem_handle;
    let buf = dm.ndl().ndl_get_copy_buf(0).unwrap().handle;
    let mut wait = -1;
    let mut seen = vec![];
    for _ in 0..4 {
        dm.ndl_mut()
            .ndl_memory_copy_as(buf, mem, 0, 0, 64, 0, &mut wait)
            .unwrap();
        seen.push(wait);
    }
    assert_eq!(seen, [1, 2, 1, 2]);
    let pwaits: Vec<i32> = st.borrow().copies.iter().map(|c| c.pwait).collect();
    assert_eq!(pwaits, [-1, 1, 2, 1]);
    assert_eq!(*st.borrow().requests.last().unwrap(), 0xC038_4E6C);
    dm.ndl_mut().ndl_memory_copy_as_wait(mem, wait).unwrap();
    let mut sync = 0;
    dm.ndl_mut()
        .ndl_memory_copy_as(buf, mem, 0, 0, 64, 0, &mut sync)
        .unwrap();
    assert_eq!(sync, 0);
    // SYNC and NONE have nothing to wait for: no ioctl.
    let n = st.borrow().count(cmd::MEM_COPY_ASYNC_WAIT);
    dm.ndl_mut().ndl_memory_copy_as_wait(mem, 0).unwrap();
    dm.ndl_mut().ndl_memory_copy_as_wait(mem, -1).unwrap();
    assert_eq!(st.borrow().count(cmd::MEM_COPY_ASYNC_WAIT), n);
    // A failed copy leaves the caller's handle alone.
    let nth = st.borrow().copies.len() + 1;
    st.borrow_mut().cfg.fail_copy_async = Some((nth, Errno::EIO));
    let mut w = 2;
    assert_eq!(
        dm.ndl_mut()
            .ndl_memory_copy_as(buf, mem, 0, 0, 64, 0, &mut w),
        Err(IoctlError::Errno(Errno::EIO))
    );
    assert_eq!(w, 2);
}

// ---- layout, tables, pure helpers ----------------------------------------

#[test]
fn copy_plan_thresholds_are_byte_exact() {
    let p = |s| {
        let c = device_copy_plan(s);
        (c.chunk_bytes, c.wait_handle)
    };
    assert_eq!(p(0), (0x4000, 0));
    assert_eq!(p(1), (0x4000, 0));
    assert_eq!(p(0x3FFF), (0x4000, 0));
    assert_eq!(p(0x4000), (0x2000, -1));
    assert_eq!(p(0x4001), (0x2000, -1));
    assert_eq!(p(0x5000), (0x3000, -1));
    assert_eq!(p(0x5001), (0x3000, -1));
    assert_eq!(p(0x100000), (0x80000, -1));
    assert_eq!(p(0x100001), (0x100000, -1));
    assert_eq!(p(u64::MAX), (0x100000, -1));
    // The middle band never reaches "chunk covers the size" (SYNC).
    for s in (0x4000..=0x100000).step_by(0x7FF) {
        let c = device_copy_plan(s);
        assert_eq!(c.wait_handle, -1, "size {s:#x}");
        assert!(c.chunk_bytes < s && c.chunk_bytes.is_multiple_of(0x1000));
        assert!(c.chunk_bytes <= COPY_BUF_HALF_BYTES);
    }
}

#[test]
fn fallback_align_offset_math() {
    assert_eq!(fallback_align_offset(0x1000, 0x10000), 0xF000);
    assert_eq!(fallback_align_offset(0x1_2345, 0x1000), 0xCBB);
    // Already aligned: a whole alignment of offset (the C formula).
    assert_eq!(fallback_align_offset(0x20000, 0x10000), 0x10000);
    assert_eq!(fallback_align_offset(0, 0x10000), 0x10000);
    for pa in [0u64, 1, 0xFFF, 0x1000, 0x1_0001, 0xABCD_E000] {
        for a in [0x1000u64, 0x4000, 0x10000] {
            let off = fallback_align_offset(pa, a);
            assert!((1..=a).contains(&off));
            assert_eq!((pa + off) % a, 0);
        }
    }
}

#[test]
fn scratchpad_type_word_sets_location_and_usage() {
    assert_eq!(
        split_type_word(SCRATCHPAD_PAGE_TYPE_WORD),
        (Some(MemLocation::TongaDram), Some(UsageType::Scratchpad))
    );
    assert_eq!(
        split_type_word(0x1_0000_0000),
        (None, Some(UsageType::InstrPe))
    );
    assert_eq!(default_hbm_index(7), 3);
    assert_eq!(default_hbm_index(4), 2);
}

// ---- allocation -----------------------------------------------------------

#[test]
fn alloc_issues_category_byte_and_emits_events_in_order() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 5);
    dm.drain_events();
    let id = dm
        .dmem_alloc(
            a,
            8192,
            MemLocation::TongaDram,
            2,
            None,
            UsageType::Weight,
            Some("w"),
        )
        .unwrap();
    let m = dm.get(id).unwrap().clone();
    let call = *st.borrow().allocs.last().unwrap();
    assert_eq!(
        call.category, 10,
        "CONSTANTS_DEVICE, not the usage number 6"
    );
    assert_eq!(
        (call.nc, call.channel, call.align, call.host),
        (5, 2, 0, false)
    );
    assert_eq!(m.ref_count, 1);
    assert_eq!(m.allocated_size_bytes, 8192);
    assert_eq!(m.hint.as_deref(), Some("w"));
    assert_eq!(m.cpy_buf, Some(dm.ndl().ndl_get_copy_buf(5).unwrap()));
    assert_eq!(m.allocator, Some(a));
    assert_eq!(dm.allocator_members(a).unwrap(), [id]);
    let ev = dm.drain_events();
    assert_eq!(ev.len(), 4);
    assert!(matches!(
        ev[0],
        RuntimeEvent::SysTrace {
            phase: TracePhase::Begin,
            trace_type: SysTraceType::Alloc,
            ..
        }
    ));
    assert!(matches!(
        &ev[1],
        RuntimeEvent::Ntrace { kind: MemEventKind::Alloc, allocated_size_bytes: 8192, hint: Some(h), .. } if h == "w"
    ));
    assert_eq!(
        ev[2],
        RuntimeEvent::MemUsage {
            line: "MEM_USAGE: 8192 bytes, channel: 2, total usage: (8192/25769803776), hint:w"
                .into()
        }
    );
    assert!(matches!(
        ev[3],
        RuntimeEvent::SysTrace {
            phase: TracePhase::Stop,
            trace_type: SysTraceType::Alloc,
            ..
        }
    ));
    assert_eq!(dm.logger().memory_usage(2), Some(8192));
    assert_eq!(
        dm.logger()
            .memory_usage_nc(5, UsageType::Weight.raw() as usize),
        Some(8192)
    );

    dm.dmem_free(id).unwrap();
    let ev = dm.drain_events();
    let kinds: Vec<String> = ev
        .iter()
        .map(|e| match e {
            RuntimeEvent::SysTrace {
                phase, trace_type, ..
            } => format!("{phase:?}{}", trace_type.code()),
            RuntimeEvent::MemUsage { line } => line.clone(),
            RuntimeEvent::Ntrace { kind, .. } => format!("ntrace {kind:?}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "Begin35",
            "ntrace Free",
            "MEM_USAGE: 8192 bytes, channel: 2, total usage: (0/25769803776)",
            "Stop35"
        ]
    );
    assert_eq!(dm.allocator_members(a).unwrap(), []);
    assert_eq!(dm.logger().memory_usage(2), Some(0));
}

/// The alloc and free paths order the records differently
/// (`docs/host-runtime.md` §4.8): alloc is DML, NDS,
/// ntrace, `MEM_USAGE`; free is ntrace, DML, NDS, `MEM_USAGE` (the trace
/// record before the metrics one).
#[test]
fn free_emits_the_trace_record_before_the_metrics_record() {
    let cfg = DmemConfig {
        enable_metrics: true,
        ..DmemConfig::default()
    };
    let (mut dm, _) = open_with(cfg, FakeConfig::default());
    let a = model(&mut dm, 1);
    let kinds = |ev: &[RuntimeEvent]| -> Vec<String> {
        ev.iter()
            .map(|e| match e {
                RuntimeEvent::SysTrace {
                    phase, trace_type, ..
                } => format!("{phase:?}{}", trace_type.code()),
                RuntimeEvent::MemUsage { .. } => "MEM_USAGE".into(),
                RuntimeEvent::Ntrace { kind, .. } => format!("ntrace {kind:?}"),
                RuntimeEvent::Nds { kind, .. } => format!("nds {kind:?}"),
                other => format!("{other:?}"),
            })
            .collect()
    };
    dm.drain_events();
    let id = dev_alloc(&mut dm, a, 4096);
    assert_eq!(
        kinds(&dm.drain_events()),
        [
            "Begin34",
            "nds Alloc",
            "ntrace Alloc",
            "MEM_USAGE",
            "Stop34"
        ]
    );
    dm.dmem_free(id).unwrap();
    assert_eq!(
        kinds(&dm.drain_events()),
        ["Begin35", "ntrace Free", "nds Free", "MEM_USAGE", "Stop35"]
    );
}

#[test]
fn metrics_add_nds_records_and_events_serialize() {
    let cfg = DmemConfig {
        enable_metrics: true,
        device_index: 3,
        ..DmemConfig::default()
    };
    let (mut dm, _) = open_with(cfg, FakeConfig::default());
    let a = model(&mut dm, 1);
    let id = dev_alloc(&mut dm, a, 4096);
    dm.dmem_free(id).unwrap();
    let nds: Vec<_> = dm
        .events()
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::Nds {
                kind, device, nc, ..
            } => Some((*kind, *device, *nc)),
            _ => None,
        })
        .collect();
    assert_eq!(
        nds,
        [(MemEventKind::Alloc, 3, 1), (MemEventKind::Free, 3, 1)]
    );
    let json = serde_json::to_string(dm.events()).unwrap();
    assert!(json.contains("\"SysTrace\""));
    assert!(json.contains("\"Alloc\""));
}

#[test]
fn invalid_usage_for_host_is_rejected_before_the_driver() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    dm.drain_events();
    let n = st.borrow().requests.len();
    for (u, raw) in [
        (UsageType::Scratchpad, 11),
        (UsageType::Cc, 15),
        (UsageType::ScratchpadNotShared, 16),
    ] {
        let r = dm.dmem_alloc(a, 4096, MemLocation::HostDram, 0, None, u, None);
        assert_eq!(r, Err(NrtStatus::Invalid));
        assert_eq!(
            logs(&dm).last().unwrap(),
            &format!("Invalid mem_usage_type {raw} for host")
        );
    }
    assert_eq!(st.borrow().requests.len(), n, "no ioctl");
    // As the seed shows: the alloc trace is begun, never stopped.
    assert!(traces(&dm).iter().all(|t| *t == (TracePhase::Begin, 34)));
    assert!(dm.live_allocations().is_empty());
}

#[test]
fn device_enomem_is_resource_with_dump_and_oom_report() {
    let (mut dm, _) = open();
    let a = model(&mut dm, 0);
    let keep = dev_alloc(&mut dm, a, MIB);
    dm.drain_events();
    let r = dm.dmem_alloc(
        a,
        128 * MIB,
        MemLocation::TongaDram,
        0,
        None,
        UsageType::Tensor,
        Some("big"),
    );
    assert_eq!(r, Err(NrtStatus::Resource));
    let ev = dm.drain_events();
    assert!(matches!(
        ev[1],
        RuntimeEvent::SysTrace {
            phase: TracePhase::Stop,
            trace_type: SysTraceType::Alloc,
            ..
        }
    ));
    assert!(
        matches!(&ev[2], RuntimeEvent::DmlDump { text } if text.contains("memory_usage[0] = 1048576"))
    );
    let RuntimeEvent::OomReport { text } = &ev[3] else {
        panic!("{:?}", ev[3]);
    };
    assert_eq!(
        text.lines().next().unwrap(),
        "Failed to allocate 128.000MB (alignment: none, usage: tensors) on ND 0:NC 0"
    );
    assert!(!ev.iter().any(
        |e| matches!(e, RuntimeEvent::Log { message, .. } if message == MSG_ALIGNED_OOM_HINT)
    ));
    assert_eq!(ev.len(), 4);
    assert_eq!(dm.live_allocations(), [keep]);

    // Aligned: the hint precedes the report; the latch is not touched.
    let r = dm.dmem_alloc_aligned(
        a,
        128 * MIB,
        MemLocation::TongaDram,
        0,
        None,
        UsageType::Tensor,
        None,
        0x10000,
    );
    assert_eq!(r, Err(NrtStatus::Resource));
    let ev = dm.drain_events();
    let hint_at = ev
        .iter()
        .position(
            |e| matches!(e, RuntimeEvent::Log { message, .. } if message == MSG_ALIGNED_OOM_HINT),
        )
        .unwrap();
    assert!(
        matches!(&ev[hint_at + 1], RuntimeEvent::OomReport { text } if text.contains("alignment: 64.000KB"))
    );
    assert!(dm.ndl_supports_align());
}

#[test]
fn host_enomem_is_fail_host_mem_alloc() {
    let (mut dm, _) = open();
    let a = model(&mut dm, 0);
    dm.drain_events();
    let r = dm.dmem_alloc(
        a,
        512 * MIB,
        MemLocation::HostDram,
        0,
        None,
        UsageType::Io,
        None,
    );
    assert_eq!(r, Err(NrtStatus::FailHostMemAlloc));
    let ev = dm.drain_events();
    assert!(ev.iter().any(|e| matches!(e, RuntimeEvent::DmlDump { .. })));
    assert!(
        !ev.iter()
            .any(|e| matches!(e, RuntimeEvent::OomReport { .. }))
    );
}

#[test]
fn other_errnos_are_failure_without_report() {
    let (mut dm, _) = open();
    let a = model(&mut dm, 0);
    dm.drain_events();
    // Channel 7 does not exist: the driver says EINVAL.
    let r = dm.dmem_alloc(
        a,
        4096,
        MemLocation::TongaDram,
        7,
        None,
        UsageType::Io,
        None,
    );
    assert_eq!(r, Err(NrtStatus::Failure));
    let ev = dm.drain_events();
    assert_eq!(
        traces_of(&ev),
        [(TracePhase::Begin, 34), (TracePhase::Stop, 34)]
    );
    assert_eq!(ev.len(), 2);
    assert_eq!(
        alloc_error_status(&IoctlError::Errno(Errno::EINVAL), MemLocation::HostDram),
        NrtStatus::Failure
    );
    assert_eq!(
        alloc_error_status(
            &IoctlError::Bus(ioctl_bus::BusError::Disconnected),
            MemLocation::TongaDram
        ),
        NrtStatus::Failure
    );
}

fn traces_of(ev: &[RuntimeEvent]) -> Vec<(TracePhase, u32)> {
    ev.iter()
        .filter_map(|e| match e {
            RuntimeEvent::SysTrace {
                phase, trace_type, ..
            } => Some((*phase, trace_type.code())),
            _ => None,
        })
        .collect()
}

#[test]
fn aligned_alloc_uses_the_driver_when_it_can() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let _pad = dev_alloc(&mut dm, a, 4096);
    let id = dm
        .dmem_alloc_aligned(
            a,
            10_000,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::DmaRing,
            None,
            0x10000,
        )
        .unwrap();
    let m = dm.get(id).unwrap();
    assert_eq!(st.borrow().allocs.last().unwrap().align, 0x10000);
    assert_eq!(m.pa % 0x10000, 0);
    assert_eq!(
        (m.align_offset_bytes, m.size_bytes, m.allocated_size_bytes),
        (0, 10_000, 10_000)
    );
    assert!(dm.ndl_supports_align());
}

#[test]
fn aligned_alloc_falls_back_once_on_an_old_driver() {
    let fake = FakeConfig {
        reject_align: true,
        ..FakeConfig::default()
    };
    let (mut dm, st) = open_with(DmemConfig::default(), fake);
    let a = model(&mut dm, 0);
    let _pad = dev_alloc(&mut dm, a, 4096); // so the next PA is not aligned
    let n0 = st.borrow().allocs.len();
    let align = 0x10000;
    let id = dm
        .dmem_alloc_aligned(
            a,
            10_000,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::DmaRing,
            Some("ring"),
            align,
        )
        .unwrap();
    let calls: Vec<(u64, u64)> = st.borrow().allocs[n0..]
        .iter()
        .map(|c| (c.size, c.align))
        .collect();
    // The aligned request goes out as MEM_ALLOC_V2MT64 and, refused with
    // EINVAL, once more as the older MEM_ALLOC_V2MT (NDL's compat path);
    // then the unaligned over-allocation.
    assert_eq!(
        calls,
        [(10_000, align), (10_000, align), (10_000 + align, 0)]
    );
    assert_eq!(count_log(&dm, MSG_ALIGN_UNSUPPORTED), 1);
    assert!(!dm.ndl_supports_align());
    let m = dm.get(id).unwrap().clone();
    assert_eq!(m.size_bytes, 10_000, "logical size restored");
    // allocated_size = size + align_offset (docs/host-runtime.md §4.4; not + the
    // whole alignment, which overstated the counters by alignment −
    // align_offset).
    assert_eq!(m.align_offset_bytes, fallback_align_offset(m.pa, align));
    assert_eq!(m.allocated_size_bytes, 10_000 + m.align_offset_bytes);
    assert!(m.align_offset_bytes < align);
    assert_eq!((m.pa + m.align_offset_bytes) % align, 0);
    assert!(m.size_bytes + m.align_offset_bytes <= m.allocated_size_bytes);

    // Latched: the next aligned request goes straight to the fallback.
    let n1 = st.borrow().allocs.len();
    let id2 = dm
        .dmem_alloc_aligned(
            a,
            3000,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::DmaRing,
            None,
            0x4000,
        )
        .unwrap();
    let calls: Vec<(u64, u64)> = st.borrow().allocs[n1..]
        .iter()
        .map(|c| (c.size, c.align))
        .collect();
    assert_eq!(calls, [(3000 + 0x4000, 0)]);
    assert_eq!(count_log(&dm, MSG_ALIGN_UNSUPPORTED), 1, "logged once");

    // Copies land at the aligned base.
    let data = pattern(10_000, 7);
    let buf = dm.user_mut().alloc_with(&data);
    dm.dmem_buf_copyin(id, buf, 0, 10_000).unwrap();
    assert_eq!(device_bytes(&dm, &st, id, 0, 10_000), data);
    let out = dm.user_mut().alloc(10_000);
    dm.dmem_buf_copyout(id, out, 0, 10_000).unwrap();
    assert_eq!(dm.user().buffer(out).unwrap(), &data[..]);

    // DML counted size + align_offset of each and gives it all back.
    let m2 = dm.get(id2).unwrap().clone();
    assert_eq!(m2.allocated_size_bytes, 3000 + m2.align_offset_bytes);
    assert_eq!(
        dm.logger().memory_usage(0),
        Some(4096 + 10_000 + m.align_offset_bytes + 3000 + m2.align_offset_bytes)
    );
    dm.dmem_free(id).unwrap();
    dm.dmem_free(id2).unwrap();
    assert_eq!(dm.logger().memory_usage(0), Some(4096));
}

/// Issue 11 item 13(e): the fallback's DML ALLOC, `MEM_USAGE` line,
/// ntrace record and OOM table count `size + align_offset`
/// (`docs/host-runtime.md` §4.4), the bytes the runtime can address from the aligned base —
/// not `size + alignment`.
#[test]
fn aligned_fallback_counts_size_plus_align_offset() {
    let fake = FakeConfig {
        reject_align: true,
        ..FakeConfig::default()
    };
    let (mut dm, _) = open_with(DmemConfig::default(), fake);
    let a = model(&mut dm, 0);
    let _pad = dev_alloc(&mut dm, a, 4096); // the next PA is 0x1000
    dm.drain_events();
    let align = 0x10000;
    let id = dm
        .dmem_alloc_aligned(
            a,
            0x8000,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::Weight,
            Some("w"),
            align,
        )
        .unwrap();
    let m = dm.get(id).unwrap().clone();
    assert_eq!(m.pa & 0xFFFF, 0x1000);
    assert_eq!(m.align_offset_bytes, 0xF000);
    let counted = 0x8000 + 0xF000;
    assert_eq!(m.allocated_size_bytes, counted);
    let ev = dm.drain_events();
    assert!(ev.iter().any(|e| matches!(e,
        RuntimeEvent::Ntrace { kind: MemEventKind::Alloc, allocated_size_bytes, .. }
            if *allocated_size_bytes == counted)));
    assert!(ev.iter().any(|e| matches!(e, RuntimeEvent::MemUsage { line }
        if line.starts_with(&format!("MEM_USAGE: {counted} bytes, channel: 0, total usage: ({}/", 4096 + counted)))));
    assert_eq!(
        dm.logger()
            .memory_usage_nc(0, UsageType::Weight.raw() as usize),
        Some(counted)
    );
    let e = dm
        .logger()
        .entries()
        .last()
        .map(|e| (e.size, e.align_offset));
    assert_eq!(e, Some((0x8000, 0xF000)));
    dm.dmem_free(id).unwrap();
    assert_eq!(dm.logger().memory_usage(0), Some(4096));
}

/// Issue 11 item 13(d), decided in `docs/host-runtime.md` §4.9: the OOM
/// report prints its utilisation table in both modes — the 13 aggregate
/// columns by default, the 22 usage columns with `dml_verbose`.
#[test]
fn oom_report_prints_the_table_in_both_modes() {
    for verbose in [false, true] {
        let cfg = DmemConfig {
            dml_verbose: verbose,
            ..DmemConfig::default()
        };
        let (mut dm, _) = open_with(cfg, FakeConfig::default());
        let a = model(&mut dm, 0);
        dev_alloc(&mut dm, a, MIB);
        dm.drain_events();
        let r = dm.dmem_alloc(
            a,
            128 * MIB,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::Tensor,
            None,
        );
        assert_eq!(r, Err(NrtStatus::Resource));
        let text = dm
            .drain_events()
            .into_iter()
            .find_map(|e| match e {
                RuntimeEvent::OomReport { text } => Some(text),
                _ => None,
            })
            .unwrap();
        let header = text.lines().nth(4).unwrap();
        let cells: Vec<&str> = header.trim_matches('|').split('|').map(str::trim).collect();
        if verbose {
            assert_eq!(cells.len(), 2 + USAGE_TYPES, "{text}");
            assert_eq!(cells[2], "GENERIC");
        } else {
            assert_eq!(cells.len(), 1 + dml::REPORT_COLUMNS.len(), "{text}");
            assert_eq!(cells[2], "Model Code");
        }
        assert!(
            text.lines().nth(6).unwrap().starts_with("| _NC 0 "),
            "{text}"
        );
    }
}

#[test]
fn scratchpad_page_goes_to_the_tpb_allocator() {
    let (mut dm, st) = open();
    let m3 = model(&mut dm, 3);
    dm.drain_events();
    let id = dm
        .dmem_alloc_contiguous_scratchpad_page(3, 64 << 10)
        .unwrap();
    let call = *st.borrow().allocs.last().unwrap();
    assert_eq!(
        (call.category, call.channel, call.nc, call.align, call.host),
        (19, 1, 3, 0, false)
    );
    let m = dm.get(id).unwrap().clone();
    assert_eq!(
        (m.mem_type, m.usage, m.tdram_channel),
        (MemLocation::TongaDram, UsageType::Scratchpad, 1)
    );
    assert_eq!((m.ref_count, m.hint.clone(), m.cpy_buf), (1, None, None));
    let tpb = dm.tpb_allocator(3).unwrap();
    assert_eq!(m.allocator, Some(tpb));
    assert_eq!(dm.allocator_members(tpb).unwrap(), [id]);
    assert_eq!(dm.allocator_members(m3).unwrap(), []);
    assert_eq!(dm.logger().memory_usage_nc(3, 11), Some(64 << 10));
    // No trace bracket on this path.
    assert!(traces(&dm).is_empty());
    // Model unload does not take it.
    assert_eq!(dm.dmem_allocator_destroy(m3).unwrap(), []);
    assert!(dm.get(id).is_some());
    // cpy_buf is NULL: the staged copy refuses (the C asserts).
    let buf = dm.user_mut().alloc(4096);
    assert_eq!(
        dm.dmem_buf_copyin(id, buf, 0, 4096),
        Err(NrtStatus::Failure)
    );
    assert!(logs(&dm).iter().any(|l| l.contains("cpy_buf == NULL")));
    assert_eq!(
        dm.dmem_alloc_contiguous_scratchpad_page(8, 4096),
        Err(NrtStatus::Invalid)
    );
    st.borrow_mut().cfg.fail_alloc = Some(Errno::ENOMEM);
    assert_eq!(
        dm.dmem_alloc_contiguous_scratchpad_page(0, 4096),
        Err(NrtStatus::Resource)
    );
    st.borrow_mut().cfg.fail_alloc = Some(Errno::EIO);
    assert_eq!(
        dm.dmem_alloc_contiguous_scratchpad_page(0, 4096),
        Err(NrtStatus::Failure)
    );
    dm.dmem_free(id).unwrap();
    assert_eq!(dm.allocator_members(tpb).unwrap(), []);
    assert_eq!(dm.logger().memory_usage_nc(3, 11), Some(0));
}

// ---- free, references, lists, destroy -------------------------------------

#[test]
fn destroy_unlinks_without_freeing_and_reports_leaks() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let x = dm
        .dmem_alloc(
            a,
            4096,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::Weight,
            Some("w0"),
        )
        .unwrap();
    let y = dm
        .dmem_alloc(a, 8192, MemLocation::HostDram, 0, None, UsageType::Io, None)
        .unwrap();
    assert_eq!(dm.allocator_members(a).unwrap(), [x, y]);
    let frees = st.borrow().count(cmd::MEM_FREE);
    let leaks = dm.dmem_allocator_destroy(a).unwrap();
    let summary: Vec<_> = leaks
        .iter()
        .map(|l| (l.id, l.size_bytes, l.hint.clone()))
        .collect();
    assert_eq!(summary, [(x, 4096, Some("w0".into())), (y, 8192, None)]);
    assert_eq!(st.borrow().count(cmd::MEM_FREE), frees, "nothing freed");
    assert!(
        matches!(dm.events().last(), Some(RuntimeEvent::Leaked { allocator, allocations }) if *allocator == a && allocations.len() == 2)
    );
    assert_eq!(dm.get(x).unwrap().allocator, None);
    assert_eq!(dm.logger().memory_usage(0), Some(4096), "still accounted");
    assert_eq!(dm.dmem_allocator_destroy(a), Err(NrtStatus::Invalid));
    assert!(dm.allocator_members(a).is_none());
    // The owner can still free them; no unlink is needed.
    dm.dmem_free(x).unwrap();
    dm.dmem_free(y).unwrap();
    assert_eq!(st.borrow().count(cmd::MEM_FREE), frees + 2);
    assert_eq!(dm.logger().memory_usage(0), Some(0));
    // An empty allocator destroys without a leak event.
    let b = model(&mut dm, 1);
    let n = dm.events().len();
    assert_eq!(dm.dmem_allocator_destroy(b).unwrap(), []);
    assert_eq!(dm.events().len(), n);
}

#[test]
fn list_unlink_in_the_middle_keeps_order() {
    let (mut dm, _) = open();
    let a = model(&mut dm, 0);
    let ids: Vec<_> = (0..4).map(|_| dev_alloc(&mut dm, a, 4096)).collect();
    dm.dmem_free(ids[1]).unwrap();
    assert_eq!(dm.allocator_members(a).unwrap(), [ids[0], ids[2], ids[3]]);
    dm.dmem_free(ids[3]).unwrap();
    dm.dmem_free(ids[0]).unwrap();
    assert_eq!(dm.allocator_members(a).unwrap(), [ids[2]]);
    let z = dev_alloc(&mut dm, a, 4096);
    assert_eq!(dm.allocator_members(a).unwrap(), [ids[2], z]);
}

#[test]
fn refcount_keeps_the_allocation_until_the_last_free() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let id = dev_alloc(&mut dm, a, 4096);
    let kh = dm
        .ndl()
        .record(dm.get(id).unwrap().mem_handle)
        .unwrap()
        .kernel_handle;
    dm.dmem_acquire_reference(id).unwrap();
    assert_eq!(dm.get(id).unwrap().ref_count, 2);
    dm.dmem_free(id).unwrap();
    assert!(dm.get(id).is_some(), "still alive");
    assert_eq!(st.borrow().free_counts[&kh], 0);
    dm.dmem_free(id).unwrap();
    assert!(dm.get(id).is_none());
    assert_eq!(st.borrow().free_counts[&kh], 1);
    // A third free is a diagnosed double free: no ioctl, no panic.
    let n = st.borrow().requests.len();
    assert_eq!(dm.dmem_free(id), Err(NrtStatus::Invalid));
    assert_eq!(
        dm.events()
            .last()
            .map(|e| matches!(e, RuntimeEvent::Log { .. })),
        Some(true)
    );
    assert!(dm.events().contains(&RuntimeEvent::DoubleFree { id }));
    assert_eq!(st.borrow().requests.len(), n);
    assert_eq!(dm.dmem_acquire_reference(id), Err(NrtStatus::Invalid));
    // The slot is reused with a new generation; the old id stays dead.
    let id2 = dev_alloc(&mut dm, a, 4096);
    assert_eq!(id2.index, id.index);
    assert_ne!(id2.generation, id.generation);
    assert_eq!(dm.dmem_free(id), Err(NrtStatus::Invalid));
    assert!(dm.get(id2).is_some());
}

#[test]
fn gc_list_releases_its_reference() {
    let (mut dm, _) = open();
    let a = model(&mut dm, 0);
    let mut list = DmemList::new();
    let id = dm
        .dmem_alloc(
            a,
            4096,
            MemLocation::TongaDram,
            0,
            Some(&mut list),
            UsageType::Io,
            None,
        )
        .unwrap();
    assert_eq!(list.entries(), [id]);
    let other = dev_alloc(&mut dm, a, 4096);
    dm.dmem_acquire_reference(other).unwrap();
    dm.dmem_list_add(&mut list, other).unwrap();
    // Another owner shares `id`.
    dm.dmem_acquire_reference(id).unwrap();
    dm.dmem_list_free(&mut list);
    assert!(list.is_empty());
    assert_eq!(dm.get(id).unwrap().ref_count, 1);
    assert_eq!(dm.get(other).unwrap().ref_count, 1);
    dm.dmem_free(id).unwrap();
    assert!(dm.get(id).is_none());
    assert_eq!(dm.dmem_list_add(&mut list, id), Err(NrtStatus::Invalid));
}

#[test]
fn mmap_then_free_unmaps_first() {
    let (mut dm, _) = open();
    let a = model(&mut dm, 0);
    let id = dev_alloc(&mut dm, a, 4096);
    let va = dm.dmem_mmap(id).unwrap();
    assert_eq!(va, dm.get(id).unwrap().pa);
    assert!(
        dm.ndl()
            .record(dm.get(id).unwrap().mem_handle)
            .unwrap()
            .mapped
    );
    dm.dmem_free(id).unwrap();
    assert!(!logs(&dm).iter().any(|l| l.starts_with("Failed to unmap")));
}

// ---- copies ---------------------------------------------------------------

/// Copy-in and copy-out of `size` at `offset` through the staged path;
/// returns the (size, pwait, returned wait) of each MEM_COPY_ASYNC64 and
/// the MEM_COPY_ASYNC_WAIT handles, for copy-in then copy-out.
#[allow(clippy::type_complexity)]
fn staged_round_trip(size: u64, offset: u64) -> [(Vec<(u64, i32, Option<i32>)>, Vec<i32>); 2] {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let id = dev_alloc(&mut dm, a, size + offset + 1);
    let data = pattern(size, 3);
    let src = dm.user_mut().alloc_with(&data);
    let mut out = [(vec![], vec![]), (vec![], vec![])];
    let snap = |st: &Rc<RefCell<FakeState>>, c0: usize, w0: usize| {
        let s = st.borrow();
        (
            s.copies[c0..]
                .iter()
                .map(|c| (c.size, c.pwait, c.wait))
                .collect::<Vec<_>>(),
            s.waits[w0..].to_vec(),
        )
    };
    let (c0, w0) = (st.borrow().copies.len(), st.borrow().waits.len());
    dm.dmem_buf_copyin(id, src, offset, size).unwrap();
    out[0] = snap(&st, c0, w0);
    assert_eq!(
        device_bytes(&dm, &st, id, offset, size),
        data,
        "copy-in size {size:#x}"
    );
    // Bounce halves alternate and device offsets advance.
    {
        let s = st.borrow();
        let chunk = device_copy_plan(size).chunk_bytes;
        for (i, c) in s.copies[c0..].iter().enumerate() {
            let i = i as u64;
            assert_eq!(c.src_offset, (i % 2) * COPY_BUF_HALF_BYTES);
            assert_eq!(c.dst_offset, offset + i * chunk);
            assert_eq!(c.prefetch, 0);
        }
    }
    let dst = dm.user_mut().alloc(size as usize);
    let (c1, w1) = (st.borrow().copies.len(), st.borrow().waits.len());
    dm.dmem_buf_copyout(id, dst, offset, size).unwrap();
    out[1] = snap(&st, c1, w1);
    assert_eq!(
        &dm.user().buffer(dst).unwrap()[..size as usize],
        &data[..],
        "copy-out size {size:#x}"
    );
    {
        let s = st.borrow();
        let chunk = device_copy_plan(size).chunk_bytes;
        for (i, c) in s.copies[c1..].iter().enumerate() {
            let i = i as u64;
            assert_eq!(c.dst_offset, (i % 2) * COPY_BUF_HALF_BYTES);
            assert_eq!(c.src_offset, offset + i * chunk);
            assert_eq!(c.prefetch, dst + i * chunk, "host prefetch address");
        }
    }
    assert_eq!(
        traces(&dm)[2..],
        [
            (TracePhase::Begin, 30),
            (TracePhase::Stop, 30),
            (TracePhase::Begin, 31),
            (TracePhase::Stop, 31)
        ]
    );
    out
}

#[test]
fn staged_copy_small_is_one_sync_chunk() {
    for size in [1, 100, 0x3FFF] {
        let [cin, cout] = staged_round_trip(size, 5);
        assert_eq!(cin, (vec![(size, 0, Some(0))], vec![]));
        assert_eq!(cout, (vec![(size, 0, Some(0))], vec![]));
    }
}

#[test]
fn staged_copy_middle_band_is_two_async_halves() {
    let [cin, cout] = staged_round_trip(0x4000, 0);
    let want = (vec![(0x2000, -1, Some(1)), (0x2000, 1, Some(2))], vec![2]);
    assert_eq!(cin, want);
    assert_eq!(cout, want);
    let [cin, _] = staged_round_trip(0x100000, 0x123);
    assert_eq!(
        cin,
        (vec![(0x80000, -1, Some(1)), (0x80000, 1, Some(2))], vec![2])
    );
    let [cin, _] = staged_round_trip(0x5001, 0);
    assert_eq!(
        cin.0.iter().map(|c| c.0).collect::<Vec<_>>(),
        [0x3000, 0x2001]
    );
}

#[test]
fn staged_copy_large_uses_1mib_chunks_and_alternates_slots() {
    let [cin, cout] = staged_round_trip(0x100001, 0);
    let want = (vec![(0x100000, -1, Some(1)), (1, 1, Some(2))], vec![2]);
    assert_eq!(cin, want);
    assert_eq!(cout, want);
    let size = 3 * MIB + 5;
    let [cin, cout] = staged_round_trip(size, 17);
    let want = (
        vec![
            (MIB, -1, Some(1)),
            (MIB, 1, Some(2)),
            (MIB, 2, Some(1)),
            (5, 1, Some(2)),
        ],
        vec![2],
    );
    assert_eq!(cin, want);
    assert_eq!(cout, want);
}

#[test]
fn staged_copy_out_failure_keeps_the_previous_chunk() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let size = 3 * MIB;
    let id = dev_alloc(&mut dm, a, size);
    let data = pattern(size, 9);
    let src = dm.user_mut().alloc_with(&data);
    dm.dmem_buf_copyin(id, src, 0, size).unwrap();
    // Fail the third chunk's launch of the copy-out.
    let n = st.borrow().copies.len();
    st.borrow_mut().cfg.fail_copy_async = Some((n + 3, Errno::EIO));
    let dst = dm.user_mut().alloc(size as usize);
    let w0 = st.borrow().waits.len();
    dm.drain_events();
    assert_eq!(
        dm.dmem_buf_copyout(id, dst, 0, size),
        Err(NrtStatus::Failure)
    );
    let got = dm.user().buffer(dst).unwrap().to_vec();
    let m = MIB as usize;
    assert_eq!(&got[..m], &data[..m], "chunk 0 drained by the overlap");
    assert_eq!(
        &got[m..2 * m],
        &data[m..2 * m],
        "chunk 1 recovered on error"
    );
    assert!(
        got[2 * m..].iter().all(|&b| b == 0),
        "chunk 2 never arrived"
    );
    assert_eq!(st.borrow().waits[w0..], [2], "waited for chunk 1's slot");
    assert_eq!(
        logs(&dm),
        [
            "Failed to copy out dmem to buffer",
            "Copy from memory  to buffer failed"
        ]
    );
    assert_eq!(
        traces(&dm),
        [(TracePhase::Begin, 31), (TracePhase::Stop, 31)]
    );
    // The bounce buffer is released for the next transfer.
    dm.dmem_buf_copyout(id, dst, 0, size).unwrap();
    assert_eq!(dm.user().buffer(dst).unwrap(), &data[..]);
}

#[test]
fn staged_copy_out_failure_on_first_chunk_recovers_nothing() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let id = dev_alloc(&mut dm, a, 2 * MIB);
    let n = st.borrow().copies.len();
    st.borrow_mut().cfg.fail_copy_async = Some((n + 1, Errno::EIO));
    let dst = dm.user_mut().alloc(2 * MIB as usize);
    let w0 = st.borrow().waits.len();
    assert_eq!(
        dm.dmem_buf_copyout(id, dst, 0, 2 * MIB),
        Err(NrtStatus::Failure)
    );
    // Nothing to wait for (NONE), nothing drained.
    assert_eq!(st.borrow().waits.len(), w0);
}

#[test]
fn staged_copy_in_failure_is_reported() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let id = dev_alloc(&mut dm, a, 2 * MIB);
    let src = dm.user_mut().alloc(2 * MIB as usize);
    let n = st.borrow().copies.len();
    st.borrow_mut().cfg.fail_copy_async = Some((n + 2, Errno::EINVAL));
    dm.drain_events();
    assert_eq!(
        dm.dmem_buf_copyin(id, src, 0, 2 * MIB),
        Err(NrtStatus::Failure)
    );
    assert_eq!(
        logs(&dm),
        [
            "Failed to copy in buffer to dmem",
            "Copy from buffer to memory failed"
        ]
    );
    // A fault on the host side is an error, not a crash.
    assert_eq!(
        dm.dmem_buf_copyin(id, 0x10, 0, 4096),
        Err(NrtStatus::Failure)
    );
    // Out of the allocation: the driver refuses.
    assert_eq!(
        dm.dmem_buf_copyin(id, src, 2 * MIB - 10, 4096),
        Err(NrtStatus::Failure)
    );
}

/// Issue 11 item 12 (`audit-host/hazard.trace`): a copy-in whose second
/// launch fails must not leave the first chunk in flight, or the next copy
/// on the core refills the bounce half that chunk still reads.
#[test]
fn staged_copy_in_failure_drains_the_in_flight_chunk() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let d = dev_alloc(&mut dm, a, 2 * MIB);
    let e = dev_alloc(&mut dm, a, 2 * MIB);
    let d_bytes = pattern(2 * MIB, 0x22);
    let e_bytes = pattern(2 * MIB, 0x33);
    let d_src = dm.user_mut().alloc_with(&d_bytes);
    let e_src = dm.user_mut().alloc_with(&e_bytes);
    // The second 1 MiB chunk of d's copy-in fails to launch; the first
    // (ASYNC1, bounce half 0) was started and is owed a wait.
    let n = st.borrow().copies.len();
    st.borrow_mut().cfg.fail_copy_async = Some((n + 2, Errno::EINVAL));
    let w0 = st.borrow().waits.len();
    assert_eq!(
        dm.dmem_buf_copyin(d, d_src, 0, 2 * MIB),
        Err(NrtStatus::Failure)
    );
    assert_eq!(
        st.borrow().waits[w0..],
        [1],
        "the failed copy-in waits for its in-flight chunk (drain_fail)"
    );
    // The next copy on the core reuses bounce half 0 at once.
    dm.dmem_buf_copyin(e, e_src, 0, 2 * MIB).unwrap();
    let m = MIB as usize;
    assert_eq!(
        device_bytes(&dm, &st, d, 0, MIB),
        &d_bytes[..m],
        "d's first chunk holds d's bytes, not e's"
    );
    assert_eq!(device_bytes(&dm, &st, e, 0, 2 * MIB), e_bytes);
}

/// A host fault while staging chunk k + 1 also drains chunk k.
#[test]
fn staged_copy_in_host_fault_drains_the_in_flight_chunk() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let d = dev_alloc(&mut dm, a, 2 * MIB);
    // A user buffer one chunk long: staging the second chunk faults.
    let src = dm.user_mut().alloc_with(&pattern(MIB, 5));
    let w0 = st.borrow().waits.len();
    assert_eq!(
        dm.dmem_buf_copyin(d, src, 0, 2 * MIB),
        Err(NrtStatus::Failure)
    );
    assert_eq!(st.borrow().waits[w0..], [1]);
    assert_eq!(device_bytes(&dm, &st, d, 0, MIB), pattern(MIB, 5));
}

/// A host fault while draining chunk k − 1 of a copy-out leaves chunk k in
/// flight; it is waited for before the copy fails.
#[test]
fn staged_copy_out_host_fault_drains_the_in_flight_chunk() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let d = dev_alloc(&mut dm, a, 3 * MIB);
    // Room for one chunk only: draining chunk 0 works, chunk 1 faults.
    let dst = dm.user_mut().alloc(MIB as usize + 1);
    let w0 = st.borrow().waits.len();
    assert_eq!(
        dm.dmem_buf_copyout(d, dst, 0, 3 * MIB),
        Err(NrtStatus::Failure)
    );
    // Chunk 2 (ASYNC1) was launched before chunk 1's drain faulted.
    assert_eq!(st.borrow().waits[w0..], [1]);
}

#[test]
fn copy_dispatch_is_asymmetric_under_test_zerocopy() {
    let cfg = DmemConfig {
        test_zerocopy: true,
        direct_bar4_write_size: 0x1_0040,
        ..DmemConfig::default()
    };
    let (mut dm, st) = open_with(cfg, FakeConfig::default());
    let a = model(&mut dm, 0);
    let host = dm
        .dmem_alloc(a, 4096, MemLocation::HostDram, 0, None, UsageType::Io, None)
        .unwrap();
    let dev = dev_alloc(&mut dm, a, 4096);
    let data = pattern(300, 1);
    let src = dm.user_mut().alloc_with(&data);
    let dst = dm.user_mut().alloc(300);
    let last = |st: &Rc<RefCell<FakeState>>| *st.borrow().requests.last().unwrap();

    // HOST_DRAM: copy-in tests the location first → plain buf copy …
    dm.dmem_buf_copyin(host, src, 10, 300).unwrap();
    assert_eq!(last(&st), cmd::MEM_BUF_COPY64);
    // … copy-out tests zerocopy first → the zero-copy ioctl.
    dm.dmem_buf_copyout(host, dst, 10, 300).unwrap();
    assert_eq!(last(&st), cmd::MEM_BUF_ZEROCOPY64);
    assert_eq!(dm.user().buffer(dst).unwrap(), &data[..]);

    // TONGA_DRAM: zero-copy both ways, never the staged DMA.
    let copies = st.borrow().copies.len();
    dm.dmem_buf_copyin(dev, src, 0, 300).unwrap();
    assert_eq!(last(&st), cmd::MEM_BUF_ZEROCOPY64);
    dm.dmem_buf_copyout(dev, dst, 0, 300).unwrap();
    assert_eq!(last(&st), cmd::MEM_BUF_ZEROCOPY64);
    assert_eq!(st.borrow().copies.len(), copies);
    assert_eq!(device_bytes(&dm, &st, dev, 0, 300), data);
}

#[test]
fn copy_dispatch_without_zerocopy() {
    let (mut dm, st) = open();
    let a = model(&mut dm, 0);
    let host = dm
        .dmem_alloc(a, 4096, MemLocation::HostDram, 0, None, UsageType::Io, None)
        .unwrap();
    let data = pattern(64, 2);
    let src = dm.user_mut().alloc_with(&data);
    let dst = dm.user_mut().alloc(64);
    dm.dmem_buf_copyin(host, src, 0, 64).unwrap();
    assert_eq!(*st.borrow().requests.last().unwrap(), cmd::MEM_BUF_COPY64);
    dm.dmem_buf_copyout(host, dst, 0, 64).unwrap();
    assert_eq!(*st.borrow().requests.last().unwrap(), cmd::MEM_BUF_COPY64);
    assert_eq!(dm.user().buffer(dst).unwrap(), &data[..]);
    assert_eq!(st.borrow().count(cmd::MEM_BUF_ZEROCOPY64), 0);
    // Dead handles are refused before any trace.
    dm.dmem_free(host).unwrap();
    let n = dm.events().len();
    assert_eq!(
        dm.dmem_buf_copyin(host, src, 0, 64),
        Err(NrtStatus::Invalid)
    );
    assert!(
        !dm.events()[n..]
            .iter()
            .any(|e| matches!(e, RuntimeEvent::SysTrace { .. }))
    );
}

/// Every field NDL marshals into MEM_BUF_ZEROCOPY64 and the batch ioctl
/// (`docs/host-runtime.md` §4.5, §4.7): the kernel handle (not the NDL
/// record's address), the buffer, size and offset with `align_offset`, the
/// direction, the BAR4 threshold (32 bits here, truncated to the batch
/// record's 16), the default H2T queue −1, synchronous (sequence 0), flags
/// and context 0.
#[test]
fn zerocopy_and_batch_ioctls_marshal_the_runtime_values() {
    let cfg = DmemConfig {
        test_zerocopy: true,
        direct_bar4_write_size: 0x1_2345,
        ..DmemConfig::default()
    };
    let (mut dm, st) = open_with(
        cfg,
        FakeConfig {
            reject_align: true,
            ..FakeConfig::default()
        },
    );
    let a = model(&mut dm, 2);
    let _pad = dev_alloc(&mut dm, a, 4096);
    let t = dm
        .dmem_alloc_aligned(
            a,
            0x3000,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::Tensor,
            None,
            0x4000,
        )
        .unwrap();
    let m = dm.get(t).unwrap().clone();
    assert_ne!(m.align_offset_bytes, 0);
    let kh = dm.ndl().record(m.mem_handle).unwrap().kernel_handle;
    assert_ne!(kh, m.mem_handle.user_addr());
    let buf = dm.user_mut().alloc_with(&pattern(0x100, 1));
    dm.dmem_buf_copyin(t, buf, 0x10, 0x100).unwrap();
    dm.dmem_buf_copyout(t, buf, 0x20, 0x80).unwrap();
    let zc: Vec<_> = st
        .borrow()
        .zerocopy_args
        .iter()
        .map(|z| {
            (
                z.mem_handle.get(),
                z.buffer.get(),
                z.size.get(),
                z.offset.get(),
                z.is_copy_to_device.get(),
                z.bar4_wr_threshold.get(),
                z.h2t_qid.get(),
                z.dummy.get(),
                z.sequence_num.get(),
                z.context.get(),
            )
        })
        .collect();
    let off = m.align_offset_bytes;
    assert_eq!(
        zc,
        [
            (kh, buf, 0x100, 0x10 + off, 1, 0x1_2345, -1, 0, 0, 0),
            // Copy-out passes no BAR4 threshold (device → host never uses it).
            (kh, buf, 0x80, 0x20 + off, 0, 0, -1, 0, 0, 0),
        ]
    );

    let ops = [
        BatchOp {
            offset_bytes: 8,
            size_bytes: 0x40,
            buffer: buf,
        },
        BatchOp {
            offset_bytes: 0x80,
            size_bytes: 0x10,
            buffer: buf + 0x40,
        },
    ];
    let batches = [TensorBatch {
        mem: t,
        tensor_offset_bytes: 0x100,
        ops: ops.to_vec(),
    }];
    dm.dmem_buf_batch_copyin(&batches).unwrap();
    dm.dmem_buf_batch_copyout(&batches).unwrap();
    let s = st.borrow();
    assert_eq!(s.batch_args.len(), 2);
    for (k, (arg, records)) in s.batch_args.iter().enumerate() {
        assert_eq!(
            (
                arg.sequence_num.get(),
                arg.num_batches.get(),
                arg.is_copy_to_device.get(),
                arg.h2t_qid.get(),
                arg.flags.get()
            ),
            (0, 1, u16::from(k == 0), -1, 0),
            "batch ioctl {k}"
        );
        assert_ne!(arg.batches_ptr.get(), 0);
        let (rec, got_ops) = &records[0];
        assert_eq!(
            (
                rec.mem_handle.get(),
                rec.mem_handle_offset.get(),
                rec.num_ops.get(),
                rec.bar4_wr_threshold.get(),
                rec.flags.get(),
                rec.context.get()
            ),
            (kh, off + 0x100, 2, 0x2345, 0, 0),
            "record of batch ioctl {k}"
        );
        let got: Vec<(u64, u64, u64)> = got_ops
            .iter()
            .map(|o| (o.offset.get(), o.size.get(), o.buffer.get()))
            .collect();
        assert_eq!(got, [(8, 0x40, buf), (0x80, 0x10, buf + 0x40)]);
    }
}

#[test]
fn batch_copy_is_one_ioctl_per_call() {
    let cfg = DmemConfig {
        direct_bar4_write_size: 0x1_2345,
        ..DmemConfig::default()
    };
    let (mut dm, st) = open_with(
        cfg,
        FakeConfig {
            reject_align: true,
            ..FakeConfig::default()
        },
    );
    let a = model(&mut dm, 0);
    let t0 = dev_alloc(&mut dm, a, 8192);
    // An aligned (fallback) allocation: align_offset goes into the record.
    let t1 = dm
        .dmem_alloc_aligned(
            a,
            4096,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::Tensor,
            None,
            0x4000,
        )
        .unwrap();
    assert_ne!(dm.get(t1).unwrap().align_offset_bytes, 0);
    let d0 = pattern(100, 4);
    let d1 = pattern(50, 5);
    let d2 = pattern(70, 6);
    let b0 = dm.user_mut().alloc_with(&d0);
    let b1 = dm.user_mut().alloc_with(&d1);
    let b2 = dm.user_mut().alloc_with(&d2);
    let batches = [
        TensorBatch {
            mem: t0,
            tensor_offset_bytes: 1000,
            ops: vec![
                BatchOp {
                    offset_bytes: 0,
                    size_bytes: 100,
                    buffer: b0,
                },
                BatchOp {
                    offset_bytes: 200,
                    size_bytes: 50,
                    buffer: b1,
                },
            ],
        },
        TensorBatch {
            mem: t1,
            tensor_offset_bytes: 16,
            ops: vec![BatchOp {
                offset_bytes: 4,
                size_bytes: 70,
                buffer: b2,
            }],
        },
    ];
    let n = st.borrow().requests.len();
    let mapped = dm.user().mapped_bytes();
    dm.drain_events();
    dm.dmem_buf_batch_copyin(&batches).unwrap();
    assert_eq!(st.borrow().requests[n..], [cmd::MEM_BUF_ZEROCOPY64_BATCHES]);
    assert_eq!(
        dm.user().mapped_bytes(),
        mapped,
        "marshalling buffers released"
    );
    assert_eq!(
        traces(&dm),
        [(TracePhase::Begin, 30), (TracePhase::Stop, 30)]
    );
    assert_eq!(device_bytes(&dm, &st, t0, 1000, 100), d0);
    assert_eq!(device_bytes(&dm, &st, t0, 1200, 50), d1);
    assert_eq!(device_bytes(&dm, &st, t1, 20, 70), d2);

    let o0 = dm.user_mut().alloc(100);
    let o2 = dm.user_mut().alloc(70);
    let back = [
        TensorBatch {
            mem: t0,
            tensor_offset_bytes: 1000,
            ops: vec![BatchOp {
                offset_bytes: 0,
                size_bytes: 100,
                buffer: o0,
            }],
        },
        TensorBatch {
            mem: t1,
            tensor_offset_bytes: 16,
            ops: vec![BatchOp {
                offset_bytes: 4,
                size_bytes: 70,
                buffer: o2,
            }],
        },
    ];
    dm.drain_events();
    dm.dmem_buf_batch_copyout(&back).unwrap();
    assert_eq!(
        traces(&dm),
        [(TracePhase::Begin, 31), (TracePhase::Stop, 31)]
    );
    assert_eq!(dm.user().buffer(o0).unwrap(), &d0[..]);
    assert_eq!(dm.user().buffer(o2).unwrap(), &d2[..]);

    // Empty → NRT_INVALID, no ioctl, no trace.
    dm.drain_events();
    let n = st.borrow().requests.len();
    assert_eq!(dm.dmem_buf_batch_copyin(&[]), Err(NrtStatus::Invalid));
    assert_eq!(
        logs(&dm),
        ["Invalid arguments: tensor_batches is NULL or num_batches is 0"]
    );
    assert_eq!(st.borrow().requests.len(), n);
    // A driver failure is reported with the direction and rc.
    let bad = [TensorBatch {
        mem: t0,
        tensor_offset_bytes: 8190,
        ops: vec![BatchOp {
            offset_bytes: 0,
            size_bytes: 100,
            buffer: o0,
        }],
    }];
    dm.drain_events();
    assert_eq!(dm.dmem_buf_batch_copyout(&bad), Err(NrtStatus::Failure));
    assert_eq!(logs(&dm), ["NDL batch copy (copyout) failed: -22"]);
}

#[test]
fn memory_stats_read_the_dml_counters() {
    let (mut dm, _) = open();
    let a = model(&mut dm, 5);
    let b = model(&mut dm, 4);
    dm.dmem_alloc(
        a,
        8192,
        MemLocation::TongaDram,
        2,
        None,
        UsageType::Weight,
        None,
    )
    .unwrap();
    dm.dmem_alloc(
        a,
        4096,
        MemLocation::TongaDram,
        2,
        None,
        UsageType::Tensor,
        None,
    )
    .unwrap();
    dm.dmem_alloc(
        b,
        4096,
        MemLocation::TongaDram,
        2,
        None,
        UsageType::Tensor,
        None,
    )
    .unwrap();
    dm.dmem_alloc(
        a,
        4096,
        MemLocation::HostDram,
        0,
        None,
        UsageType::Tensor,
        None,
    )
    .unwrap();
    let s = dm.dmem_get_memory_stats(5).unwrap();
    assert_eq!(s.hbm_index, 2);
    assert_eq!(s.usage_bytes[6], 8192);
    assert_eq!(s.usage_bytes[12], 4096);
    assert_eq!(s.nc_total_bytes, 12288);
    assert_eq!(s.hbm_used_bytes, 16384);
    assert_eq!(s.hbm_capacity_bytes, TRN2_HBM_CAPACITY_BYTES);
    assert_eq!(dm.dmem_get_memory_stats(8), Err(NrtStatus::Invalid));
}

#[test]
fn open_validates_and_shutdown_frees_bounce_buffers() {
    let (drv, _) = FakeDriver::new(FakeConfig::default());
    let bad = DmemConfig {
        nc_count: 9,
        ..DmemConfig::default()
    };
    assert_eq!(
        Dmem::open(Box::new(InProcess::new(drv)), bad).unwrap_err(),
        NrtStatus::Invalid
    );
    let (drv, st) = FakeDriver::new(FakeConfig {
        host_capacity_bytes: 5 * MIB,
        ..FakeConfig::default()
    });
    assert_eq!(
        Dmem::open(Box::new(InProcess::new(drv)), DmemConfig::default()).unwrap_err(),
        NrtStatus::Resource
    );
    assert!(st.borrow().chunks.is_empty(), "partial open undone");
    assert!(st.borrow().free_counts.values().all(|&n| n == 1));

    let (mut dm, st) = open();
    dm.shutdown().unwrap();
    assert!(st.borrow().chunks.is_empty());
    assert_eq!(dm.ndl().live_records(), 0);
    let a = model(&mut dm, 0);
    assert_eq!(
        dm.dmem_alloc(
            a,
            4096,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::Io,
            None
        ),
        Err(NrtStatus::Failure)
    );
    assert!(logs(&dm).contains(&"Failed to get copy buffer for nc 0".to_string()));
    assert!(
        st.borrow().chunks.is_empty(),
        "late failure frees the allocation"
    );
}

mod props {
    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Debug)]
    enum Op {
        Alloc {
            host: bool,
            channel: u32,
            nc: u32,
            usage: usize,
            size: u64,
            align: u64,
        },
        Scratch {
            nc: u32,
            size: u64,
        },
        Free(usize),
        Acquire(usize),
        Destroy(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (any::<bool>(), 0u32..4, 0u32..8, 0usize..USAGE_TYPES, 1u64..(256 << 10),
                  prop_oneof![Just(0u64), Just(0x1000), Just(0x2000), Just(0x10000)])
                .prop_map(|(host, channel, nc, usage, size, align)| Op::Alloc {
                    host, channel, nc, usage, size, align
                }),
            1 => (0u32..8, 1u64..(64 << 10)).prop_map(|(nc, size)| Op::Scratch { nc, size }),
            4 => any::<usize>().prop_map(Op::Free),
            1 => any::<usize>().prop_map(Op::Acquire),
            1 => any::<usize>().prop_map(Op::Destroy),
        ]
    }

    struct Live {
        id: DmemId,
        refs: u32,
        align: u64,
    }

    fn check(dm: &Dmem, live: &[Live]) -> Result<(), TestCaseError> {
        // No two live allocations overlap.
        let mut ranges: Vec<(u64, u64)> = live
            .iter()
            .map(|l| {
                let m = dm.get(l.id).unwrap();
                (m.pa, m.pa + m.allocated_size_bytes)
            })
            .collect();
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            prop_assert!(w[0].1 <= w[1].0, "overlap {:x?}", w);
        }
        // Aligned requests are aligned at pa + align_offset.
        for l in live {
            let m = dm.get(l.id).unwrap();
            if l.align != 0 {
                prop_assert_eq!((m.pa + m.align_offset_bytes) % l.align, 0);
                prop_assert!(m.size_bytes + m.align_offset_bytes <= m.allocated_size_bytes);
            }
            prop_assert_eq!(m.ref_count, u64::from(l.refs));
        }
        // DML counters equal the sum of live TONGA_DRAM allocations.
        let dev = || {
            live.iter()
                .map(|l| dm.get(l.id).unwrap())
                .filter(|m| m.mem_type == MemLocation::TongaDram)
        };
        for ch in 0..4 {
            let s: u64 = dev()
                .filter(|m| m.tdram_channel == ch)
                .map(|m| m.allocated_size_bytes)
                .sum();
            prop_assert_eq!(dm.logger().memory_usage(ch), Some(s));
        }
        for nc in 0..8 {
            let s: u64 = dev()
                .filter(|m| m.nc == nc)
                .map(|m| m.allocated_size_bytes)
                .sum();
            prop_assert_eq!(dm.dmem_get_memory_stats(nc).unwrap().nc_total_bytes, s);
        }
        let mut ids: Vec<DmemId> = live.iter().map(|l| l.id).collect();
        ids.sort_unstable();
        prop_assert_eq!(dm.live_allocations(), ids);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn random_alloc_free_sequences(
            ops in prop::collection::vec(op(), 0..80),
            reject_align in any::<bool>(),
        ) {
            let fake = FakeConfig {
                device_capacity_bytes: MIB,
                host_capacity_bytes: 17 * MIB,
                reject_align,
                ..FakeConfig::default()
            };
            let (mut dm, st) = open_with(DmemConfig { dml_log_capacity: 16, ..DmemConfig::default() }, fake);
            let mut allocators: Vec<AllocatorId> =
                (0..8).map(|nc| dm.dmem_allocator_create(AllocatorKind::Model, nc).unwrap()).collect();
            let mut live: Vec<Live> = Vec::new();
            for o in ops {
                match o {
                    Op::Alloc { host, channel, nc, usage, size, align } => {
                        let loc = if host { MemLocation::HostDram } else { MemLocation::TongaDram };
                        let u = UsageType::ALL[usage];
                        let a = allocators[nc as usize];
                        let r = if align == 0 {
                            dm.dmem_alloc(a, size, loc, channel, None, u, None)
                        } else {
                            dm.dmem_alloc_aligned(a, size, loc, channel, None, u, None, align)
                        };
                        // The oracle: the published table, typed in
                        // (not the function under test).
                        let (_, host_cat, (dev_byte, _)) = types::tests::SPEC_TABLE[usage];
                        let spec_byte = if host { host_cat.map(|(b, _)| b) } else { Some(dev_byte) };
                        match r {
                            Ok(id) => {
                                let sent = st.borrow().allocs.last().map(|c| c.category);
                                prop_assert_eq!(sent, spec_byte.map(u32::from), "category byte sent for {:?}", u);
                                live.push(Live { id, refs: 1, align });
                            }
                            Err(e) => {
                                let expected_invalid = spec_byte.is_none();
                                prop_assert_eq!(e == NrtStatus::Invalid, expected_invalid, "{:?}", e);
                                prop_assert!(matches!(
                                    e,
                                    NrtStatus::Invalid | NrtStatus::Resource | NrtStatus::FailHostMemAlloc | NrtStatus::Failure
                                ));
                            }
                        }
                    }
                    Op::Scratch { nc, size } => {
                        if let Ok(id) = dm.dmem_alloc_contiguous_scratchpad_page(nc, size) {
                            live.push(Live { id, refs: 1, align: 0 });
                        }
                    }
                    Op::Free(i) if !live.is_empty() => {
                        let i = i % live.len();
                        dm.dmem_free(live[i].id).unwrap();
                        live[i].refs -= 1;
                        if live[i].refs == 0 {
                            let gone = live.swap_remove(i);
                            prop_assert!(dm.get(gone.id).is_none());
                            prop_assert_eq!(dm.dmem_free(gone.id), Err(NrtStatus::Invalid));
                        }
                    }
                    Op::Acquire(i) if !live.is_empty() => {
                        let i = i % live.len();
                        dm.dmem_acquire_reference(live[i].id).unwrap();
                        live[i].refs += 1;
                    }
                    Op::Destroy(i) => {
                        // Model unload: destroy and recreate; nothing is freed.
                        let nc = i % 8;
                        let frees = st.borrow().count(cmd::MEM_FREE);
                        let leaks = dm.dmem_allocator_destroy(allocators[nc]).unwrap();
                        prop_assert_eq!(st.borrow().count(cmd::MEM_FREE), frees);
                        for l in &leaks {
                            prop_assert!(dm.get(l.id).is_some());
                        }
                        allocators[nc] = dm.dmem_allocator_create(AllocatorKind::Model, nc as u32).unwrap();
                    }
                    Op::Free(_) | Op::Acquire(_) => {}
                }
                check(&dm, &live)?;
            }
            // Release everything, then close NDL.
            for l in live.drain(..) {
                for _ in 0..l.refs {
                    dm.dmem_free(l.id).unwrap();
                }
            }
            check(&dm, &live)?;
            dm.shutdown().unwrap();
            let s = st.borrow();
            prop_assert!(s.chunks.is_empty());
            prop_assert!(s.bad_frees.is_empty());
            for (h, n) in &s.free_counts {
                prop_assert_eq!(*n, 1, "handle {} freed {} times", h, n);
            }
            prop_assert_eq!(dm.ndl().live_records(), 0);
            for nc in 0..8 {
                prop_assert_eq!(dm.logger().memory_usage_nc(nc, dml::NC_TOTAL_COLUMN), Some(0));
            }
        }
    }
}
