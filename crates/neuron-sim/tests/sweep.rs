//! `neuron-sim sweep` (issue 6 item 5): CSV rows in point order whatever
//! `--jobs`, `--shard` parts that `sweep merge` joins into exactly the
//! single run's CSV and SVG, a well-formed SVG with the published points,
//! and bad input reported with exit 2. Small sweeps only (CI stays fast).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TRACE: &str = "tests/data/sweep-copy.trace";

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_neuron-sim"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn tmp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuron-sim-sweep-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn full_run_equals_the_merge_of_three_shards_byte_for_byte() {
    let d = tmp_dir("shards");
    let (csv, svg) = (d.join("full.csv"), d.join("full.svg"));
    // Six points (3 sizes × 2 engines): shards of 2 points each.
    ok(&run(&[
        "sweep",
        TRACE,
        "--jobs",
        "2",
        "--no-host-time",
        "--csv",
        s(&csv),
        "--svg",
        s(&svg),
    ]));
    let mut parts = Vec::new();
    for i in 0..3 {
        let part = d.join(format!("part{i}.csv"));
        let shard = format!("{i}/3");
        ok(&run(&[
            "sweep",
            TRACE,
            "--shard",
            &shard,
            "--no-host-time",
            "--csv",
            s(&part),
        ]));
        let text = read(&part);
        assert!(
            text.starts_with(&format!("# neuron-sim sweep shard {i}/3: points=6 ")),
            "{text}"
        );
        assert_eq!(
            text.lines().count(),
            2 + 2,
            "comment, header, two rows: {text}"
        );
        parts.push(part);
    }
    let (mcsv, msvg) = (d.join("merged.csv"), d.join("merged.svg"));
    // Parts in any order.
    ok(&run(&[
        "sweep",
        "merge",
        s(&parts[2]),
        s(&parts[0]),
        s(&parts[1]),
        "--csv",
        s(&mcsv),
        "--svg",
        s(&msvg),
    ]));
    assert_eq!(read(&mcsv), read(&csv));
    assert_eq!(read(&msvg), read(&svg));
    // The CSV: header, then one row per point in point order.
    let text = read(&csv);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "point,bytes,eng,cycles,ns,payload_bytes,gbps,descriptors,exit,expectations_skipped,host_seconds"
    );
    assert_eq!(lines.len(), 7);
    for (k, l) in lines[1..].iter().enumerate() {
        let c: Vec<&str> = l.split(',').collect();
        assert_eq!(c[0], k.to_string());
        assert_eq!(
            c[1],
            ["256", "1024", "4096"][k / 2],
            "first parameter varies slowest"
        );
        assert_eq!(c[2], ["0", "1"][k % 2]);
        let bytes: u64 = c[1].parse().unwrap();
        assert_eq!(c[5], (4 * bytes).to_string(), "#@ payload {{4*bytes}}");
        assert_eq!(c[7], "8", "four descriptor pairs");
        assert_eq!(c[8], "0", "expectations held");
        assert_eq!(c[9], "0", "data mode: nothing skipped");
        assert_eq!(c[10], "", "--no-host-time");
        let gbps: f64 = c[6].parse().unwrap();
        let ns: f64 = c[4].parse().unwrap();
        assert!((gbps - 4.0 * bytes as f64 / ns).abs() < 0.01);
    }
    // A missing part is refused.
    let o = run(&[
        "sweep",
        "merge",
        s(&parts[0]),
        s(&parts[1]),
        "--csv",
        s(&d.join("x.csv")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing shard 2/3 (1 of 3 not given)"));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn rows_do_not_depend_on_jobs_and_host_time_is_the_only_variable_column() {
    let d = tmp_dir("jobs");
    let (a, b) = (d.join("j1.csv"), d.join("j2.csv"));
    ok(&run(&["sweep", TRACE, "--jobs", "1", "--csv", s(&a)]));
    ok(&run(&["sweep", TRACE, "--jobs", "2", "--csv", s(&b)]));
    let strip = |t: String| -> Vec<String> {
        t.lines()
            .map(|l| l.rsplit_once(',').unwrap().0.to_string())
            .collect()
    };
    let (ta, tb) = (read(&a), read(&b));
    for line in ta.lines().skip(1) {
        let host: f64 = line.rsplit_once(',').unwrap().1.parse().unwrap();
        assert!(host > 0.0, "host seconds measured: {line}");
    }
    assert_eq!(strip(ta), strip(tb));
    // And byte for byte without host time.
    let (c, e) = (d.join("n1.csv"), d.join("n2.csv"));
    ok(&run(&[
        "sweep",
        TRACE,
        "--jobs",
        "1",
        "--no-host-time",
        "--csv",
        s(&c),
    ]));
    ok(&run(&[
        "sweep",
        TRACE,
        "--jobs",
        "2",
        "--no-host-time",
        "--csv",
        s(&e),
    ]));
    assert_eq!(read(&c), read(&e));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn params_override_defaults_and_timing_only_keeps_cycles() {
    let data = run(&[
        "sweep",
        TRACE,
        "--param",
        "bytes=128,8Ki",
        "--param",
        "eng=3",
        "--no-host-time",
    ]);
    ok(&data);
    let text = String::from_utf8_lossy(&data.stdout).to_string();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 2);
    assert!(rows[0].starts_with("0,128,3,"), "{}", rows[0]);
    assert!(rows[1].starts_with("1,8192,3,"), "{}", rows[1]);
    // --timing-only: same cycles (the data expectation is then skipped).
    let fast = run(&[
        "sweep",
        TRACE,
        "--param",
        "bytes=128,8Ki",
        "--param",
        "eng=3",
        "--no-host-time",
        "--timing-only",
    ]);
    let ftext = String::from_utf8_lossy(&fast.stdout).to_string();
    let cycles = |t: &str| -> Vec<String> {
        t.lines()
            .skip(1)
            .map(|l| l.split(',').nth(3).unwrap().to_string())
            .collect()
    };
    assert_eq!(cycles(&text), cycles(&ftext));
    // 8 KiB moves no payload in timing-only mode: its expectation cannot
    // be checked, so it is skipped (neither passed nor failed: exit 0).
    assert_eq!(fast.status.code(), Some(0), "{ftext}");
    assert!(ftext.lines().nth(2).unwrap().ends_with(",0,1,"), "{ftext}");
}

/// A minimal XML check: tags balance and the document is one `<svg>`.
fn assert_well_formed(svg: &str) {
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        let j = rest[i..].find('>').unwrap() + i;
        let tag = &rest[i + 1..j];
        rest = &rest[j + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "unbalanced </{name}>");
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap().to_string());
        }
        if stack.is_empty() {
            assert!(rest.trim().is_empty(), "text after </svg>");
        }
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    assert!(!svg.contains(" & "), "unescaped &");
}

