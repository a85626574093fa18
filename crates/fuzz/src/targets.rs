//! The targets of the library crates (docs/fuzzing.md §1). The sweep
//! templates and merge have theirs in the `sweep` crate's tests
//! (`crates/sweep/src/fuzz.rs`, which depends on this one) and the
//! debugger's command parser in the binary's (`crates/neuron-sim/tests/fuzz_step.rs`).

use std::cell::RefCell;

use dma_abi::inst::{self, InstWord, TextStyle};

use crate::corpus;
use crate::harness::{Outcome, Target};
use crate::mutate::Rng;

/// Every library target, in `cargo xtask fuzz` order.
pub fn all() -> Vec<Target> {
    vec![
        Target {
            name: "trace",
            about: "trace_format::parse, the canonical printer as a fixed point, soc::exec::link",
            corpus: corpus::trace_texts,
            generate: Some(gen_trace),
            exec: exec_trace,
            max_len: 64 << 10,
        },
        Target {
            name: "desc",
            about: "16-byte descriptor decode and render, parse_hex_descriptor",
            corpus: desc_seeds,
            generate: Some(gen_desc),
            exec: exec_desc,
            max_len: 256,
        },
        Target {
            name: "word",
            about: "64-byte instruction words: decode, encode round trip, JSON, text, parse_hex_word",
            corpus: word_seeds,
            generate: Some(gen_word),
            exec: exec_word,
            max_len: 256,
        },
        Target {
            name: "asm",
            about: "asm text to words and back (asm(disasm(w)) == w)",
            corpus: corpus::asm_texts,
            generate: None,
            exec: exec_asm,
            max_len: 16 << 10,
        },
        Target {
            name: "disasm",
            about: "binary word streams to text and back",
            corpus: corpus::word_streams,
            generate: Some(gen_stream),
            exec: exec_disasm,
            max_len: 4 << 10,
        },
        Target {
            name: "soc-map",
            about: "SocMap::from_json, the region table and decode",
            corpus: corpus::soc_maps,
            generate: None,
            exec: exec_soc_map,
            max_len: 256 << 10,
        },
        Target {
            name: "csr-map",
            about: "CsrMap::from_json, listing, a register file, lookups",
            corpus: corpus::csr_maps,
            generate: None,
            exec: exec_csr_map,
            max_len: 128 << 10,
        },
        Target {
            name: "timing",
            about: "TimingConfig::from_json",
            corpus: corpus::timing_files,
            generate: None,
            exec: exec_timing,
            max_len: 32 << 10,
        },
        Target {
            name: "ioctl-replay",
            about: "Recording::from_jsonl and ioctl_bus::replay on a fresh driver",
            corpus: corpus::recordings,
            generate: Some(gen_replay),
            exec: exec_replay,
            max_len: 256 << 10,
        },
    ]
}

/// The target called `name`.
pub fn by_name(name: &str) -> Option<Target> {
    all().into_iter().find(|t| t.name == name)
}

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

// ---------------------------------------------------------------- traces

thread_local! {
    /// One device per worker thread: linking only reads it.
    static DEVICE: RefCell<Option<soc::Device>> = const { RefCell::new(None) };
}

fn with_device<T>(f: impl FnOnce(&soc::Device) -> T) -> Result<T, String> {
    DEVICE.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(soc::Device::trn2().map_err(|e| e.to_string())?);
        }
        d.as_ref().map(f).ok_or_else(|| "no device".to_string())
    })
}

fn exec_trace(input: &[u8]) -> Outcome {
    let source = text(input);
    let Ok(trace) = trace_format::parse(&source, "fuzz.trace") else {
        return Ok(false);
    };
    // The canonical form parses back to itself.
    let printed = trace.to_string();
    match trace_format::parse(&printed, "printed.trace") {
        Ok(again) if again.to_string() == printed => {}
        Ok(again) => {
            return Err(format!(
                "printing is not a fixed point:\n{printed}---\n{again}"
            ));
        }
        Err(e) => {
            return Err(format!(
                "the canonical form does not parse: {}\n{printed}",
                e.first().map(ToString::to_string).unwrap_or_default()
            ));
        }
    }
    with_device(|dev| soc::exec::link(dev, &trace, "fuzz.trace").is_ok())
}

