//! Tab completion of the prompt (docs/user-guide.md §12 "Interactive use
//! and scripting"): command words, the words after `break`, `info`,
//! `watch` and the views, and dotted names — regions of the address map,
//! the registers of a block and the fields of a register — from the
//! device's map and register catalog. [`Names`] owns what it needs, so a
//! line editor can hold it while the session runs.

use csr::Catalog;
use soc::Device;
use soc_map::SocMap;

use crate::console::COMMANDS;

/// Words after `break`.
const BREAK_KINDS: &[&str] = &[
    "doorbell", "line", "cycle", "fault", "packet", "state", "ring-id", "race",
];

/// Words after `info`.
const INFO_WORDS: &[&str] = &["break", "checkpoints"];

/// What completion reads: the address map and the register catalog.
#[derive(Clone, Debug)]
pub struct Names {
    map: SocMap,
    catalog: &'static Catalog,
}

impl Names {
    /// The names of `device`.
    pub fn of(device: &Device) -> Names {
        Names {
            map: device.map().clone(),
            catalog: device.catalog(),
        }
    }

    /// Completes the word that ends at byte `pos` of `line`: where the word
    /// starts and the candidates, sorted.
    pub fn complete(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let head = line.get(..pos).unwrap_or(line);
        let start = head.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let word = &head[start..];
        let before: Vec<&str> = head[..start].split_whitespace().collect();
        let mut out: Vec<String> = match before.as_slice() {
            [] => COMMANDS
                .iter()
                .copied()
                .chain(["x", "rs", "rn", "rc"])
                .filter(|c| c.starts_with(word))
                .map(str::to_string)
                .collect(),
            ["info"] => words(INFO_WORDS, word),
            ["b" | "break"] => {
                let mut v = words(BREAK_KINDS, word);
                v.extend(self.names(word));
                v
            }
            _ => self.names(word),
        };
        out.sort();
        out.dedup();
        (start, out)
    }

    /// Dotted names starting with `prefix`: regions, then a block's
    /// registers, then a register's fields.
    fn names(&self, prefix: &str) -> Vec<String> {
        let lower = prefix.to_ascii_lowercase();
        let Some((parent, stem)) = lower.rsplit_once('.') else {
            return self
                .map
                .roots
                .iter()
                .map(|&r| self.map.region(r).name.to_string())
                .filter(|n| n.starts_with(&lower))
                .collect();
        };
        if let Some(id) = self.map.by_name(parent) {
            let region = self.map.region(id);
            let mut out: Vec<String> = region
                .children
                .iter()
                .map(|&c| self.map.region(c).name.to_string())
                .filter(|n| n.starts_with(&lower))
                .collect();
            if let Some(block) = region.block.as_deref().and_then(|b| self.catalog.block(b)) {
                out.extend(
                    block
                        .registers()
                        .iter()
                        .map(|r| r.name().to_ascii_lowercase())
                        .filter(|n| n.starts_with(stem))
                        .map(|n| format!("{parent}.{n}")),
                );
            }
            return out;
        }
        // A register: its fields.
        let Some((block_name, reg)) = parent.rsplit_once('.') else {
            return Vec::new();
        };
        let Some(block) = self
            .map
            .by_name(block_name)
            .and_then(|id| self.map.region(id).block.as_deref())
            .and_then(|b| self.catalog.block(b))
        else {
            return Vec::new();
        };
        block
            .registers()
            .iter()
            .filter(|r| r.name().eq_ignore_ascii_case(reg))
            .flat_map(|r| r.fields().iter())
            .map(|f| f.name().to_ascii_lowercase())
            .filter(|n| n.starts_with(stem))
            .map(|n| format!("{parent}.{n}"))
            .collect()
    }
}

fn words(list: &[&str], prefix: &str) -> Vec<String> {
    list.iter()
        .filter(|w| w.starts_with(prefix))
        .map(|w| (*w).to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn names() -> Names {
        Names::of(&Device::trn2().unwrap())
    }

    #[test]
    fn commands_regions_registers_and_fields_complete() {
        let n = names();
        assert_eq!(
            n.complete("rev", 3),
            (
                0,
                vec![
                    "reverse-continue".to_string(),
                    "reverse-next".into(),
                    "reverse-step".into()
                ]
            )
        );
        assert_eq!(
            n.complete("info ch", 7),
            (5, vec!["checkpoints".to_string()])
        );
        let (at, c) = n.complete("break fa", 8);
        assert_eq!((at, c), (6, vec!["fault".to_string()]));
        let (at, c) = n.complete("regs eng0.m2", 12);
        assert_eq!((at, c), (5, vec!["eng0.m2s".to_string()]));
        let (_, c) = n.complete("regs eng0.m2s.q0.tdr", 20);
        assert!(c.contains(&"eng0.m2s.q0.tdrhp".to_string()), "{c:?}");
        assert!(c.contains(&"eng0.m2s.q0.tdrbp_low".to_string()), "{c:?}");
        let (_, c) = n.complete("set eng0.m2s.q0.q_cfg.en_", 26);
        assert!(
            c.contains(&"eng0.m2s.q0.q_cfg.en_pref".to_string()),
            "{c:?}"
        );
        let (_, c) = n.complete("ring eng13", 10);
        assert!(c.contains(&"eng131".to_string()), "{c:?}");
    }
}
