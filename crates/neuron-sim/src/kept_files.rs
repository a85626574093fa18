//! The stderr note of `sweep` and `race`, whose parallel runs keep the
//! trace's `dump … file=` writes in memory (docs/user-guide.md §18,
//! docs/races.md).

use std::collections::BTreeSet;

/// One line naming up to three of `paths` kept in each `unit`'s memory by
/// `command`, with `how` to get them; `None` when nothing was kept.
pub(crate) fn note(
    command: &str,
    unit: &str,
    how: &str,
    paths: &BTreeSet<String>,
) -> Option<String> {
    const SHOWN: usize = 3;
    if paths.is_empty() {
        return None;
    }
    let names: Vec<&str> = paths.iter().take(SHOWN).map(String::as_str).collect();
    let more = paths.len().saturating_sub(SHOWN);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "{command}: dump files kept in each {unit}'s memory, not written: {}{more} ({how})",
        names.join(", ")
    ))
}
