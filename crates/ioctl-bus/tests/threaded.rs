//! The threaded transport against the in-process one, and its failure
//! modes: device panic, hang, lost device, shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use ioctl_abi::{Errno, cmd};
use ioctl_bus::{
    BusError, DEFAULT_WATCHDOG, InProcess, IoctlError, Threaded, Transport, UserSpace,
};
use proptest::prelude::*;

/// One host action.
#[derive(Clone, Debug)]
enum Op {
    SemWrite {
        idx: u32,
        val: u32,
    },
    SemInc {
        idx: u32,
        val: u32,
    },
    SemDec {
        idx: u32,
        val: u32,
    },
    SemRead {
        idx: u32,
    },
    /// MEM_BUF_COPY64 between user buffer `buf` (+`at`) and the chunk.
    BufCopy {
        buf: usize,
        at: u64,
        off: u64,
        size: u64,
        copy_in: bool,
    },
    Xor {
        src: usize,
        src_at: u64,
        dst: usize,
        dst_at: u64,
        len: u64,
    },
    MmapRead {
        off: u64,
        len: usize,
    },
    MmapWrite {
        off: u64,
        bytes: Vec<u8>,
    },
    Unknown {
        request: u32,
    },
}

const USER_BUFS: usize = 3;
const USER_BUF_BYTES: usize = 512;

fn op() -> impl Strategy<Value = Op> {
    let idx = 0u32..10; // 8 and 9 are out of range
    let val = 0u32..1_000_000; // never a magic value
    let buf = 0..USER_BUFS;
    let at = 0u64..600; // past 512 faults
    prop_oneof![
        (idx.clone(), val.clone()).prop_map(|(idx, val)| Op::SemWrite { idx, val }),
        (idx.clone(), val.clone()).prop_map(|(idx, val)| Op::SemInc { idx, val }),
        (idx.clone(), val).prop_map(|(idx, val)| Op::SemDec { idx, val }),
        idx.prop_map(|idx| Op::SemRead { idx }),
        (
            buf.clone(),
            at.clone(),
            0u64..4200,
            0u64..600,
            any::<bool>()
        )
            .prop_map(|(buf, at, off, size, copy_in)| Op::BufCopy {
                buf,
                at,
                off,
                size,
                copy_in
            }),
        (buf.clone(), at.clone(), buf, at, 0u64..600).prop_map(
            |(src, src_at, dst, dst_at, len)| Op::Xor {
                src,
                src_at,
                dst,
                dst_at,
                len
            }
        ),
        (0u64..4200, 0usize..300).prop_map(|(off, len)| Op::MmapRead { off, len }),
        (0u64..4200, proptest::collection::vec(any::<u8>(), 0..300))
            .prop_map(|(off, bytes)| Op::MmapWrite { off, bytes }),
        prop_oneof![
            Just(0x1234_5678u32),
            Just(cmd::EVENT_GET),
            Just(XOR_COPY ^ 1)
        ]
        .prop_map(|request| Op::Unknown { request }),
    ]
}

/// A user space with `USER_BUFS` patterned buffers.
fn user_space() -> (UserSpace, Vec<u64>) {
    let mut user = UserSpace::new();
    let bufs = (0..USER_BUFS)
        .map(|b| {
            let bytes: Vec<u8> = (0..USER_BUF_BYTES)
                .map(|i| (i * 3 + b * 101) as u8)
                .collect();
            user.alloc_with(&bytes)
        })
        .collect();
    (user, bufs)
}

type Outcome = (Result<i64, IoctlError>, Vec<u8>);

