//! The device's recorders (`soc::record`): the register-access log as a
//! golden file (`--reg-log`), the VCD waveform parsed back (`--vcd`), and
//! that recording only observes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use soc::exec::{RunReport, TraceFiles};
use soc::{Device, DeviceEvent};
use trace_format::StatementKind;
use udma::{Dir, EventKind};

struct DirFiles(PathBuf);

impl TraceFiles for DirFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.0.join(path))
    }
    fn write(&mut self, _path: &str, _data: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("these tests write no files"))
    }
}

fn trace_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces")
        .join(name)
}

/// Runs a trace on `dev` with the host runtime; returns the report and the
/// device after the run.
fn run_on(mut dev: Device, name: &str, setup: impl FnOnce(&mut Device)) -> (RunReport, Device) {
    setup(&mut dev);
    let path = trace_path(name);
    let source = std::fs::read_to_string(&path).unwrap();
    let mut files = DirFiles(path.parent().unwrap().to_path_buf());
    let (report, session) = host_exec::run_source(dev, &source, name, &mut files).unwrap();
    assert_eq!(report.exit_code(), 0, "{name}: {}", report.to_text());
    let mut session = session;
    // Take the device out of the session (the driver keeps a fresh one).
    let dev = std::mem::replace(session.device_mut(), Device::trn2().unwrap());
    (report, dev)
}

/// One parsed log line.
#[derive(Debug)]
struct Line {
    cycle: u64,
    master: String,
    op: String,
    addr: u64,
    name: String,
    old: u32,
    new: u32,
    wrote: Option<u32>,
}

