//! Digests of the whole device state, for checks that two runs (a
//! debugger's replay and the original) hold the same state.

use super::Device;

impl Device {
    /// A digest (FNV-1a) of every memory's bytes, all-zero pages counted as untouched:
    /// equal digests mean equal memories.
    pub fn memory_digest(&self) -> u64 {
        self.fabric.memory.digest()
    }
}