/// Runs `ops`; per op the result and the argument (or loaded) bytes.
fn run(t: &mut dyn Transport, user: &mut UserSpace, bufs: &[u64], ops: &[Op]) -> Vec<Outcome> {
    ops.iter()
        .map(|op| {
            let (request, mut arg) = match op {
                Op::SemWrite { idx, val } => (cmd::SEMAPHORE_WRITE, sem_arg(*idx, *val)),
                Op::SemInc { idx, val } => (cmd::SEMAPHORE_INCREMENT, sem_arg(*idx, *val)),
                Op::SemDec { idx, val } => (cmd::SEMAPHORE_DECREMENT, sem_arg(*idx, *val)),
                Op::SemRead { idx } => (cmd::SEMAPHORE_READ, sem_arg(*idx, 0)),
                Op::BufCopy {
                    buf,
                    at,
                    off,
                    size,
                    copy_in,
                } => (
                    cmd::MEM_BUF_COPY64,
                    buf_copy_arg(bufs[*buf] + at, *off, *size, *copy_in),
                ),
                Op::Xor {
                    src,
                    src_at,
                    dst,
                    dst_at,
                    len,
                } => (
                    XOR_COPY,
                    xor_arg(bufs[*src] + src_at, bufs[*dst] + dst_at, *len),
                ),
                Op::MmapRead { off, len } => {
                    let mut buf = vec![0xee; *len];
                    let r = t.mmap_read(MMAP_BASE + off, &mut buf).map(|()| 0);
                    return (r, buf);
                }
                Op::MmapWrite { off, bytes } => {
                    return (t.mmap_write(MMAP_BASE + off, bytes).map(|()| 0), Vec::new());
                }
                Op::Unknown { request } => (*request, vec![0; 12]),
            };
            let r = t.ioctl(request, &mut arg, user);
            (r, arg)
        })
        .collect()
}

fn user_bytes(user: &UserSpace, bufs: &[u64]) -> Vec<Vec<u8>> {
    bufs.iter()
        .map(|b| user.buffer(*b).unwrap().to_vec())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Same calls → same results, same argument copy-outs, same user
    /// memory, same final driver state.
    #[test]
    fn threaded_matches_in_process(ops in proptest::collection::vec(op(), 1..40)) {
        let (mut user_a, bufs) = user_space();
        let mut inproc = InProcess::new(SemDriver::default());
        let out_a = run(&mut inproc, &mut user_a, &bufs, &ops);

        let (mut user_b, bufs_b) = user_space();
        prop_assert_eq!(&bufs, &bufs_b);
        let mut threaded = Threaded::spawn(SemDriver::default);
        let out_b = run(&mut threaded, &mut user_b, &bufs, &ops);

        prop_assert_eq!(out_a, out_b);
        prop_assert_eq!(user_bytes(&user_a, &bufs), user_bytes(&user_b, &bufs));
        let a = inproc.into_driver();
        let b = threaded.shutdown().unwrap();
        prop_assert_eq!(a.sems, b.sems);
        prop_assert_eq!(&a.chunk, &b.chunk);
        prop_assert_eq!(a.calls, b.calls);
    }
}

#[test]
fn user_memory_round_trips_through_the_host() {
    let mut user = UserSpace::new();
    let src = user.alloc_with(&[1, 2, 3, 4]);
    let dst = user.alloc(4);
    let mut t = Threaded::spawn(SemDriver::default);
    let mut arg = xor_arg(src, dst, 4);
    assert_eq!(t.ioctl(XOR_COPY, &mut arg, &mut user), Ok(4));
    assert_eq!(user.buffer(dst).unwrap(), &[0x5b, 0x58, 0x59, 0x5e]);
    assert_eq!(arg[16..24], (!4u64).to_le_bytes(), "argument copy-out");
    // A fault on the host side reaches the driver as EFAULT.
    let mut arg = xor_arg(src, dst + 4096, 4);
    assert_eq!(
        t.ioctl(XOR_COPY, &mut arg, &mut user),
        Err(IoctlError::Errno(Errno::EFAULT))
    );

    // mmap loads and stores.
    t.mmap_write(MMAP_BASE + 10, &[9, 8, 7]).unwrap();
    let mut got = [0; 3];
    t.mmap_read(MMAP_BASE + 10, &mut got).unwrap();
    assert_eq!(got, [9, 8, 7]);
    assert_eq!(
        t.mmap_read(0, &mut got),
        Err(IoctlError::Errno(Errno::EFAULT))
    );

    let chunk = t.with_driver(|d| d.chunk[10..13].to_vec()).unwrap();
    assert_eq!(chunk, [9, 8, 7]);
    assert_eq!(t.shutdown().unwrap().calls, 5);
}

