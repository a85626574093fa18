//! Ctrl-C during a native run (docs/python.md §Interrupting a run): the
//! run loops ask Python for pending signals every `STEPS` device steps,
//! stop after the event at hand when a handler raised, and the call
//! raises that exception (`KeyboardInterrupt`).

use pyo3::prelude::*;
use soc::Device as SocDevice;
use soc::exec::{Control, ExecHooks, Executor, Linked};
use trace_format::Statement;

/// Device steps between two checks: well under a millisecond of host time,
/// a counter test in the loop otherwise.
const STEPS: u32 = 1024;

/// The pending-signal check of one native run.
pub(crate) struct Signals<'py> {
    py: Python<'py>,
    /// Steps until the next check.
    left: u32,
    raised: Option<PyErr>,
}

impl<'py> Signals<'py> {
    pub(crate) fn new(py: Python<'py>) -> Self {
        Self {
            py,
            left: STEPS,
            raised: None,
        }
    }

    /// Counts a device step; every `STEPS` steps, whether a signal handler
    /// raised (then the run stops; later calls say so at once).
    #[inline]
    pub(crate) fn step(&mut self) -> bool {
        self.left -= 1;
        if self.left != 0 {
            return self.raised.is_some();
        }
        self.left = STEPS;
        self.check()
    }

    /// Whether a signal handler raised, asked now.
    pub(crate) fn check(&mut self) -> bool {
        if self.raised.is_none()
            && let Err(e) = self.py.check_signals()
        {
            self.raised = Some(e);
        }
        self.raised.is_some()
    }

    /// The handler's exception, if one raised during the run.
    pub(crate) fn finish(self) -> PyResult<()> {
        self.raised.map_or(Ok(()), Err)
    }
}

/// A trace run's hooks: before each statement and every `STEPS` steps of
/// a `run`/`wait`, a raised signal quits the trace.
impl ExecHooks for Signals<'_> {
    fn before(
        &mut self,
        _index: usize,
        _stmt: &Statement,
        _linked: &Linked,
        _device: &mut SocDevice,
        _executor: &Executor,
    ) -> Control {
        if self.check() {
            Control::Quit
        } else {
            Control::Continue
        }
    }

    fn during_run(&mut self, _device: &mut SocDevice) -> Control {
        if self.step() {
            Control::Quit
        } else {
            Control::Continue
        }
    }
}
