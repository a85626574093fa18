//! `run --perfetto`: real traces through the CLI, the JSON parsed back and
//! checked against the trace-event format and the run's own summary.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn trace(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces")
        .join(name)
}

fn out_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuron-sim-perfetto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs `trace` with `--json --perfetto` (plus `extra`); returns the run
/// report and the timeline.
fn timeline(trace_name: &str, out: &str, extra: &[&str]) -> (Value, Value) {
    let t = trace(trace_name);
    let p = out_path(out);
    let mut args = vec![
        "run",
        t.to_str().unwrap(),
        "--json",
        "--perfetto",
        p.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    (report, serde_json::from_str(&text).unwrap())
}

fn events(v: &Value) -> &Vec<Value> {
    v["traceEvents"].as_array().unwrap()
}

fn ns(e: &Value, key: &str) -> i64 {
    (e[key].as_f64().unwrap() * 1000.0).round() as i64
}

/// Every event is well formed; complete slices on one track nest or are
/// disjoint (closed on the left, open on the right, as Perfetto imports
/// them); packets are async slices, each begin with one end of the same id,
/// name and process, no earlier; a bound flow (`bind_id`) has one start
/// (`flow_out` only), one end (`flow_in` only) and steps (both) between.
fn check_format(v: &Value) {
    assert_eq!(v["displayTimeUnit"], "ns");
    let mut tracks: BTreeMap<(u64, u64), Vec<(i64, i64)>> = BTreeMap::new();
    let mut flows: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut open: BTreeMap<(u64, u64), (String, i64)> = BTreeMap::new();
    for e in events(v) {
        let ph = e["ph"].as_str().unwrap();
        assert!(e["name"].is_string(), "{e}");
        assert!(e["pid"].is_u64(), "{e}");
        // Every event has a category (some consumers require one):
        // `__metadata` for names and order, `counter` for counters.
        assert!(
            e["cat"].as_str().is_some_and(|c| !c.is_empty()),
            "no cat: {e}"
        );
        match ph {
            "M" => assert_eq!(e["cat"], "__metadata", "{e}"),
            "C" => assert_eq!(e["cat"], "counter", "{e}"),
            _ => {}
        }
        match ph {
            "M" => {
                assert!(
                    [
                        "process_name",
                        "process_sort_index",
                        "thread_name",
                        "thread_sort_index"
                    ]
                    .contains(&e["name"].as_str().unwrap())
                );
                assert!(e["args"].is_object());
            }
            "X" => {
                let (ts, dur) = (ns(e, "ts"), ns(e, "dur"));
                assert!(ts >= 0 && dur >= 0, "{e}");
                let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
                tracks.entry(key).or_default().push((ts, ts + dur));
            }
            "i" => {
                assert_eq!(e["s"], "t");
                assert!(e["tid"].is_u64());
            }
            "C" => {
                assert!(
                    e["args"]
                        .as_object()
                        .unwrap()
                        .values()
                        .all(Value::is_number)
                );
            }
            "b" => {
                assert_eq!(e["cat"], "packet", "{e}");
                let key = (e["pid"].as_u64().unwrap(), e["id"].as_u64().unwrap());
                let name = e["name"].as_str().unwrap().to_string();
                assert!(
                    open.insert(key, (name, ns(e, "ts"))).is_none(),
                    "id reused: {e}"
                );
            }
            "e" => {
                let key = (e["pid"].as_u64().unwrap(), e["id"].as_u64().unwrap());
                let (name, start) = open
                    .remove(&key)
                    .unwrap_or_else(|| panic!("end without begin: {e}"));
                assert_eq!(e["name"].as_str().unwrap(), name, "{e}");
                assert!(ns(e, "ts") >= start, "{e}");
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
        if let Some(id) = e["bind_id"].as_u64() {
            let dir = match (e.get("flow_in").is_some(), e.get("flow_out").is_some()) {
                (false, true) => "s",
                (true, true) => "t",
                (true, false) => "f",
                _ => panic!("a bound flow event without a direction: {e}"),
            };
            flows.entry(id).or_default().push(dir.to_string());
        }
        if ph != "M" {
            let ts = e["ts"].as_f64().unwrap();
            // µs with at most three decimals: whole nanoseconds.
            assert!(((ts * 1000.0).round() - ts * 1000.0).abs() < 1e-6, "{e}");
        }
    }
    for (key, mut slices) in tracks {
        slices.sort_by_key(|&(a, b)| (a, std::cmp::Reverse(b)));
        let mut stack: Vec<i64> = Vec::new();
        for (a, b) in slices {
            while stack
                .last()
                .is_some_and(|&end| end <= a && !(end == a && b == a))
            {
                stack.pop();
            }
            if let Some(&end) = stack.last() {
                assert!(
                    b <= end,
                    "track {key:?}: [{a}, {b}] overlaps a slice ending at {end}"
                );
            }
            stack.push(b);
        }
    }
    assert!(open.is_empty(), "packets that never end: {open:?}");
    for (id, phs) in flows {
        assert_eq!(
            phs.first().map(String::as_str),
            Some("s"),
            "flow {id}: {phs:?}"
        );
        assert_eq!(phs.last().map(String::as_str), Some("f"), "flow {id}");
        assert!(phs[1..phs.len() - 1].iter().all(|p| p == "t"), "flow {id}");
    }
}

fn names(v: &Value, what: &str) -> BTreeMap<(u64, Option<u64>), String> {
    events(v)
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == what)
        .map(|e| {
            (
                (e["pid"].as_u64().unwrap(), e["tid"].as_u64()),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn count(v: &Value, f: impl Fn(&Value) -> bool) -> usize {
    events(v).iter().filter(|e| f(e)).count()
}

fn packet_slices(v: &Value) -> usize {
    count(v, |e| e["ph"] == "b" && e["cat"] == "packet")
}

#[test]
fn a_plain_copy_is_one_packet_on_its_queue_track() {
    let (report, v) = timeline("copy-hbm-hbm.trace", "copy.json", &[]);
    check_format(&v);
    assert_eq!(
        packet_slices(&v) as u64,
        report["packets"].as_u64().unwrap()
    );
    let procs = names(&v, "process_name");
    assert_eq!(procs[&(1, None)], "NeuronCore 0 (tpb0, engines 0-15)");
    let threads: BTreeSet<String> = names(&v, "thread_name").into_values().collect();
    assert!(threads.contains("eng0 q0"), "{threads:?}");
    let p = events(&v).iter().find(|e| e["cat"] == "packet").unwrap();
    assert_eq!(p["ph"], "b");
    assert_eq!(p["name"], "eng0 q0", "named by its queue's track");
    assert_eq!(p["args"]["cause"], "packet");
    assert_eq!(p["args"]["bytes"], 4096);
    assert_eq!(p["args"]["src"], "0x100000");
    assert_eq!(p["args"]["dst"], "0x200000");
    // 22 cycles to 194 at 0.85 GHz.
    assert_eq!(p["ts"], 0.026);
    let end = events(&v)
        .iter()
        .find(|e| e["ph"] == "e" && e["id"] == p["id"])
        .unwrap();
    assert_eq!(end["ts"], 0.228);
    assert!(count(&v, |e| e["ph"] == "i" && e["cat"] == "doorbell") == 2);
    assert!(count(&v, |e| e["ph"] == "C") > 0);
}

#[test]
fn firmware_words_flow_to_the_packets_that_complete_them() {
    let (report, v) = timeline("fw-semaphore-chain.trace", "chain.json", &[]);
    check_format(&v);
    assert_eq!(
        packet_slices(&v) as u64,
        report["packets"].as_u64().unwrap()
    );
    let threads: BTreeSet<String> = names(&v, "thread_name").into_values().collect();
    for t in ["Q7 instructions", "Q7 events", "eng0 q1", "eng3 q1"] {
        assert!(threads.contains(t), "{t}: {threads:?}");
    }
    // Counters: queue occupancy and bytes in flight.
    assert!(count(&v, |e| e["ph"] == "C" && e["name"] == "eng0 in flight") > 0);
    assert!(count(&v, |e| e["ph"] == "C" && e["name"] == "eng0.q1 queued") > 0);
    // Each flow starts at a `doorbell` slice inside an instruction's slice
    // and ends on a packet caused by that instruction (bound by `bind_id`).
    let evs = events(&v);
    let x: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "X").collect();
    let mut linked: BTreeMap<String, usize> = BTreeMap::new();
    let starts: Vec<&Value> = x.iter().copied().filter(|e| e["cat"] == "flow").collect();
    assert!(!starts.is_empty());
    for s in &starts {
        assert_eq!(s["name"], "doorbell");
        let t = ns(s, "ts");
        let inst = x
            .iter()
            .find(|e| {
                e["cat"] == "inst"
                    && e["tid"] == s["tid"]
                    && ns(e, "ts") <= t
                    && t <= ns(e, "ts") + ns(e, "dur")
            })
            .unwrap_or_else(|| panic!("no instruction at {s}"));
        let tag = inst["args"]["inst"].as_str().unwrap().to_string();
        let ends: Vec<&Value> = evs
            .iter()
            .filter(|e| e["ph"] == "b" && e["bind_id"] == s["bind_id"])
            .collect();
        assert!(!ends.is_empty(), "{s}: no packet");
        for p in &ends {
            assert!(
                p["args"]["cause"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{tag} ")),
                "{p} is not caused by {tag}"
            );
        }
        // The completion: the last packet of each engine's share is the
        // 4-byte semaphore write.
        let last = ends.iter().find(|p| p.get("flow_out").is_none()).unwrap();
        assert_eq!(last["args"]["bytes"], 4, "{last}");
        *linked
            .entry(inst["name"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    // Three words, each rings four engines.
    assert_eq!(
        linked,
        BTreeMap::from([
            ("DIRECT2D #0".to_string(), 4),
            ("DIRECT2D #1".to_string(), 4),
            ("DIRECT2D #2".to_string(), 4)
        ])
    );
    // The word's EVENTS update is an instant.
    assert!(evs.iter().any(|e| e["ph"] == "i"
        && e["name"] == "done"
        && e["args"]["update"] == "SEM_INC_COMPLETE sem[6] += 1"));
}

#[test]
fn host_copies_are_on_the_host_process_and_flow_from_their_ioctl() {
    let (report, v) = timeline("host-dmem-batch.trace", "host.json", &[]);
    check_format(&v);
    assert_eq!(
        packet_slices(&v) as u64,
        report["packets"].as_u64().unwrap()
    );
    let procs = names(&v, "process_name");
    assert_eq!(procs[&(9, None)], "host / driver (H2T engines 128-131)");
    let threads: BTreeSet<String> = names(&v, "thread_name").into_values().collect();
    for t in ["driver ioctls", "driver H2T batches", "eng128 q1"] {
        assert!(threads.contains(t), "{t}: {threads:?}");
    }
    let starts: Vec<&Value> = events(&v)
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "flow")
        .collect();
    assert!(!starts.is_empty());
    assert!(starts.iter().all(|s| s["pid"] == 9 && s["tid"] == 20_000));
}

#[test]
fn filters_shrink_the_timeline() {
    let (_, all) = timeline("fw-semaphore-chain.trace", "all.json", &[]);
    let n = events(&all).len();
    for (out, extra) in [
        ("eng.json", vec!["--perfetto-engines", "0-1"]),
        ("q.json", vec!["--perfetto-queues", "0"]),
        ("win.json", vec!["--perfetto-window", "0..400"]),
    ] {
        let (_, v) = timeline("fw-semaphore-chain.trace", out, &extra);
        check_format(&v);
        assert!(
            events(&v).len() < n,
            "{extra:?}: {} !< {n}",
            events(&v).len()
        );
    }
    let (_, v) = timeline(
        "fw-semaphore-chain.trace",
        "eng.json",
        &["--perfetto-engines", "2"],
    );
    assert!(
        events(&v)
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == "packet")
            .all(|e| e["tid"].as_u64().unwrap() / 10_000 == 102)
    );
    let (_, v) = timeline(
        "fw-semaphore-chain.trace",
        "win.json",
        &["--perfetto-window", "400..500"],
    );
    assert!(
        events(&v)
            .iter()
            .filter(|e| e["ph"] == "X")
            .all(|e| ns(e, "ts") <= 589 && ns(e, "ts") + ns(e, "dur") >= 470)
    );
}

#[test]
fn bad_filters_are_bad_input() {
    let t = trace("copy-hbm-hbm.trace");
    let p = out_path("bad.json");
    let base = [
        "run",
        t.to_str().unwrap(),
        "--perfetto",
        p.to_str().unwrap(),
    ];
    for extra in [
        ["--perfetto-engines", "0-200"],
        ["--perfetto-queues", "16"],
        ["--perfetto-window", "9..3"],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(&extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(extra[0]), "{err}");
    }
    // A filter needs --perfetto.
    let o = run(&["run", t.to_str().unwrap(), "--perfetto-engines", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

struct DirFiles(PathBuf);

impl soc::exec::TraceFiles for DirFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.0.join(path))
    }
    fn write(&mut self, _path: &str, _data: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every golden trace (faults, resets, host runs, all firmware paths)
/// gives a well-formed timeline with one slice per packet the run counted.
#[test]
fn every_golden_trace_exports_a_well_formed_timeline() {
    let dir = trace("");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 3);
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let source = std::fs::read_to_string(&path).unwrap();
        let opts = host_exec::SessionOptions {
            keep_driver_events: true,
            ..host_exec::SessionOptions::default()
        };
        let (report, session) = host_exec::run_source_with(
            soc::Device::trn2().unwrap(),
            &source,
            &name,
            &mut DirFiles(dir.clone()),
            opts,
        )
        .unwrap();
        let meta = timeline::Meta {
            trace: name.clone(),
            clock_ghz: report.summary.clock_ghz,
            end_cycle: report.summary.cycles,
        };
        let out = timeline::export(
            report.steps.iter().flat_map(|s| s.events.iter()),
            session.driver_events(),
            &meta,
            &timeline::Filter::default(),
        );
        let v: Value = serde_json::from_str(&out.json).unwrap();
        check_format(&v);
        assert_eq!(out.packets as u64, report.summary.packets, "{name}");
        assert_eq!(packet_slices(&v), out.packets, "{name}");
        if session.used() {
            assert!(
                count(&v, |e| e["cat"] == "ioctl") > 0,
                "{name}: no ioctl slices"
            );
        }
    }
}
