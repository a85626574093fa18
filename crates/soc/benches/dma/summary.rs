//! The summary printed after divan's table: medians, ratios, budgets
//! (issues 3, 6 and 12). A `MISSED` budget is reported, not failed.

use std::collections::BTreeMap;
use std::time::Duration;

use soc::Device;

use crate::firmware::{FW_CASES, FW_MEASURED, FW_TILE_64K, FW_TILE_512, FwCase};
use crate::{CASES, CYCLES, Case, FULL_CORE, RUNS, linear, raw_reference, timing_only};

pub(crate) fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
}

fn si(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2} G", x / 1e9),
        x if x >= 1e6 => format!("{:.2} M", x / 1e6),
        x if x >= 1e3 => format!("{:.2} K", x / 1e3),
        x => format!("{x:.2} "),
    }
}

fn budget(name: &str, ok: bool, detail: String) {
    println!(
        "budget {name}: {} ({detail})",
        if ok { "met" } else { "MISSED" }
    );
}

/// The `memcpy` run a case compares with (same bytes, same destination state).
fn memcpy_key(bytes: u64, warm_dst: bool) -> String {
    let kind = if warm_dst { "memcpy" } else { "memcpy_cold" };
    format!("{kind}/{bytes}")
}

struct Ctx {
    runs: BTreeMap<String, Vec<Duration>>,
    cycles: BTreeMap<String, u64>,
    clock_ghz: f64,
}

impl Ctx {
    fn median_s(&self, key: &str) -> Option<f64> {
        self.runs.get(key).map(|r| median(r).as_secs_f64())
    }

    fn sim_s(&self, name: &str) -> Option<f64> {
        self.cycles
            .get(name)
            .map(|&cy| cy as f64 / (self.clock_ghz * 1e9))
    }

    /// Host seconds per descriptor of raw case `c`.
    fn raw_per_desc(&self, c: Case) -> Option<f64> {
        self.median_s(&format!("dma_copy/{c}"))
            .map(|t| t / f64::from(c.descs))
    }
}

pub(crate) fn print() {
    let ctx = Ctx {
        runs: RUNS.lock().unwrap().clone(),
        cycles: CYCLES.lock().unwrap().clone(),
        clock_ghz: Device::trn2().map_or(0.85, |d| d.timing().clock_ghz),
    };
    if ctx.runs.is_empty() {
        return;
    }
    raw_table(&ctx);
    firmware_table(&ctx);
    linear_table(&ctx);
    raw_budgets(&ctx);
    firmware_budgets(&ctx);
}

fn raw_table(ctx: &Ctx) {
    if !CASES
        .iter()
        .any(|c| ctx.runs.contains_key(&format!("dma_copy/{c}")))
    {
        return;
    }
    println!(
        "\nsummary (median host time of `Device::run`; ratio = run / memcpy of the same \
         bytes into a destination in the same state: warm, or fresh for -cold)"
    );
    println!(
        "{:<20} {:>10} {:>12} {:>12} {:>12} {:>8} {:>12} {:>10}",
        "case", "run", "desc/s", "payload/s", "memcpy/s", "ratio", "sim time", "sim/host"
    );
    for c in CASES {
        let Some(t) = ctx.median_s(&format!("dma_copy/{c}")) else {
            continue;
        };
        let bytes = c.total_bytes();
        let mc = ctx.median_s(&memcpy_key(bytes, c.warm_dst));
        let sim_s = ctx.sim_s(&c.to_string());
        println!(
            "{:<20} {:>8.2}ms {:>12} {:>12} {:>12} {:>8} {:>12} {:>10}",
            c.to_string(),
            t * 1e3,
            si(f64::from(c.descs) / t),
            format!("{}B", si(bytes as f64 / t)),
            mc.map_or("-".into(), |m| format!("{}B", si(bytes as f64 / m))),
            mc.map_or("-".into(), |m| format!("{:.2}x", t / m)),
            sim_s.map_or("-".into(), |s| format!("{:.1}us", s * 1e6)),
            sim_s.map_or("-".into(), |s| format!("{:.3}", s / t)),
        );
    }
}

/// A firmware case's median run, TX descriptors and host seconds per
/// descriptor.
fn fw_run(ctx: &Ctx, c: FwCase) -> Option<(f64, u64, f64)> {
    let t = ctx.median_s(&format!("fw/{c}"))?;
    let m = FW_MEASURED.lock().unwrap().get(&c.to_string()).copied()?;
    Some((t, m.tx_descs, t / m.tx_descs.max(1) as f64))
}

