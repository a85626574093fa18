//! Seed inputs: the golden traces (`traces/`), the register and address
//! maps (`csr-maps/`), the timing defaults, instruction words assembled
//! from the firmware traces, and ioctl recordings made by running the host
//! traces.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The workspace root.
pub fn root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .and_then(Path::parent)
        .unwrap_or(here)
        .to_path_buf()
}

/// Every `*.trace` under `traces/`, sorted (file names, texts).
pub fn traces() -> &'static [(String, Vec<u8>)] {
    static TRACES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    TRACES.get_or_init(|| {
        let mut out = Vec::new();
        let mut dirs = vec![root().join("traces")];
        while let Some(d) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "trace")
                    && let Ok(bytes) = std::fs::read(&p)
                {
                    out.push((p.display().to_string(), bytes));
                }
            }
        }
        out.sort();
        out
    })
}

/// The trace texts alone.
pub fn trace_texts() -> Vec<Vec<u8>> {
    traces().iter().map(|(_, t)| t.clone()).collect()
}

/// The CSR maps built into the simulator.
pub fn csr_maps() -> Vec<Vec<u8>> {
    csr::BUILTIN_MAPS
        .iter()
        .map(|m| m.json.as_bytes().to_vec())
        .collect()
}

/// The built-in SoC map, and two small maps that use every node key.
pub fn soc_maps() -> Vec<Vec<u8>> {
    vec![
        soc_map::TRN2_MAP_JSON.as_bytes().to_vec(),
        br#"{"device": "x", "templates": {"t": [{"name": "r", "kind": "csr", "block": "b", "base": "0x0", "size": "0x100"}]},
 "regions": [
  {"name": "a", "kind": "memory", "base": "0x0", "size": "0x1000", "window": "0x2000"},
  {"name": "e", "base": "0x10000", "count": 4, "stride": "0x1000", "size": "0x1000", "first_index": 8,
   "include": ["t"], "children": [{"name": "m", "kind": "memory", "base": "0x800", "size": "0x100", "only_parent_indices": [0, 2]}]},
  {"name": "s", "kind": "sbuf", "base": "0x100000", "size": "0x10000", "partitions": {"count": 4, "stride": "0x4000", "populated": "0x3000"}},
  {"name": "p", "kind": "psum", "base": "0x200000", "size": "0x10000", "partitions": {"count": 4, "stride": "0x4000", "populated": "0x2000", "bank": "0x800"}},
  {"name": "h", "kind": "host", "instances": ["0x400000", "0x500000"], "size": "0x1000", "symbols": {"x": "y"}},
  {"name": "al", "kind": "memory", "base": "0x300000", "size": "0x100", "alias_of": "a"},
  {"name": "z", "kind": "reserved", "base": "0x600000", "size": "0x10"}
 ]}"#
        .to_vec(),
    ]
}

/// The timing defaults.
pub fn timing_files() -> Vec<Vec<u8>> {
    vec![include_bytes!("../../sim-core/timing-default.json").to_vec()]
}

/// The `inst` lines of the firmware traces as instruction-word text (the
/// assembler's format), one seed per trace.
pub fn asm_texts() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (_, t) in traces() {
        let text = String::from_utf8_lossy(t);
        let mut lines = String::new();
        for line in text.lines() {
            if let Some(rest) = line.trim_start().strip_prefix("inst ")
                && let Some((_, word)) = rest.split_once(' ')
            {
                lines.push_str(word.trim());
                lines.push('\n');
            }
        }
        if dma_abi::inst::asm(&lines).is_ok() && !lines.is_empty() {
            out.push(lines.into_bytes());
        }
    }
    if out.is_empty() {
        out.push(b"DIRECT2D\n".to_vec());
    }
    out
}

/// Binary streams of instruction words: each asm seed assembled.
pub fn word_streams() -> Vec<Vec<u8>> {
    asm_texts()
        .iter()
        .filter_map(|t| dma_abi::inst::asm(&String::from_utf8_lossy(t)).ok())
        .collect()
}

/// Trace files of a host run, read relative to `traces/`; writes are
/// dropped.
struct TraceDir(PathBuf);

impl soc::exec::TraceFiles for TraceDir {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.0.join(path))
    }
    fn write(&mut self, _path: &str, _data: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
}

/// A writer whose bytes can be read back after the run.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// ioctl recordings (JSON lines) of the host traces, made once per process.
pub fn recordings() -> Vec<Vec<u8>> {
    static RECORDINGS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    RECORDINGS
        .get_or_init(|| {
            let mut out = Vec::new();
            for (name, text) in traces() {
                let file = Path::new(name)
                    .file_name()
                    .map(|f| f.to_string_lossy().to_string())
                    .unwrap_or_default();
                if !file.starts_with("host-") {
                    continue;
                }
                let Ok(dev) = soc::Device::trn2() else {
                    continue;
                };
                let buf = Shared::default();
                let opts = host_exec::SessionOptions {
                    record: Some(Box::new(buf.clone())),
                    ..host_exec::SessionOptions::default()
                };
                let mut files = TraceDir(root().join("traces"));
                let source = String::from_utf8_lossy(text);
                let ran = host_exec::run_source_with(dev, &source, name, &mut files, opts).is_ok();
                if ran
                    && let Ok(bytes) = buf.0.lock()
                    && !bytes.is_empty()
                {
                    out.push(bytes.clone());
                }
            }
            out
        })
        .clone()
}