#[test]
fn svg_is_well_formed_with_the_published_points() {
    let d = tmp_dir("svg");
    let svg = d.join("p.svg");
    ok(&run(&[
        "sweep",
        TRACE,
        "--param",
        "eng=0",
        "--no-host-time",
        "--csv",
        s(&d.join("p.csv")),
        "--svg",
        s(&svg),
        "--published",
        "engine",
    ]));
    let text = read(&svg);
    assert_well_formed(&text);
    assert_eq!(text.matches("class=\"sim-point\"").count(), 3);
    // One engine: the 23 B/ns line and the 1416 ns / 32 KiB point (§0, §A.3).
    // The trace's `bytes` is a descriptor's size, not bytes per partition:
    // no "≥ 4 KiB/partition" point and no 256 B / 2 KiB guidance.
    assert!(text.contains("class=\"published-line\""));
    assert_eq!(text.matches("class=\"published-point\"").count(), 1);
    assert!(text.contains("23 B/ns"));
    assert!(text.contains("32 KiB in 1416 ns"));
    assert!(!text.contains("partition saturates"));
    assert!(!text.contains("minimum recommended"));
    assert!(text.contains("docs/references/figures.md"));
    assert!(
        text.contains("Mode: data (payload bytes moved and checked); timing: built-in defaults")
    );
    std::fs::remove_dir_all(&d).ok();
}

