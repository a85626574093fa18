//! Binary instruction streams: `inst_stream CORE file=PATH` and
//! `neuron-sim run FILE.bin --core tpbN` (docs/trace-format.md §4.6).
//!
//! A stream is a bare sequence of 64-byte DMA instruction words, as
//! `neuron-sim asm` writes them (docs/instruction-words.md). The whole
//! stream is checked before any word is queued: a length that is not a
//! whole number of words, or a word that does not decode, is bad input
//! naming the byte offset and the field, and nothing of the stream runs.

use dma_abi::inst::{InstKind, InstWord, StreamError, WORD_BYTES};
use trace_format::{AddrExpr, FileRef, RunMode, Span, Statement, StatementKind, Trace};

use super::{FileRange, Outcome, StepError, TraceFiles};
use crate::Device;

/// `MEMCOPY_CARVEOUT_CFG` a bare stream runs with: 256 descriptors per
/// ring (the cap on one engine's share of one word) at offset 0
/// (docs/trace-format.md §4.6; the registers: docs/firmware.md).
pub const DEFAULT_CARVEOUT_CFG: u32 = 0x0100_0000;

/// `MEMCOPY_DMA_CFG` a bare stream runs with: all 16 engines of the core,
/// queue 0 (docs/trace-format.md §4.6).
pub const DEFAULT_DMA_CFG: u32 = 0x0001_ffff;

/// The most words one stream may hold (64 MiB of stream): every word is
/// queued on the core's firmware before the stream runs, so the bound
/// keeps a mistaken file from filling host memory.
pub const MAX_STREAM_WORDS: u64 = 1 << 20;

/// Words read from the file at a time.
const READ_WORDS: usize = 1024;

/// The statements `neuron-sim run FILE.bin --core tpbN` runs: the default
/// DGE configuration of the core, the stream, and `run` until the device is
/// idle. Every statement is at line 0 (the file has no lines); the output
/// names the file alone.
pub fn stream_trace(core: u8, file_name: &str) -> Trace {
    let reg = |name: &str| -> Option<AddrExpr> {
        trace_format::parse_addr(&format!("tpb{core}.q7_local_reg.{name}"), file_name).ok()
    };
    let at = |kind| Statement {
        kind,
        span: Span::default(),
    };
    let mut statements = Vec::new();
    for (name, value) in [
        ("memcopy_carveout_cfg", DEFAULT_CARVEOUT_CFG),
        ("memcopy_dma_cfg", DEFAULT_DMA_CFG),
    ] {
        if let Some(addr) = reg(name) {
            statements.push(at(StatementKind::Write32 { addr, value }));
        }
    }
    statements.push(at(StatementKind::InstStream {
        core,
        path: FileRef {
            path: file_name.to_string(),
            span: Span::default(),
        },
    }));
    statements.push(at(StatementKind::Run {
        mode: RunMode::Idle,
    }));
    Trace { statements }
}

/// Reads and checks a whole stream: every word, or the first reason the
/// stream is bad (its byte offset and field).
pub fn read_stream(file: &dyn FileRange) -> Result<Vec<InstWord>, String> {
    let len_bytes = file.len_bytes();
    let words = len_bytes / WORD_BYTES as u64;
    if !len_bytes.is_multiple_of(WORD_BYTES as u64) {
        let len = usize::try_from(len_bytes).unwrap_or(usize::MAX);
        return Err(StreamError::Length { len }.to_string());
    }
    if len_bytes == 0 {
        return Err("the stream is empty: it holds no 64-byte word".into());
    }
    if words > MAX_STREAM_WORDS {
        return Err(format!(
            "the stream holds {words} words; one stream may hold at most {MAX_STREAM_WORDS} \
             (split it into several inst_stream statements)"
        ));
    }
    let mut out = Vec::with_capacity(usize::try_from(words).unwrap_or(0));
    let mut buf = vec![0u8; READ_WORDS * WORD_BYTES];
    let mut offset = 0u64;
    while offset < len_bytes {
        let n = usize::try_from((len_bytes - offset).min(buf.len() as u64)).unwrap_or(0);
        file.read_at(offset, &mut buf[..n])
            .map_err(|e| format!("cannot read at offset {offset:#x}: {e}"))?;
        for (i, chunk) in buf[..n].chunks_exact(WORD_BYTES).enumerate() {
            let mut bytes = [0u8; WORD_BYTES];
            bytes.copy_from_slice(chunk);
            let word = InstWord::decode(&bytes).map_err(|error| {
                StreamError::Word {
                    offset: usize::try_from(offset).unwrap_or(usize::MAX) + i * WORD_BYTES,
                    error,
                }
                .to_string()
            })?;
            out.push(word);
        }
        offset += n as u64;
    }
    Ok(out)
}

