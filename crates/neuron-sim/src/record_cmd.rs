//! `neuron-sim run --reg-log FILE --vcd FILE`: the device's recorders
//! (`soc::record`), started before the run and written after it. Either
//! FILE may be `-`, standard output (`crate::outputs`).

use std::io::Write;
use std::path::Path;

use soc::Device;

use crate::outputs::{self, name_of};
use crate::{Failure, bad_input};

/// Starts the recorders the options ask for; the register-access log
/// streams to its file as the run goes.
pub(crate) fn start(
    dev: &mut Device,
    reg_log: Option<&Path>,
    vcd: Option<&Path>,
) -> Result<(), Failure> {
    if let Some(p) = reg_log {
        let w = outputs::create(p).map_err(|e| {
            bad_input(format!(
                "cannot create register-access log {}: {e}",
                name_of(p)
            ))
        })?;
        dev.record_reg_log(Some(w));
    }
    if vcd.is_some() {
        dev.record_waves();
    }
    Ok(())
}

/// Flushes the register-access log and writes the VCD.
pub(crate) fn finish(
    dev: &mut Device,
    reg_log: Option<&Path>,
    vcd: Option<&Path>,
) -> Result<(), Failure> {
    if let Some(p) = reg_log {
        dev.finish_reg_log().map_err(|e| {
            bad_input(format!(
                "cannot write register-access log {}: {e}",
                name_of(p)
            ))
        })?;
    }
    if let Some(p) = vcd {
        let cannot = |e: std::io::Error| bad_input(format!("cannot write VCD {}: {e}", name_of(p)));
        let mut w = outputs::create(p).map_err(cannot)?;
        dev.write_vcd(&mut w).map_err(cannot)?;
        w.flush().map_err(cannot)?;
    }
    Ok(())
}
