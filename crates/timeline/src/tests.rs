//! The exporter on small synthetic event lists.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use kdriver::h2t::Ctx;
use kdriver::{DriverEvent, DriverEventKind};
use q7::{FwEvent, FwEventKind, InstTag};
use serde_json::Value;
use soc::DeviceEvent;
use soc_map::Hex;
use udma::{Dir, EngineEvent, EventKind};

use super::*;

fn eng(cycle: u64, engine: u16, kind: EventKind) -> DeviceEvent {
    DeviceEvent::Engine(EngineEvent {
        cycle,
        engine,
        kind,
    })
}

fn fw(at: u64, tpb: u8, seq: u64, kind: FwEventKind) -> DeviceEvent {
    DeviceEvent::Firmware(FwEvent {
        at,
        tpb,
        inst: InstTag {
            seq,
            source: format!("line {}", 10 + seq),
        },
        kind,
    })
}

fn doorbell(cycle: u64, engine: u16, dir: Dir, queue: u8, increment: u32) -> DeviceEvent {
    eng(
        cycle,
        engine,
        EventKind::Doorbell {
            dir,
            queue,
            increment,
            tail: increment,
            tail_ring_id: 1,
        },
    )
}

fn start(cycle: u64, engine: u16, queue: u8, bytes: u64, done_at: u64) -> DeviceEvent {
    eng(
        cycle,
        engine,
        EventKind::PacketStart {
            queue,
            tx_descs: 1,
            rx_descs: 1,
            bytes,
            done_at,
            src: Hex(0x10_0000),
            dst: Hex(0x20_0000),
        },
    )
}

fn done(cycle: u64, engine: u16, queue: u8, bytes: u64) -> DeviceEvent {
    eng(
        cycle,
        engine,
        EventKind::PacketDone {
            queue,
            bytes,
            checksum: None,
        },
    )
}

fn meta() -> Meta {
    Meta {
        trace: "t.trace".into(),
        clock_ghz: 0.85,
        end_cycle: 400,
    }
}

fn run(events: &[DeviceEvent], driver: &[(u64, DriverEvent)], f: &Filter) -> (Export, Value) {
    let out = export(events, driver, &meta(), f);
    let v: Value = serde_json::from_str(&out.json).expect("valid JSON");
    (out, v)
}

fn trace_events(v: &Value) -> &Vec<Value> {
    v["traceEvents"].as_array().unwrap()
}

fn by_ph<'a>(v: &'a Value, ph: &str) -> Vec<&'a Value> {
    trace_events(v).iter().filter(|e| e["ph"] == ph).collect()
}

/// Packets are async slices (`b` … `e`, paired by `id`, named by their
/// queue's track, the doorbell's cause in `args.cause`): each as one object
/// with the begin's fields, `dur` from its end, and `name` = its cause.
fn packets(v: &Value) -> Vec<Value> {
    let ends: Vec<&Value> = by_ph(v, "e")
        .into_iter()
        .filter(|e| e["cat"] == "packet")
        .collect();
    by_ph(v, "b")
        .into_iter()
        .filter(|e| e["cat"] == "packet")
        .map(|b| {
            let e = ends
                .iter()
                .find(|e| e["id"] == b["id"] && e["pid"] == b["pid"])
                .expect("every packet begin has its end");
            assert_eq!(e["name"], b["name"], "a packet ends on its track");
            let mut p = b.clone();
            let dur = e["ts"].as_f64().unwrap() - b["ts"].as_f64().unwrap();
            p["dur"] = serde_json::json!((dur * 1000.0).round() / 1000.0);
            p["track"] = b["name"].clone();
            p["name"] = b["args"]["cause"].clone();
            p
        })
        .collect()
}

