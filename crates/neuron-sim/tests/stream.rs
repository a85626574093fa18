//! Binary instruction streams (docs/trace-format.md §4.6): `run FILE.bin
//! --core tpbN` on a stream `asm` wrote, `inst_stream` in a trace, and the
//! bad-stream errors (byte offset and field, nothing run).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn tmp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuron-sim-stream-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Assembles a checked-in stream text into `dir` and returns the path.
fn assemble(dir: &Path, stem: &str) -> PathBuf {
    let out = dir.join(format!("{stem}.bin"));
    let src = repo(&format!("traces/streams/{stem}.txt"));
    let o = run(&["asm", s(&src), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    out
}

#[test]
fn the_checked_in_streams_are_what_asm_writes() {
    let dir = tmp_dir("asm");
    for stem in ["tile-roundtrip-tpb0", "tile-load-tpb1"] {
        let built = std::fs::read(assemble(&dir, stem)).unwrap();
        let kept = std::fs::read(repo(&format!("traces/streams/{stem}.bin"))).unwrap();
        assert_eq!(
            built, kept,
            "traces/streams/{stem}.bin is stale: re-run asm"
        );
    }
}

/// A register of a CSR snapshot (JSON): `blocks[region].registers[name]`.
fn snapshot_register(snap: &serde_json::Value, region: &str, register: &str) -> Option<String> {
    snap["blocks"]
        .as_array()?
        .iter()
        .find(|b| b["region"] == region)?["registers"][register]
        .as_str()
        .map(str::to_string)
}

#[test]
fn a_stream_asm_wrote_runs_on_a_core_with_the_default_dge_configuration() {
    let dir = tmp_dir("run");
    let bin = assemble(&dir, "tile-roundtrip-tpb0");
    let snap = dir.join("snap.json");
    let o = run(&["run", s(&bin), "--core", "tpb0", "--csr-snapshot", s(&snap)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    // The default DGE configuration, then the stream, then the run to idle;
    // the lines name the file alone (it has no lines).
    assert!(out.contains(
        "tile-roundtrip-tpb0.bin: write32 tpb0.q7_local_reg.memcopy_carveout_cfg (0x28030614e0) = 0x01000000"
    ), "{out}");
    assert!(
        out.contains("memcopy_dma_cfg (0x2803061500) = 0x0001ffff"),
        "{out}"
    );
    assert!(out.contains(
        "tile-roundtrip-tpb0.bin: inst_stream tpb0#0..#1: 2 words of `tile-roundtrip-tpb0.bin` queued on the Q7 firmware (DIRECT2D ×2)"
    ), "{out}");
    // Both words ran on all 16 engines: the load and the store-back.
    assert!(
        out.contains("tpb0 firmware DIRECT2D: 2 issued, 0 rejected, 576 descriptors, 65536 bytes"),
        "{out}"
    );
    assert!(!out.contains("eng0.q1"), "queue 0 only: {out}");
    // Every engine wrote its semaphore: 16 on semaphore 1 (the load) and on
    // semaphore 2 (the store that waited for it).
    let snap: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&snap).unwrap()).unwrap();
    let sem = |name| snapshot_register(&snap, "tpb0.evt_sem", name);
    assert_eq!(sem("SEM_READ[1]").as_deref(), Some("0x10"), "{snap}");
    assert_eq!(sem("SEM_READ[2]").as_deref(), Some("0x10"), "{snap}");
    let dge = |name| snapshot_register(&snap, "tpb0.q7_local_reg", name);
    assert_eq!(dge("MEMCOPY_CARVEOUT_CFG").as_deref(), Some("0x1000000"));
    assert_eq!(dge("MEMCOPY_DMA_CFG").as_deref(), Some("0x1ffff"));
}

#[test]
fn a_stream_runs_through_json_with_its_descriptors_counted() {
    let dir = tmp_dir("json");
    let bin = assemble(&dir, "tile-load-tpb1");
    let o = run(&["run", s(&bin), "--core", "tpb1", "--json", "--timing-only"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["statements"], 4);
    // 128 partitions of 256 B on 16 engines: 8 partitions each, one pair
    // per partition plus the semaphore pair.
    assert_eq!(v["descriptors"], 16 * 2 * 9);
    assert_eq!(v["bytes"], 128 * 256 + 16 * 4);
    let fw = &v["firmware"]["tpb1"]["kinds"]["DIRECT2D"];
    assert_eq!(fw["issued"], 1);
    assert_eq!(fw["rejected"], 0);
    assert_eq!(v["steps"][2]["directive"], "inst_stream");
    assert_eq!(v["steps"][2]["line"], 0);
}

#[test]
fn memory_and_semaphores_of_streams_in_a_trace() {
    // The golden trace (its snapshot is in tests/snapshots) checks the
    // bytes; here: it passes as a process, from another directory.
    let o = run(&["run", s(&repo("traces/fw-inst-stream.trace")), "-q"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("13 expectations passed, 0 failed, 0 errors"),
        "{out}"
    );
}

#[test]
fn bad_streams_name_the_byte_offset_and_the_field_and_nothing_runs() {
    let dir = tmp_dir("bad");
    let good = std::fs::read(assemble(&dir, "tile-roundtrip-tpb0")).unwrap();

    // Not a whole number of words.
    let short = dir.join("short.bin");
    std::fs::write(&short, &good[..100]).unwrap();
    let o = run(&["run", s(&short), "--core", "tpb0"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("short.bin: a stream of 100 bytes is not a whole number of 64-byte words: 36 trailing bytes at offset 0x40; nothing was run"), "{err}");
    assert!(o.stdout.is_empty(), "nothing ran: {}", text(&o.stdout));

    // Word 1 with a field out of range.
    let mut bad = good.clone();
    bad[65] = 5; // header.inst_word_len
    let field = dir.join("field.bin");
    std::fs::write(&field, &bad).unwrap();
    let o = run(&["run", s(&field), "--core", "tpb0"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("field.bin: word 1 at offset 0x40: DIRECT2D.header.inst_word_len = 5"),
        "{err}"
    );
    assert!(o.stdout.is_empty());

    // The same stream inside a trace: the statement is an error (exit 2)
    // naming the trace line, and no word of the stream is queued.
    let trace = dir.join("t.trace");
    std::fs::write(
        &trace,
        "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x01000000\n\
         write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n\
         inst_stream tpb0 file=field.bin\n\
         run\n\
         read32 tpb0.sem.read[1] == 0\n",
    )
    .unwrap();
    let o = run(&["run", s(&trace)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("t.trace:3: ERROR inst_stream `field.bin`: word 1 at offset 0x40: DIRECT2D.header.inst_word_len = 5"),
        "{out}"
    );
    assert!(
        out.contains("t.trace:5: read32 tpb0.sem.read[1] (0x2802701004) == 0x00000000"),
        "word 0 did not run either: {out}"
    );

    // A missing stream file.
    std::fs::write(&trace, "inst_stream tpb0 file=nothing.bin\n").unwrap();
    let o = run(&["run", s(&trace)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("t.trace:1: ERROR inst_stream: cannot read `nothing.bin`"),
        "{out}"
    );
}

#[test]
fn a_bin_file_needs_a_core_and_the_core_must_exist() {
    let dir = tmp_dir("core");
    let bin = assemble(&dir, "tile-load-tpb1");
    let o = run(&["run", s(&bin)]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("a .bin file is a binary instruction stream: name the core whose firmware runs it (--core tpb0 … tpb7)"), "{err}");
    let o = run(&["run", s(&bin), "--core", "tpb8"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`tpb8` is not a core (expected tpb0 … tpb7)"),
        "{err}"
    );
}
