//! Fuzz targets of the sweep templates and `sweep merge` (docs/fuzzing.md
//! §1), run by the `fuzz` crate's harness: a short run here in `cargo test`,
//! the long one by `cargo xtask fuzz --target sweep-template|sweep-merge`.

use std::collections::BTreeMap;

use fuzz::harness::Outcome;
use fuzz::{Budget, Target, campaign};

use crate::csv::{Csv, Row, SweepMeta, merge, render_csv};
use crate::params::{Published, Template, Value, payload_of, points, substitute};
use crate::svg::render_svg;

/// Seconds per target in the short run.
const SHORT_SECONDS: f64 = 2.0;

/// Points of a template that are substituted per input.
const POINTS_PER_INPUT: usize = 16;

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

fn template_seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = fuzz::corpus::traces()
        .iter()
        .filter(|(_, t)| t.windows(2).any(|w| w == b"#@"))
        .map(|(_, t)| t.clone())
        .collect();
    out.push(
        b"#@ param bytes=128..65536*2\n#@ param dt=bf16,fp32\n#@ x bytes\n#@ published core\n\
          #@ payload {bytes*2}\nmemcpy hbm0+{bytes:x} {(bytes + 0x100) * 2 % 3000} {{x}} {dt}\nrun\n"
            .to_vec(),
    );
    out
}

fn exec_template(input: &[u8]) -> Outcome {
    let Ok(t) = Template::parse(&text(input)) else {
        return Ok(false);
    };
    let Ok(pts) = points(&t.params) else {
        return Ok(false);
    };
    let names: Vec<String> = t.params.iter().map(|p| p.name.clone()).collect();
    let mut accepted = true;
    for values in pts.iter().take(POINTS_PER_INPUT) {
        let vars: BTreeMap<String, Value> =
            names.iter().cloned().zip(values.iter().cloned()).collect();
        match substitute(&t.text, &vars) {
            Ok(source) => accepted &= payload_of(&source).is_ok(),
            Err(_) => accepted = false,
        }
    }
    Ok(accepted)
}

/// Parts of one sweep separated by this line.
const PART_BREAK: &str = "\n%%\n";

fn merge_seeds() -> Vec<Vec<u8>> {
    let names = vec!["bytes".to_string(), "dt".to_string()];
    let rows: Vec<Row> = (0..6)
        .map(|k| Row {
            point: k,
            values: vec![
                (128u64 << k).to_string(),
                if k % 2 == 0 { "bf16" } else { "fp32" }.into(),
            ],
            cycles: 100 + k as u64 * 37,
            ns: format!("{:.1}", 117.6 + k as f64),
            payload: 128 << k,
            gbps: format!("{:.3}", 1.5 * k as f64),
            descriptors: 4,
            exit: 0,
            expectations_skipped: k % 2,
            host_seconds: if k == 3 {
                "0.012".into()
            } else {
                String::new()
            },
        })
        .collect();
    let meta = SweepMeta {
        points: rows.len(),
        x: Some("bytes".into()),
        published: Published::Auto,
        trace: "traces/calib/x.trace".into(),
        values: crate::csv::values_digest(
            &names,
            &rows.iter().map(|r| r.values.as_slice()).collect::<Vec<_>>(),
        ),
        ..SweepMeta::default()
    };
    let mut out = Vec::new();
    for n in 1..=3 {
        let parts: Vec<String> = (0..n)
            .map(|i| {
                let mine: Vec<Row> = rows.iter().filter(|r| r.point % n == i).cloned().collect();
                render_csv(&names, &mine, Some(((i, n), &meta)))
            })
            .collect();
        out.push(parts.join(PART_BREAK).into_bytes());
    }
    out.extend(findings("sweep-merge"));
    out
}

/// Inputs the campaign found problems with, kept as seeds once fixed
/// (`crates/sweep/tests/data/fuzz/TARGET/`).
fn findings(target: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

fn exec_merge(input: &[u8]) -> Outcome {
    let all = text(input);
    let parts: Vec<(String, String)> = all
        .split(PART_BREAK)
        .enumerate()
        .map(|(i, t)| (format!("p{i}.csv"), t.to_string()))
        .collect();
    for (_, t) in &parts {
        if let Ok(csv) = Csv::parse(t) {
            let _ = render_svg(&csv, None, Published::Auto, &SweepMeta::default());
        }
    }
    let Ok((merged, meta)) = merge(&parts) else {
        return Ok(false);
    };
    let csv = Csv::parse(&merged).map_err(|e| format!("a merged CSV does not parse: {e}"))?;
    if csv.rows.len() != meta.points {
        return Err(format!(
            "the merge has {} rows for {} points",
            csv.rows.len(),
            meta.points
        ));
    }
    let _ = render_svg(&csv, meta.x.as_deref(), meta.published, &meta);
    Ok(true)
}

/// The targets of this module.
pub fn targets() -> [Target; 2] {
    [
        Target {
            name: "sweep-template",
            about: "sweep Template::parse, points and {EXPR} substitution",
            corpus: template_seeds,
            generate: None,
            exec: exec_template,
            max_len: 32 << 10,
        },
        Target {
            name: "sweep-merge",
            about: "sweep CSV parse, merge of shards and the SVG plot",
            corpus: merge_seeds,
            generate: None,
            exec: exec_merge,
            max_len: 64 << 10,
        },
    ]
}

fn short(name: &str) {
    let Some(target) = targets().into_iter().find(|t| t.name == name) else {
        panic!("no target {name}");
    };
    let report = campaign(&target, &Budget::from_env(SHORT_SECONDS));
    eprintln!("{report}");
    assert!(report.findings.is_empty(), "{report}");
}

#[test]
fn fuzz_sweep_template() {
    short("sweep-template");
}

#[test]
fn fuzz_sweep_merge() {
    short("sweep-merge");
}

/// Past findings, fixed: each runs within a second and without a problem.
#[test]
fn past_findings_stay_fixed() {
    let found = findings("sweep-merge");
    assert!(!found.is_empty());
    for input in found {
        let started = std::time::Instant::now();
        assert!(exec_merge(&input).is_ok());
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }
}
