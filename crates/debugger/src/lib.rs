//! The doorbell debugger's engine (docs/user-guide.md §12): a [`Session`]
//! runs a trace on a device behind the host runtime and stops where asked
//! — at every granularity from one device event to the end of the trace
//! ([`Granularity`]), at breakpoints and watchpoints ([`breakpoint`]) — and
//! says why ([`Stop`]); [`view`] renders stops, rings, registers and memory
//! as text, and [`console`] is the command language of the prompt.
//!
//! Front ends stay thin: `neuron-sim step` reads lines and prints the
//! console's answers; `neuron-sim step --json` speaks [`protocol`], one
//! JSON object per line. The session runs the trace through
//! `soc::exec::Execution`, one statement at a time, pausing a `run`/`wait`
//! between two events; paused and resumed, a run gives the same cycles as
//! `neuron-sim run`.

pub mod breakpoint;
pub mod checkpoint;
pub mod complete;
pub mod console;
pub mod dap;
mod monitor;
pub mod place;
pub mod protocol;
pub mod reverse;
pub mod session;
pub mod view;
pub mod view_data;

pub use breakpoint::{BreakKind, Breakpoint, Breakpoints, Hit};
pub use checkpoint::CheckpointConfig;
pub use console::{Console, EXIT_QUIT_EARLY, Flow, Reply};
pub use place::{Cmp, Place, Test, Value};
pub use reverse::DeviceFactory;
pub use session::{
    DoorbellFilter, FinishTarget, FwDoorbell, Granularity, Listener, Mark, Position, Session,
    SessionConfig, Stop, StopKind,
};
