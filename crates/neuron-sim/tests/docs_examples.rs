//! Every example in `docs/` and the README runs as written (issue 13 item 4).
//!
//! The code blocks of each page are run in order, in one scratch directory per
//! page that holds `traces/`, `csr-maps/` and `docs/` of this repository, with
//! the `neuron-sim` under test first on `PATH`. The block's info string says
//! what it is (ARCHITECTURE.md, "Docs", states the convention for writers):
//!
//! - ` ```trace ` — a trace: written to `file=NAME` (or a scratch name) and run
//!   with `neuron-sim run`; it must exit with `status=N` (default 0).
//! - ` ```sh ` — commands: the block runs as one `sh -e` script (a `\`
//!   continues a line), without the `cargo` commands other than `cargo run -p
//!   neuron-sim` (builds, tests, benches and `xtask` are not examples of the
//!   simulator), viewers (`gtkwave`, `surfer`) and the Python package's
//!   install and scripts (`pip`, `python3 -m venv`, `. ENV/bin/activate`,
//!   `python …`; crates/py/tests runs those); it must exit 0.
//! - ` ```console ` — a transcript: each `$ COMMAND` runs and every output
//!   line shown (except lines with `…`, which elide) must appear in what it
//!   printed; it exits 0, or `status=N`, or what a following `$ echo $?`
//!   shows. `$ cat NAME` of a file that does not exist yet writes the lines
//!   shown to NAME (that is how a transcript shows the file it runs).
//! - ` ```text file=NAME ` / ` ```json file=NAME ` — a file later blocks use.
//!
//! A block with no info string is output or a diagram; it must not hold a
//! `$ neuron-sim` transcript (those are tagged, so they are run).
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One fenced code block: its info string split into the language and
/// `key=value` attributes, its first line number, and its lines.
struct Block {
    lang: String,
    attrs: BTreeMap<String, String>,
    line: usize,
    body: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, l)) = lines.next() {
        let Some(info) = l.strip_prefix("```") else {
            continue;
        };
        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or("").to_string();
        let attrs = words
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let body = lines
            .by_ref()
            .map(|(_, l)| l)
            .take_while(|l| !l.starts_with("```"))
            .map(str::to_string)
            .collect();
        out.push(Block {
            lang,
            attrs,
            line: n + 1,
            body,
        });
    }
    out
}

/// The scratch directory of one page.
struct Scratch {
    dir: PathBuf,
    page: String,
}

impl Scratch {
    fn new(page: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "neuron-sim-docs-{}-{}",
            std::process::id(),
            page.replace('/', "_")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_neuron-sim"), dir.join("bin/neuron-sim"))
            .unwrap();
        for d in ["traces", "csr-maps", "docs"] {
            std::os::unix::fs::symlink(workspace().join(d), dir.join(d)).unwrap();
        }
        Scratch {
            dir,
            page: page.to_string(),
        }
    }

