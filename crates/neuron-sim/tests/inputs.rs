//! Inputs and outputs of every command as files the user names: an input
//! that never ends (`/dev/zero`, `/dev/full`) or is far too large is
//! refused with its name and its limit (docs/user-guide.md §3, Input size
//! limits), never read until memory runs out; an output that cannot be
//! written (`/dev/full`) is an error.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuron-sim-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the binary with `args` in `dir` under a 3 GiB address-space limit
/// (so that a reader without a bound dies quickly instead of taking the
/// machine's memory) and a deadline; standard input from `stdin`.
fn run_bounded(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -v 3145728 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .current_dir(dir)
        .env("NEURON_SIM_HISTORY", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match stdin {
        Some(p) => cmd.stdin(std::fs::File::open(p).unwrap()),
        None => cmd.stdin(Stdio::null()),
    };
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "{args:?} did not end within 60 s\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn endless_inputs_are_refused_naming_the_file_and_the_limit() {
    if !Path::new("/dev/zero").exists() || !Path::new("/dev/full").exists() {
        return;
    }
    let dir = scratch("endless");
    let trace = workspace().join("traces/copy-hbm-hbm.trace");
    let trace = trace.to_str().unwrap();
    std::fs::create_dir_all(dir.join("maps")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("maps/blk.json")).unwrap();
    let calib = workspace().join("traces/calib");
    let calib = calib.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec!["run", "/dev/zero"],
            "/dev/zero",
            "256 MiB, the limit for a trace",
        ),
        (
            vec!["run", "/dev/zero", "--core", "tpb0"],
            "/dev/zero",
            "256 MiB, the limit for an instruction stream",
        ),
        (
            vec!["run", trace, "--timing", "/dev/zero"],
            "/dev/zero",
            "1 MiB, the limit for a timing file",
        ),
        (
            vec!["timing", "--timing", "/dev/zero"],
            "/dev/zero",
            "1 MiB, the limit for a timing file",
        ),
        (
            vec!["--soc-map", "/dev/zero", "map"],
            "/dev/zero",
            "64 MiB, the limit for a SoC map",
        ),
        (
            vec!["--soc-map", "/dev/zero", "map", "--dump"],
            "/dev/zero",
            "64 MiB, the limit for a SoC map",
        ),
        (
            vec!["--csr-maps", "maps", "csr", "list"],
            "blk.json",
            "64 MiB, the limit for a CSR map",
        ),
        (
            vec!["disasm", "/dev/zero"],
            "/dev/zero",
            "the limit for an instruction stream",
        ),
        (
            vec!["asm", "/dev/zero", "-o", "out.bin"],
            "/dev/zero",
            "the limit for instruction-word text",
        ),
        (
            vec!["ioctl", "replay", "/dev/zero"],
            "/dev/zero",
            "512 MiB, the limit for an ioctl recording",
        ),
        (
            vec!["sweep", "/dev/zero"],
            "/dev/zero",
            "the limit for a trace",
        ),
        (
            vec!["sweep", "merge", "/dev/zero"],
            "/dev/zero",
            "the limit for a sweep CSV",
        ),
        (
            vec!["race", "/dev/zero"],
            "/dev/zero",
            "the limit for a trace",
        ),
        (
            vec!["step", "/dev/zero", "--script", "/dev/null"],
            "/dev/zero",
            "the limit for a trace",
        ),
        (
            vec!["step", trace, "--script", "/dev/zero"],
            "--script /dev/zero",
            "a line longer than 1 MiB",
        ),
        (
            vec!["calibrate", "--dir", calib, "--check", "/dev/zero"],
            "/dev/zero",
            "16 MiB, the limit for the calibration table's file",
        ),
        // /dev/full reads as endless zeros: the table's file is read
        // first (to find its markers), and that read once never ended.
        (
            vec!["calibrate", "--dir", calib, "--write", "/dev/full"],
            "/dev/full",
            "16 MiB, the limit for the calibration table's file",
        ),
    ];
    for (args, name, limit) in cases {
        let o = run_bounded(&dir, &args, None);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(name), "{args:?} names {name}: {err}");
        assert!(err.contains(limit), "{args:?} names the limit: {err}");
        assert!(
            err.contains("Input size limits"),
            "{args:?} points at the docs: {err}"
        );
    }
    // Standard input too.
    for args in [
        vec!["run", "-"],
        vec!["disasm", "-"],
        vec!["asm", "-", "-o", "o.bin"],
    ] {
        let o = run_bounded(&dir, &args, Some("/dev/zero"));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("from <stdin>: larger than"), "{args:?}: {err}");
    }
    // The debugger's JSON protocol on standard input.
    let o = run_bounded(&dir, &["step", trace, "--json"], Some("/dev/zero"));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("from <stdin>: a line longer than 1 MiB"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_regular_file_past_its_limit_is_refused_from_its_size() {
    let dir = scratch("large");
    // Sparse: nothing is written, and nothing is read.
    let f = std::fs::File::create(dir.join("big.json")).unwrap();
    f.set_len((1 << 20) + 1).unwrap();
    let o = run_bounded(&dir, &["timing", "--timing", "big.json"], None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "cannot read --timing big.json: larger than 1 MiB, the limit for a timing file"
        ),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_output_that_cannot_be_written_is_an_error() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = scratch("full");
    let trace = workspace().join("traces/copy-hbm-hbm.trace");
    let trace = trace.to_str().unwrap();
    std::fs::write(
        dir.join("t.trace"),
        "#@ param n=1,2\nfill hbm0 len=16 byte={n}\n",
    )
    .unwrap();
    for args in [
        vec![
            "sweep",
            "t.trace",
            "--no-host-time",
            "--jobs",
            "1",
            "--csv",
            "/dev/full",
        ],
        vec![
            "sweep",
            "t.trace",
            "--no-host-time",
            "--jobs",
            "1",
            "--svg",
            "/dev/full",
        ],
        vec!["run", trace, "-q", "--vcd", "/dev/full"],
        vec!["run", trace, "-q", "--csr-snapshot", "/dev/full"],
        vec!["schema", "run", "--out-dir", "/dev/full"],
    ] {
        let o = run_bounded(&dir, &args, None);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("/dev/full"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
