//! Name lists and suggestions for resolve errors (docs/trace-format.md §2,
//! "How symbolic names are resolved"): every name a block contains, with
//! runs of numbered instances folded (`q0..q15`), and a "did you mean".

/// `names` for a message, in order, with runs of three or more numbered
/// instances folded: `q0, q1, …, q15` → `q0..q15`.
pub(crate) fn fold_names<S: AsRef<str>>(names: &[S]) -> String {
    let split = |n: &str| -> (String, Option<u64>) {
        let stem = n.trim_end_matches(|c: char| c.is_ascii_digit());
        let digits = &n[stem.len()..];
        // `q01` is not an instance number.
        let num = (!digits.is_empty() && (digits == "0" || !digits.starts_with('0')))
            .then(|| digits.parse().ok())
            .flatten();
        (stem.to_string(), num)
    };
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let (stem, num) = split(names[i].as_ref());
        let mut j = i + 1;
        if let Some(first) = num {
            while j < names.len() {
                let (s, n) = split(names[j].as_ref());
                if s == stem && n == Some(first + (j - i) as u64) {
                    j += 1;
                } else {
                    break;
                }
            }
        }
        if j - i >= 3 {
            out.push(format!("{}..{}", names[i].as_ref(), names[j - 1].as_ref()));
        } else {
            out.extend(names[i..j].iter().map(|n| n.as_ref().to_string()));
        }
        i = j;
    }
    out.join(", ")
}

/// "; did you mean `x`?" when a candidate is close to `word`
/// (case-insensitive), else "".
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    // `q16` is no typo of `q1`: another instance number is not suggested
    // (the message lists the instances).
    let stem = |n: &str| {
        n.trim_end_matches(|c: char| c.is_ascii_digit())
            .to_ascii_lowercase()
    };
    let numbered = word.ends_with(|c: char| c.is_ascii_digit());
    let candidates = candidates
        .into_iter()
        .filter(|c| !(numbered && stem(c) == stem(word)));
    match trace_format::closest_name(word, candidates) {
        Some(c) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_runs_of_instances() {
        let qs: Vec<String> = (0..16).map(|i| format!("q{i}")).collect();
        assert_eq!(fold_names(&qs), "q0..q15");
        assert_eq!(
            fold_names(&[
                "sbuf",
                "psum",
                "q7_dataram0",
                "q7_dataram1",
                "q7_dataram2",
                "evt_sem"
            ]),
            "sbuf, psum, q7_dataram0..q7_dataram2, evt_sem"
        );
        assert_eq!(fold_names(&["m2s", "s2m", "q0", "q1"]), "m2s, s2m, q0, q1");
        assert_eq!(fold_names(&["a1", "a2", "a4"]), "a1, a2, a4");
    }

    #[test]
    fn suggests_close_names() {
        assert_eq!(
            did_you_mean("tdrbp_lo", ["TDRBP_LOW", "TDRL"]),
            "; did you mean `TDRBP_LOW`?"
        );
        assert_eq!(
            did_you_mean("m2ss", ["m2s", "s2m", "gen"]),
            "; did you mean `m2s`?"
        );
        assert_eq!(did_you_mean("zzzz", ["m2s"]), "");
        assert_eq!(did_you_mean("q16", ["q0", "q1", "q15"]), "");
    }
}