/// `inst_stream CORE file=PATH`: checks the whole stream, then queues its
/// words on the core's firmware in file order.
pub(super) fn queue_stream(
    device: &mut Device,
    core: u8,
    path: &FileRef,
    line: u32,
    files: &mut dyn TraceFiles,
) -> Result<Outcome, StepError> {
    let here = Some(path.span);
    let file = files.open(&path.path).map_err(|e| {
        (
            here,
            format!("inst_stream: cannot read `{}`: {e}", path.path),
        )
    })?;
    let words =
        read_stream(&*file).map_err(|m| (here, format!("inst_stream `{}`: {m}", path.path)))?;
    let mut first = None;
    let mut last = 0;
    let mut kinds: Vec<(InstKind, usize)> = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let source = match line {
            0 => format!("{} word {i} at {:#x}", path.path, i * WORD_BYTES),
            n => format!("line {n}: {} word {i} at {:#x}", path.path, i * WORD_BYTES),
        };
        let tag = device
            .submit_inst(core, *word, source)
            .map_err(|e| (None, e.0))?;
        first.get_or_insert(tag.seq);
        last = tag.seq;
        match kinds.iter_mut().find(|(k, _)| *k == word.kind()) {
            Some((_, n)) => *n += 1,
            None => kinds.push((word.kind(), 1)),
        }
    }
    let counts: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    let seqs = match first {
        Some(f) if f == last => format!("tpb{core}#{f}"),
        Some(f) => format!("tpb{core}#{f}..#{last}"),
        None => format!("tpb{core}"),
    };
    Ok(Outcome::Done(format!(
        "inst_stream {seqs}: {} word{} of `{}` queued on the Q7 firmware ({})",
        words.len(),
        if words.len() == 1 { "" } else { "s" },
        path.path,
        counts.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::InMemoryFile;

    fn word_bytes(text: &str) -> Vec<u8> {
        dma_abi::inst::asm(text).unwrap_or_default()
    }

    const COPY: &str = "DIRECT2D src_start_addr=imm:0x1000 src_step_elem=[1,64] \
        src_num_elem=[64,1] src_elem_size=1 dst_start_addr=imm:0x2000 \
        dst_step_elem=[1,64] dst_num_elem=[64,1] dst_elem_size=1";

    #[test]
    fn a_stream_decodes_word_by_word_across_read_chunks() {
        let one = word_bytes(COPY);
        assert_eq!(one.len(), WORD_BYTES);
        let n = READ_WORDS + 3;
        let file = InMemoryFile(one.repeat(n));
        let words = read_stream(&file).expect("a valid stream");
        assert_eq!(words.len(), n);
        assert!(words.iter().all(|w| w.kind() == InstKind::Direct2d));
    }

    #[test]
    fn a_partial_word_names_the_trailing_bytes_and_their_offset() {
        let mut bytes = word_bytes(COPY).repeat(2);
        bytes.extend_from_slice(&[0; 5]);
        let e = read_stream(&InMemoryFile(bytes)).expect_err("133 bytes");
        assert!(e.contains("133 bytes"), "{e}");
        assert!(e.contains("5 trailing bytes at offset 0x80"), "{e}");
    }

    #[test]
    fn a_bad_word_names_its_offset_and_field_and_nothing_is_returned() {
        let mut bytes = word_bytes(COPY).repeat(READ_WORDS + 2);
        let bad = (READ_WORDS + 1) * WORD_BYTES;
        bytes[bad] = 0x42; // not a DMA opcode
        let e = read_stream(&InMemoryFile(bytes)).expect_err("a bad opcode");
        assert!(
            e.starts_with(&format!(
                "word {} at offset {bad:#x}: header.opcode = 0x42",
                READ_WORDS + 1
            )),
            "{e}"
        );
    }

    #[test]
    fn an_empty_stream_is_refused() {
        let e = read_stream(&InMemoryFile(Vec::new())).expect_err("empty");
        assert!(e.contains("empty"), "{e}");
    }

    #[test]
    fn the_bare_stream_trace_configures_the_dge_then_runs_the_stream() {
        let t = stream_trace(3, "k.bin");
        let text: Vec<String> = t.statements.iter().map(|s| s.kind.to_string()).collect();
        assert_eq!(
            text,
            [
                "write32 tpb3.q7_local_reg.memcopy_carveout_cfg 0x01000000",
                "write32 tpb3.q7_local_reg.memcopy_dma_cfg 0x0001ffff",
                "inst_stream tpb3 file=k.bin",
                "run",
            ]
        );
    }
}
