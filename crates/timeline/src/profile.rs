//! A run's DMA activity as the tables of Neuron Explorer's profile
//! (`DmaPacket`, `DmaPacketAggregated`, `DmaQueuesInfo` and the DMA summary
//! metrics), with their published field names and units
//! (docs/user-guide.md §Profile tables; docs/references/figures.md §A.5,
//! §F): a tool written for hardware profiles reads the simulator's.
//!
//! Built from the same model as the timeline ([`crate::export`]): one
//! `DmaPacket` row per packet that landed, one `DmaPacketAggregated` row per
//! instruction word (or driver ioctl) whose descriptors moved packets, one
//! `DmaQueuesInfo` row per engine queue that moved any. Times are integer
//! nanoseconds from the start of the run (cycles / DMA clock, rounded);
//! throughput is bytes per second.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{Model, Track, Val};
use crate::{FIRST_H2T_ENGINE, Meta};

/// Every table of a profile.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Profile {
    /// `neuron-sim`.
    pub generator: &'static str,
    /// The trace that ran.
    pub trace: String,
    /// DMA clock (GHz) the nanoseconds come from.
    pub clock_ghz: f64,
    /// One row per landed packet, by start time.
    #[serde(rename = "DmaPacket")]
    pub dma_packet: Vec<DmaPacket>,
    /// One row per instruction word or ioctl whose packets landed.
    #[serde(rename = "DmaPacketAggregated")]
    pub dma_packet_aggregated: Vec<DmaPacketAggregated>,
    /// One row per engine queue that moved a packet.
    #[serde(rename = "DmaQueuesInfo")]
    pub dma_queues_info: Vec<DmaQueuesInfo>,
    /// The DMA summary metrics.
    #[serde(rename = "Summary")]
    pub summary: DmaSummary,
}

/// One packet (Neuron Explorer `DmaPacket`).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DmaPacket {
    /// Row number, from 0 in start order.
    pub id: u64,
    /// The packet's index on its queue, from 0.
    pub packet_idx: u64,
    /// The `DmaPacketAggregated.id` this packet belongs to (`tpb0#3`,
    /// `ioctl#2`), or `trace` for descriptors the trace wrote itself.
    pub packet_aggregation_id: String,
    /// Start, ns.
    pub start_ts: u64,
    /// Landing of its last byte, ns.
    pub end_ts: u64,
    /// `end_ts - start_ts`, ns.
    pub duration_ns: u64,
    /// DMA engine (0..127 the NeuronCores' 16 each, 128..131 H2T).
    pub engine_idx: u16,
    /// The NeuronCore the engine belongs to (`None` for the H2T engines).
    pub pcore_idx: Option<u16>,
    /// Queue index on the engine (0..15).
    pub queue_idx: u8,
    /// `engN.qQ`.
    pub queue_name: String,
    /// What filled the queue's rings: `hardware_dynamic` (the Q7 DGE),
    /// `software_dynamic` (the kernel driver's copies), `data`
    /// (descriptors a trace wrote).
    pub queue_type: &'static str,
    /// Bytes the M2S side read.
    pub read_bytes: u64,
    /// Bytes the S2M side wrote.
    pub write_bytes: u64,
    /// Bytes transferred (= `read_bytes`).
    pub transfer_bytes: u64,
    /// `transfer_bytes / duration`, bytes per second.
    pub throughput: f64,
    /// Source address of the first TX descriptor.
    pub src: String,
    /// Destination address of the first RX descriptor.
    pub dst: String,
    /// The CRC or checksum the SDMA-app computed, when it did.
    pub crc: Option<String>,
}

/// One instruction word's or ioctl's DMA (Neuron Explorer
/// `DmaPacketAggregated`, the fields the model knows).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DmaPacketAggregated {
    /// `tpbN#S` (core, submission order), `ioctl#I`, or `trace`.
    pub id: String,
    /// The word's kind (`DIRECT2D`, …), the ioctl, or `desc` for the
    /// trace's own descriptors.
    pub op: String,
    /// The NeuronCore whose firmware ran the word.
    pub pcore_idx: Option<u16>,
    /// Where the instruction came from (`line 12`).
    pub source_line: String,
    /// The memory region the largest packet read (`hbm0`, `tpb0.sbuf`;
    /// the first of equals): the data, not a completion semaphore write.
    pub source: String,
    /// The memory region the largest packet wrote.
    pub dest: String,
    /// The instruction's first firmware event (queued, gated or
    /// generating), ns; for an ioctl or the trace's descriptors, the first
    /// packet's start.
    pub trigger: u64,
    /// When its last packet landed, ns.
    pub completion: u64,
    /// Packets.
    pub packets: u64,
    /// Engines its packets ran on.
    pub engines: u64,
    /// Bytes transferred.
    pub transfer_bytes: u64,
}