#[test]
fn device_panic_is_reported_and_sticky() {
    let mut user = UserSpace::new();
    let mut t = Threaded::spawn(SemDriver::default).with_watchdog(Duration::from_secs(5));
    let mut arg = sem_arg(1, 5);
    assert_eq!(t.ioctl(cmd::SEMAPHORE_WRITE, &mut arg, &mut user), Ok(0));

    let mut arg = sem_arg(2, PANIC_VALUE);
    let err = t
        .ioctl(cmd::SEMAPHORE_WRITE, &mut arg, &mut user)
        .unwrap_err();
    let IoctlError::Bus(BusError::DevicePanic(msg)) = &err else {
        panic!("expected DevicePanic, got {err:?}");
    };
    assert!(msg.contains("magic value 0xdeadbeef"), "{msg}");

    // Every later call gives the same error at once, never a hang.
    let start = Instant::now();
    let mut arg = sem_arg(1, 0);
    assert_eq!(
        t.ioctl(cmd::SEMAPHORE_READ, &mut arg, &mut user),
        Err(err.clone())
    );
    assert_eq!(t.mmap_write(MMAP_BASE, &[1]), Err(err.clone()));
    let IoctlError::Bus(bus) = err else {
        unreachable!()
    };
    assert_eq!(t.with_driver(|d| d.calls).unwrap_err(), bus);
    assert_eq!(t.failure(), Some(&bus));
    assert_eq!(t.shutdown().unwrap_err(), bus);
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn panic_while_building_the_driver_is_a_device_panic() {
    let mut user = UserSpace::new();
    let mut t: Threaded<SemDriver> = Threaded::spawn(|| panic!("no such device"));
    let mut arg = sem_arg(0, 0);
    let want = IoctlError::Bus(BusError::DevicePanic("no such device".into()));
    assert_eq!(
        t.ioctl(cmd::SEMAPHORE_READ, &mut arg, &mut user),
        Err(want.clone())
    );
    assert_eq!(t.ioctl(cmd::SEMAPHORE_READ, &mut arg, &mut user), Err(want));

    let t: Threaded<SemDriver> = Threaded::spawn(|| panic!("no such device"));
    assert_eq!(
        t.shutdown().unwrap_err(),
        BusError::DevicePanic("no such device".into())
    );
}

#[test]
fn hung_device_trips_the_watchdog() {
    let mut user = UserSpace::new();
    let watchdog = Duration::from_millis(200);
    let mut t = Threaded::spawn(SemDriver::default).with_watchdog(watchdog);
    assert_eq!(t.watchdog(), watchdog);
    let mut arg = sem_arg(0, 1);
    assert_eq!(t.ioctl(cmd::SEMAPHORE_WRITE, &mut arg, &mut user), Ok(0));

    let start = Instant::now();
    let mut arg = sem_arg(0, HANG_VALUE);
    let hung = IoctlError::Bus(BusError::Hung { waited_ms: 200 });
    assert_eq!(
        t.ioctl(cmd::SEMAPHORE_WRITE, &mut arg, &mut user),
        Err(hung.clone())
    );
    let waited = start.elapsed();
    assert!(
        waited >= watchdog && waited < Duration::from_secs(5),
        "{waited:?}"
    );

    // Sticky and immediate; dropping does not wait for the hung thread.
    let start = Instant::now();
    assert_eq!(t.ioctl(cmd::SEMAPHORE_READ, &mut arg, &mut user), Err(hung));
    drop(t);
    assert!(start.elapsed() < Duration::from_millis(150));
}

#[test]
fn lost_device_is_disconnected() {
    let mut user = UserSpace::new();
    let (mut t, port) = Threaded::<SemDriver>::pair();
    drop(port);
    let mut arg = sem_arg(0, 0);
    let lost = IoctlError::Bus(BusError::Disconnected);
    assert_eq!(
        t.ioctl(cmd::SEMAPHORE_READ, &mut arg, &mut user),
        Err(lost.clone())
    );
    assert_eq!(t.mmap_read(MMAP_BASE, &mut [0; 4]), Err(lost));
    assert_eq!(t.watchdog(), DEFAULT_WATCHDOG);
}

#[test]
fn pair_serves_on_a_caller_thread_and_returns_the_driver() {
    let mut user = UserSpace::new();
    let (mut t, port) = Threaded::pair();
    std::thread::scope(|s| {
        let device = s.spawn(move || port.serve(SemDriver::default()));
        let mut arg = sem_arg(3, 77);
        assert_eq!(t.ioctl(cmd::SEMAPHORE_WRITE, &mut arg, &mut user), Ok(0));
        drop(t); // closes the channels: serve returns
        let driver = device.join().unwrap().expect("driver handed back by serve");
        assert_eq!(driver.sems[3], 77);
    });
}

#[test]
fn drop_joins_the_device_thread() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&dropped);
    let mut t = Threaded::spawn(move || {
        let mut d = SemDriver::default();
        d.dropped = Some(flag);
        d
    });
    let mut user = UserSpace::new();
    let mut arg = sem_arg(0, 1);
    assert_eq!(t.ioctl(cmd::SEMAPHORE_WRITE, &mut arg, &mut user), Ok(0));
    assert!(!dropped.load(Ordering::SeqCst));
    drop(t);
    // The driver lives on the device thread; joined means dropped.
    assert!(dropped.load(Ordering::SeqCst));
}

