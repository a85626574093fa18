//! JSON a program can rely on (issue 13 item 5; docs/user-guide.md §JSON
//! outputs): every JSON output carries `schema_version`, matches its schema
//! in `docs/schemas/` (checked in, and current), writes every hex number in
//! one form, and `run --json --no-host-timing` is the same bytes on every
//! run of a trace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The binary, run from the workspace root (traces/ and docs/ are there).
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = run(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("neuron-sim-json-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `docs/schemas/KIND.schema.json`, tightened: the document and every
/// type it defines may hold no key the schema does not name (the published
/// schemas allow new keys, which a version may add; the outputs of this
/// version must have none). Types made of alternatives (events, flattened
/// enums), and the alternatives themselves, are left as they are: their
/// keys are spread over the parts.
fn strict_schema(kind: &str) -> Value {
    let path = root().join(format!("docs/schemas/{kind}.schema.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run `cargo xtask schemas`)", path.display()));
    let mut schema: Value = serde_json::from_str(&text).unwrap();
    const PARTS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
    /// The `$defs` names referenced as a part of an alternative.
    fn parts(s: &Value, out: &mut Vec<String>) {
        match s {
            Value::Object(o) => {
                for (k, v) in o {
                    if let (true, Value::Array(items)) = (PARTS.contains(&k.as_str()), v) {
                        for i in items {
                            if let Some(r) = i.get("$ref").and_then(Value::as_str) {
                                out.push(r.trim_start_matches("#/$defs/").to_string());
                            }
                        }
                    }
                    parts(v, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| parts(v, out)),
            _ => {}
        }
    }
    fn tighten(s: &mut Value) {
        let Value::Object(o) = s else { return };
        let composed = PARTS.iter().any(|k| o.contains_key(*k));
        if o.contains_key("properties") && !o.contains_key("additionalProperties") && !composed {
            o.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    let mut loose = Vec::new();
    parts(&schema, &mut loose);
    tighten(&mut schema);
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for (name, d) in defs.iter_mut() {
            if !loose.contains(name) {
                tighten(d);
            }
        }
    }
    schema
}

/// Every string that reads as a hex number has the one form
/// (`0x`, lower case, no leading zeros).
fn hex_forms(v: &Value, path: &str, bad: &mut Vec<String>) {
    match v {
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| hex_forms(x, &format!("{path}.{k}"), bad)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| hex_forms(x, &format!("{path}[{i}]"), bad)),
        Value::String(t) => {
            let lower = t.to_ascii_lowercase();
            let Some(digits) = lower.strip_prefix("0x") else {
                return;
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return;
            }
            let canonical =
                t.starts_with("0x") && *t == lower && (digits == "0" || !digits.starts_with('0'));
            if !canonical {
                bad.push(format!("{path} = {t}"));
            }
        }
        _ => {}
    }
}

/// Parses a JSON output of `kind` and checks it against its schema.
fn check(kind: &str, bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes);
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{kind}: not JSON ({e}):\n{text}"));
    assert_eq!(v["schema_version"], 1, "{kind}: schema_version");
    let validator = jsonschema::validator_for(&strict_schema(kind)).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .take(10)
        .map(|e| format!("at {}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{kind}: the output does not match docs/schemas/{kind}.schema.json:\n{}",
        errors.join("\n")
    );
    let mut bad = Vec::new();
    hex_forms(&v, "", &mut bad);
    assert!(
        bad.is_empty(),
        "{kind}: hex numbers not in the one form: {bad:?}"
    );
    v
}

#[test]
fn checked_in_schemas_are_current() {
    let dir = tmp_dir("schemas");
    ok(&["schema", "--out-dir", s(&dir)]);
    let read = |d: &Path| -> BTreeMap<String, String> {
        std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".schema.json"))
            .map(|n| (n.clone(), std::fs::read_to_string(d.join(&n)).unwrap()))
            .collect()
    };
    let fresh = read(&dir);
    let checked_in = read(&root().join("docs/schemas"));
    assert_eq!(
        fresh.keys().collect::<Vec<_>>(),
        checked_in.keys().collect::<Vec<_>>(),
        "docs/schemas/ has other files than `neuron-sim schema` writes: run `cargo xtask schemas`"
    );
    for (name, text) in &fresh {
        assert!(
            checked_in[name] == *text,
            "docs/schemas/{name} is stale: run `cargo xtask schemas`"
        );
    }
    // One schema per output kind, each listed by `neuron-sim schema`.
    let list = String::from_utf8(ok(&["schema"])).unwrap();
    assert_eq!(list.lines().count(), fresh.len(), "{list}");
    for line in list.lines() {
        let kind = line.split_whitespace().next().unwrap();
        assert!(fresh.contains_key(&format!("{kind}.schema.json")), "{line}");
        assert_eq!(
            ok(&["schema", kind]),
            fresh[&format!("{kind}.schema.json")].as_bytes()
        );
    }
    let o = run(&["schema", "sweeep"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("did you mean `sweep`?"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn every_command_output_matches_its_schema() {
    let cases: &[(&str, &[&str])] = &[
        (
            "decode-desc",
            &[
                "decode",
                "--desc",
                "0010000d030008010000000020000000",
                "--json",
            ],
        ),
        ("csr-blocks", &["csr", "list", "--json"]),
        ("csr-registers", &["csr", "list", "udma_m2s_q", "--json"]),
        (
            "csr-decode",
            &[
                "csr",
                "decode",
                "udma_m2s_q",
                "Q_CFG",
                "0x03030080",
                "--json",
            ],
        ),
        ("map-table", &["map", "--json"]),
        ("map-expanded", &["map", "--expand", "--json"]),
        ("map-address", &["map", "0x1002001028", "--json"]),
        ("map-address", &["map", "0x7fffffffffffffff", "--json"]),
        ("timing", &["timing", "--json"]),
        ("ioctl-list", &["ioctl", "list", "--json"]),
        ("ioctl-decode", &["ioctl", "decode", "0x80384E66", "--json"]),
        ("ioctl-decode", &["ioctl", "decode", "0x4e01", "--json"]),
        ("calibrate", &["calibrate", "--json"]),
    ];
    for (kind, args) in cases {
        check(kind, &ok(args));
    }
    // Every kind of instruction word, with unpublished codes (`0x7`), and
    // the words of the firmware traces' streams.
    let dir = tmp_dir("words");
    let text = dir.join("k.txt");
    std::fs::write(
        &text,
        "DIRECT2D_XPOSE\nGATHER_XPOSE\n\
         DIRECT2D events.wait_mode=0x7 in_dtype=0x1f out_dtype=0x4 src_start_addr=imm:0x4000000000\n\
         INDIRECT1D idx_num_active_channels=128 flags.indirect_mode=DST_INDIRECTION \
         dst_idx_start_addr=imm:sbuf:q0:0x100\n\
         RDMA_DESC_GEN local_sem=1 remote_sem=2 dma_engine_mask=0xffff free_dim_bytes=4096\n\
         RDMA_DESC_START events.wait_mode=WAIT_FOR_SEM_EQ_IMM events.semaphore_value=16\n",
    )
    .unwrap();
    let bin = dir.join("k.bin");
    ok(&["asm", s(&text), "-o", s(&bin)]);
    let mut bytes = std::fs::read(&bin).unwrap();
    for stream in ["tile-load-tpb1.bin", "tile-roundtrip-tpb0.bin"] {
        bytes.extend(std::fs::read(root().join("traces/streams").join(stream)).unwrap());
    }
    for word in bytes.chunks(64) {
        let hex: String = word.iter().map(|b| format!("{b:02x}")).collect();
        check("decode-word", &ok(&["decode", "--word", &hex, "--json"]));
    }
    let third: String = bytes[128..192].iter().map(|b| format!("{b:02x}")).collect();
    let v = check("decode-word", &ok(&["decode", "--word", &third, "--json"]));
    assert_eq!(v["events"]["wait_mode"], "0x7");
    assert_eq!(v["out_dtype"], "0x4");
    assert_eq!(v["src_start_addr"]["marker"], "0x0");
    // The numbers: one form, whatever the width of the field.
    let v = check(
        "csr-decode",
        &ok(&["csr", "decode", "udma_m2s_q", "Q_CFG", "0x80", "--json"]),
    );
    assert_eq!(v["value"], "0x80");
    assert_eq!(v["offset"], "0x20");
    let v = check(
        "ioctl-decode",
        &ok(&["ioctl", "decode", "0x80384E66", "--json"]),
    );
    assert_eq!(v["value"], "0x80384e66");
    let v = check(
        "decode-desc",
        &ok(&[
            "decode",
            "--desc",
            "0010000d030008010000000020000000",
            "--json",
        ]),
    );
    assert_eq!(v["word0"], "0xd001000");
    // One name per concept: the byte count is `len`.
    assert_eq!(v["len"], 4096);
    assert!(v.get("length").is_none());
}

/// `run --json` on golden traces of every kind (DMA, firmware, host
/// runtime, faults, CRC results), and their CSR snapshots as JSON.
#[test]
fn run_outputs_match_the_run_schema() {
    let dir = tmp_dir("run");
    for name in [
        "copy-hbm-hbm.trace",
        "fw-tile-load-bf16.trace",
        "fw-custom-op-inline.trace",
        "host-dmem-batch.trace",
        "fault-doorbell-overrun.trace",
        "cme-crc.trace",
        "semaphore-on-completion.trace",
    ] {
        let snap = dir.join(format!("{name}.json"));
        let trace = format!("traces/{name}");
        let v = check(
            "run",
            &ok(&["run", &trace, "--json", "--csr-snapshot", s(&snap)]),
        );
        assert!(v["host_timing"]["host_seconds"].is_number(), "{name}");
        assert!(v.get("host").is_none(), "{name}: one name for host timing");
        check("csr-snapshot", &std::fs::read(&snap).unwrap());
    }
    // The profile tables of a firmware and a host trace.
    for name in ["fw-tile-load-bf16.trace", "host-dmem-batch.trace"] {
        let prof = dir.join(format!("{name}.profile.json"));
        ok(&[
            "run",
            &format!("traces/{name}"),
            "-q",
            "--profile",
            s(&prof),
        ]);
        let v = check("profile", &std::fs::read(&prof).unwrap());
        assert!(v["Summary"]["dma_packets"].as_u64().unwrap() > 0, "{name}");
    }
    // A host trace's ioctl recording, replayed.
    let rec = dir.join("batch.jsonl");
    ok(&[
        "run",
        "traces/host-dmem-batch.trace",
        "--ioctl-record",
        s(&rec),
    ]);
    let v = check("ioctl-replay", &ok(&["ioctl", "replay", s(&rec), "--json"]));
    assert!(v["ioctls"].as_u64().unwrap() > 0);
}

/// `run --detect-races --json`: the race object with its stall summary,
/// whose entries say the kind of wait (a gate, completions).
#[test]
fn race_object_of_run_matches_the_run_schema() {
    let v = check(
        "run",
        &ok(&[
            "run",
            "traces/fw-semaphore-chain.trace",
            "--json",
            "--detect-races",
            "--no-host-timing",
        ]),
    );
    let stalls = v["race"]["stalls"].as_array().unwrap();
    let kinds: Vec<&str> = stalls.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"events_gate"), "{kinds:?}");
    assert!(kinds.contains(&"completion"), "{kinds:?}");
    let done = stalls.iter().find(|s| s["kind"] == "completion").unwrap();
    assert_eq!(done["tpb"], 0);
    assert!(done["engine"].is_number() && done["queue"] == 1, "{done}");
    assert!(done["waited_cycles"].as_u64().unwrap() >= 100, "{done}");
    assert!(!done["awaited"].as_array().unwrap().is_empty(), "{done}");
}

#[test]
fn run_json_without_host_timing_is_byte_stable() {
    for name in [
        "traces/fw-tile-load-bf16.trace",
        "traces/host-dmem-batch.trace",
    ] {
        let args = ["run", name, "--json", "--no-host-timing"];
        let first = ok(&args);
        let second = ok(&args);
        assert!(first == second, "{name}: two runs printed different JSON");
        let v = check("run", &first);
        assert!(v.get("host_timing").is_none(), "{name}");
        // Only the host block differs from the report with it.
        let mut with: Value = serde_json::from_slice(&ok(&["run", name, "--json"])).unwrap();
        assert!(with["host_timing"]["slowdown"].is_number(), "{name}");
        with.as_object_mut().unwrap().remove("host_timing");
        assert_eq!(with, v, "{name}");
    }
    // The text output leaves out its `host time` line too.
    let text = String::from_utf8(ok(&[
        "run",
        "traces/copy-hbm-hbm.trace",
        "--no-host-timing",
    ]))
    .unwrap();
    assert!(!text.contains("host time"), "{text}");
    let text = String::from_utf8(ok(&["run", "traces/copy-hbm-hbm.trace"])).unwrap();
    assert!(text.contains("host time"), "{text}");
}

#[test]
fn race_json_matches_the_race_schema() {
    // A racy trace (exit 1: seeds differ) and a race-free one (exit 0).
    let racy = run(&[
        "race",
        "traces/race-two-cores-one-hbm-range.trace",
        "--seeds",
        "8",
        "--jobs",
        "2",
        "--json",
    ]);
    assert_eq!(racy.status.code(), Some(1));
    let v = check("race", &racy.stdout);
    assert_eq!(v["differ"], true);
    assert_eq!(v["seeds"].as_array().unwrap().len(), 8);
    assert!(!v["races"].as_array().unwrap().is_empty());
    let v = check(
        "race",
        &ok(&[
            "race",
            "traces/fw-semaphore-chain.trace",
            "--seeds",
            "2",
            "--jobs",
            "2",
            "--json",
        ]),
    );
    assert_eq!(v["differ"], false);
    assert_eq!(v["pairs"], serde_json::json!([]));
    assert_eq!(v["seeds"][0]["digest"], v["seeds"][1]["digest"]);
}

#[test]
fn sweep_json_is_the_csv_data_and_merges_the_same() {
    let dir = tmp_dir("sweep");
    let trace = "crates/neuron-sim/tests/data/sweep-copy.trace";
    let csv = dir.join("full.csv");
    let json = ok(&[
        "sweep",
        trace,
        "--no-host-time",
        "--jobs",
        "2",
        "--json",
        "--csv",
        s(&csv),
    ]);
    let v = check("sweep", &json);
    // The same data as the CSV, row for row.
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv_text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let points = v["points"].as_array().unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), points.len());
    assert_eq!(v["summary"]["points"], points.len());
    for (row, p) in rows.iter().zip(points) {
        let cell = |name: &str| row[head.iter().position(|h| *h == name).unwrap()];
        assert_eq!(p["point"].to_string(), cell("point"));
        assert_eq!(p["values"]["bytes"], cell("bytes"));
        assert_eq!(p["cycles"].to_string(), cell("cycles"));
        assert_eq!(p["sim_ns"].as_f64(), cell("ns").parse().ok());
        assert_eq!(p["payload_bytes"].to_string(), cell("payload_bytes"));
        assert_eq!(p["bandwidth_gbps"].as_f64(), cell("gbps").parse().ok());
        assert_eq!(p["exit"].to_string(), cell("exit"));
        assert!(p.get("host_seconds").is_none());
    }
    // Shards merged: the same document as the single run.
    let mut parts = Vec::new();
    for i in 0..2 {
        let part = dir.join(format!("part{i}.csv"));
        ok(&[
            "sweep",
            trace,
            "--no-host-time",
            "--shard",
            &format!("{i}/2"),
            "--csv",
            s(&part),
        ]);
        parts.push(part);
    }
    let merged = ok(&["sweep", "merge", s(&parts[0]), s(&parts[1]), "--json"]);
    assert_eq!(
        String::from_utf8(merged).unwrap(),
        String::from_utf8(json).unwrap()
    );
}

/// A scripted client of `step --json` (docs/user-guide.md §12 "JSON
/// protocol"): one command written, the messages up to its answer read.
struct StepClient {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    /// Every line read, for the schema check.
    seen: Vec<String>,
}

impl StepClient {
    fn start(trace: &str) -> StepClient {
        use std::process::Stdio;
        let mut child = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
            .args(["step", trace, "--json"])
            .current_dir(root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        StepClient {
            child,
            stdin,
            stdout,
            seen: Vec::new(),
        }
    }

    /// The next message that is not the statement log.
    fn answer(&mut self) -> Value {
        use std::io::BufRead;
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "no answer");
            let v: Value = serde_json::from_str(&line).unwrap();
            self.seen.push(line);
            if v["type"] != "log" {
                return v;
            }
        }
    }

    fn send(&mut self, json: &str) -> Value {
        use std::io::Write;
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{json}").unwrap();
        stdin.flush().unwrap();
        self.answer()
    }
}

#[test]
fn step_json_is_a_protocol_a_script_can_drive() {
    let mut c = StepClient::start("traces/copy-hbm-hbm.trace");
    // The first stop: the first doorbell.
    let first = c.answer();
    assert_eq!(first["type"], "reply");
    assert_eq!(first["stop"]["reason"], "doorbell");
    assert_eq!(first["stop"]["line"], 14);
    assert_eq!(first["stop"]["statement"], "doorbell eng0.s2m.q0 1");
    let b = c.send(r#"{"command": "break line 17"}"#);
    assert_eq!(b["lines"][0], "breakpoint 1: break line 17");
    // A breakpoint stop says which breakpoint fired and why.
    let stop = c.send(r#"{"command": "continue"}"#);
    assert_eq!(stop["stop"]["reason"], "breakpoint");
    assert_eq!(stop["stop"]["cycle"], 194);
    assert_eq!(stop["stop"]["line"], 17);
    assert_eq!(
        stop["stop"]["hits"][0],
        serde_json::json!({"id": 1, "spec": "break line 17", "why": "line 17"})
    );
    // A view: text lines, no stop.
    let ring = c.send(r#"{"command": "ring eng0.m2s.q0"}"#);
    assert!(ring.get("stop").is_none(), "{ring}");
    assert!(
        ring["lines"][0]
            .as_str()
            .unwrap()
            .starts_with("ring eng0.m2s.q0: base 0x1000000, 256 descriptors; head 1"),
        "{ring}"
    );
    // Errors, and the session goes on.
    let e = c.send(r#"{"command": "bogus"}"#);
    assert_eq!(e["type"], "error");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("unknown command `bogus`")
    );
    let e = c.send("not json");
    assert_eq!(e["type"], "error");
    let e = c.send(r#"{"command": "step", "granularity": "sideways"}"#);
    assert_eq!(e["type"], "error");
    let e = c.send(r#"{"command": "break line 99"}"#);
    assert_eq!(e["type"], "error");
    // The structured step runs to the end of the trace.
    let end = c.send(r#"{"command": "step", "granularity": "continue"}"#);
    assert_eq!(end["stop"]["reason"], "end");
    assert!(end["stop"].get("line").is_none());
    let q = c.send(r#"{"command": "quit"}"#);
    assert_eq!(q["type"], "reply");
    let fin = c.answer();
    assert_eq!(
        fin,
        serde_json::json!({"schema_version": 1, "type": "end", "exit_status": 0,
            "quit_early": false, "cycle": 194, "expectations_passed": 2,
            "expectations_failed": 0, "expectations_skipped": 0})
    );
    drop(c.stdin.take());
    assert_eq!(c.child.wait().unwrap().code(), Some(0));
    assert!(c.seen.iter().any(|l| l.contains(r#""type":"log""#)));
    for line in &c.seen {
        check("step", line.as_bytes());
    }
}

#[test]
fn step_json_quit_early_exits_3() {
    let mut c = StepClient::start("traces/copy-hbm-hbm.trace");
    assert_eq!(c.answer()["stop"]["cycle"], 0);
    c.send(r#"{"command": "q"}"#);
    let fin = c.answer();
    assert_eq!(fin["type"], "end");
    assert_eq!(fin["quit_early"], true);
    assert_eq!(fin["exit_status"], 3);
    check("step", c.seen.last().unwrap().as_bytes());
    drop(c.stdin.take());
    assert_eq!(c.child.wait().unwrap().code(), Some(3));
}