/// One 8 KiB copy on engine 4 queue 2, rung by the trace.
fn one_copy() -> Vec<DeviceEvent> {
    vec![
        doorbell(1, 4, Dir::S2m, 2, 1),
        doorbell(1, 4, Dir::M2s, 2, 1),
        start(23, 4, 2, 8192, 339),
        done(339, 4, 2, 8192),
    ]
}

#[test]
fn a_packet_is_a_complete_slice_with_its_fields_and_ns_times() {
    let (out, v) = run(&one_copy(), &[], &Filter::default());
    assert_eq!(v["displayTimeUnit"], "ns");
    assert_eq!(v["otherData"]["clock_ghz"], "0.85");
    let p = packets(&v);
    assert_eq!(p.len(), 1);
    assert_eq!(out.packets, 1);
    let p = &p[0];
    // 23 cycles / 0.85 GHz = 27.06 ns; 339 / 0.85 = 398.8 ns.
    assert_eq!(p["ts"], 0.027);
    assert_eq!(p["dur"], 0.372);
    assert_eq!(p["pid"], 1);
    assert_eq!(p["tid"], 1_040_300);
    assert_eq!(p["name"], "packet");
    let a = &p["args"];
    assert_eq!(a["queue"], 2);
    assert_eq!(a["tx_descriptors"], 1);
    assert_eq!(a["rx_descriptors"], 1);
    assert_eq!(a["bytes"], 8192);
    assert_eq!(a["src"], "0x100000");
    assert_eq!(a["dst"], "0x200000");
    assert_eq!(a["cycles"], "23..339");
    // All it carried was written.
    assert!(a.get("written").is_none());
    // Names and order of the process and the track.
    let m = by_ph(&v, "M");
    let named = |n: &str, tid: Option<u64>| {
        m.iter()
            .find(|e| e["name"] == n && tid.is_none_or(|t| e["tid"] == t))
            .map(|e| e["args"].clone())
    };
    assert_eq!(
        named("process_name", None).unwrap()["name"],
        "NeuronCore 0 (tpb0, engines 0-15)"
    );
    assert_eq!(named("process_sort_index", None).unwrap()["sort_index"], 1);
    assert_eq!(
        named("thread_name", Some(1_040_300)).unwrap()["name"],
        "eng4 q2"
    );
    assert_eq!(
        named("thread_sort_index", Some(1_040_300)).unwrap()["sort_index"],
        1_040_300
    );
    // Metadata comes first; then time order.
    let evs = trace_events(&v);
    let first_timed = evs.iter().position(|e| e["ph"] != "M").unwrap();
    assert!(evs[first_timed..].iter().all(|e| e["ph"] != "M"));
    let ts: Vec<f64> = evs[first_timed..]
        .iter()
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(out.events, evs.len());
}

#[test]
fn doorbells_are_instants_and_counters_follow_occupancy_and_bytes_in_flight() {
    let (_, v) = run(&one_copy(), &[], &Filter::default());
    let i = by_ph(&v, "i");
    assert_eq!(i.len(), 2);
    assert!(i.iter().all(|e| e["cat"] == "doorbell" && e["s"] == "t"));
    assert_eq!(i[0]["name"], "doorbell s2m +1");
    assert_eq!(i[0]["ts"], 0.001);
    assert_eq!(i[0]["args"]["tail"], 1);
    let c = by_ph(&v, "C");
    let series = |name: &str, key: &str| -> Vec<(f64, u64)> {
        c.iter()
            .filter(|e| e["name"] == name)
            .map(|e| (e["ts"].as_f64().unwrap(), e["args"][key].as_u64().unwrap()))
            .collect()
    };
    assert_eq!(
        series("eng4 in flight", "bytes"),
        vec![(0.027, 8192), (0.399, 0)]
    );
    // Both doorbells at cycle 1 merge into one sample; the packet's
    // descriptors complete when it lands.
    assert_eq!(series("eng4.q2 queued", "tx"), vec![(0.001, 1), (0.399, 0)]);
    assert_eq!(series("eng4.q2 queued", "rx"), vec![(0.001, 1), (0.399, 0)]);
}

