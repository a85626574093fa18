//! The model, filtered, laid out on lanes and written as trace-event JSON.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::model::{Args, Model, Track, Val};
use crate::{ENGINES, ENGINES_PER_CORE, Export, FIRST_H2T_ENGINE, Filter, HOST_PID, Meta, Window};

/// The `cat` of metadata events (track and process names and order), as
/// Chrome's own traces write it: every event has a `cat`, which some
/// consumers require.
const META_CAT: &str = "__metadata";

/// Lanes per track beyond which overlapping slices share the last lane.
const MAX_LANES: u64 = 99;

impl Serialize for Val {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Val::U(v) => s.serialize_u64(*v),
            Val::S(v) => s.serialize_str(v),
            Val::B(v) => s.serialize_bool(*v),
        }
    }
}

impl Serialize for Args {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// One trace event as written.
#[derive(Serialize)]
struct Ev<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    cat: &'a str,
    ph: char,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bind_id: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    flow_in: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    flow_out: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<&'a Args>,
}

impl<'a> Ev<'a> {
    fn new(name: &'a str, ph: char, pid: u32) -> Self {
        Self {
            name,
            cat: "",
            ph,
            ts: None,
            dur: None,
            pid,
            tid: None,
            s: None,
            id: None,
            bp: None,
            bind_id: None,
            flow_in: false,
            flow_out: false,
            args: None,
        }
    }
}

/// Cycles → integer ns.
struct Clock(f64);

impl Clock {
    fn ns(&self, cycle: u64) -> u64 {
        // Rounded, non-negative, saturating: float → int `as` is defined.
        (cycle as f64 / self.0).round() as u64
    }
}

/// µs with three decimals (ns resolution).
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn pid_of_engine(e: u16) -> u32 {
    if e >= FIRST_H2T_ENGINE {
        HOST_PID
    } else {
        u32::from(e / ENGINES_PER_CORE) + 1
    }
}

fn pid_of(track: Track) -> u32 {
    match track {
        Track::Queue(e, _) | Track::Engine(e) => pid_of_engine(e),
        Track::Firmware(t) | Track::FwEvents(t) => u32::from(t) + 1,
        Track::Ioctls | Track::H2t | Track::DriverLog => HOST_PID,
    }
}

/// Track ids are unique across processes (Perfetto keys threads by tid).
fn tid_of(track: Track, lane: u64) -> u64 {
    let lane = lane.min(MAX_LANES);
    match track {
        Track::Queue(e, q) => 1_000_000 + u64::from(e) * 10_000 + (u64::from(q) + 1) * 100 + lane,
        Track::Engine(e) => 1_000_000 + u64::from(e) * 10_000,
        Track::FwEvents(t) => 9_000 + u64::from(t),
        Track::Firmware(t) => 10_000 + u64::from(t) * 100 + lane,
        Track::DriverLog => 19_000,
        Track::Ioctls => 20_000 + lane,
        Track::H2t => 20_100 + lane,
    }
}

fn track_name(track: Track, lane: u64) -> String {
    let base = match track {
        Track::Queue(e, q) => format!("eng{e} q{q}"),
        Track::Engine(e) => format!("eng{e}"),
        Track::Firmware(_) => "Q7 instructions".into(),
        Track::FwEvents(_) => "Q7 events".into(),
        Track::Ioctls => "driver ioctls".into(),
        Track::DriverLog => "driver log".into(),
        Track::H2t => "driver H2T batches".into(),
    };
    if lane == 0 {
        base
    } else {
        format!("{base} ({})", lane + 1)
    }
}

fn process_name(pid: u32) -> String {
    if pid == HOST_PID {
        "host / driver (H2T engines 128-131)".into()
    } else {
        let t = pid - 1;
        let first = t * u32::from(ENGINES_PER_CORE);
        format!(
            "NeuronCore {t} (tpb{t}, engines {first}-{})",
            first + u32::from(ENGINES_PER_CORE) - 1
        )
    }
}

fn track_kept(f: &Filter, track: Track) -> bool {
    match track {
        Track::Queue(e, q) => f.engine(e) && f.queue(q),
        Track::Engine(e) => f.engine(e),
        Track::Firmware(t) | Track::FwEvents(t) => {
            let first = u16::from(t) * ENGINES_PER_CORE;
            f.any_engine(first..first + ENGINES_PER_CORE)
        }
        Track::Ioctls | Track::H2t | Track::DriverLog => f.any_engine(FIRST_H2T_ENGINE..ENGINES),
    }
}

/// What goes out, before sorting by time.
enum Out {
    Slice(usize),
    /// A packet's async begin (`b`) and end (`e`).
    PacketBegin(usize),
    PacketEnd(usize),
    /// A flow's source: a zero-length slice inside the cause where its
    /// doorbell rang.
    FlowSource {
        id: u64,
        slice: usize,
    },
    Instant(usize),
    Counter {
        track: Track,
        name: String,
        args: Args,
    },
}

