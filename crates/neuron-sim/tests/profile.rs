//! `run --profile FILE`: the run's DMA activity as Neuron Explorer's
//! profile tables (docs/user-guide.md §Profile tables), checked against the
//! run's own report on golden traces of each kind of queue.
#![allow(clippy::unwrap_used)]

mod common;

use common::{run, text, tmp};
use serde_json::Value;

fn traces(name: &str) -> String {
    format!("{}/../../traces/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `trace` with `--profile` and `--json`; (profile, report).
fn profile(trace: &str) -> (Value, Value) {
    let out_path = tmp("profile", &format!("{}.json", trace.replace('/', "-")), "");
    let out = run(&[
        "run",
        "--json",
        "--profile",
        out_path.to_str().unwrap(),
        &traces(trace),
    ]);
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{}",
        text(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    (p, report)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

/// The tables agree with each other and with the run's report.
fn check_consistent(p: &Value, report: &Value) {
    let packets = p["DmaPacket"].as_array().unwrap();
    let sum = &p["Summary"];
    assert_eq!(u(&sum["dma_packets"]), packets.len() as u64);
    assert_eq!(
        u(&sum["dma_packets"]),
        u(&report["packets"]),
        "as the run counts them"
    );
    let total: u64 = packets.iter().map(|r| u(&r["transfer_bytes"])).sum();
    assert_eq!(u(&sum["DmaTransferTotalBytes"]), total);
    let avg = sum["average_dma_size"].as_f64().unwrap();
    assert!((avg - total as f64 / packets.len() as f64).abs() < 1e-6);
    let mut prev = 0;
    for (i, r) in packets.iter().enumerate() {
        assert_eq!(u(&r["id"]), i as u64);
        assert!(u(&r["start_ts"]) >= prev, "rows in start order");
        prev = u(&r["start_ts"]);
        assert_eq!(u(&r["duration_ns"]), u(&r["end_ts"]) - u(&r["start_ts"]));
        assert_eq!(
            r["queue_name"].as_str().unwrap(),
            format!("eng{}.q{}", r["engine_idx"], r["queue_idx"])
        );
    }
    let agg: u64 = p["DmaPacketAggregated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| u(&a["packets"]))
        .sum();
    assert_eq!(agg, packets.len() as u64, "every packet in one aggregate");
    let queues: u64 = p["DmaQueuesInfo"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| u(&q["packets"]))
        .sum();
    assert_eq!(queues, packets.len() as u64);
    assert!(u(&sum["dma_active_time"]) <= u(&sum["total_time"]));
    assert!(u(&sum["dma_active_time"]) > 0);
}

#[test]
fn a_firmware_word_is_one_aggregate_of_hardware_dynamic_packets() {
    let (p, report) = profile("fw-tile-load-bf16.trace");
    check_consistent(&p, &report);
    let agg = p["DmaPacketAggregated"].as_array().unwrap();
    assert_eq!(agg.len(), 1, "{agg:#?}");
    let a = &agg[0];
    assert_eq!(a["id"], "tpb0#0");
    assert_eq!(a["op"], "DIRECT2D");
    assert_eq!(a["source"], "hbm0");
    assert_eq!(a["dest"], "tpb0.sbuf");
    assert_eq!(u(&a["engines"]), 16);
    assert_eq!(u(&a["packets"]), 144);
    assert_eq!(p["DmaQueuesInfo"].as_array().unwrap().len(), 16);
    assert!(
        p["DmaPacket"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["queue_type"] == "hardware_dynamic" && r["pcore_idx"] == 0)
    );
    // 1 MiB of bf16 tile in 128 × 8 KiB packets plus 16 semaphore writes.
    assert_eq!(
        u(&p["Summary"]["DmaTransferTotalBytes"]),
        1_048_576 + 16 * 4
    );
}

#[test]
fn trace_descriptors_and_driver_copies_have_their_queue_types() {
    let (p, report) = profile("copy-hbm-hbm.trace");
    check_consistent(&p, &report);
    let rows = p["DmaPacket"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["queue_type"] == "data"), "{rows:#?}");
    assert_eq!(p["DmaPacketAggregated"][0]["op"], "desc");

    let (p, report) = profile("host-dmem-size-classes.trace");
    check_consistent(&p, &report);
    let rows = p["DmaPacket"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["queue_type"] == "software_dynamic"));
    assert!(
        rows.iter()
            .filter(|r| r["queue_type"] == "software_dynamic")
            .all(|r| u(&r["engine_idx"]) >= 128 && r["pcore_idx"].is_null())
    );
}

/// A probe's finding (a wrong result): every ioctl of one name was one
/// aggregated row (`ioctl MEM_COPY_ASYNC64`: a copy-in and a copy-out
/// merged, 15 ioctls of both directions spanning the whole run). The
/// schema promises one row per ioctl, `ioctl#I`: each row's packets come
/// from one ioctl, in one direction.
#[test]
fn each_driver_ioctl_is_its_own_aggregate() {
    let (p, report) = profile("host-dmem-size-classes.trace");
    check_consistent(&p, &report);
    let rows: Vec<&Value> = p["DmaPacketAggregated"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["id"].as_str().unwrap().starts_with("ioctl"))
        .collect();
    assert!(rows.len() > 2, "{rows:#?}");
    let ids: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), rows.len(), "one row per ioctl: {rows:#?}");
    for r in &rows {
        let id = r["id"].as_str().unwrap();
        assert!(
            id.strip_prefix("ioctl#")
                .is_some_and(|n| n.parse::<u32>().is_ok()),
            "{id}"
        );
        assert_eq!(r["op"], "MEM_COPY_ASYNC64", "{r}");
    }
    // Both directions, each its own row.
    assert!(rows.iter().any(|r| r["dest"] == "host"), "{rows:#?}");
    assert!(rows.iter().any(|r| r["source"] == "host"), "{rows:#?}");
}

/// A probe's finding: `dma_active_time` was the union of the packets'
/// intervals rounded to ns one by one (1312 ns on dge-16-words, 6 ns off);
/// it is the union in cycles divided by the clock, rounded once, as the
/// other times are (user guide §17). The cycles come from the timeline.
#[test]
fn dma_active_time_is_the_union_of_packet_cycles_rounded_once() {
    let dir = tmp("profile", "active", "");
    let (p_path, t_path) = (dir.with_extension("p.json"), dir.with_extension("t.json"));
    let out = run(&[
        "run",
        "-q",
        "--profile",
        p_path.to_str().unwrap(),
        "--perfetto",
        t_path.to_str().unwrap(),
        &traces("calib/dge-16-words.trace"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&p_path).unwrap()).unwrap();
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&t_path).unwrap()).unwrap();
    let mut cycles: Vec<(u64, u64)> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "b" && e["cat"] == "packet")
        .map(|e| {
            let (a, b) = e["args"]["cycles"]
                .as_str()
                .unwrap()
                .split_once("..")
                .unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    cycles.sort_unstable();
    let (mut union, mut cur) = (0u64, None::<(u64, u64)>);
    for (a, b) in cycles {
        cur = match cur {
            Some((s, e)) if a <= e => Some((s, e.max(b))),
            Some((s, e)) => {
                union += e - s;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    union += cur.map_or(0, |(s, e)| e - s);
    let ghz = p["clock_ghz"].as_f64().unwrap();
    let want = (union as f64 / ghz).round() as u64;
    assert_eq!(u(&p["Summary"]["dma_active_time"]), want, "{union} cycles");
}

/// A probe's finding (misleading): an HBM->SBUF transpose word's row said
/// `tpb0.dge_memory -> tpb0.evt_sem`, the regions of its 4-byte completion
/// semaphore write, which starts first; its data never showed. The row
/// names the largest packet's regions: the data.
#[test]
fn a_words_row_names_the_regions_of_its_data() {
    let (p, report) = profile("calib/xpose-hbm-sbuf.trace");
    check_consistent(&p, &report);
    let row = p["DmaPacketAggregated"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "tpb0#0")
        .unwrap();
    assert_eq!(
        (&row["source"], &row["dest"]),
        (&Value::from("hbm0"), &Value::from("tpb0.sbuf")),
        "{row}"
    );
}

#[test]
fn the_profile_can_go_to_standard_output() {
    let out = run(&[
        "run",
        "-q",
        "--profile",
        "-",
        &traces("fw-tile-load-bf16.trace"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&p["Summary"]["dma_packets"]), 144);
    assert!(text(&out.stderr).contains("profile: 144 DMA packets"));
}