    fn write(&self, name: &str, lines: &[String]) {
        let p = self.dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, lines.join("\n") + "\n").unwrap();
    }

    /// Runs one command line with `sh`, the binary under test as
    /// `neuron-sim` (the README's `cargo run --release -p neuron-sim --` and
    /// `./target/release/neuron-sim` name the same program).
    fn sh(&self, cmd: &str) -> Output {
        let cmd = normalise(cmd);
        let path = format!(
            "{}:{}",
            self.dir.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .current_dir(&self.dir)
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn normalise(cmd: &str) -> String {
    let cmd = cmd.trim();
    for prefix in [
        "cargo run --release -q -p neuron-sim --",
        "cargo run -q --release -p neuron-sim --",
        "cargo run --release -p neuron-sim --",
        "cargo run -q -p neuron-sim --",
        "cargo run -p neuron-sim --",
        "./target/release/neuron-sim",
        "target/release/neuron-sim",
    ] {
        if let Some(rest) = cmd.strip_prefix(prefix) {
            return format!("neuron-sim{rest}");
        }
    }
    cmd.to_string()
}

/// `sh` lines of a block, continuation lines joined, comments dropped.
fn sh_lines(body: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in body {
        if let Some(head) = l.strip_suffix('\\') {
            cur.push_str(head);
            continue;
        }
        cur.push_str(l);
        let line = std::mem::take(&mut cur);
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        out.push(t.to_string());
    }
    out
}

/// Builds, tests, benches and `xtask` runs are not simulator examples; an
/// example that pipes into a common tool this machine lacks (`jq`, `xxd`,
/// Python) is skipped with a note rather than failed.
fn skipped(cmd: &str) -> bool {
    let cmd = normalise(cmd);
    if cmd.starts_with("cargo ") || cmd.starts_with("gtkwave ") || cmd.starts_with("surfer ") {
        return true;
    }
    // Installing and running the Python package (docs/python.md): its
    // examples run in its own suite (crates/py/tests, `cargo xtask test`).
    for prefix in [
        "pip ",
        "python3 -m venv ",
        ". ",
        "python ",
        "python3 examples/",
    ] {
        if cmd.starts_with(prefix) {
            return true;
        }
    }
    for tool in ["jq", "xxd", "python3"] {
        let used = cmd.contains(&format!("| {tool} ")) || cmd.contains(&format!("$({tool} "));
        if used && !on_path(tool) {
            eprintln!("skipped (no `{tool}` on PATH): {cmd}");
            return true;
        }
    }
    false
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn status(b: &Block) -> i32 {
    b.attrs
        .get("status")
        .map(|s| s.parse().unwrap())
        .unwrap_or(0)
}

/// Runs the examples of one page; returns its failures and how many ran.
fn run_page(page: &str) -> (Vec<String>, usize) {
    let src = std::fs::read_to_string(workspace().join(page)).unwrap();
    let scratch = Scratch::new(page);
    let mut failures = Vec::new();
    let mut ran = 0;
    let mut fail = |line: usize, what: &str, o: Option<&Output>, why: String| {
        let out = o.map(text).unwrap_or_default();
        failures.push(format!(
            "{}:{line}: `{what}`: {why}\n{}",
            scratch.page,
            out.lines()
                .take(40)
                .map(|l| format!("    | {l}\n"))
                .collect::<String>()
        ));
    };
    for (i, b) in blocks(&src).iter().enumerate() {
        match b.lang.as_str() {
            "trace" => {
                let name = b
                    .attrs
                    .get("file")
                    .cloned()
                    .unwrap_or_else(|| format!("example-{}.trace", b.line));
                scratch.write(&name, &b.body);
                let o = scratch.sh(&format!("neuron-sim run '{name}'"));
                ran += 1;
                if o.status.code() != Some(status(b)) {
                    let why = format!("exit {:?}, expected {}", o.status.code(), status(b));
                    fail(b.line, &name, Some(&o), why);
                }
            }
            "text" | "json" if b.attrs.contains_key("file") => {
                scratch.write(&b.attrs["file"], &b.body);
            }
            "sh" => {
                // the block is one script: `out=$(…)` on one line is used on the next
                let cmds: Vec<String> = sh_lines(&b.body)
                    .into_iter()
                    .filter(|c| !skipped(c))
                    .map(|c| normalise(&c))
                    .collect();
                if cmds.is_empty() {
                    continue;
                }
                let script = format!("set -e\n{}", cmds.join("\n"));
                let o = scratch.sh(&script);
                ran += cmds.len();
                if o.status.code() != Some(0) {
                    let why = format!("exit {:?}", o.status.code());
                    fail(b.line, &cmds.join("; "), Some(&o), why);
                }
            }
            "console" => {
                // (line in block, command) of every `$ ` line
                let cmds: Vec<(usize, &str)> = b
                    .body
                    .iter()
                    .enumerate()
                    .filter_map(|(n, l)| l.strip_prefix("$ ").map(|c| (n, c)))
                    .collect();
                for (k, &(n, cmd)) in cmds.iter().enumerate() {
                    let end = cmds.get(k + 1).map_or(b.body.len(), |c| c.0);
                    let shown = &b.body[n + 1..end];
                    // `$ cat NAME` of a file no command wrote yet shows its content
                    if let Some(name) = cmd.strip_prefix("cat ")
                        && !scratch.dir.join(name.trim()).exists()
                    {
                        scratch.write(name.trim(), shown);
                        continue;
                    }
                    if cmd.trim() == "echo $?" || skipped(cmd) {
                        continue;
                    }
                    let expect = match cmds.get(k + 1) {
                        Some(&(m, next)) if next.trim() == "echo $?" => {
                            b.body[m + 1].trim().parse().unwrap()
                        }
                        _ => status(b),
                    };
                    let o = scratch.sh(cmd);
                    ran += 1;
                    let line = b.line + 1 + n;
                    if o.status.code() != Some(expect) {
                        let why = format!("exit {:?}, expected {expect}", o.status.code());
                        fail(line, cmd, Some(&o), why);
                        continue;
                    }
                    let out = text(&o);
                    let missing: Vec<&String> = shown
                        .iter()
                        .filter(|l| !l.trim().is_empty() && !l.contains('…'))
                        .filter(|l| !out.contains(l.as_str()))
                        .collect();
                    if !missing.is_empty() {
                        let why = format!(
                            "{} shown line(s) not printed, first: {:?}",
                            missing.len(),
                            missing[0]
                        );
                        fail(line, cmd, Some(&o), why);
                    }
                }
            }
            "" => {
                if let Some(l) = b
                    .body
                    .iter()
                    .find(|l| l.starts_with("$ neuron-sim") || l.starts_with("neuron-sim "))
                {
                    let why = format!(
                        "block {i} shows a command but is not tagged `console` or `sh`: {l:?}"
                    );
                    fail(b.line, "```", None, why);
                }
            }
            _ => {}
        }
    }
    (failures, ran)
}

fn pages() -> Vec<String> {
    let mut out = vec!["README.md".to_string()];
    let mut stack = vec![workspace().join("docs")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                let rel = p.strip_prefix(workspace()).unwrap();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_example_in_the_docs_and_the_readme_runs_as_written() {
    let mut failures = Vec::new();
    let mut ran = BTreeMap::new();
    for page in pages() {
        let (f, n) = run_page(&page);
        failures.extend(f);
        if n > 0 {
            ran.insert(page, n);
        }
    }
    eprintln!("examples run per page: {ran:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // the pages with examples, so that a parser bug cannot skip them all
    for page in [
        "README.md",
        "docs/trace-format.md",
        "docs/user-guide.md",
        "docs/host-runtime.md",
    ] {
        assert!(
            ran.get(page).copied().unwrap_or(0) > 0,
            "no example ran in {page}: {ran:?}"
        );
    }
}

#[test]
fn the_block_parser_reads_info_strings_and_transcripts() {
    let b = blocks("x\n```console status=1\n$ cat a.trace\nrun\n$ neuron-sim run a.trace\n```\n");
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].lang, "console");
    assert_eq!(b[0].attrs["status"], "1");
    assert_eq!(b[0].line, 2);
    assert_eq!(b[0].body.len(), 3);
    assert_eq!(
        sh_lines(&["a \\".into(), "  b # c".into(), "# d".into()]),
        vec!["a   b # c"]
    );
    assert_eq!(
        normalise("cargo run --release -p neuron-sim -- run x"),
        "neuron-sim run x"
    );
    assert!(skipped("cargo test --workspace"));
    assert!(!skipped("cargo run -p neuron-sim -- map"));
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, punctuation
/// other than `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn every_in_page_link_names_a_heading_of_its_page() {
    let mut bad = Vec::new();
    let mut links = 0;
    for page in pages() {
        let src = std::fs::read_to_string(workspace().join(&page)).unwrap();
        let mut in_code = false;
        let mut anchors = std::collections::BTreeSet::new();
        for l in src.lines() {
            if l.starts_with("```") {
                in_code = !in_code;
            } else if !in_code && l.starts_with('#') {
                anchors.insert(slug(l.trim_start_matches('#')));
            }
        }
        for (at, _) in src.match_indices("](#") {
            let rest = &src[at + 3..];
            let anchor = &rest[..rest.find(')').unwrap_or(rest.len())];
            links += 1;
            if !anchors.contains(anchor) {
                let line = src[..at].matches('\n').count() + 1;
                bad.push(format!("{page}:{line}: no heading for #{anchor}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // the user guide's table of contents alone has 22
    assert!(links >= 22, "only {links} in-page links found");
    assert_eq!(
        slug(" 14a. `decode --word`, `asm`, `disasm`: the 64-byte DMA instruction words"),
        "14a-decode---word-asm-disasm-the-64-byte-dma-instruction-words"
    );
}

/// Whether a printed line matches a shown one, where each `…` of the shown
/// line stands for any text.
fn matches_shown(printed: &str, shown: &str) -> bool {
    let mut parts = shown.split('…');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = printed.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (k, part) in parts.iter().enumerate() {
        if k + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The user guide's `run - -q` transcript (§19, "Standard input and
/// output") shows every line `-q` prints, in order (`…` only inside the
/// host-time line): the run's quiet output is what a reader copies. It
/// showed the totals line alone, without the `simulated …` and `host time`
/// lines. Found by a review.
#[test]
fn the_quiet_stdin_transcript_shows_every_line_printed() {
    let page = std::fs::read_to_string(workspace().join("docs/user-guide.md")).unwrap();
    let cmd = "$ neuron-sim run - -q < traces/copy-hbm-hbm.trace";
    let mut lines = page.lines().skip_while(|l| *l != cmd);
    assert_eq!(lines.next(), Some(cmd), "the transcript is gone");
    let shown: Vec<&str> = lines
        .take_while(|l| !l.starts_with("$ ") && !l.starts_with("```"))
        .collect();
    let trace = std::fs::File::open(workspace().join("traces/copy-hbm-hbm.trace")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(["run", "-", "-q"])
        .stdin(trace)
        .current_dir(workspace())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let printed = String::from_utf8_lossy(&o.stdout).to_string();
    let printed: Vec<&str> = printed.lines().collect();
    assert_eq!(
        printed.len(),
        shown.len(),
        "printed {printed:#?}\nshown {shown:#?}"
    );
    for (p, s) in printed.iter().zip(&shown) {
        assert!(matches_shown(p, s), "printed {p:?}\nshown   {s:?}");
    }
    assert!(matches_shown("host time 0.1 s: x", "host time … s: …"));
    assert!(!matches_shown("host time 0.1 s", "simulated …"));
}