/// A trace of lines drawn from the golden traces, with numbers changed.
fn gen_trace(rng: &mut Rng) -> Vec<u8> {
    let traces = corpus::traces();
    let mut out = String::new();
    for _ in 0..1 + rng.below(12) {
        let Some((_, t)) = rng.pick(traces) else {
            break;
        };
        let t = String::from_utf8_lossy(t);
        let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
        if let Some(l) = rng.pick(&lines) {
            out.push_str(l);
            out.push('\n');
        }
    }
    out.into_bytes()
}

// ------------------------------------------------------------ descriptors

fn desc_seeds() -> Vec<Vec<u8>> {
    let mut out = vec![vec![0u8; 16], vec![0xFF; 16]];
    if let Ok(d) = dma_abi::tx(4096, 0x20_0000_0000, dma_abi::Flags::default()) {
        out.push(d.to_bytes().to_vec());
    }
    if let Ok(d) = dma_abi::rx(256, 0x4000_0000_1000) {
        out.push(d.to_bytes().to_vec());
    }
    out
}

fn gen_desc(rng: &mut Rng) -> Vec<u8> {
    (0..16).map(|_| rng.next_u64() as u8).collect()
}

fn exec_desc(input: &[u8]) -> Outcome {
    if let Ok(bytes) = <[u8; 16]>::try_from(input.get(..16).unwrap_or(input)) {
        let d = dma_abi::Descriptor::from_bytes(&bytes);
        if d.to_bytes() != bytes {
            return Err("Descriptor::from_bytes / to_bytes differ".into());
        }
        let decoded = d.decode();
        let _ = dma_abi::render_text(&decoded);
        let hex = d.to_hex();
        match dma_abi::parse_hex_descriptor(&hex) {
            Ok(back) if back.to_bytes() == bytes => {}
            _ => return Err(format!("to_hex `{hex}` does not parse back")),
        }
    }
    Ok(dma_abi::parse_hex_descriptor(&text(input)).is_ok() || input.len() == 16)
}

// ------------------------------------------------------ instruction words

fn word_seeds() -> Vec<Vec<u8>> {
    corpus::word_streams()
        .into_iter()
        .flat_map(|s| s.chunks(64).map(<[u8]>::to_vec).collect::<Vec<_>>())
        .take(64)
        .collect()
}

/// A word with a valid header most of the time, the rest random.
fn gen_word(rng: &mut Rng) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..64).map(|_| rng.next_u64() as u8).collect();
    let seeds = word_seeds();
    if !rng.one_in(4)
        && let Some(s) = rng.pick(&seeds)
    {
        // Keep a real word's header and change a few fields' bytes.
        let mut w = s.clone();
        for _ in 0..1 + rng.below(6) {
            let i = rng.below(64);
            w[i] = bytes[i];
        }
        bytes = w;
    }
    bytes
}

fn exec_word(input: &[u8]) -> Outcome {
    let mut accepted = false;
    if let Ok(bytes) = <[u8; 64]>::try_from(input.get(..64).unwrap_or(input)) {
        if let Ok(w) = InstWord::decode(&bytes) {
            accepted = true;
            match w.encode() {
                Ok(again) if again == bytes => {}
                Ok(again) => {
                    return Err(format!(
                        "decode/encode changes the word:\n{}\n{}",
                        inst::word_hex(&bytes),
                        inst::word_hex(&again)
                    ));
                }
                Err(e) => return Err(format!("a decoded word does not encode: {e}")),
            }
            let _ = w.decode_json();
            let _ = inst::render_text(&w, &bytes);
            let line = inst::text::print_word(&w, TextStyle::Full);
            match inst::parse_line(&line) {
                Ok(Some(back)) if back.encode().ok() == Some(bytes) => {}
                other => {
                    return Err(format!(
                        "the text `{line}` does not assemble back to the word: {other:?}"
                    ));
                }
            }
        }
        let hex = inst::word_hex(&bytes);
        if inst::parse_hex_word(&hex).ok() != Some(bytes) {
            return Err(format!("word_hex `{hex}` does not parse back"));
        }
    }
    let _ = inst::parse_hex_word(&text(input));
    Ok(accepted)
}

fn exec_asm(input: &[u8]) -> Outcome {
    let Ok(bytes) = inst::asm(&text(input)) else {
        return Ok(false);
    };
    let listing = inst::text::disasm_with(&bytes, TextStyle::Compact)
        .map_err(|e| format!("assembled words do not disassemble: {e}"))?;
    match inst::asm(&listing) {
        Ok(again) if again == bytes => Ok(true),
        Ok(_) => Err(format!("asm(disasm(w)) != w:\n{listing}")),
        Err(e) => Err(format!(
            "the disassembly does not assemble: {}\n{listing}",
            e.first().map(ToString::to_string).unwrap_or_default()
        )),
    }
}