/// A packet: drawn as an async slice so that a queue's overlapping packets
/// stack on one track.
fn is_packet(s: &crate::model::Slice) -> bool {
    s.cat == "packet" && matches!(s.track, Track::Queue(..)) && s.parent.is_none()
}

/// The series points to show: the value at the window start, then the
/// changes inside it.
fn windowed<T: Copy>(series: &[(u64, T)], w: Option<Window>) -> Vec<(u64, T)> {
    let Some(w) = w else {
        return series.to_vec();
    };
    let mut out = Vec::new();
    let before = series.partition_point(|(c, _)| *c <= w.start);
    if before > 0
        && let Some(&(_, v)) = series.get(before - 1)
    {
        out.push((w.start, v));
    }
    out.extend(
        series
            .iter()
            .skip(before)
            .take_while(|(c, _)| *c <= w.end)
            .copied(),
    );
    out
}

pub(crate) fn render(m: &Model, meta: &Meta, f: &Filter, races: &[crate::RaceMark]) -> Export {
    let ghz = if meta.clock_ghz.is_finite() && meta.clock_ghz > 0.0 {
        meta.clock_ghz
    } else {
        1.0
    };
    let clock = Clock(ghz);
    let n = m.slices.len();

    // Which slices stay.
    let mut keep = vec![false; n];
    for (i, s) in m.slices.iter().enumerate() {
        let parent_ok = s
            .parent
            .is_none_or(|p| keep.get(p).copied().unwrap_or(false));
        keep[i] = parent_ok
            && track_kept(f, s.track)
            && f.window.is_none_or(|w| w.overlaps(s.start, s.end));
    }

    // Lanes: first fit by start time. Slices are closed on the left and
    // open on the right (Perfetto's rule), so a lane is free again at the
    // instant its last slice ends; zero-length slices sort first.
    let mut lane = vec![0u64; n];
    let mut by_track: BTreeMap<Track, Vec<usize>> = BTreeMap::new();
    for (i, s) in m.slices.iter().enumerate() {
        if keep[i] && s.parent.is_none() && !is_packet(s) {
            by_track.entry(s.track).or_default().push(i);
        }
    }
    for idx in by_track.values_mut() {
        idx.sort_by_key(|&i| {
            let s = &m.slices[i];
            (clock.ns(s.start), clock.ns(s.end), i)
        });
        let mut lanes: Vec<u64> = Vec::new();
        for &i in idx.iter() {
            let s = &m.slices[i];
            let (a, b) = (clock.ns(s.start), clock.ns(s.end));
            let l = match lanes.iter().position(|&end| end <= a) {
                Some(l) => l,
                None => {
                    lanes.push(0);
                    lanes.len() - 1
                }
            };
            lanes[l] = b;
            lane[i] = l as u64;
        }
    }
    for i in 0..n {
        if let Some(p) = m.slices[i].parent {
            lane[i] = lane.get(p).copied().unwrap_or(0);
        }
    }

    // (ns, rank, what): at one time, slices, then the flow points bound to
    // them (Perfetto binds a flow event to the slice on top of its track's
    // stack), then instants and counters.
    let mut outs: Vec<(u64, u8, Out)> = Vec::new();
    for (i, s) in m.slices.iter().enumerate() {
        if !keep[i] {
            continue;
        }
        if is_packet(s) {
            outs.push((clock.ns(s.start), 0, Out::PacketBegin(i)));
            // Ends after everything else at their time (a zero-length
            // packet's end follows its begin).
            outs.push((clock.ns(s.end), 5, Out::PacketEnd(i)));
        } else {
            outs.push((clock.ns(s.start), 0, Out::Slice(i)));
        }
    }
    for (i, e) in m.instants.iter().enumerate() {
        if track_kept(f, e.track) && f.window.is_none_or(|w| w.contains(e.at)) {
            outs.push((clock.ns(e.at), 2, Out::Instant(i)));
        }
    }
    for (&(e, q), series) in &m.occupancy {
        if !(f.engine(e) && f.queue(q)) {
            continue;
        }
        for (c, (tx, rx)) in windowed(series, f.window) {
            outs.push((
                clock.ns(c),
                3,
                Out::Counter {
                    track: Track::Queue(e, q),
                    name: format!("eng{e}.q{q} queued"),
                    args: Args::default().u("tx", tx).u("rx", rx),
                },
            ));
        }
    }
    for (&e, series) in &m.in_flight {
        if !f.engine(e) {
            continue;
        }
        for (c, v) in windowed(series, f.window) {
            outs.push((
                clock.ns(c),
                3,
                Out::Counter {
                    track: Track::Engine(e),
                    name: format!("eng{e} in flight"),
                    args: Args::default().u("bytes", v),
                },
            ));
        }
    }
    // Flows whose slices stayed (at least the cause and one packet), as
    // bound flows (`bind_id`): the source is a zero-length slice inside the
    // cause where its doorbell rang (a cause rings many doorbells; a slice
    // binds one flow), then the first packet (`flow_in`, and `flow_out`
    // when a last packet follows) and the last (`flow_in`).
    let mut flows = 0usize;
    let mut flow_of: BTreeMap<usize, (u64, bool, bool)> = BTreeMap::new();
    for fl in &m.flows {
        let kept: Vec<usize> = fl
            .slices
            .iter()
            .copied()
            .filter(|&i| keep.get(i).copied().unwrap_or(false))
            .collect();
        if kept.len() < 2 || kept.first() != fl.slices.first() {
            continue;
        }
        // Flows end on packets, and a packet binds one flow: a packet
        // already in one stays there.
        if kept[1..]
            .iter()
            .any(|&i| flow_of.contains_key(&i) || !is_packet(&m.slices[i]))
        {
            continue;
        }
        flows += 1;
        let id = flows as u64;
        let cause = kept[0];
        let s = &m.slices[cause];
        let at = clock
            .ns(fl.rung_at)
            .clamp(clock.ns(s.start), clock.ns(s.end));
        outs.push((at, 1, Out::FlowSource { id, slice: cause }));
        let last = kept.len() - 1;
        for (k, &i) in kept.iter().enumerate().skip(1) {
            flow_of.insert(i, (id, true, k < last));
        }
    }
    // Time order; within a time, the order built (slices first).
    outs.sort_by_key(|(t, rank, _)| (*t, *rank));

    // The tracks used, for their names.
    let mut tracks: BTreeSet<(u32, u64, Track, u64)> = BTreeSet::new();
    for (_, _, o) in &outs {
        let (track, l) = match o {
            Out::Slice(i) | Out::FlowSource { slice: i, .. } => {
                (m.slices[*i].track, lane[*i].min(MAX_LANES))
            }
            Out::PacketBegin(i) => (m.slices[*i].track, 0),
            Out::Instant(i) => (m.instants[*i].track, 0),
            Out::Counter { track, .. } => (*track, 0),
            Out::PacketEnd(_) => continue,
        };
        tracks.insert((pid_of(track), tid_of(track, l), track, l));
    }

    let mut buf: Vec<u8> = Vec::with_capacity(outs.len() * 160 + tracks.len() * 200);
    let mut other = Args::default()
        .s("generator", "neuron-sim")
        .s("trace", meta.trace.clone())
        .s("clock_ghz", format!("{ghz}"))
        .u("cycles", meta.end_cycle);
    if let Some(e) = &f.engines {
        other.push_list("engines", e.iter().map(ToString::to_string));
    }
    if let Some(q) = &f.queues {
        other.push_list("queues", q.iter().map(ToString::to_string));
    }
    if let Some(w) = f.window {
        // As written: an open end stays open (`195..`).
        let end = if w.end == u64::MAX {
            String::new()
        } else {
            w.end.to_string()
        };
        other = other.s("window", format!("{}..{end}", w.start));
    }
    buf.extend_from_slice(b"{\"displayTimeUnit\":\"ns\",\"otherData\":");
    // Writing into a Vec cannot fail, and every map here has string keys.
    let _ = serde_json::to_writer(&mut buf, &other);
    buf.extend_from_slice(b",\"traceEvents\":[");
    let mut events = 0usize;
    let mut write = |ev: &Ev<'_>, buf: &mut Vec<u8>| {
        buf.extend_from_slice(if events == 0 { b"\n" } else { b",\n" });
        let _ = serde_json::to_writer(&mut *buf, ev);
        events += 1;
    };

    // Metadata first: process and track names and their order.
    let pids: BTreeSet<u32> = tracks.iter().map(|t| t.0).collect();
    for &pid in &pids {
        let a = Args::default().s("name", process_name(pid));
        let mut ev = Ev::new("process_name", 'M', pid);
        ev.cat = META_CAT;
        ev.args = Some(&a);
        write(&ev, &mut buf);
        let a = Args::default().u("sort_index", pid);
        let mut ev = Ev::new("process_sort_index", 'M', pid);
        ev.cat = META_CAT;
        ev.args = Some(&a);
        write(&ev, &mut buf);
    }
    for &(pid, tid, track, l) in &tracks {
        let a = Args::default().s("name", track_name(track, l));
        let mut ev = Ev::new("thread_name", 'M', pid);
        ev.cat = META_CAT;
        ev.tid = Some(tid);
        ev.args = Some(&a);
        write(&ev, &mut buf);
        let a = Args::default().u("sort_index", tid);
        let mut ev = Ev::new("thread_sort_index", 'M', pid);
        ev.cat = META_CAT;
        ev.tid = Some(tid);
        ev.args = Some(&a);
        write(&ev, &mut buf);
    }

    let mut packets = 0usize;
    for (t, _, o) in &outs {
        match o {
            Out::Slice(i) => {
                let s = &m.slices[*i];
                let mut ev = Ev::new(&s.name, 'X', pid_of(s.track));
                ev.cat = s.cat;
                ev.ts = Some(us(*t));
                ev.dur = Some(us(clock.ns(s.end).saturating_sub(*t)));
                ev.tid = Some(tid_of(s.track, lane[*i]));
                ev.args = Some(&s.args);
                write(&ev, &mut buf);
            }
            Out::Instant(i) => {
                let e = &m.instants[*i];
                let mut ev = Ev::new(&e.name, 'i', pid_of(e.track));
                ev.cat = e.cat;
                ev.ts = Some(us(*t));
                ev.tid = Some(tid_of(e.track, 0));
                ev.s = Some("t");
                ev.args = Some(&e.args);
                write(&ev, &mut buf);
            }
            Out::Counter { track, name, args } => {
                let mut ev = Ev::new(name, 'C', pid_of(*track));
                ev.cat = "counter";
                ev.ts = Some(us(*t));
                ev.tid = Some(tid_of(*track, 0));
                ev.args = Some(args);
                write(&ev, &mut buf);
            }
            Out::FlowSource { id, slice } => {
                let s = &m.slices[*slice];
                let mut ev = Ev::new("doorbell", 'X', pid_of(s.track));
                ev.cat = "flow";
                ev.ts = Some(us(*t));
                ev.dur = Some(0.0);
                ev.tid = Some(tid_of(s.track, lane[*slice]));
                ev.bind_id = Some(*id);
                ev.flow_out = true;
                write(&ev, &mut buf);
            }
            Out::PacketBegin(i) | Out::PacketEnd(i) => {
                let s = &m.slices[*i];
                let begin = matches!(o, Out::PacketBegin(_));
                if begin {
                    packets += 1;
                }
                // Named by the queue: Perfetto shows a process's async
                // slices of one name on one track, stacking those that
                // overlap. What rang the doorbell is the `cause` arg.
                let name = track_name(s.track, 0);
                let mut ev = Ev::new(&name, if begin { 'b' } else { 'e' }, pid_of(s.track));
                ev.cat = s.cat;
                ev.ts = Some(us(*t));
                ev.tid = Some(tid_of(s.track, 0));
                ev.id = Some(*i as u64);
                let args;
                if begin {
                    let mut a = s.args.clone();
                    a.0.insert(0, ("cause", Val::S(s.name.clone())));
                    args = a;
                    ev.args = Some(&args);
                    if let Some(&(id, flow_in, flow_out)) = flow_of.get(i) {
                        ev.bind_id = Some(id);
                        ev.flow_in = flow_in;
                        ev.flow_out = flow_out;
                    }
                }
                write(&ev, &mut buf);
            }
        }
    }
    // Races (docs/races.md): a flagged zero-length slice on each side's
    // queue track at the cycle of its access, bound by a flow from the
    // first to the second.
    for (k, r) in races.iter().enumerate() {
        let sides = [r.first, r.second];
        let shown = sides.iter().all(|&(_, e, q)| {
            let track = Track::Queue(e, q);
            track_kept(f, track) && tracks.iter().any(|&(_, tid, _, _)| tid == tid_of(track, 0))
        });
        if !shown {
            continue;
        }
        let id = (1 << 48) + k as u64;
        let args = Args::default().s("race", r.text.clone());
        for (i, &(cycle, e, q)) in sides.iter().enumerate() {
            let track = Track::Queue(e, q);
            let mut ev = Ev::new(&r.name, 'X', pid_of(track));
            ev.cat = "race";
            ev.ts = Some(us(clock.ns(cycle)));
            ev.dur = Some(0.0);
            ev.tid = Some(tid_of(track, 0));
            ev.bind_id = Some(id);
            ev.flow_out = i == 0;
            ev.flow_in = i == 1;
            ev.args = Some(&args);
            write(&ev, &mut buf);
        }
        flows += 1;
    }
    buf.extend_from_slice(b"\n]}\n");
    let json = String::from_utf8(buf)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Export {
        json,
        events,
        packets,
        flows,
    }
}

impl Args {
    fn push_list(&mut self, k: &'static str, items: impl Iterator<Item = String>) {
        self.0
            .push((k, Val::S(items.collect::<Vec<_>>().join(","))));
    }
}
