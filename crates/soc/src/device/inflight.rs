//! What the scheduler runs next, for a debugger's `inflight` view.

use super::Device;

/// The agent the run loop steps next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextPick {
    /// A DMA engine's next event.
    Engine {
        /// When.
        at: u64,
        /// The engine.
        engine: u16,
    },
    /// A core's firmware run.
    Firmware {
        /// When.
        at: u64,
        /// The core.
        tpb: u8,
    },
}

impl Device {
    /// The next agent the run loop would step (the earliest engine event
    /// or firmware run; firmware first on a tie, as the loop does), or
    /// `None` when nothing is pending.
    pub fn next_pick(&self) -> Option<NextPick> {
        let engine = self.wake.peek();
        let fw = self.next_fw();
        match (engine, fw) {
            (e, Some((fw_at, tpb))) if e.is_none_or(|(at, _)| fw_at <= at) => {
                Some(NextPick::Firmware { at: fw_at.0, tpb })
            }
            (Some((at, engine)), _) => Some(NextPick::Engine { at: at.0, engine }),
            _ => None,
        }
    }
}