fn hex(s: &str) -> u32 {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

/// Parses `<cycle> <master> <R|W>32 <addr> <name> <old> -> <new>[ (wrote <v>)]`
/// strictly: every field in its place, hex at fixed widths.
fn parse_line(l: &str) -> Line {
    let f: Vec<&str> = l.split(' ').collect();
    assert!(f.len() == 8 || f.len() == 10, "bad line: {l}");
    assert_eq!(f[6], "->", "{l}");
    assert!(f[3].starts_with("0x") && f[3].len() >= 12, "{l}");
    for v in [f[5], f[7]] {
        assert!(v.starts_with("0x") && v.len() == 10, "{l}");
    }
    let wrote = (f.len() == 10).then(|| {
        assert_eq!(f[8], "(wrote", "{l}");
        hex(f[9].trim_end_matches(')'))
    });
    Line {
        cycle: f[0].parse().unwrap(),
        master: f[1].to_string(),
        op: f[2].to_string(),
        addr: u64::from_str_radix(f[3].trim_start_matches("0x"), 16).unwrap(),
        name: f[4].to_string(),
        old: hex(f[5]),
        new: hex(f[7]),
        wrote,
    }
}

#[test]
fn reg_log_of_queue_setup_is_golden() {
    let (_, mut dev) = run_on(Device::trn2().unwrap(), "queue-setup.trace", |d| {
        d.record_reg_log(None)
    });
    let log = dev.take_reg_log();
    insta::assert_snapshot!("queue_setup_reg_log", log);
    // With time passing: doorbells land, the queue is reset and re-armed.
    let (_, mut dev2) = run_on(Device::trn2().unwrap(), "driver-queue-init.trace", |d| {
        d.record_reg_log(None)
    });
    insta::assert_snapshot!("driver_queue_init_reg_log", dev2.take_reg_log());

    // Every write32 of the trace is a `trace W32` line, in order, at its
    // address, naming its register, with the value written.
    let source = std::fs::read_to_string(trace_path("queue-setup.trace")).unwrap();
    let trace = trace_format::parse(&source, "queue-setup.trace").unwrap();
    let lines: Vec<Line> = log.lines().map(parse_line).collect();
    let writes: Vec<&Line> = lines.iter().filter(|l| l.op == "W32").collect();
    let mut expected = Vec::new();
    for s in &trace.statements {
        if let StatementKind::Write32 { addr, value } = &s.kind {
            let r = soc::resolve(&dev, addr).unwrap();
            expected.push((addr.to_string(), r.addr, *value));
        }
    }
    assert_eq!(writes.len(), expected.len(), "{log}");
    for (w, (text, addr, value)) in writes.iter().zip(&expected) {
        assert_eq!((w.master.as_str(), w.cycle), ("trace", 0), "{text}");
        assert_eq!(w.addr, *addr, "{text}");
        // `eng0.m2s.q0.tdrbp_low` → `eng0.m2s.q0.TDRBP_LOW[.FIELDS]`.
        let reg = w.name.to_ascii_lowercase();
        assert!(
            reg == *text || reg.starts_with(&format!("{text}.")),
            "{text} logged as {}",
            w.name
        );
        // The bus value: `new` itself, or shown as `(wrote …)`.
        assert_eq!(w.wrote.unwrap_or(w.new), *value, "{text}");
        assert!(w.wrote != Some(w.new), "{text}: redundant (wrote …)");
    }

    // old → new chain: a write's `old` is the previous access's `new`, or
    // for the first access the register's reset value from csr-maps/
    // (queue-setup lets no time pass, so hardware changes nothing between
    // its writes); reads here have no read-to-clear side effect.
    let mut last: BTreeMap<u64, u32> = BTreeMap::new();
    for l in &lines {
        if l.op == "W32" {
            let before = last.get(&l.addr).copied().unwrap_or_else(|| {
                let t = dev.reg_target(l.addr).unwrap().unwrap();
                let block = dev.block_of(t.region).unwrap();
                let reg = block.element_at(t.offset).unwrap();
                block.reset_values()[reg.slot()]
            });
            assert_eq!(l.old, before, "{l:?}");
        } else {
            assert_eq!(l.op, "R32");
            assert_eq!(l.old, l.new, "{l:?}");
        }
        last.insert(l.addr, l.new);
    }
}

#[test]
fn reg_log_names_every_master() {
    // Trace, firmware and DMA engines (semaphore increments) in one run.
    let (_, mut dev) = run_on(Device::trn2().unwrap(), "fw-semaphore-chain.trace", |d| {
        d.record_reg_log(None)
    });
    let log = dev.take_reg_log();
    let masters: std::collections::BTreeSet<String> =
        log.lines().map(|l| parse_line(l).master).collect();
    for m in ["trace", "fw:tpb0", "eng:0"] {
        assert!(masters.contains(m), "no {m} line in {masters:?}");
    }
    let cycles: Vec<u64> = log.lines().map(|l| parse_line(l).cycle).collect();
    assert!(
        cycles.windows(2).all(|w| w[0] <= w[1]),
        "lines out of time order"
    );
    // The kernel driver's accesses (an H2T copy through the host runtime).
    let (_, mut dev) = run_on(Device::trn2().unwrap(), "host-dmem-batch.trace", |d| {
        d.record_reg_log(None)
    });
    assert!(
        dev.take_reg_log()
            .lines()
            .any(|l| parse_line(l).master == "driver"),
        "no driver line"
    );
}

/// A VCD read back with `vcd`'s parser: variables by full path, and every
/// change as (time, id, value).
struct Vcd {
    timescale: Option<(u32, vcd::TimescaleUnit)>,
    vars: BTreeMap<String, (vcd::IdCode, u32)>,
    changes: Vec<(u64, vcd::IdCode, u64)>,
}

fn parse_vcd(text: &str) -> Vcd {
    let mut p = vcd::Parser::new(text.as_bytes());
    let header = p.parse_header().unwrap();
    let mut vars = BTreeMap::new();
    fn walk(
        items: &[vcd::ScopeItem],
        path: &mut Vec<String>,
        out: &mut BTreeMap<String, (vcd::IdCode, u32)>,
    ) {
        for it in items {
            match it {
                vcd::ScopeItem::Scope(s) => {
                    path.push(s.identifier.clone());
                    walk(&s.items, path, out);
                    path.pop();
                }
                vcd::ScopeItem::Var(v) => {
                    let mut full = path.join(".");
                    full.push('.');
                    full.push_str(&v.reference);
                    assert!(
                        out.insert(full.clone(), (v.code, v.size)).is_none(),
                        "{full} declared twice"
                    );
                }
                _ => {}
            }
        }
    }
    walk(&header.items, &mut Vec::new(), &mut vars);
    let mut t = 0;
    let mut changes = Vec::new();
    let mut initial = BTreeMap::new();
    let mut in_dump = false;
    for cmd in p {
        match cmd.unwrap() {
            vcd::Command::Begin(vcd::SimulationCommand::Dumpvars) => in_dump = true,
            vcd::Command::End(vcd::SimulationCommand::Dumpvars) => in_dump = false,
            vcd::Command::Timestamp(ts) => {
                assert!(ts >= t, "time goes back");
                t = ts;
            }
            vcd::Command::ChangeVector(id, v) => {
                let value = v
                    .iter()
                    .fold(0u64, |acc, b| (acc << 1) | u64::from(b == vcd::Value::V1));
                if in_dump {
                    initial.insert(id, value);
                } else {
                    changes.push((t, id, value));
                }
            }
            _ => {}
        }
    }
    for (code, _) in vars.values() {
        assert!(initial.contains_key(code), "no initial value for {code}");
    }
    Vcd {
        timescale: header.timescale,
        vars,
        changes,
    }
}

impl Vcd {
    fn id(&self, path: &str) -> vcd::IdCode {
        self.vars
            .get(path)
            .unwrap_or_else(|| panic!("no $var {path}: {:?}", self.vars.keys()))
            .0
    }

    /// (time, cycle, value) of every change of `path` after time 0's dump.
    fn history(&self, path: &str) -> Vec<(u64, u64, u64)> {
        let id = self.id(path);
        let cycle = self.id("trn2.cycle");
        let mut now_cycle = 0;
        let mut out = Vec::new();
        for &(t, i, v) in &self.changes {
            if i == cycle {
                now_cycle = v;
            } else if i == id {
                out.push((t, now_cycle, v));
            }
        }
        out
    }
}

#[test]
fn vcd_parses_back_with_queue_changes_at_their_cycles() {
    let (report, dev) = run_on(Device::trn2().unwrap(), "driver-queue-init.trace", |d| {
        d.record_waves()
    });
    let mut buf = Vec::new();
    dev.write_vcd(&mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let vcd = parse_vcd(&text);
    assert_eq!(vcd.timescale, Some((1, vcd::TimescaleUnit::PS)));

    // Declarations: the clock counter, engine 1's state and causes, and the
    // one queue the trace touched, in both directions — nothing else.
    let mut want = vec![("trn2.cycle".to_string(), 64)];
    for (n, w) in [
        ("m2s_state", 2),
        ("s2m_state", 2),
        ("sec_a_int_cause", 32),
        ("sec_b_int_cause", 32),
        ("sec_d_int_cause", 32),
    ] {
        want.push((format!("trn2.eng1.{n}"), w));
    }
    for q in ["m2s_q2", "s2m_q2"] {
        for (n, w) in [
            ("head", 24),
            ("head_ring_id", 2),
            ("tail", 24),
            ("tail_ring_id", 2),
        ] {
            want.push((format!("trn2.eng1.{q}.{n}"), w));
        }
    }
    let got: Vec<(String, u32)> = vcd.vars.iter().map(|(k, v)| (k.clone(), v.1)).collect();
    want.sort();
    assert_eq!(got, want);

    // The engine's own record of doorbells and prefetches, by queue.
    let clock = dev.timing().clock_ghz;
    let mut doorbells = 0;
    let mut prefetches = 0;
    for e in report.steps.iter().flat_map(|s| &s.events) {
        let DeviceEvent::Engine(e) = e else { continue };
        let (dir, queue, sig, value, ring_id) = match &e.kind {
            EventKind::Doorbell {
                dir,
                queue,
                tail,
                tail_ring_id,
                ..
            } => {
                doorbells += 1;
                (*dir, *queue, "tail", *tail, *tail_ring_id)
            }
            EventKind::Prefetch {
                dir,
                queue,
                head,
                head_ring_id,
                ..
            } => {
                prefetches += 1;
                (*dir, *queue, "head", *head, *head_ring_id)
            }
            _ => continue,
        };
        assert_eq!((e.engine, queue), (1, 2));
        let d = if dir == Dir::M2s { "m2s" } else { "s2m" };
        let path = format!("trn2.eng1.{d}_q2.{sig}");
        let t = soc::record::cycle_to_ps(e.cycle, clock);
        assert!(
            vcd.history(&path).contains(&(t, e.cycle, u64::from(value))),
            "{path} = {value} not at cycle {} (#{t}): {:?}",
            e.cycle,
            vcd.history(&path)
        );
        assert_eq!(ring_id, 1);
    }
    assert_eq!((doorbells, prefetches), (4, 4));
    // The engine went NORMAL at the change_state writes, never aborted.
    let states = vcd.history("trn2.eng1.m2s_state");
    assert_eq!(states.iter().map(|s| s.2).collect::<Vec<_>>(), vec![1]);
    assert!(vcd.history("trn2.eng1.sec_a_int_cause").is_empty());
}

#[test]
fn vcd_shows_semaphores_and_error_causes() {
    // A ring-id fault: SEC_A cause bit 17 and the M2S abort.
    let (_, dev) = run_on(Device::trn2().unwrap(), "fault-ring-id.trace", |d| {
        d.record_waves()
    });
    let mut buf = Vec::new();
    dev.write_vcd(&mut buf).unwrap();
    let vcd = parse_vcd(&String::from_utf8(buf).unwrap());
    let causes = vcd.history("trn2.eng128.sec_a_int_cause");
    assert!(causes.iter().any(|c| c.2 & (1 << 17) != 0), "{causes:?}");
    assert!(
        vcd.history("trn2.eng128.m2s_state")
            .iter()
            .any(|s| s.2 == 2)
    );

    // Semaphores incremented by DMA completions, declared only when they change.
    let (_, dev) = run_on(
        Device::trn2().unwrap(),
        "semaphore-on-completion.trace",
        |d| d.record_waves(),
    );
    let mut buf = Vec::new();
    dev.write_vcd(&mut buf).unwrap();
    let vcd = parse_vcd(&String::from_utf8(buf).unwrap());
    let sems: Vec<&String> = vcd.vars.keys().filter(|k| k.contains(".sem_")).collect();
    assert!(!sems.is_empty());
    for s in sems {
        assert!(!vcd.history(s).is_empty(), "{s} declared but never changes");
    }
}

#[test]
fn recording_only_observes() {
    // Same report text and CSR snapshot with both recorders on as off.
    for name in ["driver-queue-init.trace", "fw-semaphore-chain.trace"] {
        let (plain, plain_dev) = run_on(Device::trn2().unwrap(), name, |_| {});
        let (rec, rec_dev) = run_on(Device::trn2().unwrap(), name, |d| {
            d.record_reg_log(None);
            d.record_waves();
        });
        assert_eq!(plain.to_text(), rec.to_text(), "{name}");
        assert_eq!(plain_dev.csr_snapshot(), rec_dev.csr_snapshot(), "{name}");
        assert!(plain_dev.waves().is_none());
        assert!(rec_dev.waves().is_some_and(|w| w.change_count() > 0));
    }
}

#[test]
fn cli_writes_reg_log_and_vcd() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("recording-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("queue-setup.log");
    let vcd_path = dir.join("queue-setup.vcd");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .arg("run")
        .arg(trace_path("queue-setup.trace"))
        .arg("--reg-log")
        .arg(&log)
        .arg("--vcd")
        .arg(&vcd_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The streamed file is the same text as the in-memory log.
    let (_, mut dev) = run_on(Device::trn2().unwrap(), "queue-setup.trace", |d| {
        d.record_reg_log(None)
    });
    assert_eq!(std::fs::read_to_string(&log).unwrap(), dev.take_reg_log());
    let vcd = parse_vcd(&std::fs::read_to_string(&vcd_path).unwrap());
    assert!(vcd.vars.contains_key("trn2.eng0.m2s_q0.tail"));
}

/// A clock so slow that a cycle's picosecond time passes 64 bits (here
/// set on the device directly; a timing file cannot give it) is an error
/// of the VCD, not a file whose times saturate and repeat.
#[test]
fn vcd_refuses_times_past_64_bit_picoseconds() {
    let mut timing = sim_core::TimingConfig::default_config().unwrap();
    timing.clock_ghz = 1e-300;
    let dev =
        Device::with_timing(soc_map::trn2().unwrap(), csr::catalog().unwrap(), timing).unwrap();
    let (_, dev) = run_on(dev, "copy-hbm-hbm.trace", |d| d.record_waves());
    let mut buf = Vec::new();
    let e = dev.write_vcd(&mut buf).unwrap_err();
    assert!(
        e.to_string()
            .contains("past the VCD's 64-bit picosecond time"),
        "{e}"
    );
}

/// The probe report's reproducer: `clock_ghz` 1e-300 in a timing file was
/// accepted and gave a VCD with saturated, repeated times; it is bad input.
#[test]
fn a_tiny_clock_in_a_timing_file_is_bad_input() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("recording-tiny-clock");
    std::fs::create_dir_all(&dir).unwrap();
    let vcd_path = dir.join("t.vcd");
    let _ = std::fs::remove_file(&vcd_path);
    for clock in ["1e-300", "0.05", "100"] {
        let timing = dir.join("cc.json");
        std::fs::write(&timing, format!("{{\"clock_ghz\": {clock}}}")).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
            .arg("run")
            .arg(trace_path("copy-hbm-hbm.trace"))
            .arg("-q")
            .arg("--timing")
            .arg(&timing)
            .arg("--vcd")
            .arg(&vcd_path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{clock}: {err}");
        assert!(
            err.contains(&format!(
                "parameter `clock_ghz` = {clock} must be in [0.1, 100)"
            )),
            "{clock}: {err}"
        );
        assert!(!vcd_path.exists(), "{clock}: a VCD was written");
    }
    // The bounds' neighbours inside the range run, and their VCD times
    // are distinct and increasing.
    for clock in ["0.1", "99.9"] {
        let timing = dir.join("cc.json");
        std::fs::write(&timing, format!("{{\"clock_ghz\": {clock}}}")).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
            .arg("run")
            .arg(trace_path("copy-hbm-hbm.trace"))
            .arg("-q")
            .arg("--timing")
            .arg(&timing)
            .arg("--vcd")
            .arg(&vcd_path)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{clock}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&vcd_path).unwrap();
        let times: Vec<u64> = text
            .lines()
            .filter_map(|l| l.strip_prefix('#')?.parse().ok())
            .collect();
        assert!(times.len() > 2, "{clock}: {times:?}");
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{clock}: {times:?}");
    }
}
