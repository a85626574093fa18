//! Register and field access kinds (`docs/csr-map-format.md` §Access kinds).

use std::fmt;

use serde::Serialize;

/// How software reads and writes a register bit.
///
/// A register declares one kind; each field may override it. The runtime
/// turns the kinds into per-register bit masks ([`crate::RegMasks`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
pub enum Access {
    /// Read/write: a write stores the bits, a read returns them.
    #[serde(rename = "RW")]
    Rw,
    /// Read-only: writes are ignored (and reported); hardware updates the bits.
    #[serde(rename = "RO")]
    Ro,
    /// Write-only command: reads return 0; bits written as 1 are reported to
    /// the owner as command pulses; nothing is stored.
    #[serde(rename = "WO")]
    Wo,
    /// Write 1 to clear: a 1 clears the bit, a 0 leaves it; hardware sets it.
    #[serde(rename = "W1C")]
    W1c,
    /// Write 0 to clear: a 0 clears the bit, a 1 leaves it; hardware sets it
    /// (interrupt-cause registers, docs/references/driver.md §2.6).
    #[serde(rename = "W0C")]
    W0c,
    /// Read clears: a read returns the bits and then clears them; writes are ignored.
    #[serde(rename = "RC")]
    Rc,
    /// Write-to-increment doorbell: the written value, masked by its field
    /// and shifted down, is reported to the owner as an increment; reads return 0.
    #[serde(rename = "INC")]
    Inc,
    /// Write-to-decrement: like [`Access::Inc`], but the owner subtracts the
    /// value (EVT_SEM decrement window, docs/references/driver.md §6.4).
    #[serde(rename = "DEC")]
    Dec,
}

impl Access {
    /// Every kind, in documentation order.
    pub const ALL: [Access; 8] = [
        Access::Rw,
        Access::Ro,
        Access::Wo,
        Access::W1c,
        Access::W0c,
        Access::Rc,
        Access::Inc,
        Access::Dec,
    ];

    /// The spelling used in JSON maps and docs (`"RW"`, `"W1C"`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            Access::Rw => "RW",
            Access::Ro => "RO",
            Access::Wo => "WO",
            Access::W1c => "W1C",
            Access::W0c => "W0C",
            Access::Rc => "RC",
            Access::Inc => "INC",
            Access::Dec => "DEC",
        }
    }

    /// Parses the JSON spelling (exact, upper case).
    pub fn parse(text: &str) -> Option<Access> {
        Access::ALL.into_iter().find(|a| a.as_str() == text)
    }

    /// True for kinds whose bits always read as 0 (`WO`, `INC`, `DEC`).
    pub const fn reads_zero(self) -> bool {
        matches!(self, Access::Wo | Access::Inc | Access::Dec)
    }

    /// One-line semantics, used in the generated docs.
    pub const fn summary(self) -> &'static str {
        match self {
            Access::Rw => "read/write",
            Access::Ro => "read-only; writes ignored",
            Access::Wo => "write-only command; 1-bits are pulses to the owner; reads 0",
            Access::W1c => "hardware sets; write 1 clears",
            Access::W0c => "hardware sets; write 0 clears",
            Access::Rc => "read returns the value then clears it; writes ignored",
            Access::Inc => "written value (masked) is an increment for the owner; reads 0",
            Access::Dec => "written value (masked) is a decrement for the owner; reads 0",
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
