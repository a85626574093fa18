//! `neuron-sim dap`: the debugger as a Debug Adapter Protocol server on
//! standard input and output (docs/user-guide.md §12 "VS Code and other DAP
//! clients"). The protocol is `debugger::dap`; this module builds the
//! device and the session a `launch` request asks for.

use std::path::{Path, PathBuf};

use debugger::dap::{LaunchArgs, Launcher};
use debugger::{Session, SessionConfig};

use crate::{Failure, Maps, bad_input};

/// `neuron-sim dap`: serves one client until it disconnects.
pub(crate) fn cmd_dap(maps: &Maps) -> Result<u8, Failure> {
    let base = maps.clone();
    let launcher: Launcher = Box::new(move |a: &LaunchArgs, listener| launch(&base, a, listener));
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut output = stdout.lock();
    debugger::dap::serve(&mut input, &mut output, launcher)
        .map_err(|e| bad_input(format!("dap: {e}")))
}

/// The session of a `launch` request: the trace `program`, the maps and
/// timing its arguments name (over the command line's).
fn launch(base: &Maps, a: &LaunchArgs, listener: debugger::Listener) -> Result<Session, String> {
    let maps = Maps {
        soc_map: a
            .soc_map
            .as_ref()
            .map(PathBuf::from)
            .or(base.soc_map.clone()),
        csr_maps: a
            .csr_maps
            .as_ref()
            .map(PathBuf::from)
            .or(base.csr_maps.clone()),
    };
    let timing = a.timing.as_ref().map(PathBuf::from);
    let timing_only = a.timing_only;
    let build = move |maps: &Maps| -> Result<soc::Device, String> {
        let mut dev = maps
            .device_with_timing(timing.as_deref())
            .map_err(|f| f.message)?;
        dev.set_timing_only(timing_only);
        Ok(dev)
    };
    let dev = build(&maps)?;
    let trace = Path::new(&a.program);
    let source = soc::input::read_text_file(trace, soc::input::InputKind::Trace)
        .map_err(|e| format!("launch: cannot read the trace {}: {e}", trace.display()))?;
    let files = Box::new(host_exec::DirFiles::new(
        trace.parent().map(Path::to_path_buf).unwrap_or_default(),
    ));
    let name = trace.display().to_string();
    let mut session = Session::new(
        dev,
        &source,
        &name,
        files,
        SessionConfig::default(),
        listener,
    )
    .map_err(|errors| errors.join("\n"))?;
    session.set_device_factory(Box::new(move || build(&maps)));
    Ok(session)
}
