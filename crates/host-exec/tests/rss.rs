//! Host copies stream (issue 11 item 4, `docs/host-runtime.md` §5.1): the
//! peak resident memory of a run that copies N bytes stays within N +
//! 64 MiB — the device memory that receives a copy-in necessarily holds N,
//! nothing else may grow with it.
//!
//! Each case runs in a child process (this test binary again, selecting
//! [`rss_child`] with an environment variable) so that its peak is its
//! own; the child reads `VmHWM` from `/proc/self/status` after the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use soc::exec::TraceFiles;

const MIB: u64 = 1 << 20;
/// The copy size: big enough that holding it twice cannot hide in the
/// 64 MiB allowance, small enough for a debug build.
const N: u64 = 256 * MIB;
const CASE_VAR: &str = "HOST_EXEC_RSS_CASE";

struct NoFiles;

impl TraceFiles for NoFiles {
    fn read(&mut self, p: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!("no file {p}")))
    }
    fn write(&mut self, p: &str, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(format!("no file {p}")))
    }
}

/// The directory of the `file` case's input (`FILE_DIR_VAR`), read at
/// offsets as the CLI reads trace files.
struct DiskFiles(std::path::PathBuf);

impl TraceFiles for DiskFiles {
    fn read(&mut self, p: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!("{p} must not be read whole")))
    }
    fn write(&mut self, p: &str, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(format!("no file {p}")))
    }
    fn open(&mut self, p: &str) -> std::io::Result<std::sync::Arc<dyn soc::exec::FileRange>> {
        Ok(std::sync::Arc::new(soc::exec::DiskFile::open(
            &self.0.join(p),
        )?))
    }
}

const FILE_DIR_VAR: &str = "HOST_EXEC_RSS_FILE_DIR";

/// The cases: name, trace, timing-only.
fn case(name: &str) -> (String, bool) {
    let dev = format!("alloc w size={N:#x}\ncopyin w byte=0xab\ncopyout w byte=0xab\n");
    match name {
        "device" => (dev, false),
        "device-timing-only" => (dev, true),
        "host" => (
            format!(
                "alloc h size={N:#x} host usage=io\ncopyin h pattern=incr8 seed=5\ncopyout h pattern=incr8 seed=5\n"
            ),
            false,
        ),
        "copyout-untouched" => (format!("alloc w size={N:#x}\ncopyout w byte=0\n"), false),
        // A file source and a file comparison, read a piece at a time
        // (TraceFiles::open), never whole.
        "file" => (
            format!("alloc w size={N:#x}\ncopyin w file=big.bin\ncopyout w file=big.bin\n"),
            false,
        ),
        other => panic!("no case {other}"),
    }
}

fn vm_hwm_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

/// The child side: runs the case named in the environment, checks that
/// every expectation held, prints its peak. Without the variable (a normal
/// test run) it does nothing.
#[test]
fn rss_child() {
    let Ok(name) = std::env::var(CASE_VAR) else {
        return;
    };
    let (source, timing_only) = case(&name);
    let mut dev = soc::Device::trn2().unwrap();
    dev.set_timing_only(timing_only);
    let (report, _session) = match std::env::var(FILE_DIR_VAR) {
        Ok(dir) => {
            host_exec::run_source(dev, &source, "rss.trace", &mut DiskFiles(dir.into())).unwrap()
        }
        Err(_) => host_exec::run_source(dev, &source, "rss.trace", &mut NoFiles).unwrap(),
    };
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    println!("RSS-CASE {name} VmHWM {}", vm_hwm_bytes());
}

/// Runs a case in a child process; its peak resident bytes.
fn peak_of(name: &str) -> u64 {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["rss_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CASE_VAR, name);
    let dir = std::env::temp_dir().join(format!("host-exec-rss-{}", std::process::id()));
    if name == "file" {
        use std::io::Write;
        std::fs::create_dir_all(&dir).unwrap();
        let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("big.bin")).unwrap());
        let block: Vec<u8> = (0..MIB).map(|i| (i * 7 % 251) as u8).collect();
        for _ in 0..N / MIB {
            f.write_all(&block).unwrap();
        }
        f.flush().unwrap();
        cmd.env(FILE_DIR_VAR, &dir);
    }
    let out = cmd.output().unwrap();
    if name == "file" {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tag = format!("RSS-CASE {name} VmHWM ");
    let line = stdout
        .lines()
        .find_map(|l| l.split_once(&tag).map(|(_, v)| v.to_owned()))
        .unwrap_or_else(|| panic!("{name}: no peak in {stdout}"));
    line.trim().parse().unwrap()
}

#[test]
fn host_copies_peak_under_n_plus_64_mib() {
    let bound = N + 64 * MIB;
    for name in [
        "device",
        "device-timing-only",
        "host",
        "copyout-untouched",
        "file",
    ] {
        let peak = peak_of(name);
        eprintln!("{name}: peak {} MiB for N = {} MiB", peak / MIB, N / MIB);
        assert!(
            peak <= bound,
            "{name}: peak RSS {} MiB exceeds N + 64 MiB = {} MiB",
            peak / MIB,
            bound / MIB
        );
        // Where the device holds nothing of the copy (timing-only mode
        // moves no payload; an untouched tensor reads as zeros), neither
        // may the host: well under N.
        if matches!(name, "device-timing-only" | "copyout-untouched") {
            assert!(
                peak <= N / 2,
                "{name}: peak RSS {} MiB; nothing should hold the {} MiB copied",
                peak / MIB,
                N / MIB
            );
        }
    }
}