/// One engine queue (Neuron Explorer `DmaQueuesInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DmaQueuesInfo {
    /// `engN.qQ`.
    pub name: String,
    /// As `DmaPacket.queue_type` (the first packet's).
    #[serde(rename = "type")]
    pub queue_type: &'static str,
    /// Queue index.
    pub idx: u8,
    /// Engine.
    pub engine_idx: u16,
    /// Packets it moved.
    pub packets: u64,
    /// Bytes it moved.
    pub transfer_bytes: u64,
}

/// Neuron Explorer's DMA summary metrics.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DmaSummary {
    /// Packets.
    pub dma_packets: u64,
    /// Bytes of every packet (`DmaTransferTotalBytes`).
    #[serde(rename = "DmaTransferTotalBytes")]
    pub dma_transfer_total_bytes: u64,
    /// Bytes per packet (Neuron Explorer's target: at least 32,768).
    pub average_dma_size: f64,
    /// Time with at least one packet in flight on any engine, ns.
    pub dma_active_time: u64,
    /// The run's simulated time, ns.
    pub total_time: u64,
}

fn val_u(args: &crate::model::Args, key: &str) -> Option<u64> {
    args.0.iter().find_map(|(k, v)| match v {
        Val::U(x) if *k == key => Some(*x),
        _ => None,
    })
}

fn val_s<'a>(args: &'a crate::model::Args, key: &str) -> Option<&'a str> {
    args.0.iter().find_map(|(k, v)| match v {
        Val::S(x) if *k == key => Some(x.as_str()),
        _ => None,
    })
}

/// The queue type and aggregation id of a packet named by its cause
/// (`tpb0#3 DIRECT2D`, `ioctl NAME`, `packet`).
fn kind_of(name: &str) -> (&'static str, String) {
    let first = name.split_whitespace().next().unwrap_or("");
    if first.starts_with("tpb") {
        ("hardware_dynamic", first.to_string())
    } else if first.starts_with("ioctl#") {
        // One row per ioctl (`ioctl#2`), not per ioctl name.
        ("software_dynamic", first.to_string())
    } else {
        ("data", "trace".to_string())
    }
}