#[test]
fn overlapping_packets_of_a_queue_stack_on_one_async_track() {
    let events = vec![
        doorbell(1, 0, Dir::S2m, 0, 3),
        start(10, 0, 0, 1024, 80),
        start(40, 0, 0, 1024, 110),
        start(80, 0, 0, 1024, 150),
        done(80, 0, 0, 1024),
        done(110, 0, 0, 1024),
        done(150, 0, 0, 1024),
    ];
    let (_, v) = run(&events, &[], &Filter::default());
    let p = packets(&v);
    assert_eq!(p.len(), 3);
    // One name (the queue's track) and one process for all three, each its
    // own id: Perfetto stacks the overlapping ones on that one track.
    assert!(p.iter().all(|p| p["track"] == "eng0 q0" && p["pid"] == 1));
    let ids: BTreeSet<u64> = p.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), 3);
    // No overflow lanes: the queue has one thread track, for its doorbells
    // and counters.
    let names: Vec<String> = by_ph(&v, "M")
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"eng0 q0".to_string()));
    assert!(
        !names.iter().any(|n| n.starts_with("eng0 q0 (")),
        "{names:?}"
    );
    // No complete (`X`) slice for a packet.
    assert!(by_ph(&v, "X").iter().all(|e| e["cat"] != "packet"));
}

/// A DIRECT2D word on core 1 that rings engine 17 queue 3 with a data
/// packet and a semaphore write.
fn one_word() -> Vec<DeviceEvent> {
    vec![
        fw(
            5,
            1,
            0,
            FwEventKind::Waiting {
                sem: 6,
                mode: "WAIT_FOR_SEM_GE_IMM".into(),
                threshold: 1,
                value: 0,
            },
        ),
        fw(
            12,
            1,
            0,
            FwEventKind::Released {
                sem: 6,
                mode: "WAIT_FOR_SEM_GE_IMM".into(),
                threshold: 1,
                value: 1,
                start_cycle: 20,
            },
        ),
        fw(
            20,
            1,
            0,
            FwEventKind::Generating {
                kind: "DIRECT2D".into(),
                engines: 1,
                descriptors: 4,
                bytes: 1024,
                cycles: 10,
            },
        ),
        fw(
            30,
            1,
            0,
            FwEventKind::Doorbell {
                engine: 17,
                queue: 3,
                m2s_first: 0,
                s2m_first: 0,
                count: 2,
                m2s_count: 2,
                bytes: 1024,
            },
        ),
        doorbell(31, 17, Dir::S2m, 3, 2),
        doorbell(31, 17, Dir::M2s, 3, 2),
        start(50, 17, 3, 1024, 120),
        start(90, 17, 3, 4, 130),
        done(120, 17, 3, 1024),
        done(130, 17, 3, 4),
        fw(
            130,
            1,
            0,
            FwEventKind::Done {
                update: Some("SEM_INC_COMPLETE sem[4] += 1".into()),
            },
        ),
    ]
}