#[test]
fn shutdown_hands_the_driver_back() {
    let mut user = UserSpace::new();
    let mut t = Threaded::spawn(SemDriver::default);
    for i in 0..4 {
        let mut arg = sem_arg(i, 10 + i);
        t.ioctl(cmd::SEMAPHORE_WRITE, &mut arg, &mut user).unwrap();
    }
    let d = t.shutdown().unwrap();
    assert_eq!(d.sems[..5], [10, 11, 12, 13, 0]);
    assert_eq!(d.calls, 4);
}

/// A cheap ioctl must be a channel round trip, not a thread spawn.
#[test]
fn many_cheap_round_trips() {
    let mut user = UserSpace::new();
    let mut t = Threaded::spawn(SemDriver::default);
    let mut arg = sem_arg(0, 1);
    for _ in 0..20_000 {
        t.ioctl(cmd::SEMAPHORE_INCREMENT, &mut arg, &mut user)
            .unwrap();
    }
    let mut arg = sem_arg(0, 0);
    t.ioctl(cmd::SEMAPHORE_READ, &mut arg, &mut user).unwrap();
    assert_eq!(sem_value(&arg), 20_000);
}

/// A driver that cannot leave its thread (`Rc`).
struct Pinned {
    inner: SemDriver,
    _not_send: std::rc::Rc<()>,
}

impl ioctl_bus::Driver for Pinned {
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn ioctl_bus::UserMemory,
    ) -> Result<i64, Errno> {
        self.inner.ioctl(request, arg, user)
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.inner.mmap_read(offset, buf)
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        self.inner.mmap_write(offset, bytes)
    }
}

#[test]
fn driver_need_not_be_send() {
    fn host_side_is_send<T: Send>(_: &T) {}
    let mut t = Threaded::spawn(|| Pinned {
        inner: SemDriver::default(),
        _not_send: std::rc::Rc::new(()),
    });
    host_side_is_send(&t);
    let mut user = UserSpace::new();
    let mut arg = sem_arg(1, 9);
    assert_eq!(t.ioctl(cmd::SEMAPHORE_WRITE, &mut arg, &mut user), Ok(0));
    assert_eq!(t.with_driver(|d| d.inner.sems[1]), Ok(9));
}
