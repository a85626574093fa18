//! `completions SHELL` and `man`: the shell completion scripts
//! (clap_complete) and the man pages (clap_mangen), generated from the
//! command-line definition itself, so an installed binary carries both
//! (docs/user-guide.md §Shell completions and man pages). `cargo xtask man`
//! keeps the copies in `docs/man/` current.

use std::path::Path;

use clap::CommandFactory;

use crate::{Cli, Failure, bad_input};

/// `completions SHELL`: the script on standard output.
pub(crate) fn cmd_completions(shell: clap_complete::Shell) -> Result<u8, Failure> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "neuron-sim", &mut script);
    let mut text = String::from_utf8_lossy(&script).into_owned();
    if shell == clap_complete::Shell::Bash {
        text = bash_labels_fixed(&text);
    }
    out!("{text}");
    Ok(0)
}

/// clap_complete 4.6's bash script names a subcommand's branch from the
/// binary's name with its `-` turned into the subcommand separator
/// (`neuron__subcmd__sim__subcmd__csr)`), while the loop that picks the
/// branch turns it into `__` (`neuron__sim__subcmd__csr`): no branch past
/// the first word ever matched. The labels are put the loop's way.
fn bash_labels_fixed(script: &str) -> String {
    script.replace("neuron__subcmd__sim", "neuron__sim")
}

/// `man [--out-dir DIR]`: the top page on standard output, or every page
/// written to DIR.
pub(crate) fn cmd_man(out_dir: Option<&Path>) -> Result<u8, Failure> {
    let pages = man_pages().map_err(|e| bad_input(format!("cannot render the man page: {e}")))?;
    let Some(dir) = out_dir else {
        // The top page is the last one rendered.
        if let Some((_, roff)) = pages.last() {
            out!("{}", String::from_utf8_lossy(roff));
        }
        return Ok(0);
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| bad_input(format!("cannot create --out-dir {}: {e}", dir.display())))?;
    for (name, roff) in &pages {
        let p = dir.join(name);
        std::fs::write(&p, roff)
            .map_err(|e| bad_input(format!("cannot write {}: {e}", p.display())))?;
    }
    eprintln!("{} man pages written to {}", pages.len(), dir.display());
    Ok(0)
}

/// Every man page as (file name, roff): one per subcommand (depth first,
/// as declared), then `neuron-sim.1`. The version is the package's alone,
/// without the commit, so the pages change only with the interface.
pub(crate) fn man_pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut cmd = Cli::command()
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_subcommand(true);
    // Gives each subcommand its full name (`neuron-sim-csr-list`).
    cmd.build();
    let mut pages = Vec::new();
    collect(cmd, &mut pages)?;
    Ok(pages)
}

fn collect(cmd: clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub.clone(), pages)?;
    }
    let man = clap_mangen::Man::new(cmd)
        .source(concat!("neuron-sim ", env!("CARGO_PKG_VERSION")))
        .manual("neuron-sim manual");
    let mut roff = Vec::new();
    man.render(&mut roff)?;
    let name = man.get_filename();
    if name == "neuron-sim.1" {
        roff.extend_from_slice(top_sections().as_bytes());
    }
    pages.push((name, roff));
    Ok(())
}

/// The sections of `neuron-sim.1` that clap does not know: exit status,
/// environment, where the guide is (docs/user-guide.md §3, §19).
fn top_sections() -> String {
    use clap_mangen::roff::{Roff, bold, roman};
    let mut r = Roff::new();
    r.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in [
        ("0", "Success: for run and step, every expectation held."),
        (
            "1",
            "An expectation failed (run, step), or run --fail-on-fault saw an unexpected fault.",
        ),
        (
            "2",
            "Bad input: an unreadable file, a parse or name error, a bad map or timing file, a bad argument.",
        ),
        (
            "3",
            "step only: the debugger session was quit before the end of the trace.",
        ),
        (
            "130, 143",
            "The run was interrupted by SIGINT or SIGTERM; what ran is reported.",
        ),
    ] {
        r.control("TP", [])
            .text([bold(code)])
            .text([roman(meaning)]);
    }
    r.control("SH", ["ENVIRONMENT"]);
    for (var, meaning) in [
        (
            "NO_COLOR",
            "Set and not empty: no colour under --color auto (the default).",
        ),
        (
            "CLICOLOR_FORCE",
            "Set and not empty: colour under --color auto even when the output is not a terminal.",
        ),
        ("CLICOLOR", "0: no colour under --color auto."),
        (
            "TERM",
            "Unset or dumb: no colour on a terminal under --color auto.",
        ),
    ] {
        r.control("TP", []).text([bold(var)]).text([roman(meaning)]);
    }
    r.control("SH", ["SEE ALSO"]);
    r.text([roman(
        "The user guide, docs/user-guide.md in the source repository: traces, the run output, \
         JSON reports, timing files, the debugger, sweeps and calibration.",
    )]);
    r.to_roff()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_per_command_and_the_top_page_last() {
        let pages = man_pages().unwrap();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.last(), Some(&"neuron-sim.1"));
        for want in [
            "neuron-sim-run.1",
            "neuron-sim-csr-list.1",
            "neuron-sim-man.1",
        ] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
    }
}
