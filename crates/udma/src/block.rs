//! Which register block of a UDMA unit an access lands in (docs/references/driver.md §2.1,
//! docs/references/wiki.md §I.3): the M2S and S2M engine blocks, their 16 queue blocks,
//! GEN, GEN_EX, the SDMA app block and the notification block.

/// Queues per direction (docs/references/driver.md §2.4: 16 M2S and 16 S2M queues).
pub const QUEUES: usize = 16;

/// Transfer direction of a UDMA half.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// Memory-to-stream: reads the source (TX, doorbell TDRTP_INC).
    M2s,
    /// Stream-to-memory: writes the destination (RX, doorbell RDRTP_INC).
    S2m,
}

impl Dir {
    /// `m2s` / `s2m`.
    pub fn name(self) -> &'static str {
        match self {
            Dir::M2s => "m2s",
            Dir::S2m => "s2m",
        }
    }
}

/// A register block of one engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnitBlock {
    /// M2S engine-level registers (`udma_m2s`).
    M2s,
    /// M2S queue block (`udma_m2s_q`).
    M2sQ(u8),
    /// S2M engine-level registers (`udma_s2m`).
    S2m,
    /// S2M queue block (`udma_s2m_q`).
    S2mQ(u8),
    /// UDMA_GEN (`udma_gen`).
    Gen,
    /// UDMA_GEN_EX (`udma_gen_ex`).
    GenEx,
    /// SDMA application block (`sdma_app`).
    SdmaApp,
    /// Notification block (`notific`).
    Notific,
}

impl UnitBlock {
    /// The CSR map name of this block.
    pub fn map_name(self) -> &'static str {
        match self {
            UnitBlock::M2s => "udma_m2s",
            UnitBlock::M2sQ(_) => "udma_m2s_q",
            UnitBlock::S2m => "udma_s2m",
            UnitBlock::S2mQ(_) => "udma_s2m_q",
            UnitBlock::Gen => "udma_gen",
            UnitBlock::GenEx => "udma_gen_ex",
            UnitBlock::SdmaApp => "sdma_app",
            UnitBlock::Notific => "notific",
        }
    }

    /// The region path below `engN`, e.g. `m2s.q3`, `gen`.
    pub fn region_suffix(self) -> String {
        match self {
            UnitBlock::M2s => "m2s".into(),
            UnitBlock::M2sQ(q) => format!("m2s.q{q}"),
            UnitBlock::S2m => "s2m".into(),
            UnitBlock::S2mQ(q) => format!("s2m.q{q}"),
            UnitBlock::Gen => "gen".into(),
            UnitBlock::GenEx => "gen_ex".into(),
            UnitBlock::SdmaApp => "sdma_app".into(),
            UnitBlock::Notific => "notific".into(),
        }
    }

    /// Parses a region path below `engN` (`m2s`, `s2m.q15`, `gen_ex`, …).
    pub fn from_suffix(path: &str) -> Option<UnitBlock> {
        let queue = |s: &str| -> Option<u8> {
            let n: u8 = s.strip_prefix('q')?.parse().ok()?;
            (usize::from(n) < QUEUES).then_some(n)
        };
        Some(match path {
            "m2s" => UnitBlock::M2s,
            "s2m" => UnitBlock::S2m,
            "gen" => UnitBlock::Gen,
            "gen_ex" => UnitBlock::GenEx,
            "sdma_app" => UnitBlock::SdmaApp,
            "notific" => UnitBlock::Notific,
            // `m2s.qN` / `s2m.qN` (prefix tests: this runs over every
            // region name of the map when a device is built).
            _ => match (path.strip_prefix("m2s."), path.strip_prefix("s2m.")) {
                (Some(q), _) => UnitBlock::M2sQ(queue(q)?),
                (None, Some(q)) => UnitBlock::S2mQ(queue(q)?),
                (None, None) => return None,
            },
        })
    }

    /// Every block of a unit, in address order.
    pub fn all() -> impl Iterator<Item = UnitBlock> {
        let m2s_q = (0..QUEUES as u8).map(UnitBlock::M2sQ);
        let s2m_q = (0..QUEUES as u8).map(UnitBlock::S2mQ);
        std::iter::once(UnitBlock::M2s)
            .chain(m2s_q)
            .chain(std::iter::once(UnitBlock::S2m))
            .chain(s2m_q)
            .chain([
                UnitBlock::Gen,
                UnitBlock::GenEx,
                UnitBlock::SdmaApp,
                UnitBlock::Notific,
            ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_round_trip() {
        for b in UnitBlock::all() {
            assert_eq!(UnitBlock::from_suffix(&b.region_suffix()), Some(b));
        }
        assert_eq!(UnitBlock::all().count(), 2 + 2 * QUEUES + 4);
        assert_eq!(UnitBlock::from_suffix("m2s.q16"), None);
        assert_eq!(UnitBlock::from_suffix("bcast"), None);
    }
}