fn gen_stream(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..1 + rng.below(4) {
        out.extend(gen_word(rng));
    }
    out
}

fn exec_disasm(input: &[u8]) -> Outcome {
    for style in [TextStyle::Compact, TextStyle::Full] {
        let Ok(listing) = inst::text::disasm_with(input, style) else {
            return Ok(false);
        };
        match inst::asm(&listing) {
            Ok(again) if again == input => {}
            Ok(_) => {
                return Err(format!(
                    "asm(disasm(bytes)) != bytes ({style:?}):\n{listing}"
                ));
            }
            Err(e) => {
                return Err(format!(
                    "the disassembly ({style:?}) does not assemble: {}\n{listing}",
                    e.first().map(ToString::to_string).unwrap_or_default()
                ));
            }
        }
    }
    Ok(true)
}

// ------------------------------------------------------------------- maps

fn exec_soc_map(input: &[u8]) -> Outcome {
    let Ok(map) = soc_map::SocMap::from_json(&text(input), "fuzz.json") else {
        return Ok(false);
    };
    let _ = soc_map::table::render_table(&soc_map::table::region_table(&map));
    for &id in map.roots.iter().take(64) {
        let r = map.region(id);
        for addr in [
            r.base,
            r.end().saturating_sub(1),
            r.window_end(),
            r.base / 2,
        ] {
            let d = map.decode(addr);
            if let Some(found) = d.region
                && d.hole.is_none()
                && !map.region(found).contains(addr)
            {
                return Err(format!(
                    "decode({addr:#x}) names a region that does not hold it"
                ));
            }
        }
    }
    Ok(true)
}

fn exec_csr_map(input: &[u8]) -> Outcome {
    let Ok(map) = csr::CsrMap::from_json(&text(input), "fuzz.json") else {
        return Ok(false);
    };
    let listing = csr::listing::list(&map);
    let _ = csr::listing::render_text(&map, &listing);
    let mut rf = csr::RegFile::new(&map);
    for spec in map.registers().iter().take(256) {
        for offset in spec.element_offsets().into_iter().take(4) {
            let _ = rf.write(offset, 0xFFFF_FFFF);
            let _ = rf.read(offset);
            if map.register_at(offset).is_none() {
                return Err(format!(
                    "register `{}` has no register at {offset:#x}",
                    spec.name()
                ));
            }
        }
        let _ = map.try_lookup(spec.name());
        let _ = map.try_lookup(&format!("{}[4294967295]", spec.name()));
    }
    Ok(true)
}

fn exec_timing(input: &[u8]) -> Outcome {
    Ok(sim_core::TimingConfig::from_json(&text(input)).is_ok())
}

// ------------------------------------------------------------------ ioctls

fn exec_replay(input: &[u8]) -> Outcome {
    let Ok(rec) = ioctl_bus::Recording::from_jsonl(&text(input)) else {
        return Ok(false);
    };
    let dev = soc::Device::trn2().map_err(|e| e.to_string())?;
    let mut driver = kdriver::KernelDriver::new(dev, kdriver::KdriverConfig::default())?;
    Ok(ioctl_bus::replay(&rec, &mut driver).is_ok())
}

/// A recording with one 4- or 8-byte field of one ioctl argument replaced
/// by a boundary value (sizes, handles, offsets, counts).
fn gen_replay(rng: &mut Rng) -> Vec<u8> {
    let recordings = corpus::recordings();
    let Some(rec) = rng.pick(&recordings) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(rec);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.below(2) {
        let i = rng.below(lines.len());
        let Some(line) = lines.get_mut(i) else {
            continue;
        };
        let Some(start) = line.find("\"arg_in\":\"").map(|p| p + 10) else {
            continue;
        };
        let hex_len = line[start..].find('"').unwrap_or(0);
        let width = if rng.one_in(2) { 8 } else { 4 };
        if hex_len < width * 2 {
            continue;
        }
        let at = start + 2 * width * rng.below(hex_len / (2 * width));
        let v = rng.interesting_u64();
        let field: String = v.to_le_bytes()[..width]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        line.replace_range(at..at + 2 * width, &field);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}
