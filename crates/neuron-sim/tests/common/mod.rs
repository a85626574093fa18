//! Helpers of the CLI integration tests that spawn `neuron-sim` on traces
//! written to a temporary directory.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the binary with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .output()
        .unwrap()
}

/// Lossy UTF-8.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

/// Writes `contents` to `name` in this test process's directory under the
/// system temporary directory (`tag` keeps test binaries apart).
pub fn tmp(tag: &str, name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuron-sim-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

/// Engine 0 queue 0 set up for copies: rings at 0x01000000 (TX) and
/// 0x01001000 (RX) of 256 slots, no RX completion, both queues enabled,
/// both directions NORMAL (9 lines).
pub const ENG0_Q0_SETUP: &str = "\
write32 eng0.m2s.q0.tdrbp_low 0x01000000
write32 eng0.m2s.q0.tdrl 256
write32 eng0.s2m.q0.rdrbp_low 0x01001000
write32 eng0.s2m.q0.rdrl 256
write32 eng0.s2m.q0.comp_cfg 0
write32 eng0.m2s.q0.q_cfg 0x03030000
write32 eng0.s2m.q0.q_cfg 0x03030000
write32 eng0.m2s.change_state 1
write32 eng0.s2m.change_state 1
";

/// Runs the binary with `args`, `stdin` as its standard input, and the
/// environment changed by `env` (`None` removes a variable).
pub fn run_with(args: &[&str], stdin: &[u8], env: &[(&str, Option<&str>)]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neuron-sim"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    // Written from a thread: a large input must not wait for the output.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// The files a trace reads, from the directory it lives in; writes are
/// refused (the in-process tests that run golden traces write nothing).
pub struct DirFiles(pub PathBuf);

impl soc::exec::TraceFiles for DirFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.0.join(path))
    }
    fn write(&mut self, _path: &str, _data: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("these tests write no files"))
    }
}

/// Every golden trace (`traces/*.trace`), sorted.
pub fn golden_traces() -> Vec<PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut traces: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "trace"))
        .collect();
    traces.sort();
    traces
}
