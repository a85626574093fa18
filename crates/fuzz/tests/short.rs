//! The short fuzz run of `cargo test` (docs/fuzzing.md §3): a few seconds
//! of every library target, deterministic seeds, no finding allowed.
//! `NEURON_FUZZ_SECONDS` changes the time per target (`cargo xtask fuzz`
//! runs the long campaign).
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// Seconds per target in the short run.
const SHORT_SECONDS: f64 = 2.0;

fn short(name: &str) {
    let target = fuzz::targets::by_name(name).expect("a target of that name");
    let report = fuzz::campaign(&target, &fuzz::Budget::from_env(SHORT_SECONDS));
    eprintln!("{report}");
    assert!(report.findings.is_empty(), "{report}");
    assert!(report.inputs > 0);
}

#[test]
fn fuzz_trace() {
    short("trace");
}

#[test]
fn fuzz_desc() {
    short("desc");
}

#[test]
fn fuzz_word() {
    short("word");
}

#[test]
fn fuzz_asm() {
    short("asm");
}

#[test]
fn fuzz_disasm() {
    short("disasm");
}

#[test]
fn fuzz_soc_map() {
    short("soc-map");
}

#[test]
fn fuzz_csr_map() {
    short("csr-map");
}

#[test]
fn fuzz_timing() {
    short("timing");
}

#[test]
fn fuzz_ioctl_replay() {
    short("ioctl-replay");
}

/// The harness itself: a panicking target is caught, shrunk and saved; a
/// hanging one times out.
#[test]
fn the_harness_reports_panics_and_hangs() {
    fn panics_on_z(input: &[u8]) -> fuzz::harness::Outcome {
        assert!(!input.contains(&b'Z'), "found a Z");
        Ok(true)
    }
    fn hangs_on_h(input: &[u8]) -> fuzz::harness::Outcome {
        if input.contains(&b'H') {
            std::thread::sleep(std::time::Duration::from_secs(5));
        }
        Ok(true)
    }
    fn seeds() -> Vec<Vec<u8>> {
        vec![b"abc".to_vec(), b"xyZ123".to_vec()]
    }
    let t = fuzz::Target {
        name: "harness-self-test",
        about: "",
        corpus: seeds,
        generate: None,
        exec: panics_on_z,
        max_len: 64,
    };
    let budget = fuzz::Budget {
        seconds: 0.5,
        max_inputs: 1000,
        input_timeout: std::time::Duration::from_millis(300),
        rss_growth_bytes: 1 << 30,
        seed: 1,
        end_process_on_runaway: false,
    };
    let r = fuzz::campaign(&t, &budget);
    assert_eq!(r.findings.len(), 1, "{r}");
    assert_eq!(r.findings[0].kind, fuzz::FindingKind::Panic);
    assert!(r.findings[0].message.contains("found a Z"));
    assert_eq!(
        r.findings[0].input, b"Z",
        "shrunk to the one byte that matters"
    );
    assert!(r.findings[0].saved.as_ref().is_some_and(|p| p.exists()));
    fn hang_seeds() -> Vec<Vec<u8>> {
        vec![b"ok".to_vec(), b"H".to_vec()]
    }
    let t = fuzz::Target {
        corpus: hang_seeds,
        exec: hangs_on_h,
        ..t
    };
    let r = fuzz::campaign(&t, &budget);
    assert_eq!(r.findings.len(), 1, "{r}");
    assert_eq!(r.findings[0].kind, fuzz::FindingKind::Timeout);
    // 256 MiB touched against a 64 MiB limit.
    fn allocates_on_m(input: &[u8]) -> fuzz::harness::Outcome {
        if input.contains(&b'M') {
            let v = vec![7u8; 256 << 20];
            std::thread::sleep(std::time::Duration::from_millis(50));
            return Ok(v.iter().step_by(4096).all(|&b| b == 7));
        }
        Ok(true)
    }
    fn mem_seeds() -> Vec<Vec<u8>> {
        vec![b"ok".to_vec(), b"M".to_vec()]
    }
    let t = fuzz::Target {
        corpus: mem_seeds,
        exec: allocates_on_m,
        ..t
    };
    // This case checks the memory limit, not the time limit: touching
    // 256 MiB in a debug build on a loaded 2-core machine can take longer
    // than the 300 ms the hang case uses, which then reports a timeout.
    let budget = fuzz::Budget {
        rss_growth_bytes: 64 << 20,
        input_timeout: std::time::Duration::from_secs(10),
        ..budget
    };
    let r = fuzz::campaign(&t, &budget);
    assert_eq!(r.findings.len(), 1, "{r}");
    assert_eq!(r.findings[0].kind, fuzz::FindingKind::Memory);
    assert_eq!(r.findings[0].input, b"M");
}

/// `cargo xtask fuzz` lists every target of this crate.
#[test]
fn xtask_knows_every_target() {
    let xtask = std::fs::read_to_string(fuzz::corpus::root().join("xtask/src/fuzz.rs")).unwrap();
    // rustfmt may break a row over lines: compare without white space.
    let xtask: String = xtask.chars().filter(|c| !c.is_whitespace()).collect();
    for t in fuzz::targets::all() {
        let test = format!("\"fuzz_{}\"", t.name.replace('-', "_"));
        assert!(
            xtask.contains(&format!("(\"{}\",\"fuzz\"", t.name)) && xtask.contains(&test),
            "xtask/src/fuzz.rs TARGETS lacks {} ({test})",
            t.name
        );
    }
}