fn firmware_table(ctx: &Ctx) {
    if !FW_CASES
        .iter()
        .any(|c| ctx.runs.contains_key(&format!("fw/{c}")))
    {
        return;
    }
    println!(
        "\nfirmware path (median host time of `Device::run` over queued instruction words; \
         desc = TX descriptors incl. semaphore writes; vs raw = host time per descriptor / \
         that of the raw 16-engine case of the same descriptor size, same run)"
    );
    println!(
        "{:<24} {:>10} {:>8} {:>10} {:>12} {:>10} {:>18} {:>8} {:>10} {:>10}",
        "case",
        "run",
        "desc",
        "ns/desc",
        "desc/s",
        "payload/s",
        "raw case",
        "vs raw",
        "sim time",
        "slowdown"
    );
    let measured = FW_MEASURED.lock().unwrap().clone();
    for &c in FW_CASES {
        let Some((t, descs, per)) = fw_run(ctx, c) else {
            continue;
        };
        let raw = raw_reference(c.desc_bytes(), c.timing_only);
        let raw_per = raw.and_then(|r| ctx.raw_per_desc(r));
        let bytes = measured.get(&c.to_string()).map_or(0, |m| m.bytes);
        let sim_s = ctx.sim_s(&c.to_string());
        println!(
            "{:<24} {:>8.2}ms {:>8} {:>10.0} {:>12} {:>10} {:>18} {:>8} {:>10} {:>10}",
            c.to_string(),
            t * 1e3,
            descs,
            per * 1e9,
            si(descs as f64 / t),
            format!("{}B", si(bytes as f64 / t)),
            raw.map_or("-".into(), |r| r.to_string()),
            raw_per.map_or("-".into(), |r| format!("{:.1}x", per / r)),
            sim_s.map_or("-".into(), |s| format!("{:.1}us", s * 1e6)),
            sim_s.map_or("-".into(), |s| format!("{:.0}x", t / s)),
        );
    }
}

fn linear_table(ctx: &Ctx) {
    let per: Vec<(u32, f64)> = linear::COUNTS
        .iter()
        .filter_map(|&n| ctx.median_s(&linear::key(n)).map(|t| (n, t / f64::from(n))))
        .collect();
    if per.is_empty() {
        return;
    }
    println!(
        "\nlinearity ({} B descriptors, one engine, timing-only; median host time of \
         `Device::run` per descriptor)",
        linear::DESC_BYTES
    );
    println!("{:<12} {:>10} {:>12}", "descriptors", "ns/desc", "desc/s");
    for &(n, p) in &per {
        println!("{n:<12} {:>10.1} {:>12}", p * 1e9, si(1.0 / p));
    }
    if per.len() == linear::COUNTS.len() {
        let lo = per.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let hi = per.iter().map(|p| p.1).fold(0.0, f64::max);
        budget(
            "host time per descriptor constant within 20 % over 10^3..10^7 descriptors (issue 12)",
            hi <= 1.2 * lo,
            format!("max/min {:.2}", hi / lo),
        );
    }
}

fn raw_budgets(ctx: &Ctx) {
    let rate_of = |c: Case| {
        ctx.median_s(&format!("dma_copy/{c}"))
            .map(|t| f64::from(c.descs) / t)
    };
    if let Some(rate) = rate_of(CASES[0]) {
        budget(
            "512 B descriptors with payload >= 5 M/s (issue 3; issue 6 asks >= 4 M/s)",
            rate >= 5e6,
            format!("{}desc/s", si(rate)),
        );
    }
    if let Some(rate) = rate_of(timing_only(CASES[0])) {
        budget(
            "512 B descriptors timing-only >= 10 M/s (issue 6)",
            rate >= 10e6,
            format!("{}desc/s", si(rate)),
        );
    }
    if let (Some(t), Some(s)) = (
        ctx.median_s(&format!("dma_copy/{FULL_CORE}")),
        ctx.sim_s(&FULL_CORE.to_string()),
    ) {
        let slowdown = t / s;
        budget(
            &format!("{FULL_CORE} (16 engines, full core) <= 10x slower than real time (issue 6)"),
            slowdown <= 10.0,
            format!("{slowdown:.1}x"),
        );
    }
    for c in CASES
        .iter()
        .filter(|c| c.desc_bytes == 65536 && !c.timing_only && c.engines == 1)
    {
        let (Some(r), Some(m)) = (
            ctx.median_s(&format!("dma_copy/{c}")),
            ctx.median_s(&memcpy_key(c.total_bytes(), c.warm_dst)),
        ) else {
            continue;
        };
        let ratio = r / m;
        budget(
            &format!("{c} within 3x of memcpy (issue 3)"),
            ratio <= 3.0,
            format!("{ratio:.2}x"),
        );
        budget(
            &format!("{c} within 1.5x of memcpy (issue 6)"),
            ratio <= 1.5,
            format!("{ratio:.2}x"),
        );
    }
}

fn firmware_budgets(ctx: &Ctx) {
    if let Some((_, descs, per)) = fw_run(ctx, FW_TILE_512) {
        let rate = 1.0 / per;
        budget(
            &format!(
                "firmware {FW_TILE_512} (512 B per partition, 16 engines) >= 4 M desc/s (issue 12)"
            ),
            rate >= 4e6,
            format!("{}desc/s over {descs} descriptors", si(rate)),
        );
        let raw = raw_reference(512, true);
        if let Some((raw, raw_per)) = raw.and_then(|r| Some((r, ctx.raw_per_desc(r)?))) {
            let ratio = per / raw_per;
            budget(
                &format!("firmware {FW_TILE_512} within 2x of raw {raw} per descriptor (issue 12)"),
                ratio <= 2.0,
                format!("{ratio:.1}x"),
            );
        }
    }
    if let (Some((t, _, _)), Some(bytes)) = (fw_run(ctx, FW_TILE_64K), FW_TILE_64K.data_bytes())
        && let Some(m) = ctx.median_s(&memcpy_key(bytes, true))
    {
        let ratio = t / m;
        budget(
            &format!(
                "firmware {FW_TILE_64K} (with payload) <= 2x memcpy of the same bytes (issue 12)"
            ),
            ratio <= 2.0,
            format!("{ratio:.2}x"),
        );
    }
}
