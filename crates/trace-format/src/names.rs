//! Suggestions for names that are not known: "did you mean" in trace,
//! timing-file and CLI messages (docs/user-guide.md §3). Here, in the
//! lowest layer, so every crate above can use it.

/// The candidate closest to `word`, case-insensitive, if one is close:
/// within one edit (two for names longer than 4, adjacent swaps count
/// one), or a prefix of it (`lenght` → `len`). For "did you mean"
/// messages: directives, keys, registers, regions, sweep parameters.
pub fn closest_name<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .filter_map(|c| {
            let cl = c.to_ascii_lowercase();
            let d = edit_distance(&lower, &cl);
            let max = if cl.len() <= 4 { 1 } else { 2 };
            if d <= max {
                Some((d, c))
            } else if cl.len() >= 2 && lower.starts_with(&cl) {
                Some((lower.len() - cl.len(), c))
            } else {
                None
            }
        })
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Optimal-string-alignment distance (Levenshtein plus adjacent swaps).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len() > 64 || b.len() > 64 {
        return usize::MAX; // not worth comparing
    }
    // Rows i-1, i and i+1 of the distance table.
    let mut prev2: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let mut v = (prev[j + 1] + 1).min(cur[j] + 1).min(prev[j] + cost);
            if i > 0 && j > 0 && ca == b[j - 1] && a[i - 1] == cb {
                v = v.min(prev2[j - 1] + 1);
            }
            cur[j + 1] = v;
        }
        prev2 = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names() {
        assert_eq!(edit_distance("wirte32", "write32"), 1);
        assert_eq!(closest_name("lenght", ["len", "byte"]), Some("len"));
        assert_eq!(closest_name("Fill", ["fill"]), Some("fill"));
        assert_eq!(
            closest_name("clock_ghzz", ["clock_ghz", "beat_bytes"]),
            Some("clock_ghz")
        );
        assert_eq!(closest_name("size", ["len", "byte"]), None);
    }
}
