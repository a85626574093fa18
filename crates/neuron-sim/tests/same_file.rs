//! Two outputs of one command on one file, or an output on one of its
//! inputs, are refused before anything runs (exit 2): one of them would be
//! lost without a word (docs/user-guide.md §Standard input and output).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "neuron-sim-same-file-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    dir
}

fn run_in(dir: &PathBuf, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .current_dir(dir)
        .env("NEURON_SIM_HISTORY", "off")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn two_outputs_on_one_file_are_refused_before_the_run() {
    let dir = scratch("outputs");
    std::fs::copy(
        workspace().join("traces/copy-hbm-hbm.trace"),
        dir.join("t.trace"),
    )
    .unwrap();
    std::fs::write(
        dir.join("s.trace"),
        "#@ param n=1,2\nfill hbm0 len=16 byte={n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("old.out"), "keep me\n").unwrap();
    let cases: Vec<Vec<&str>> = vec![
        // The report's reproducer: the VCD was replaced by the snapshot.
        vec![
            "run",
            "t.trace",
            "-q",
            "--vcd",
            "same.out",
            "--csr-snapshot",
            "same.out",
        ],
        // The same file under two spellings, and an existing one.
        vec![
            "run",
            "t.trace",
            "-q",
            "--reg-log",
            "sub/../x.out",
            "--perfetto",
            "./x.out",
        ],
        vec![
            "run",
            "t.trace",
            "-q",
            "--vcd",
            "old.out",
            "--deadlock-graph",
            "sub/../old.out",
        ],
        vec![
            "step",
            "t.trace",
            "--script",
            "/dev/null",
            "--vcd",
            "y.out",
            "--reg-log",
            "y.out",
        ],
        vec![
            "sweep",
            "s.trace",
            "--no-host-time",
            "--jobs",
            "1",
            "--csv",
            "same.x",
            "--svg",
            "same.x",
        ],
    ];
    for args in cases {
        let o = run_in(&dir, &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("name the same file: one output would overwrite the other"),
            "{args:?}: {err}"
        );
        assert!(err.contains("nothing was run"), "{args:?}: {err}");
        assert!(
            o.stdout.is_empty(),
            "{args:?} ran: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    // Nothing was written: the existing file is intact and no new one is left.
    assert_eq!(
        std::fs::read_to_string(dir.join("old.out")).unwrap(),
        "keep me\n"
    );
    for f in ["same.out", "x.out", "y.out", "same.x"] {
        assert!(!dir.join(f).exists(), "{f} was written");
    }
    // /dev/null may take several outputs; distinct files are fine.
    let o = run_in(
        &dir,
        &[
            "run",
            "t.trace",
            "-q",
            "--vcd",
            "/dev/null",
            "--reg-log",
            "/dev/null",
            "--csr-snapshot",
            "a.out",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_output_on_an_input_is_refused() {
    let dir = scratch("inputs");
    std::fs::copy(
        workspace().join("traces/copy-hbm-hbm.trace"),
        dir.join("t.trace"),
    )
    .unwrap();
    std::fs::write(dir.join("tm.json"), "{\"clock_ghz\": 1.4}\n").unwrap();
    std::fs::write(dir.join("k.txt"), "DIRECT2D\n").unwrap();
    std::fs::write(
        dir.join("s.trace"),
        "#@ param n=1,2\nfill hbm0 len=16 byte={n}\n",
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "t.trace", "-q", "--csr-snapshot", "t.trace"],
            "t.trace",
        ),
        (
            vec![
                "run",
                "t.trace",
                "-q",
                "--timing",
                "tm.json",
                "--vcd",
                "sub/../tm.json",
            ],
            "tm.json",
        ),
        (vec!["asm", "k.txt", "-o", "k.txt"], "k.txt"),
        (
            vec!["sweep", "s.trace", "--no-host-time", "--csv", "s.trace"],
            "s.trace",
        ),
    ];
    for (args, input) in cases {
        let before = std::fs::read(dir.join(input)).unwrap();
        let o = run_in(&dir, &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("names the same file as the input"),
            "{args:?}: {err}"
        );
        assert_eq!(
            std::fs::read(dir.join(input)).unwrap(),
            before,
            "{args:?} changed {input}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn merge_refuses_an_output_on_a_part() {
    let dir = scratch("merge");
    std::fs::write(
        dir.join("s.trace"),
        "#@ param n=1,2\nfill hbm0 len=16 byte={n}\n",
    )
    .unwrap();
    for i in 0..2 {
        let part = format!("p{i}.csv");
        let shard = format!("{i}/2");
        let o = run_in(
            &dir,
            &[
                "sweep",
                "s.trace",
                "--no-host-time",
                "--jobs",
                "1",
                "--shard",
                &shard,
                "--csv",
                &part,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let before = std::fs::read(dir.join("p1.csv")).unwrap();
    let o = run_in(
        &dir,
        &["sweep", "merge", "p0.csv", "p1.csv", "--csv", "p1.csv"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("as the input PART p1.csv"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(dir.join("p1.csv")).unwrap(), before);
    std::fs::remove_dir_all(&dir).unwrap();
}
