//! `neuron-sim decode --word`, `disasm` and `asm`: the 64-byte DMA
//! instruction words on the command line; bad input exits 2.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn tmp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuron-sim-asm-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// DIRECT2D: wait sem 3 >= 16, 128 × 4096 bf16 HBM → SBUF, priority 2.
const DIRECT2D_LINE: &str = "DIRECT2D events.wait_mode=WAIT_FOR_SEM_GE_IMM events.wait_idx=3 \
    events.semaphore_value=16 dma_configs.priority_class=2 semaphore=5 sem_increment=1 \
    src_start_addr=imm:0x4000000000 src_step_elem=[1,4096] src_num_elem=[4096,128] \
    src_elem_size=2 dst_start_addr=imm:0x2000000000 dst_step_elem=[1,131072] \
    dst_num_elem=[4096,128] dst_elem_size=2 in_dtype=BFLOAT16 out_dtype=BFLOAT16";

fn word_hex(line: &str) -> String {
    let w = dma_abi::inst::parse_line(line).unwrap().unwrap();
    dma_abi::inst::word_hex(&w.encode().unwrap())
}

#[test]
fn decode_word_json_has_kind_opcode_and_fields() {
    let o = run(&["decode", "--word", &word_hex(DIRECT2D_LINE), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kind"], "DIRECT2D");
    assert_eq!(v["opcode"], "0xb8");
    assert_eq!(v["header"]["inst_word_len"], 4);
    assert_eq!(v["events"]["wait_mode"], "WAIT_FOR_SEM_GE_IMM");
    assert_eq!(v["events"]["semaphore_value"], 16);
    assert_eq!(v["dma_configs"]["priority_class"], 2);
    assert_eq!(v["semaphore"], 5);
    assert_eq!(v["src_start_addr"]["mode"], "IMM");
    assert_eq!(v["src_start_addr"]["addr"], "0x4000000000");
    assert_eq!(v["src_num_elem"], serde_json::json!([4096, 128]));
    assert_eq!(v["dst_step_elem"], serde_json::json!([1, 131072]));
    assert_eq!(v["src_bound_reg"]["bc_enabled"], false);
    assert_eq!(v["in_dtype"], "BFLOAT16");
    for key in [
        "sem_increment",
        "compute_op",
        "src_step_elem",
        "src_elem_size",
        "dst_bound_reg",
        "dst_start_addr",
        "dst_num_elem",
        "dst_elem_size",
        "out_dtype",
        "raw",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }

    let o = run(&[
        "decode",
        "--word",
        &word_hex("RDMA_DESC_GEN local_sem=1"),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kind"], "RDMA_DESC_GEN");
    assert_eq!(v["opcode"], "0xf0");
    assert_eq!(v["extended_opcode"], 8);
    assert_eq!(v["local_sem"], 1);
}

#[test]
fn decode_word_text_lists_every_field() {
    let o = run(&["decode", "--word", &word_hex(DIRECT2D_LINE)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("DIRECT2D  opcode 0xb8\n"), "{out}");
    assert!(out.contains("events.wait_mode"));
    assert!(out.contains("src_bound_reg.bc_disable_oob_error_notif"));
    assert!(out.contains(&format!("text {DIRECT2D_LINE}\n")), "{out}");
}

#[test]
fn decode_desc_and_word_are_exclusive_and_one_is_required() {
    let desc = "0010000d030008010000000020000000";
    assert_eq!(run(&["decode", "--desc", desc]).status.code(), Some(0));
    let o = run(&[
        "decode",
        "--desc",
        desc,
        "--word",
        &word_hex("RDMA_DESC_START"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    let o = run(&["decode"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--desc"), "{}", stderr(&o));
}

#[test]
fn decode_word_bad_input_exits_2() {
    let o = run(&["decode", "--word", "00ff"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--word: expected 128 hex digits (64 bytes in memory order), found 4"),
        "{}",
        stderr(&o)
    );
    let mut hex = word_hex(DIRECT2D_LINE);
    hex.replace_range(24..26, "05"); // byte 12: priority_class 5
    let o = run(&["decode", "--word", &hex]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "neuron-sim: --word: DIRECT2D.dma_configs.priority_class = 5 (valid 0..=4)\n"
    );
    let mut hex = word_hex(DIRECT2D_LINE);
    hex.replace_range(0..2, "12");
    let o = run(&["decode", "--word", &hex, "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("header.opcode = 0x12 (unknown opcode"));
}

#[test]
fn disasm_asm_round_trip_through_files() {
    let dir = tmp_dir("roundtrip");
    let text = format!(
        "# a kernel\n{DIRECT2D_LINE}\n\
         INDIRECT1D idx_num_active_channels=128 flags.indirect_mode=DST_INDIRECTION \
         dst_idx_start_addr=imm:sbuf:q0:0x100\n\
         RDMA_DESC_GEN local_sem=1 remote_sem=2 dma_engine_mask=0xffff free_dim_bytes=4096\n\
         RDMA_DESC_START events.wait_mode=WAIT_FOR_SEM_EQ_IMM events.semaphore_value=16\n"
    );
    let src = dir.join("k.txt");
    std::fs::write(&src, &text).unwrap();
    let bin = dir.join("k.bin");
    let o = run(&["asm", path(&src), "-o", path(&bin)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bytes = std::fs::read(&bin).unwrap();
    assert_eq!(bytes.len(), 4 * 64);
    assert_eq!(&bytes[..2], &[0xb8, 4]);

    // disasm to stdout, and to a file with -o.
    let o = run(&["disasm", path(&bin)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let listing = stdout(&o);
    assert_eq!(listing.lines().count(), 4);
    assert_eq!(listing.lines().next(), Some(DIRECT2D_LINE));
    let back = dir.join("back.txt");
    let o = run(&["disasm", path(&bin), "-o", path(&back)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&back).unwrap(), listing);

    // asm(disasm(x)) == x byte for byte, also through the --full listing.
    let bin2 = dir.join("back.bin");
    let o = run(&["asm", path(&back), "-o", path(&bin2)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&bin2).unwrap(), bytes);
    let o = run(&["disasm", "--full", path(&bin)]);
    assert!(stdout(&o).contains("header.inst_word_len=4"));
    let full = dir.join("full.txt");
    std::fs::write(&full, stdout(&o)).unwrap();
    let bin3 = dir.join("full.bin");
    assert_eq!(
        run(&["asm", path(&full), "-o", path(&bin3)]).status.code(),
        Some(0)
    );
    assert_eq!(std::fs::read(&bin3).unwrap(), bytes);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn asm_and_disasm_bad_input_exit_2() {
    let dir = tmp_dir("bad");
    let src = dir.join("bad.txt");
    std::fs::write(
        &src,
        "RDMA_DESC_START\nDIRECT2D dma_configs.priority_class=5\nNOPE\n",
    )
    .unwrap();
    let out = dir.join("bad.bin");
    let o = run(&["asm", path(&src), "-o", path(&out)]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}:2:10: DIRECT2D.dma_configs.priority_class = 5 (valid 0..=4)",
            src.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}:3:1: unknown instruction word `NOPE`",
            src.display()
        )),
        "{err}"
    );
    assert!(err.contains("2 error(s); nothing was written"), "{err}");
    assert!(!out.exists());

    // A stream that is not whole words, and a bad word at offset 0x40.
    let bin = dir.join("short.bin");
    std::fs::write(&bin, [0u8; 70]).unwrap();
    let o = run(&["disasm", path(&bin)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a stream of 70 bytes is not a whole number of 64-byte words: 6 trailing bytes at offset 0x40"),
        "{}",
        stderr(&o)
    );
    let good = dma_abi::inst::parse_line("RDMA_DESC_START")
        .unwrap()
        .unwrap()
        .encode()
        .unwrap();
    let mut stream = good.to_vec();
    let mut bad = good;
    bad[1] = 8;
    stream.extend_from_slice(&bad);
    std::fs::write(&bin, &stream).unwrap();
    let o = run(&["disasm", path(&bin)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "word 1 at offset 0x40: RDMA_DESC_START.header.inst_word_len = 8 (valid 4 (16-byte \
             records) or 0x10 (dwords))"
        ),
        "{}",
        stderr(&o)
    );
    let o = run(&["disasm", path(&dir.join("missing.bin"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read"));
    let o = run(&["asm", path(&src)]);
    assert_eq!(o.status.code(), Some(2), "-o is required");
    std::fs::remove_dir_all(&dir).ok();
}

/// A text file that starts with a UTF-8 byte-order mark assembles as
/// without it (as traces do, docs/trace-format.md §1); it used to be read
/// as part of the first word, with the mark inside the quotes of the
/// error. Found by a review.
#[test]
fn asm_skips_a_leading_byte_order_mark() {
    let dir = tmp_dir("bom");
    let plain = dir.join("plain.txt");
    let bom = dir.join("bom.txt");
    std::fs::write(&plain, "DIRECT2D semaphore=1\r\nDIRECT2D semaphore=2\n").unwrap();
    std::fs::write(
        &bom,
        "\u{feff}DIRECT2D semaphore=1\r\nDIRECT2D semaphore=2\n",
    )
    .unwrap();
    let (a, b) = (dir.join("plain.bin"), dir.join("bom.bin"));
    let o = run(&["asm", path(&plain), "-o", path(&a)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["asm", path(&bom), "-o", path(&b)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // Columns count from after the mark.
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "\u{feff}DIRECT2D nope=1\n").unwrap();
    let o = run(&["asm", path(&bad), "-o", path(&b)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.txt:1:10: DIRECT2D has no field `nope`"),
        "{}",
        stderr(&o)
    );
}

/// A probe's finding: `asm` of text with no word (comments, blank lines)
/// wrote an empty `.bin` and exited 0, and `disasm` of an empty file
/// printed nothing and exited 0, while `run FILE.bin` and `inst_stream`
/// refuse an empty stream: a pipeline found out only when it ran. Both are
/// bad input now, and `asm` writes nothing.
#[test]
fn an_empty_stream_is_bad_input_to_asm_and_disasm() {
    let dir = tmp_dir("empty");
    let src = dir.join("comments.txt");
    std::fs::write(&src, "# no words yet\n\n").unwrap();
    let out = dir.join("comments.bin");
    let o = run(&["asm", path(&src), "-o", path(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no instruction word"), "{}", stderr(&o));
    assert!(!out.exists());
    let empty = dir.join("empty.bin");
    std::fs::write(&empty, []).unwrap();
    let o = run(&["disasm", path(&empty)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("the stream is empty"), "{}", stderr(&o));
}