#[test]
fn an_instruction_is_a_slice_and_flows_to_its_packets() {
    let (out, v) = run(&one_word(), &[], &Filter::default());
    let x = by_ph(&v, "X");
    let inst = x.iter().find(|e| e["cat"] == "inst").unwrap();
    assert_eq!(inst["name"], "DIRECT2D #0");
    assert_eq!(inst["pid"], 2);
    assert_eq!(inst["tid"], 10_100);
    assert_eq!(inst["args"]["inst"], "tpb1#0");
    assert_eq!(inst["args"]["source"], "line 10");
    assert_eq!(inst["args"]["update"], "SEM_INC_COMPLETE sem[4] += 1");
    assert_eq!(inst["args"]["start_cycle"], 5);
    assert_eq!(inst["args"]["end_cycle"], 130);
    // Its wait and its descriptor generation, on the same track.
    for (cat, a, b) in [("inst.wait", 5, 20), ("inst.generate", 20, 30)] {
        let s = x.iter().find(|e| e["cat"] == cat).unwrap();
        assert_eq!(s["tid"], 10_100);
        let ns = |c: u64| (c as f64 / 0.85).round() / 1000.0;
        assert_eq!(s["ts"], ns(a));
        assert!((s["ts"].as_f64().unwrap() + s["dur"].as_f64().unwrap() - ns(b)).abs() < 1e-9);
    }
    let p = packets(&v);
    assert_eq!(p.len(), 2);
    assert!(p.iter().all(|p| p["name"] == "tpb1#0 DIRECT2D"));
    assert!(p.iter().all(|p| p["pid"] == 2));
    // One flow: instruction → first packet → last packet, bound
    // (`bind_id`): a zero-length `doorbell` slice inside the instruction
    // where the doorbell rang (cycle 31) starts it, the first packet steps
    // it (in and out), the last ends it.
    assert_eq!(out.flows, 1);
    let src: Vec<&Value> = by_ph(&v, "X")
        .into_iter()
        .filter(|e| e["cat"] == "flow")
        .collect();
    assert_eq!(src.len(), 1);
    assert_eq!(src[0]["name"], "doorbell");
    assert_eq!(src[0]["tid"], 10_100);
    assert_eq!(src[0]["ts"], 0.036);
    assert_eq!(src[0]["dur"], 0.0);
    assert_eq!(src[0]["bind_id"], 1);
    assert_eq!(src[0]["flow_out"], true);
    assert!(src[0].get("flow_in").is_none());
    assert_eq!(p[0]["bind_id"], 1);
    assert_eq!(
        (&p[0]["flow_in"], &p[0]["flow_out"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    assert_eq!(p[1]["bind_id"], 1);
    assert_eq!(p[1]["flow_in"], true);
    assert!(p[1].get("flow_out").is_none());
    // The source comes before the packets in the file, inside the
    // instruction's time.
    let evs = trace_events(&v);
    let at = |e: &Value| evs.iter().position(|x| x == e).unwrap();
    assert!(at(inst) < at(src[0]), "a child slice follows its parent");
    let first_b = evs
        .iter()
        .position(|e| e["ph"] == "b" && e["cat"] == "packet")
        .unwrap();
    assert!(at(src[0]) < first_b);
    // Firmware steps are instants on their own track.
    let i = by_ph(&v, "i");
    let d = i.iter().find(|e| e["name"] == "done").unwrap();
    assert_eq!(d["tid"], 9_001);
    assert_eq!(d["args"]["update"], "SEM_INC_COMPLETE sem[4] += 1");
    assert!(i.iter().any(|e| e["name"] == "wait sem[6]"));
    // The release (docs/timing.md `q7_sem_wake_cycles`) names when the word
    // starts; the wait slice above runs on to that start.
    let r = i.iter().find(|e| e["name"] == "released sem[6]").unwrap();
    assert_eq!(r["tid"], 9_001);
    assert_eq!(r["args"]["start_cycle"], 20);
    assert_eq!(r["args"]["value"], 1);
    // The engine doorbell names its cause.
    assert!(
        i.iter()
            .filter(|e| e["cat"] == "doorbell")
            .all(|e| e["args"]["cause"] == "tpb1#0 DIRECT2D")
    );
}

fn ioctl(cycle: u64, name: &str) -> DriverEvent {
    DriverEvent {
        cycle,
        kind: DriverEventKind::Ioctl {
            name: name.into(),
            result: "0".into(),
        },
    }
}

#[test]
fn an_ioctl_flows_to_the_h2t_packets_it_rang() {
    let driver = vec![
        (0, ioctl(0, "MEM_ALLOC_V2MT64")),
        (
            0,
            DriverEvent {
                cycle: 400,
                kind: DriverEventKind::H2tBatch {
                    nc: 0,
                    engine: 128,
                    queue: 0,
                    ctx: Ctx::Sync,
                    descs: 2,
                    bytes: 1024,
                    start_cycle: 0,
                    end_cycle: 400,
                    completed: true,
                },
            },
        ),
        (0, ioctl(400, "MEM_BUF_COPY64")),
        (
            400,
            DriverEvent {
                cycle: 400,
                kind: DriverEventKind::Log {
                    line: "hello".into(),
                },
            },
        ),
    ];
    let events = vec![
        doorbell(1, 128, Dir::S2m, 0, 2),
        doorbell(1, 128, Dir::M2s, 0, 2),
        start(20, 128, 0, 1024, 300),
        start(60, 128, 0, 4, 390),
        done(300, 128, 0, 1024),
        done(390, 128, 0, 4),
    ];
    let (out, v) = run(&events, &driver, &Filter::default());
    let x = by_ph(&v, "X");
    let io: Vec<&&Value> = x.iter().filter(|e| e["cat"] == "ioctl").collect();
    assert_eq!(io.len(), 2);
    assert!(
        io.iter()
            .all(|e| e["pid"] == HOST_PID && e["tid"] == 20_000)
    );
    assert_eq!(io[1]["name"], "MEM_BUF_COPY64");
    assert_eq!(io[1]["dur"], 0.471);
    let b = x.iter().find(|e| e["cat"] == "h2t").unwrap();
    assert_eq!(b["args"]["ctx"], "Sync");
    let p = packets(&v);
    assert!(p.iter().all(|p| p["pid"] == HOST_PID));
    // Named by the ioctl (the run's second, from 0) as a word's packets
    // are by the word: one aggregated profile row per ioctl.
    assert!(p.iter().all(|p| p["name"] == "ioctl#1 MEM_BUF_COPY64"));
    assert_eq!(out.flows, 1);
    // The flow starts inside the ioctl, on the ioctl track.
    let src: Vec<&&Value> = x.iter().filter(|e| e["cat"] == "flow").collect();
    assert_eq!(src.len(), 1);
    assert_eq!(src[0]["tid"], 20_000);
    assert_eq!(src[0]["flow_out"], true);
    assert_eq!(p.last().unwrap()["bind_id"], src[0]["bind_id"]);
    let log = by_ph(&v, "i")
        .into_iter()
        .find(|e| e["name"] == "driver log")
        .unwrap();
    assert_eq!(log["args"]["line"], "hello");
    let m = by_ph(&v, "M");
    assert!(m.iter().any(|e| e["name"] == "process_name"
        && e["pid"] == HOST_PID
        && e["args"]["name"] == "host / driver (H2T engines 128-131)"));
}

#[test]
fn a_packet_that_never_lands_is_marked() {
    let events = vec![
        doorbell(1, 2, Dir::S2m, 1, 1),
        start(10, 2, 1, 64, 500),
        eng(
            12,
            2,
            EventKind::Fault {
                dir: Dir::S2m,
                queue: Some(1),
                cause: "SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE".into(),
                detail: "data write at 0x0".into(),
                action: "queue_non_active".into(),
            },
        ),
    ];
    let (out, v) = run(&events, &[], &Filter::default());
    assert_eq!(out.packets, 0);
    let lost = by_ph(&v, "X")
        .into_iter()
        .find(|e| e["cat"] == "packet.lost")
        .unwrap();
    assert_eq!(lost["args"]["landed"], false);
    let fault = by_ph(&v, "i")
        .into_iter()
        .find(|e| e["cat"] == "fault")
        .unwrap();
    assert_eq!(fault["name"], "FAULT SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE");
    assert_eq!(fault["args"]["action"], "queue_non_active");
    assert_eq!(fault["tid"], 1_020_200);
}

#[test]
fn filters_keep_engines_queues_and_a_window() {
    let mut events = one_word();
    events.extend(one_copy());
    let (all, v_all) = run(&events, &[], &Filter::default());
    assert_eq!(packets(&v_all).len(), 3);

    // Engines: only engine 4 (core 0); core 1's firmware goes too.
    let f = Filter {
        engines: Some(parse_list("4", ENGINES).unwrap()),
        ..Filter::default()
    };
    let (o, v) = run(&events, &[], &f);
    assert!(o.events < all.events);
    assert_eq!(packets(&v).len(), 1);
    assert!(trace_events(&v).iter().all(|e| e["pid"] == 1));
    assert_eq!(v["otherData"]["engines"], "4");

    // Queues: only queue 3 (engine 17's).
    let f = Filter {
        queues: Some([3].into()),
        ..Filter::default()
    };
    let (_, v) = run(&events, &[], &f);
    assert_eq!(packets(&v).len(), 2);
    assert!(by_ph(&v, "C").iter().all(|e| e["name"] != "eng4.q2 queued"));

    // Window: cycles 100..200 keep the slices overlapping it; the
    // counters start from their value at cycle 100.
    let f = Filter {
        window: Some(parse_window("100..200").unwrap()),
        ..Filter::default()
    };
    let (o, v) = run(&events, &[], &f);
    assert!(o.events < all.events);
    let p = packets(&v);
    // 8 KiB copy (23..339), data packet (50..120), semaphore (90..130).
    assert_eq!(p.len(), 3);
    let inflight: Vec<&Value> = by_ph(&v, "C")
        .into_iter()
        .filter(|e| e["name"] == "eng4 in flight")
        .collect();
    assert_eq!(inflight[0]["ts"], 0.118);
    assert_eq!(inflight[0]["args"]["bytes"], 8192);
    assert!(by_ph(&v, "i").iter().all(|e| {
        let t = e["ts"].as_f64().unwrap();
        (0.117..=0.236).contains(&t)
    }));
    // A window past everything leaves the flows out too.
    let f = Filter {
        window: Some(parse_window("1000..").unwrap()),
        ..Filter::default()
    };
    let (o, v) = run(&events, &[], &f);
    assert_eq!(o.flows, 0);
    assert!(packets(&v).is_empty());
    // An open end is written as given, not as the largest cycle (a
    // probe's finding: "1000..18446744073709551615").
    assert_eq!(v["otherData"]["window"], "1000..");
}

#[test]
fn output_is_deterministic() {
    let mut events = one_word();
    events.extend(one_copy());
    let a = export(&events, &[], &meta(), &Filter::default());
    let b = export(&events, &[], &meta(), &Filter::default());
    assert_eq!(a, b);
}

#[test]
fn an_empty_run_is_still_a_valid_trace() {
    let (out, v) = run(&[], &[], &Filter::default());
    assert_eq!(out.events, 0);
    assert!(trace_events(&v).is_empty());
}

#[test]
fn lists_and_windows_parse() {
    assert_eq!(
        parse_list("0-3,128", ENGINES).unwrap(),
        [0, 1, 2, 3, 128].into()
    );
    assert_eq!(parse_list(" 5 , 0x10 ", 132).unwrap(), [5, 16].into());
    assert!(parse_list("3-1", 132).unwrap_err().contains("backwards"));
    assert!(parse_list("132", 132).unwrap_err().contains("below 132"));
    assert!(parse_list("1,,2", 132).is_err());
    assert!(parse_list("x", 132).unwrap_err().contains("not a number"));
    assert_eq!(
        parse_window("100..2_000").unwrap(),
        Window {
            start: 100,
            end: 2000
        }
    );
    assert_eq!(parse_window("..50").unwrap(), Window { start: 0, end: 50 });
    assert_eq!(parse_window("7..").unwrap().end, u64::MAX);
    assert!(parse_window("5").is_err());
    assert!(parse_window("9..3").is_err());
}
