//! Record → JSON lines → replay, mismatch reports, and ioctl counts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use ioctl_abi::{Errno, cmd};
use ioctl_bus::{
    BusError, Call, Counting, InProcess, IoctlError, Outcome, Recorder, Recording, ReplayReport,
    Threaded, Transport, UserAccess, UserSpace, replay,
};
use sha2::{Digest, Sha256};

/// A fixed session: semaphores, a copy in and out of the chunk, an XOR
/// copy between user buffers, mmap, and some failing calls.
fn session(t: &mut dyn Transport) -> UserSpace {
    let mut user = UserSpace::new();
    let src = user.alloc_with(b"hello, trainium");
    let dst = user.alloc(16);
    let calls: Vec<(u32, Vec<u8>)> = vec![
        (cmd::SEMAPHORE_WRITE, sem_arg(2, 40)),                  // 0
        (cmd::SEMAPHORE_INCREMENT, sem_arg(2, 2)),               // 1
        (cmd::SEMAPHORE_READ, sem_arg(2, 0)),                    // 2
        (cmd::MEM_BUF_COPY64, buf_copy_arg(src, 64, 15, true)),  // 3
        (cmd::MEM_BUF_COPY64, buf_copy_arg(dst, 60, 16, false)), // 4
        (XOR_COPY, xor_arg(src, dst, 5)),                        // 5
        (cmd::SEMAPHORE_READ, sem_arg(9, 0)),                    // 6: EINVAL
        (XOR_COPY, xor_arg(src + 4096, dst, 5)),                 // 7: EFAULT (guard page)
        (0x1234_5678, vec![0; 4]),                               // 8: ENOTTY
    ];
    for (request, mut arg) in calls {
        let _ = t.ioctl(request, &mut arg, &mut user);
    }
    t.mmap_write(MMAP_BASE + 100, &[1, 2, 3]).unwrap(); // 9
    let mut buf = [0; 8];
    t.mmap_read(MMAP_BASE + 98, &mut buf).unwrap(); // 10
    assert!(t.mmap_read(0, &mut buf).is_err()); // 11
    user
}

