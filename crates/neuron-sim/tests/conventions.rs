//! The conventions of a well-kept CLI (issue 13 item 7): shell completions,
//! man pages, `--version` with commit and profile, colour on a terminal
//! (`--color`, `NO_COLOR`), `-` for standard input and output, and `.json`
//! in any case (docs/user-guide.md §19).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{run, run_with, text, tmp};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn copy_trace() -> String {
    workspace()
        .join("traces/copy-hbm-hbm.trace")
        .display()
        .to_string()
}

/// The subcommands `neuron-sim --help` lists.
fn subcommands() -> Vec<String> {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = text(&o.stdout);
    let list = help
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    let names: Vec<String> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    for want in ["run", "sweep", "csr", "completions", "man"] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    names
}

#[test]
fn completions_for_bash_zsh_and_fish_name_every_subcommand() {
    let names = subcommands();
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", text(&o.stderr));
        let script = text(&o.stdout);
        assert!(script.len() > 1000, "{shell}: {script}");
        assert!(script.contains("neuron-sim"), "{shell}");
        for n in &names {
            assert!(script.contains(n.as_str()), "{shell} script names {n}");
        }
        // Options of a subcommand are completed too.
        assert!(script.contains("csr-snapshot"), "{shell}");
    }
    let o = run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_bash_completion_loads_and_completes_a_subcommand() {
    let Ok(o) = std::process::Command::new("bash").arg("--version").output() else {
        eprintln!("no bash: skipped");
        return;
    };
    assert!(o.status.success());
    let dir = tmp("conventions", "x", "").parent().unwrap().to_path_buf();
    let script = dir.join("neuron-sim.bash");
    std::fs::write(&script, run(&["completions", "bash"]).stdout).unwrap();
    // Ask the completion function what `neuron-sim ru<TAB>` completes to.
    let probe = format!(
        "source {}; COMP_WORDS=(neuron-sim ru); COMP_CWORD=1; _neuron__sim neuron-sim ru neuron-sim; echo \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let o = std::process::Command::new("bash")
        .args(["-c", &probe])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "run", "{}", text(&o.stderr));
    // Past the first word: `neuron-sim csr l<TAB>` and `decode --d<TAB>`
    // (a review found no branch past the first word matched).
    for (words, cword, want) in [
        ("neuron-sim csr l", 2, "list"),
        ("neuron-sim decode --d", 2, "--desc"),
    ] {
        let w: Vec<&str> = words.split(' ').collect();
        let probe = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; _neuron__sim neuron-sim {} {}; echo \"${{COMPREPLY[@]}}\"",
            script.display(),
            w[cword],
            w[cword - 1]
        );
        let o = std::process::Command::new("bash")
            .args(["-c", &probe])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        let got = text(&o.stdout);
        assert!(got.split_whitespace().any(|c| c == want), "{words}: {got}");
    }
}

