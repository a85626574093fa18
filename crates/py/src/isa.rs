//! The 64-byte DMA instruction words (`dma_abi::inst`,
//! docs/instruction-words.md) and the 16-byte descriptors
//! (`dma_abi::decode`) for `neuron_sim.isa` and `neuron_sim.desc`.

use dma_abi::inst::{InstKind, InstWord, WORD_BYTES};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::bad;

/// One decoded field: dotted seed path, text-form value, whether default.
type Leaf = (String, String, bool);

fn kind_of(name: &str) -> PyResult<InstKind> {
    InstKind::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = InstKind::ALL.iter().map(|k| k.name()).collect();
        bad(format!(
            "unknown instruction word `{name}` (expected one of {})",
            names.join(", ")
        ))
    })
}

fn word_of(bytes: &[u8]) -> PyResult<InstWord> {
    let b: &[u8; WORD_BYTES] = bytes.try_into().map_err(|_| {
        bad(format!(
            "an instruction word is {WORD_BYTES} bytes, not {}",
            bytes.len()
        ))
    })?;
    InstWord::decode(b).map_err(|e| bad(e.to_string()))
}

/// The leaf fields of `kind` with their defaults: (dotted seed path,
/// default in text form).
#[pyfunction]
pub(crate) fn word_fields(kind: &str) -> PyResult<Vec<(String, String)>> {
    let w = InstWord::default_of(kind_of(kind)?);
    Ok(w.leaves().into_iter().map(|l| (l.path, l.text)).collect())
}

/// Encodes a word of `kind` from (path, text-form value) pairs; fields left
/// out keep the defaults `asm` gives them.
#[pyfunction]
pub(crate) fn encode_word<'py>(
    py: Python<'py>,
    kind: &str,
    fields: Vec<(String, String)>,
) -> PyResult<Bound<'py, PyBytes>> {
    let k = kind_of(kind)?;
    let mut line = k.name().to_string();
    for (path, value) in &fields {
        if value.chars().any(char::is_whitespace) {
            return Err(bad(format!(
                "{}.{path}: the value `{value}` holds white space",
                k.name()
            )));
        }
        line.push(' ');
        line.push_str(path);
        line.push('=');
        line.push_str(value);
    }
    let word = dma_abi::inst::parse_line(&line)
        .map_err(|e| bad(e.message))?
        .ok_or_else(|| bad("empty word"))?;
    let bytes = word.encode().map_err(|e| bad(e.to_string()))?;
    Ok(PyBytes::new(py, &bytes))
}

/// Decodes 64 bytes: (kind name, [(path, text-form value, is_default)]).
#[pyfunction]
pub(crate) fn decode_word(bytes: &[u8]) -> PyResult<(String, Vec<Leaf>)> {
    let w = word_of(bytes)?;
    let leaves = w
        .leaves()
        .into_iter()
        .map(|l| (l.path, l.text, l.is_default))
        .collect();
    Ok((w.kind().name().to_string(), leaves))
}

/// Assembles the text form (one word a line) into bytes.
#[pyfunction]
pub(crate) fn asm<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = dma_abi::inst::asm(text).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        bad(lines.join("\n"))
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// Disassembles a stream of 64-byte words into the text form.
#[pyfunction]
pub(crate) fn disasm(bytes: &[u8]) -> PyResult<String> {
    dma_abi::inst::disasm(bytes).map_err(|e| bad(e.to_string()))
}

/// Decodes a 16-byte descriptor as `neuron-sim decode --desc --json` does
/// (JSON text).
#[pyfunction]
pub(crate) fn decode_desc_json(bytes: &[u8]) -> PyResult<String> {
    if bytes.len() != dma_abi::DESCRIPTOR_BYTES {
        return Err(bad(format!(
            "a descriptor is {} bytes, not {}",
            dma_abi::DESCRIPTOR_BYTES,
            bytes.len()
        )));
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let desc = dma_abi::parse_hex_descriptor(&hex).map_err(|e| bad(e.to_string()))?;
    serde_json::to_string(&desc.decode()).map_err(|e| bad(e.to_string()))
}

/// Encodes a 16-byte descriptor with `dma_abi::build` (docs/descriptors.md):
/// `tx` an M2S descriptor reading `len_bytes` at `addr` (word 1 the
/// default copy control unless given), `rx` an S2M descriptor writing them.
#[pyfunction]
#[pyo3(signature = (direction, len_bytes, addr, first, last, int_en, dmb, sow, concat, ring_id, word1=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_desc<'py>(
    py: Python<'py>,
    direction: &str,
    len_bytes: u32,
    addr: u64,
    first: bool,
    last: bool,
    int_en: bool,
    dmb: bool,
    sow: bool,
    concat: bool,
    ring_id: u8,
    word1: Option<u32>,
) -> PyResult<Bound<'py, PyBytes>> {
    if ring_id > 3 {
        return Err(bad(format!("ring_id {ring_id} is out of range (0..=3)")));
    }
    let flags = dma_abi::Flags {
        first,
        last,
        int_en,
        dmb,
        sow,
        concat,
        meta: false,
        ring_id,
    };
    let desc = match direction {
        "tx" => dma_abi::tx(len_bytes, addr, flags),
        "rx" => dma_abi::rx(len_bytes, addr).map(|d| d.with_flags(flags)),
        other => return Err(bad(format!("direction `{other}` is not tx or rx"))),
    }
    .map_err(|e| bad(format!("len {len_bytes}: {e}")))?;
    let desc = match word1 {
        Some(w) => desc.with_word1(dma_abi::CmeWord::from_raw(w)),
        None => desc,
    };
    Ok(PyBytes::new(py, &desc.to_bytes()))
}