/// Builds the tables. `region` names the memory region of an address
/// (`hbm0`, `tpb3.sbuf`).
pub(crate) fn build(m: &Model, meta: &Meta, region: &dyn Fn(u64) -> String) -> Profile {
    let ghz = if meta.clock_ghz.is_finite() && meta.clock_ghz > 0.0 {
        meta.clock_ghz
    } else {
        1.0
    };
    let ns = |cycle: u64| (cycle as f64 / ghz).round() as u64;
    // Landed packets, by start then order built.
    let mut order: Vec<usize> = m
        .slices
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            s.cat == "packet"
                && !s
                    .args
                    .0
                    .iter()
                    .any(|(k, v)| *k == "landed" && *v == Val::B(false))
        })
        .map(|(i, _)| i)
        .collect();
    order.sort_by_key(|&i| (m.slices[i].start, i));
    // Instruction slices by their `inst` arg (`tpb0#3`).
    let mut insts: BTreeMap<String, usize> = BTreeMap::new();
    for (i, s) in m.slices.iter().enumerate() {
        if s.cat == "inst"
            && let Some(id) = val_s(&s.args, "inst")
        {
            insts.insert(id.to_string(), i);
        }
    }
    let mut packets = Vec::with_capacity(order.len());
    let mut per_queue: BTreeMap<(u16, u8), (u64, u64, &'static str)> = BTreeMap::new();
    let mut agg: BTreeMap<String, DmaPacketAggregated> = BTreeMap::new();
    let mut agg_engines: BTreeMap<String, std::collections::BTreeSet<u16>> = BTreeMap::new();
    // Per aggregate, the bytes of its largest packet so far.
    let mut agg_largest: BTreeMap<String, u64> = BTreeMap::new();
    let mut intervals: Vec<(u64, u64)> = Vec::with_capacity(order.len());
    for (id, &i) in order.iter().enumerate() {
        let s = &m.slices[i];
        let Track::Queue(engine, queue) = s.track else {
            continue;
        };
        let (start, end) = (ns(s.start), ns(s.end));
        let bytes = val_u(&s.args, "bytes").unwrap_or(0);
        let written = val_u(&s.args, "written").unwrap_or(bytes);
        // The slice is named by what rang its doorbell: `tpb0#3 DIRECT2D`,
        // `ioctl#2 …`, or `packet` for the trace's own descriptors.
        let (queue_type, agg_id) = kind_of(&s.name);
        let q = per_queue
            .entry((engine, queue))
            .or_insert((0, 0, queue_type));
        let packet_idx = q.0;
        q.0 += 1;
        q.1 += bytes;
        let duration_ns = end.saturating_sub(start);
        let src = val_s(&s.args, "src").unwrap_or("").to_string();
        let dst = val_s(&s.args, "dst").unwrap_or("").to_string();
        let parse = |t: &str| {
            u64::from_str_radix(t.trim_start_matches("0x"), 16)
                .map(region)
                .unwrap_or_default()
        };
        let a = agg.entry(agg_id.clone()).or_insert_with(|| {
            let inst = insts.get(&agg_id).map(|&k| &m.slices[k]);
            DmaPacketAggregated {
                id: agg_id.clone(),
                op: inst.and_then(|x| val_s(&x.args, "kind")).map_or_else(
                    || match queue_type {
                        "data" => "desc".to_string(),
                        _ => s.name.split_whitespace().nth(1).unwrap_or("").to_string(),
                    },
                    str::to_string,
                ),
                pcore_idx: inst.and_then(|x| match x.track {
                    Track::Firmware(t) => Some(u16::from(t)),
                    _ => None,
                }),
                source_line: inst
                    .and_then(|x| val_s(&x.args, "source"))
                    .unwrap_or("")
                    .to_string(),
                source: parse(&src),
                dest: parse(&dst),
                trigger: inst.map_or(start, |x| ns(x.start)),
                completion: end,
                packets: 0,
                engines: 0,
                transfer_bytes: 0,
            }
        });
        // Source and destination are the largest packet's (the first of
        // equals): the data, not a word's 4-byte completion semaphore
        // write that may start first (docs/user-guide.md §17).
        let largest = agg_largest.entry(agg_id.clone()).or_insert(bytes);
        if bytes > *largest {
            *largest = bytes;
            a.source = parse(&src);
            a.dest = parse(&dst);
        }
        a.packets += 1;
        a.transfer_bytes += bytes;
        a.completion = a.completion.max(end);
        a.trigger = a.trigger.min(start);
        agg_engines
            .entry(agg_id.clone())
            .or_default()
            .insert(engine);
        // In cycles: rounded once, at the end (docs/user-guide.md §17).
        intervals.push((s.start, s.end.max(s.start)));
        packets.push(DmaPacket {
            id: id as u64,
            packet_idx,
            packet_aggregation_id: agg_id,
            start_ts: start,
            end_ts: end,
            duration_ns,
            engine_idx: engine,
            pcore_idx: (engine < FIRST_H2T_ENGINE).then_some(engine / crate::ENGINES_PER_CORE),
            queue_idx: queue,
            queue_name: format!("eng{engine}.q{queue}"),
            queue_type,
            read_bytes: bytes,
            write_bytes: written,
            transfer_bytes: bytes,
            throughput: if duration_ns > 0 {
                bytes as f64 * 1e9 / duration_ns as f64
            } else {
                0.0
            },
            src,
            dst,
            crc: val_s(&s.args, "checksum").map(str::to_string),
        });
    }
    for (id, engines) in agg_engines {
        if let Some(a) = agg.get_mut(&id) {
            a.engines = engines.len() as u64;
        }
    }
    let mut aggregated: Vec<DmaPacketAggregated> = agg.into_values().collect();
    aggregated.sort_by(|a, b| (a.trigger, &a.id).cmp(&(b.trigger, &b.id)));
    // Active time: the union of packet intervals, in cycles, then in ns
    // (rounding each interval first drifted by up to a few ns).
    intervals.sort_unstable();
    let mut active = 0u64;
    let mut cur: Option<(u64, u64)> = None;
    for (a, b) in intervals {
        match cur {
            Some((s, e)) if a <= e => cur = Some((s, e.max(b))),
            Some((s, e)) => {
                active += e - s;
                cur = Some((a, b));
            }
            None => cur = Some((a, b)),
        }
    }
    if let Some((s, e)) = cur {
        active += e - s;
    }
    let total_bytes: u64 = packets.iter().map(|p| p.transfer_bytes).sum();
    let n = packets.len() as u64;
    Profile {
        generator: "neuron-sim",
        trace: meta.trace.clone(),
        clock_ghz: ghz,
        dma_queues_info: per_queue
            .into_iter()
            .map(|((engine, queue), (count, bytes, ty))| DmaQueuesInfo {
                name: format!("eng{engine}.q{queue}"),
                queue_type: ty,
                idx: queue,
                engine_idx: engine,
                packets: count,
                transfer_bytes: bytes,
            })
            .collect(),
        dma_packet: packets,
        dma_packet_aggregated: aggregated,
        summary: DmaSummary {
            dma_packets: n,
            dma_transfer_total_bytes: total_bytes,
            average_dma_size: if n > 0 {
                total_bytes as f64 / n as f64
            } else {
                0.0
            },
            dma_active_time: ns(active),
            total_time: ns(meta.end_cycle),
        },
    }
}