/// The plot's caption names the mode and the timing file, the shard
/// header carries them so a merge draws the same plot, and parts of
/// another mode are another sweep. The calibration trace declares `bytes`
/// bytes per partition (`#@ partition-bytes`): its plot has the guidance.
#[test]
fn caption_mode_and_timing_survive_a_merge() {
    let d = tmp_dir("caption");
    let timing = d.join("timing.json");
    std::fs::write(&timing, "{\"clock_ghz\": 0.85}\n").unwrap();
    let calib = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../traces/calib/bw-vs-partition-bytes.trace"
    );
    let common = [
        "--param",
        "bytes=256..4096*4",
        "--timing-only",
        "--no-host-time",
    ];
    let (csv, svg) = (d.join("full.csv"), d.join("full.svg"));
    let mut args = vec!["sweep", calib];
    args.extend(common);
    args.extend(["--timing", s(&timing), "--csv", s(&csv), "--svg", s(&svg)]);
    ok(&run(&args));
    let text = read(&svg);
    assert_well_formed(&text);
    let caption = format!(
        "Mode: timing-only (no payload bytes moved; the same cycles); timing: file {}.",
        timing.display()
    );
    assert!(text.contains(&caption), "{text}");
    assert!(
        text.contains("minimum recommended"),
        "bytes per partition: guidance"
    );
    let mut parts = Vec::new();
    for i in 0..2 {
        let part = d.join(format!("part{i}.csv"));
        let shard = format!("{i}/2");
        let mut args = vec!["sweep", calib];
        args.extend(common);
        args.extend(["--timing", s(&timing), "--shard", &shard, "--csv", s(&part)]);
        ok(&run(&args));
        let head = read(&part).lines().next().unwrap().to_string();
        assert!(
            head.contains(&format!(
                " mode=timing-only partition-bytes=bytes timing={} id=",
                timing.display()
            )) && head.contains(" trace="),
            "{head}"
        );
        parts.push(part);
    }
    let msvg = d.join("merged.svg");
    ok(&run(&[
        "sweep",
        "merge",
        s(&parts[1]),
        s(&parts[0]),
        "--svg",
        s(&msvg),
        "--csv",
        s(&d.join("m.csv")),
    ]));
    assert_eq!(read(&msvg), text);
    // A data-mode part of the same trace is another sweep.
    let data = d.join("data.csv");
    ok(&run(&[
        "sweep",
        calib,
        "--param",
        "bytes=256..4096*4",
        "--no-host-time",
        "--timing",
        s(&timing),
        "--shard",
        "1/2",
        "--csv",
        s(&data),
    ]));
    let o = run(&["sweep", "merge", s(&parts[0]), s(&data)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("from another sweep"));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn bad_input_exits_2_with_a_location() {
    let d = tmp_dir("bad");
    let t = d.join("bad.trace");
    std::fs::write(&t, "#@ param n=1,2\nrun cycles={n}\nrun cycles={m}\n").unwrap();
    let o = run(&["sweep", s(&t)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains("line 3, column 12: `{m}`: unknown parameter `m` (parameters: n)"),
        "{err}"
    );
    let good = d.join("good.trace");
    std::fs::write(&good, "#@ param n=1,2\nrun cycles={n}\n").unwrap();
    for (args, want) in [
        (vec!["--param", "n"], "expected NAME=VALUES"),
        (vec!["--param", "n=9..1"], "ends before it starts"),
        (vec!["--shard", "3/3"], "need 0 ≤ I < N"),
        (
            vec!["--param", "n=18446744073709551616"],
            "`18446744073709551616` is too large: a value is at most 18446744073709551615",
        ),
        (
            vec!["--x", "nope", "--svg", "/dev/null"],
            "no such parameter",
        ),
    ] {
        let mut a = vec!["sweep", s(&good)];
        a.extend(args);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.contains(want), "{a:?}: {err}");
    }
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn merge_names_the_line_column_and_what_is_wrong() {
    let d = tmp_dir("merge-bad");
    let t = d.join("t.trace");
    std::fs::write(&t, "#@ param n=1,2\nrun cycles={n}\n").unwrap();
    let part = d.join("p0.csv");
    let o = run(&[
        "sweep",
        s(&t),
        "--shard",
        "0/1",
        "--csv",
        s(&part),
        "--no-host-time",
    ]);
    ok(&o);
    let text = read(&part);
    // Break the cycles cell of the second row (line 4 of the file).
    let lines: Vec<&str> = text.lines().collect();
    let mut cells: Vec<&str> = lines[3].split(',').collect();
    cells[2] = "12x";
    let broken = cells.join(",");
    let mut out: Vec<&str> = lines.clone();
    out[3] = &broken;
    std::fs::write(&part, out.join("\n") + "\n").unwrap();
    let o = run(&["sweep", "merge", s(&part)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains(&format!(
            "{}: line 4: column `cycles` = `12x`: not a whole number",
            part.display()
        )),
        "{err}"
    );
    std::fs::remove_dir_all(&d).ok();
}

/// `--param` for a name the trace never uses is a typo: refused with a
/// suggestion (issue 13 item 2), instead of a sweep that ignores it.
#[test]
fn a_param_the_trace_does_not_use_is_refused() {
    let o = run(&["sweep", TRACE, "--param", "byts=128"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--param byts=128: tests/data/sweep-copy.trace has no parameter `byts` (no `#@ param byts` and no {…} naming it; its parameters: bytes, eng); did you mean `bytes`?"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    // A name only a placeholder uses (no `#@ param`) is accepted.
    let dir = std::env::temp_dir().join(format!("neuron-sim-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("placeholder-only.trace");
    std::fs::write(&t, "write32 tpb0.sem.inc[{n + 1}] 1\n").unwrap();
    let o = run(&["sweep", t.to_str().unwrap(), "--param", "n=0,2"]);
    ok(&o);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
}

/// A trace whose points each dump bytes of their own (a length and a byte
/// value from the parameter) to one `file=`, load that file back and check
/// it holds their own bytes.
const DUMP_TRACE: &str = "\
# Each point dumps {b}*256 bytes of value {b} to one file, loads it back
# and checks it got its own bytes: the value, and the length (the byte
# after the loaded ones is still 0).
#@ param b=1..16
fill hbm0+0x1000 len={b*256} byte={b}
dump hbm0+0x1000 len={b*256} file=out/dump.bin
load hbm0+0x10000 file=out/dump.bin
read32 hbm0+0x10000 == {b*0x01010101:x}
read32 hbm0+{0x10000 + b*256 - 4:x} == {b*0x01010101:x}
read32 hbm0+{0x10000 + b*256:x} == 0
";

/// `sweep` runs its points in parallel: a `dump … file=` of each point
/// stays in that point's memory (a later `load` of the path reads the
/// point's own bytes back), and the file on disk is neither created nor
/// overwritten — with the trace's directory shared, the points wrote the
/// same file and loaded each other's bytes (docs/user-guide.md §18).
#[test]
fn sweep_points_keep_their_dump_files_in_memory() {
    let d = tmp_dir("dump-files");
    let t = d.join("dump.trace");
    std::fs::write(&t, DUMP_TRACE).unwrap();
    let out = d.join("out/dump.bin");
    // No file before: none after, and every point read its own bytes.
    let o = run(&["sweep", s(&t), "--jobs", "4", "--no-host-time"]);
    ok(&o);
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 16, "{csv}");
    for (k, row) in rows.iter().enumerate() {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells[1], (k + 1).to_string(), "{row}");
        assert_eq!(cells[7], "0", "point {k} failed a check: {row}");
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("point "), "a point reported a problem: {err}");
    assert_eq!(err.lines().collect::<Vec<_>>(), [NOTE], "{err}");
    assert!(!out.exists(), "sweep wrote {}", out.display());
    assert!(
        !d.join("out").exists(),
        "sweep created {}",
        d.join("out").display()
    );
    // A file already there keeps its bytes, and does not leak into a point.
    std::fs::create_dir_all(d.join("out")).unwrap();
    std::fs::write(&out, b"mine").unwrap();
    let o = run(&["sweep", s(&t), "--jobs", "4", "--json", "--no-host-time"]);
    ok(&o);
    assert_eq!(std::fs::read(&out).unwrap(), b"mine");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"]["points"], 16);
    assert_eq!(v["summary"]["failed_points"], 0, "{v}");
    // The note goes to stderr only: stdout is the JSON document alone.
    assert_eq!(String::from_utf8_lossy(&o.stderr).trim_end(), NOTE);
    // A trace that dumps to no file gets no note.
    let plain = run(&["sweep", TRACE, "--param", "bytes=256", "--param", "eng=0"]);
    ok(&plain);
    assert!(
        plain.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    std::fs::remove_dir_all(&d).ok();
}

/// The stderr line of a sweep whose points dumped to `out/dump.bin`.
const NOTE: &str = "sweep: dump files kept in each point's memory, not written: out/dump.bin (one point's files: `neuron-sim run` the trace with its values substituted; docs/user-guide.md §18)";

/// `sweep merge` takes parts of one sweep only — not a shard of the same
/// trace name with other parameter values, nor one of an edited trace —
/// and exits as the sweep in one piece would (1 when a point failed);
/// `--jobs 0` is refused. Found by a review.
#[test]
fn merge_refuses_parts_of_another_sweep_and_keeps_the_exit_status() {
    let dir = tmp_dir("merge-id");
    let trace = dir.join("sw.trace");
    let text = "#@ param n=1..5\nalloc t size=0x1000\ncopyin t byte={n}\ncopyout t byte={n%3}\n";
    std::fs::write(&trace, text).unwrap();
    let part = |name: &str, shard: &str, extra: &[&str]| {
        let out = dir.join(name);
        let mut args = vec![
            "sweep",
            s(&trace),
            "--no-host-time",
            "--shard",
            shard,
            "--csv",
            s(&out),
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(
            o.status.code().is_some_and(|c| c <= 1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    };
    let p0 = part("p0.csv", "0/2", &[]);
    let p1 = part("p1.csv", "1/2", &[]);
    let other = part("other1.csv", "1/2", &["--param", "n=6..10"]);
    // Parts of one sweep merge; points whose check failed make it exit 1.
    let o = run(&[
        "sweep",
        "merge",
        s(&p0),
        s(&p1),
        "--csv",
        s(&dir.join("m.csv")),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Other values, same trace name: refused.
    let o = run(&["sweep", "merge", s(&p0), s(&other)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("from another sweep"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The trace edited between the shards: refused.
    std::fs::write(&trace, text.replace("{n%3}", "{n}")).unwrap();
    let edited = part("edited1.csv", "1/2", &[]);
    let o = run(&["sweep", "merge", s(&p0), s(&edited)]);
    assert_eq!(o.status.code(), Some(2));
    // --jobs 0 runs nothing: bad input.
    let o = run(&["sweep", s(&trace), "--jobs", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

/// `sweep --timing-only` skipped the data checks without a word: the CSV
/// and the JSON had no skip count, stderr was silent and a trace whose
/// check is wrong exited 0 like one that passed (probe report
/// sweep-etc.md finding 1). Each point now has its skipped count (CSV
/// `expectations_skipped`, JSON `expectations_skipped`, summary
/// `skipped_points`), and stderr says how many points skipped checks.
#[test]
fn timing_only_sweeps_count_the_checks_they_skipped() {
    let dir = tmp_dir("skipped");
    let trace = dir.join("wrong.trace");
    let golden =
        read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/copy-hbm-hbm.trace"));
    // A wrong expected hash, and a parameter so that it is a sweep.
    let text = format!(
        "#@ param n=1,2\n# {{n}}\n{}",
        golden.replace("sha256=c8", "sha256=00")
    );
    std::fs::write(&trace, text).unwrap();
    let o = run(&[
        "sweep",
        s(&trace),
        "--timing-only",
        "--no-host-time",
        "--jobs",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    // Skipped is neither passed nor failed: exit 0, as `run --timing-only`.
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "point,n,cycles,ns,payload_bytes,gbps,descriptors,exit,expectations_skipped,host_seconds"
    );
    assert_eq!(lines[1], "0,1,194,228.2,4096,17.946,2,0,1,");
    assert_eq!(lines[2], "1,2,194,228.2,4096,17.946,2,0,1,");
    assert_eq!(
        stderr.trim_end(),
        "sweep: 2 of 2 points skipped 2 expectation(s) (timing-only: bytes not moved): not checked, \
         neither passed nor failed"
    );
    let o = run(&[
        "sweep",
        s(&trace),
        "--timing-only",
        "--no-host-time",
        "--jobs",
        "1",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["points"][0]["expectations_skipped"], 1);
    assert_eq!(v["summary"]["skipped_points"], 2);
    // In data mode the check is made, and fails.
    let o = run(&["sweep", s(&trace), "--no-host-time", "--jobs", "1"]);
    assert_eq!(o.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        stdout.lines().nth(1).unwrap().ends_with(",1,0,"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `sweep merge` joined shards run with two timing files of one name but
/// other contents (the id covered the --timing path only), and a part
/// whose row claimed values no point of the sweep has (probe report
/// sweep-etc.md findings 5 and 6). The id now covers the effective timing
/// parameters, and the header's values= digest of every point's values
/// is checked against the merged rows.
#[test]
fn merge_checks_the_timing_contents_and_every_rows_values() {
    let dir = tmp_dir("merge-timing");
    let trace = dir.join("sw.trace");
    std::fs::write(
        &trace,
        "#@ param n=1..5\nfill hbm0 len=16 byte={n}\nexpect hbm0 bytes=02\n",
    )
    .unwrap();
    let timing = dir.join("tm.json");
    let part = |name: &str, shard: &str, clock: &str| {
        std::fs::write(&timing, format!("{{\"clock_ghz\": {clock}}}")).unwrap();
        let out = dir.join(name);
        let o = run(&[
            "sweep",
            s(&trace),
            "--no-host-time",
            "--jobs",
            "1",
            "--shard",
            shard,
            "--timing",
            s(&timing),
            "--csv",
            s(&out),
        ]);
        assert!(o.status.code().is_some_and(|c| c <= 1), "{o:?}");
        out
    };
    let p0 = part("p0.csv", "0/2", "1.4");
    let p1 = part("p1.csv", "1/2", "1.4");
    let slow1 = part("slow1.csv", "1/2", "0.5");
    let o = run(&["sweep", "merge", s(&p0), s(&p1)]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    // Same file name, other contents: another sweep.
    let o = run(&["sweep", "merge", s(&p0), s(&slow1)]);
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("slow1.csv: from another sweep"), "{stderr}");
    // A row that claims n=7 (point 3 is n=4).
    let edited = dir.join("edited1.csv");
    std::fs::write(&edited, read(&p1).replace("\n3,4,", "\n3,7,")).unwrap();
    let o = run(&["sweep", "merge", s(&p0), s(&edited)]);
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the rows' parameter values are not the sweep's"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `sweep` ran every point and only then found that it could not write
/// --csv, that --x named no parameter for --svg, or (after the first
/// points ran) that a later point's trace does not parse; the finished
/// rows were lost (probe report sweep-etc.md finding 8). These are now
/// checked before any point runs, as `run` checks its outputs.
#[test]
fn outputs_x_and_every_points_trace_are_checked_before_anything_runs() {
    let dir = tmp_dir("prechecks");
    let trace = dir.join("fail.trace");
    std::fs::write(
        &trace,
        "#@ param n=1..3\nfill hbm0 len=16 byte={n}\nexpect hbm0 bytes=02\n",
    )
    .unwrap();
    let bad = |args: &[&str], wanted: &str| {
        let mut all = vec!["sweep", s(&trace), "--no-host-time", "--jobs", "1"];
        all.extend_from_slice(args);
        let o = run(&all);
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(wanted), "{args:?}: {stderr}");
        assert!(stderr.contains("nothing was run"), "{args:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{args:?}: no row printed");
    };
    let adir = dir.join("adir");
    std::fs::create_dir_all(&adir).unwrap();
    bad(&["--csv", s(&adir)], "it is a directory");
    bad(&["--svg", s(&adir)], "it is a directory");
    bad(&["--csv", s(&dir.join("missing/x.csv"))], "cannot write");
    bad(
        &["--x", "bogus", "--svg", s(&dir.join("x.svg"))],
        "--x bogus: no such parameter",
    );
    // Point 8 (n=256) does not parse: found before points 0..7 run.
    let csv = dir.join("p.csv");
    bad(
        &["--param", "n=1..1024*2", "--csv", s(&csv)],
        "point 8 (n=256)",
    );
    assert!(!csv.exists());
    let _ = std::fs::remove_dir_all(dir);
}

/// SIGINT during a sweep exited 130 with nothing: no CSV, no message, every
/// finished point lost (probe report sweep-etc.md finding 4). The sweep now
/// stops, writes the rows that finished and says it was interrupted, as
/// `run` reports what ran.
#[test]
fn an_interrupted_sweep_writes_the_rows_that_finished() {
    let dir = tmp_dir("sigint");
    let trace = dir.join("long.trace");
    let calib = read(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../traces/calib/bw-vs-partition-bytes.trace"),
    );
    std::fs::write(&trace, format!("#@ param k=1..3000\n# {{k}}\n{calib}")).unwrap();
    let csv = dir.join("long.csv");
    // The signal comes after a pause long enough for points to finish
    // (every point's trace is checked first); on a loaded machine no point
    // may have finished yet, so the pause grows until one has.
    let interrupted_after = |pause_s: u64| {
        let mut child = bin()
            .args([
                "sweep",
                s(&trace),
                "--param",
                "bytes=4096",
                "--jobs",
                "1",
                "--no-host-time",
                "--timing-only",
                "--csv",
                s(&csv),
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_secs(pause_s));
        let killed = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                child.kill().unwrap();
                panic!("the sweep did not stop within 60 s of SIGINT");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(130), "{stderr}");
        assert!(
            stderr.contains("sweep: interrupted by SIGINT: ")
                && stderr.contains(" of 3000 points ran"),
            "{stderr}"
        );
        read(&csv)
    };
    let mut text = String::new();
    for pause_s in [4, 10, 25] {
        text = interrupted_after(pause_s);
        if text.lines().count() > 1 {
            break;
        }
    }
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert!(!rows.is_empty() && rows.len() < 3000, "{} rows", rows.len());
    for (k, r) in rows.iter().enumerate() {
        assert!(r.starts_with(&format!("{k},{},4096,", k + 1)), "{r}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