fn record_session() -> Recording {
    let mut rec = Recorder::new(Threaded::spawn(SemDriver::default));
    session(&mut rec);
    let (_, recording) = rec.into_parts();
    recording
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn records_calls_and_user_accesses() {
    let r = record_session();
    assert_eq!(r.len(), 12);
    assert!(
        r.records
            .iter()
            .enumerate()
            .all(|(i, rec)| rec.seq == i as u64)
    );

    let read = &r.records[2];
    let Call::Ioctl {
        request,
        name,
        arg_out,
        ..
    } = &read.call
    else {
        panic!()
    };
    assert_eq!(
        (*request, name.as_ref()),
        (cmd::SEMAPHORE_READ, "SEMAPHORE_READ")
    );
    assert_eq!(sem_value(arg_out), 42);
    assert_eq!(read.result, Outcome::Ret(0));
    assert!(read.user.is_empty());

    // The copy-in: the bytes the driver read.
    assert_eq!(
        r.records[3].user,
        [UserAccess::CopyFromUser {
            addr: ioctl_bus::USER_BASE,
            len: 15,
            bytes: b"hello, trainium".to_vec(),
            errno: None,
        }]
    );
    // The XOR copy: read then write, the write as a digest; unknown name.
    let xor = &r.records[5];
    assert_eq!(xor.label(), "unknown");
    assert_eq!(xor.result, Outcome::Ret(5));
    let want: Vec<u8> = b"hello".iter().map(|b| b ^ 0x5a).collect();
    let [
        UserAccess::CopyFromUser { .. },
        UserAccess::CopyToUser {
            len, sha256, errno, ..
        },
    ] = &xor.user[..]
    else {
        panic!("{:?}", xor.user)
    };
    assert_eq!((*len, sha256, *errno), (5, &sha(&want), None));

    assert_eq!(r.records[6].result, Outcome::Errno(Errno::EINVAL));
    assert_eq!(r.records[7].result, Outcome::Errno(Errno::EFAULT));
    let [UserAccess::CopyFromUser { bytes, errno, .. }] = &r.records[7].user[..] else {
        panic!()
    };
    assert_eq!((bytes.is_empty(), *errno), (true, Some(Errno::EFAULT)));
    assert_eq!(r.records[8].result, Outcome::Errno(Errno::ENOTTY));

    let Call::MmapRead {
        offset,
        len,
        sha256,
    } = &r.records[10].call
    else {
        panic!()
    };
    let chunk98: Vec<u8> = (98..106)
        .map(|i: usize| {
            if (100..103).contains(&i) {
                (i - 99) as u8
            } else {
                (i * 7) as u8
            }
        })
        .collect();
    assert_eq!(
        (*offset, *len, sha256.as_deref()),
        (MMAP_BASE + 98, 8, Some(sha(&chunk98).as_str()))
    );
    assert_eq!(r.records[11].result, Outcome::Errno(Errno::EFAULT));
}

#[test]
fn jsonl_round_trip_then_replay() {
    let r = record_session();
    let text = r.to_jsonl();
    assert_eq!(text.lines().count(), 12);
    assert!(text.lines().nth(2).unwrap().contains(&format!(
        "\"request\":\"{:#010x}\",\"name\":\"SEMAPHORE_READ\"",
        cmd::SEMAPHORE_READ
    )));
    let back = Recording::from_jsonl(&text).unwrap();
    assert_eq!(back, r);

    let mut fresh = SemDriver::default();
    let report = replay(&back, &mut fresh).unwrap();
    assert_eq!(
        report,
        ReplayReport {
            records: 12,
            ioctls: 9,
            mmap_reads: 2,
            mmap_writes: 1,
            user_reads: 3,
            user_writes: 2,
            not_issued: 0,
            halted_at_seq: None,
        }
    );
    assert_eq!(fresh.sems[2], 42);
    assert_eq!(&fresh.chunk[64..79], b"hello, trainium");
}

#[test]
fn from_jsonl_names_the_bad_line() {
    let text = record_session().to_jsonl();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[4] = "{\"seq\":4,\"kind\":\"ioctl\"}";
    let err = Recording::from_jsonl(&lines.join("\n")).unwrap_err();
    assert!(err.to_string().starts_with("line 5, column "), "{err}");
    assert_eq!(err.line, 5);
}

fn mismatch(quirk: Quirk) -> String {
    let r = record_session();
    match replay(&r, &mut SemDriver::new(quirk)) {
        Err(BusError::ReplayMismatch(m)) => m,
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn replay_reports_the_first_difference() {
    let m = mismatch(Quirk::ReadPlusOne);
    assert!(m.starts_with("record 2 (SEMAPHORE_READ) arg_out: "), "{m}");

    let m = mismatch(Quirk::ShortCopyIn);
    assert!(m.starts_with("record 3 (MEM_BUF_COPY64) user[0]: "), "{m}");
    assert!(m.contains("len 14") && m.contains("len 15"), "{m}");

    let m = mismatch(Quirk::OtherXorKey);
    assert!(
        m.starts_with("record 5 (unknown) user[1]: copy_to_user sha256"),
        "{m}"
    );
}

#[test]
fn replay_checks_results_and_access_counts() {
    // A recorded result the driver does not give.
    let mut r = record_session();
    r.records[6].result = Outcome::Errno(Errno::E2BIG);
    let Err(BusError::ReplayMismatch(m)) = replay(&r, &mut SemDriver::default()) else {
        panic!()
    };
    assert!(m.starts_with("record 6 (SEMAPHORE_READ) result: "), "{m}");
    // Outcomes are spelled as the recording spells them (its JSON).
    assert!(
        m.ends_with(r#"recorded {"errno":"E2BIG"}, replay {"errno":"EINVAL"}"#),
        "{m}"
    );

    // An access the driver no longer makes.
    let mut r = record_session();
    let extra = r.records[5].user[0].clone();
    r.records[5].user.push(extra);
    let Err(BusError::ReplayMismatch(m)) = replay(&r, &mut SemDriver::default()) else {
        panic!()
    };
    assert!(m.starts_with("record 5 (unknown) user[2]: "), "{m}");

    // An mmap load that reads other bytes.
    let mut r = record_session();
    let Call::MmapRead { sha256, .. } = &mut r.records[10].call else {
        panic!()
    };
    *sha256 = Some(sha(b"other"));
    let Err(BusError::ReplayMismatch(m)) = replay(&r, &mut SemDriver::default()) else {
        panic!()
    };
    assert!(m.starts_with("record 10 (mmap_read) sha256: "), "{m}");
}

#[test]
fn replay_reissues_a_device_panic_and_stops_there() {
    let mut rec = Recorder::new(Threaded::spawn(SemDriver::default));
    let mut user = UserSpace::new();
    for v in [5, PANIC_VALUE, 6] {
        let _ = rec.ioctl(cmd::SEMAPHORE_WRITE, &mut sem_arg(0, v), &mut user);
    }
    let r = Recording::from_jsonl(&rec.recording().to_jsonl()).unwrap();
    assert!(matches!(
        &r.records[1].result,
        Outcome::Bus(BusError::DevicePanic(_))
    ));
    let report = replay(&r, &mut SemDriver::default()).unwrap();
    assert_eq!((report.ioctls, report.not_issued), (2, 1));

    // A driver that does not panic there is a mismatch.
    let mut r = r;
    let Call::Ioctl { arg_in, .. } = &mut r.records[1].call else {
        panic!()
    };
    *arg_in = sem_arg(0, 7);
    let Err(BusError::ReplayMismatch(m)) = replay(&r, &mut SemDriver::default()) else {
        panic!()
    };
    assert!(m.starts_with("record 1 (SEMAPHORE_WRITE) result: "), "{m}");
    // As the recording and docs/host-runtime.md §2.3 spell it, not the
    // Rust debug form `Bus(DevicePanic(..))`.
    assert!(m.contains(r#"recorded {"bus":{"device_panic":"#), "{m}");
    assert!(!m.contains("DevicePanic"), "{m}");
}

#[test]
fn replay_does_not_reissue_a_hang() {
    let t = Threaded::spawn(SemDriver::default).with_watchdog(Duration::from_millis(100));
    let mut rec = Recorder::new(t);
    let mut user = UserSpace::new();
    for v in [5, HANG_VALUE, 6] {
        let _ = rec.ioctl(cmd::SEMAPHORE_WRITE, &mut sem_arg(0, v), &mut user);
    }
    let hung = Outcome::Bus(BusError::Hung { waited_ms: 100 });
    assert_eq!(
        (
            &rec.recording().records[1].result,
            &rec.recording().records[2].result
        ),
        (&hung, &hung)
    );
    // Issuing record 1 would never return.
    let report = replay(rec.recording(), &mut SemDriver::default()).unwrap();
    assert_eq!(
        (report.records, report.ioctls, report.not_issued),
        (3, 1, 2)
    );
}

#[test]
fn counts_by_ioctl_name() {
    let mut counting = Counting::new(InProcess::new(SemDriver::default()));
    session(&mut counting);
    let stats = counting.stats().clone();
    assert_eq!((stats.calls, stats.errors), (12, 4));
    assert_eq!((stats.mmap_reads, stats.mmap_writes), (2, 1));
    let by_name: Vec<(&str, u64)> = stats
        .by_name
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        by_name,
        [
            ("MEM_BUF_COPY64", 2),
            ("SEMAPHORE_INCREMENT", 1),
            ("SEMAPHORE_READ", 2),
            ("SEMAPHORE_WRITE", 1),
            ("unknown", 3),
        ]
    );
    assert_eq!(stats.ioctls(), 9);
    let text = stats.to_string();
    assert!(text.starts_with("ioctl count by kind\n"), "{text}");
    assert!(
        text.contains("SEMAPHORE_READ") && text.contains("mmap_read"),
        "{text}"
    );

    // The recorder keeps the same counts, and so does its recording.
    let mut rec = Recorder::new(InProcess::new(SemDriver::default()));
    session(&mut rec);
    assert_eq!(rec.stats(), &stats);
    assert_eq!(rec.recording().stats(), stats);
}

#[test]
fn bus_errors_are_recorded_and_counted() {
    let (t, port) = Threaded::<SemDriver>::pair();
    drop(port);
    let mut rec = Recorder::new(t);
    let mut user = UserSpace::new();
    let r = rec.ioctl(cmd::SEMAPHORE_READ, &mut sem_arg(0, 0), &mut user);
    assert_eq!(r, Err(IoctlError::Bus(BusError::Disconnected)));
    assert_eq!(
        rec.recording().records[0].result,
        Outcome::Bus(BusError::Disconnected)
    );
    assert_eq!(rec.stats().errors, 1);
    let line = rec.recording().to_jsonl();
    assert!(
        line.contains("\"result\":{\"bus\":\"disconnected\"}"),
        "{line}"
    );
}

/// A writer the test can read back after the recorder has it.
#[derive(Clone, Default)]
struct SharedBuf(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn streaming_writes_the_same_lines_and_keeps_nothing() {
    let in_memory = record_session();
    let buf = SharedBuf::default();
    let mut rec = Recorder::streaming(Threaded::spawn(SemDriver::default), Box::new(buf.clone()));
    session(&mut rec);
    assert_eq!(rec.finish_stream(), None);
    assert!(rec.recording().is_empty(), "streaming keeps no records");
    let text = String::from_utf8(buf.0.borrow().clone()).unwrap();
    assert_eq!(text, in_memory.to_jsonl());
    // The stream replays like the in-memory recording.
    let back = Recording::from_jsonl(&text).unwrap();
    let mut fresh = SemDriver::default();
    assert_eq!(replay(&back, &mut fresh).unwrap().records, 12);
}

/// A review's finding: an edited recording whose record 0 is a bus failure
/// replayed "every result matched" with nothing re-issued, although its
/// later records claim the driver's results. A bus failure is sticky (no
/// later call reaches the driver): such a record is a mismatch.
#[test]
fn a_driver_result_after_a_recorded_bus_failure_is_a_mismatch() {
    let mut r = record_session();
    r.records[0].result = Outcome::Bus(BusError::Disconnected);
    let Err(BusError::ReplayMismatch(m)) = replay(&r, &mut SemDriver::default()) else {
        panic!("replayed")
    };
    assert!(m.starts_with("record seq 1: recorded {\"ret\":"), "{m}");
    assert!(m.contains("the bus failed at seq 0"), "{m}");
    // Every later record failing too is a consistent recording: nothing is
    // re-issued, and the report says where it stopped.
    for rec in &mut r.records {
        rec.result = Outcome::Bus(BusError::Disconnected);
    }
    let report = replay(&r, &mut SemDriver::default()).unwrap();
    assert_eq!(
        (report.ioctls, report.not_issued, report.halted_at_seq),
        (0, 12, Some(0))
    );
}
