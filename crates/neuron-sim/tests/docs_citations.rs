//! Every citation in the repository points at something a reader can open
//! (issue 13 item 4): a page of `docs/references/` (and a section of it that
//! exists) or one of the two public specification pages — never a file
//! outside the repository. Covers the docs, the README and ARCHITECTURE.md,
//! the code and its comments, the CSR maps (whose `source` strings reach
//! `csr list` output) and the traces. `docs/references/README.md` lists the
//! citation forms.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files a reader or maintainer of the repository reads.
fn files() -> Vec<PathBuf> {
    let mut out = vec![
        workspace().join("README.md"),
        workspace().join("ARCHITECTURE.md"),
    ];
    let mut stack: Vec<PathBuf> = ["docs", "crates", "csr-maps", "traces", "xtask"]
        .iter()
        .map(|d| workspace().join(d))
        .collect();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(p);
                }
            } else if [
                ".rs", ".md", ".json", ".trace", ".toml", ".yaml", ".snap", ".txt", ".step",
            ]
            .iter()
            .any(|x| name.ends_with(x))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Names of files that exist only outside the repository (the notes the
/// pages of `docs/references/` were written from). Spelled in pieces so
/// that this file does not cite them itself.
fn outside_names() -> Vec<String> {
    [
        ["driver", "-facts"],
        ["wiki", "-facts"],
        ["hardware-and", "-simulators"],
        ["../", "shared"],
        ["DESIGN", ".md"],
        ["DESIGN", " §"],
        ["seed ", "000"],
        ["seed ", "004"],
        ["seeds/0", "0"],
    ]
    .iter()
    .map(|p| p.concat())
    .collect()
}

/// The section numbers of a page: the first word of every heading
/// (`### 2.6 Foo` → `2.6`, `## B. Foo` → `B`, `## 8. Foo` → `8`).
fn sections(page: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(workspace().join("docs/references").join(page)).unwrap();
    text.lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| l.trim_start_matches('#').split_whitespace().next())
        .map(|w| w.trim_end_matches('.').to_string())
        .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_alphanumeric()))
        .collect()
}

/// The section ids cited right after position `at`: ` §X`, then `, §Y` or
/// `; §Y` repeated (a range `§A.1–A.4` checks its first end).
fn cited_sections(text: &str, mut at: usize) -> Vec<String> {
    let mut out = Vec::new();
    let rest = |at: usize| &text[at..];
    if rest(at).starts_with(')') {
        at += 1;
    }
    let mut sep = " §";
    while let Some(r) = rest(at).strip_prefix(sep) {
        let id: String = r
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
            .collect();
        let id = id.trim_end_matches('.').to_string();
        if id.is_empty() {
            break;
        }
        at += sep.len() + id.len();
        // `§N`, `§X.N`: the placeholders of the citation-form table
        if id != "N" && id != "X.N" {
            out.push(id);
        }
        let r = rest(at);
        sep = if r.starts_with(", §") {
            ", §"
        } else if r.starts_with("; §") {
            "; §"
        } else {
            break;
        };
    }
    out
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

#[test]
fn nothing_cites_a_file_outside_the_repository() {
    let names = outside_names();
    let mut bad = Vec::new();
    for f in files() {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for name in &names {
            for (at, _) in text.match_indices(name.as_str()) {
                let rel = f.strip_prefix(workspace()).unwrap().display().to_string();
                bad.push(format!("{rel}:{}: `{name}`", line_of(&text, at)));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "citations of files outside the repository:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_cited_section_of_a_reference_page_exists() {
    let pages: BTreeMap<&str, BTreeSet<String>> = ["driver", "wiki", "figures", "design"]
        .into_iter()
        .map(|p| (p, sections(&format!("{p}.md"))))
        .collect();
    // The headings of the two public specification pages
    // (docs/references/README.md links them).
    let p91: BTreeSet<&str> = [
        "1", "2", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "3", "4", "4.1", "4.2", "5", "5.1",
        "5.2", "5.3", "5.4", "6", "6.1", "6.2", "6.3", "7", "8", "9",
    ]
    .into();
    let dmem: BTreeSet<&str> = ["1", "2", "3", "4", "5"].into();
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in files() {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let rel = f.strip_prefix(workspace()).unwrap().display().to_string();
        for (page, ids) in &pages {
            let needle = format!("references/{page}.md");
            for (at, _) in text.match_indices(&needle) {
                for id in cited_sections(&text, at + needle.len()) {
                    checked += 1;
                    if !ids.contains(&id) {
                        bad.push(format!(
                            "{rel}:{}: docs/{needle} has no §{id}",
                            line_of(&text, at)
                        ));
                    }
                }
            }
        }
        for (needle, ids) in [("P9.1", &p91), ("tdrv-dmem", &dmem)] {
            for (at, _) in text.match_indices(needle) {
                // `[tdrv-dmem](https://…) §2` in the docs, `tdrv-dmem §2` elsewhere
                let mut end = at + needle.len();
                if text[end..].starts_with("](") {
                    end += text[end..].find(')').unwrap();
                }
                for id in cited_sections(&text, end) {
                    checked += 1;
                    // tdrv-dmem's subsections are cited by their section
                    let top = id.split('.').next().unwrap_or("");
                    let known =
                        ids.contains(id.as_str()) || (needle == "tdrv-dmem" && ids.contains(top));
                    if !known {
                        bad.push(format!(
                            "{rel}:{}: {needle} has no §{id}",
                            line_of(&text, at)
                        ));
                    }
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "citations of sections that do not exist:\n{}",
        bad.join("\n")
    );
    // the scan found the citations (about 1,400 when this test was written)
    assert!(checked > 1000, "only {checked} citations found");
}

#[test]
fn the_citation_scanner_reads_lists_and_links() {
    let t = "see docs/references/figures.md §0, §A.3 (x) and [driver](references/driver.md) §2.6.";
    let at = t.find("figures.md").unwrap() + "figures.md".len();
    assert_eq!(cited_sections(t, at), vec!["0", "A.3"]);
    let at = t.find("driver.md").unwrap() + "driver.md".len();
    assert_eq!(cited_sections(t, at), vec!["2.6"]);
    assert!(sections("driver.md").contains("2.6"));
    assert!(sections("wiki.md").contains("B.5"));
    assert!(sections("design.md").contains("8"));
}
