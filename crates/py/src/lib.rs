//! `neuron_sim._native`: the extension module under the `neuron_sim`
//! Python package (docs/python.md). A thin binding of the library crates:
//! the device (`soc`, behind `host-exec`'s session), the
//! instruction words (`dma-abi`), the timeline (`timeline`) and traces
//! (`host-exec::run_source`). The Pythonic layer (views, dtypes,
//! `dma_copy`) is Python in `python/neuron_sim/`.

use pyo3::prelude::*;

mod device;
mod errors;
mod isa;
mod runtime;
mod signals;
mod trace;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("NeuronSimError", py.get_type::<errors::NeuronSimError>())?;
    m.add("BusError", py.get_type::<errors::BusError>())?;
    m.add("DeviceError", py.get_type::<errors::DeviceError>())?;
    m.add("TraceError", py.get_type::<errors::TraceError>())?;
    m.add("NrtError", py.get_type::<errors::NrtError>())?;
    m.add_class::<device::Device>()?;
    m.add_class::<runtime::Runtime>()?;
    m.add_function(wrap_pyfunction!(trace::run_trace_json, m)?)?;
    m.add_function(wrap_pyfunction!(trace::read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(isa::word_fields, m)?)?;
    m.add_function(wrap_pyfunction!(isa::encode_word, m)?)?;
    m.add_function(wrap_pyfunction!(isa::decode_word, m)?)?;
    m.add_function(wrap_pyfunction!(isa::asm, m)?)?;
    m.add_function(wrap_pyfunction!(isa::disasm, m)?)?;
    m.add_function(wrap_pyfunction!(isa::decode_desc_json, m)?)?;
    m.add_function(wrap_pyfunction!(isa::encode_desc, m)?)?;
    Ok(())
}
