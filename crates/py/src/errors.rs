//! The exception types: bad input is `ValueError`; what the simulated
//! hardware or runtime refuses has its own type under `NeuronSimError`.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

create_exception!(
    neuron_sim,
    NeuronSimError,
    PyException,
    "Base of the simulator's own errors."
);
create_exception!(
    neuron_sim,
    BusError,
    NeuronSimError,
    "An access the SoC fabric refuses: an unmapped address, a partition pad, a register hole."
);
create_exception!(
    neuron_sim,
    DeviceError,
    NeuronSimError,
    "The device refuses a request: no such core, a firmware that cannot take the word."
);
create_exception!(
    neuron_sim,
    TraceError,
    NeuronSimError,
    "A trace that does not parse or resolve; nothing ran."
);

create_exception!(
    neuron_sim,
    NrtError,
    NeuronSimError,
    "A host runtime call that returned an NRT status other than NRT_SUCCESS; `status` is its name (\"NRT_RESOURCE\")."
);

/// A failed runtime call: `NrtError` (with `status`) when the runtime
/// returned a status, else `ValueError` (a tensor name that is not live,
/// an unknown usage: refused before the runtime ran).
pub(crate) fn nrt(py: Python<'_>, status: Option<&'static str>, msg: String) -> PyErr {
    match status {
        Some(name) => {
            let e = NrtError::new_err(msg);
            // Setting an attribute on a fresh exception object cannot fail
            // but for memory exhaustion, which then propagates instead.
            match e.value(py).setattr("status", name) {
                Ok(()) => e,
                Err(other) => other,
            }
        }
        None => bad(msg),
    }
}

/// Bad input (a name, a shape, a value): `ValueError`.
pub(crate) fn bad(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// A bus fault.
pub(crate) fn bus(e: impl std::fmt::Display) -> PyErr {
    BusError::new_err(e.to_string())
}

/// A device refusal.
pub(crate) fn device(e: impl std::fmt::Display) -> PyErr {
    DeviceError::new_err(e.to_string())
}