#[test]
fn the_man_page_renders_every_subcommand() {
    let o = run(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let page = text(&o.stdout);
    assert!(page.starts_with(".ie"), "roff: {page}");
    assert!(page.contains(".TH neuron-sim 1"), "{page}");
    assert!(page.contains(".SH SUBCOMMANDS"), "{page}");
    assert!(page.contains(".SH \"EXIT STATUS\""), "{page}");
    assert!(page.contains("NO_COLOR"), "{page}");
    for n in subcommands() {
        let roff_name = format!("neuron\\-sim\\-{}(1)", n.replace('-', "\\-"));
        assert!(page.contains(&roff_name), "{roff_name} in the page");
    }
    // Version without the commit: the page changes with the interface only.
    assert!(page.contains(&format!("\"neuron-sim {}\"", env!("CARGO_PKG_VERSION"))));
}

#[test]
fn docs_man_is_current() {
    let dir = std::env::temp_dir().join(format!("neuron-sim-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = run(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".1"))
            .collect();
        v.sort();
        v
    };
    let committed = workspace().join("docs/man");
    let want = names(&dir);
    assert!(want.len() >= 20, "{want:?}");
    assert!(want.contains(&"neuron-sim-run.1".to_string()));
    assert_eq!(
        names(&committed),
        want,
        "docs/man/ is stale: run `cargo xtask man`"
    );
    for n in &want {
        assert_eq!(
            text(&std::fs::read(committed.join(n)).unwrap()),
            text(&std::fs::read(dir.join(n)).unwrap()),
            "docs/man/{n} is stale: run `cargo xtask man`"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn version_names_the_commit_and_the_profile() {
    let o = run(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    let v = text(&o.stdout);
    // neuron-sim 0.0.0 (50a402b, release)
    let rest = v
        .trim()
        .strip_prefix(&format!("neuron-sim {} (", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("{v}"));
    let (commit, profile) = rest
        .strip_suffix(')')
        .and_then(|r| r.split_once(", "))
        .unwrap_or_else(|| panic!("{v}"));
    assert!(["debug", "release"].contains(&profile), "{v}");
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{v}"
    );
    // In a git checkout of this repository, the commit is HEAD's.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    if git(&["ls-files", "--error-unmatch", "Cargo.toml"]).is_some()
        && let Some(h) = git(&["rev-parse", "--short=7", "HEAD"])
    {
        assert_eq!(commit, text(&h.stdout).trim(), "{v}");
    }
    // -V says the same.
    assert_eq!(text(&run(&["-V"]).stdout), v);
}

/// A trace with a failed expectation (status 1).
const FAILING: &str = "write32 tpb0.sbuf 5\nread32 tpb0.sbuf == 6\n";

const ESC: &str = "\x1b[";

#[test]
fn color_always_colours_a_failed_line_and_never_or_no_color_do_not() {
    let t = tmp("conventions", "failing.trace", FAILING);
    let t = t.to_str().unwrap();
    let no_env: &[(&str, Option<&str>)] = &[
        ("NO_COLOR", None),
        ("CLICOLOR_FORCE", None),
        ("CLICOLOR", None),
    ];
    let failed_line = |o: &std::process::Output| {
        let out = text(&o.stdout);
        out.lines()
            .find(|l| l.contains("FAILED"))
            .unwrap_or_else(|| panic!("{out}"))
            .to_string()
    };

    // --color always: FAILED in bold red, the rest of the line plain.
    let o = run_with(&["run", "--color", "always", t], b"", no_env);
    assert_eq!(o.status.code(), Some(1));
    let line = failed_line(&o);
    assert!(
        line.contains("\x1b[1m\x1b[31mFAILED\x1b[0m read32"),
        "{line:?}"
    );
    // It wins over NO_COLOR, and it is global (before the subcommand too).
    let o = run_with(
        &["--color", "always", "run", t],
        b"",
        &[("NO_COLOR", Some("1"))],
    );
    assert!(failed_line(&o).contains(ESC));

    // Not a terminal: no colour by default.
    let o = run_with(&["run", t], b"", no_env);
    assert_eq!(o.status.code(), Some(1));
    assert!(!text(&o.stdout).contains(ESC));

    // CLICOLOR_FORCE stands in for a terminal; NO_COLOR and --color never
    // still turn colour off.
    let force = [("CLICOLOR_FORCE", Some("1")), ("NO_COLOR", None)];
    let o = run_with(&["run", t], b"", &force);
    assert!(failed_line(&o).contains(ESC), "auto follows CLICOLOR_FORCE");
    let o = run_with(
        &["run", t],
        b"",
        &[("CLICOLOR_FORCE", Some("1")), ("NO_COLOR", Some("1"))],
    );
    assert!(!text(&o.stdout).contains(ESC), "NO_COLOR");
    let o = run_with(&["run", "--color", "never", t], b"", &force);
    assert_eq!(o.status.code(), Some(1));
    assert!(!text(&o.stdout).contains(ESC), "--color never");

    // JSON is never coloured.
    let o = run_with(&["run", "--json", "--color", "always", t], b"", no_env);
    assert!(!text(&o.stdout).contains(ESC));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap();

    let o = run(&["run", "--color", "sometimes", t]);
    assert_eq!(o.status.code(), Some(2));
}

/// On a real terminal (a pseudo-terminal made by util-linux `script`),
/// `auto` colours and NO_COLOR turns it off.
#[test]
fn auto_colours_a_terminal_unless_no_color() {
    let has_script = std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_script {
        eprintln!("no util-linux `script`: skipped");
        return;
    }
    let t = tmp("conventions", "failing-tty.trace", FAILING);
    let on_tty = |no_color: Option<&str>| {
        let cmd = format!(
            "'{}' run '{}'",
            env!("CARGO_BIN_EXE_neuron-sim"),
            t.display()
        );
        let mut c = std::process::Command::new("script");
        c.args(["-qec", &cmd, "/dev/null"])
            .env("TERM", "xterm")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("CLICOLOR")
            .env_remove("NO_COLOR");
        if let Some(v) = no_color {
            c.env("NO_COLOR", v);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let out = on_tty(None);
    assert!(out.contains("\x1b[1m\x1b[31mFAILED\x1b[0m"), "{out:?}");
    let out = on_tty(Some("1"));
    assert!(out.contains("FAILED read32"), "{out:?}");
    assert!(!out.contains(ESC), "{out:?}");
}

#[test]
fn step_reports_in_colour_too() {
    let t = tmp("conventions", "failing-step.trace", FAILING);
    let script = tmp("conventions", "continue.step", "c\n");
    let args = |when: &'static str| {
        vec![
            "step".to_string(),
            t.display().to_string(),
            "--script".to_string(),
            script.display().to_string(),
            "--color".to_string(),
            when.to_string(),
        ]
    };
    let a = args("always");
    let o = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("\x1b[1m\x1b[31mFAILED\x1b[0m read32"),
        "{}",
        text(&o.stdout)
    );
    let a = args("never");
    let o = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(text(&o.stdout).contains("FAILED read32"));
    assert!(!text(&o.stdout).contains(ESC));
}

#[test]
fn color_marks_a_fault_event() {
    let t = workspace().join("traces/fault-unmapped.trace");
    let o = run(&["run", "-v", "--color", "always", t.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.lines()
            .any(|l| l.contains("\x1b[1m\x1b[31mFAULT\x1b[0m SEC_A_INT_CAUSE")),
        "{out}"
    );
}

#[test]
fn run_dash_reads_the_trace_from_stdin() {
    let o = run_with(&["run", "-"], FAILING.as_bytes(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("<stdin>:2: FAILED read32 tpb0.sbuf (0x2000000000): expected 0x00000006"),
        "{out}"
    );
    // A copy trace from stdin moves its bytes as from the file.
    let src = std::fs::read(copy_trace()).unwrap();
    let o = run_with(&["run", "-", "-q"], &src, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("4096 bytes, 1 packets"));

    // Errors name <stdin> with line and column.
    let o = run_with(
        &["run", "-"],
        b"write32 tpb0.sbuf 5\n\nwrite32 tpb0.sbuff 5\n",
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("<stdin>:3:14: unknown name `sbuff`"), "{err}");
    let o = run_with(&["run", "-"], b"write32 tpb0.sbuf 5\n\xff\n", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("<stdin>:2:1: trace is not valid UTF-8"),
        "{}",
        text(&o.stderr)
    );

    // `step -` needs its commands from --script.
    let o = run_with(&["step", "-"], FAILING.as_bytes(), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--script"), "{}", text(&o.stderr));
    let script = tmp("conventions", "cmds.step", "c\n");
    let o = run_with(
        &["step", "-", "--script", script.to_str().unwrap()],
        FAILING.as_bytes(),
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("<stdin>:2: FAILED"));
}

#[test]
fn asm_disasm_and_a_core_stream_take_dash() {
    let src = std::fs::read(workspace().join("traces/streams/tile-roundtrip-tpb0.txt")).unwrap();
    let o = run_with(&["asm", "-", "-o", "-"], &src, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let bin = o.stdout;
    assert_eq!(bin.len(), 128);
    let o = run_with(&["disasm", "-"], &bin, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().count(), 2);
    assert!(text(&o.stdout).starts_with("DIRECT2D "));
    let o = run_with(&["run", "--core", "tpb0", "-", "-q"], &bin, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("tpb0 firmware DIRECT2D: 2 issued"),
        "{}",
        text(&o.stdout)
    );
    let o = run_with(&["run", "--core", "tpb0", "-"], &bin[..100], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("<stdin>: a stream of 100 bytes"));
    let o = run_with(&["asm", "-", "-o", "-"], b"bogus x\n", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("<stdin>:1:1: unknown instruction word"));
}

#[test]
fn csr_snapshot_dash_writes_yaml_to_stdout_and_the_report_to_stderr() {
    let t = copy_trace();
    let file = tmp("conventions", "snap.yaml", "");
    let o = run(&["run", &t, "--csr-snapshot", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let want = std::fs::read(&file).unwrap();
    assert!(want.starts_with(b"# neuron-sim CSR snapshot"));

    let o = run(&["run", &t, "--csr-snapshot", "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), text(&want), "stdout holds the YAML alone");
    assert!(text(&o.stderr).contains("16 statements, 2 expectations passed"));
}

#[test]
fn reg_log_vcd_and_perfetto_take_dash() {
    let t = copy_trace();
    for (opt, head) in [
        (
            "--reg-log",
            "0 trace W32 0x1002001028 eng0.m2s.q0.TDRBP_LOW",
        ),
        ("--vcd", "$version"),
        ("--perfetto", "{\"displayTimeUnit\":\"ns\""),
    ] {
        let o = run(&["run", &t, "-q", opt, "-"]);
        assert_eq!(o.status.code(), Some(0), "{opt}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(
            out.starts_with(head),
            "{opt}: {}",
            &out[..out.len().min(300)]
        );
        assert!(
            !out.contains("statements,"),
            "{opt}: the report is on stderr"
        );
        assert!(text(&o.stderr).contains("16 statements"), "{opt}");
    }
    // Only one output can have standard output, and not beside --json.
    let o = run(&["run", &t, "--vcd", "-", "--csr-snapshot", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--csr-snapshot - and --vcd - both name standard output"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&["run", &t, "--json", "--reg-log", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--json prints the report on standard output"));
    assert!(o.stdout.is_empty());
}

#[test]
fn a_json_extension_is_recognised_in_any_case() {
    let t = copy_trace();
    for name in ["snap.JSON", "snap.Json"] {
        let file = tmp("conventions", name, "");
        let o = run(&["run", &t, "-q", "--csr-snapshot", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap())
            .unwrap_or_else(|e| panic!("{name} is JSON: {e}"));
        assert!(v["blocks"].is_array(), "{v}");
    }

    // A CSR map named X.JSON in --csr-maps DIR is loaded.
    let dir = std::env::temp_dir().join(format!("neuron-sim-conv-maps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("EVT_SEM.JSON"),
        r#"{"block": "evt_sem", "description": "upper-case file", "size": "0x2000", "source": "t", "registers": [
            {"name": "A", "offset": "0x0", "access": "RW", "description": "d", "source": "t", "fields": []} ]}"#,
    )
    .unwrap();
    let o = run(&["--csr-maps", dir.to_str().unwrap(), "csr", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("upper-case file"),
        "{}",
        text(&o.stdout)
    );
}
