//! The timing configuration: one JSON file, every value with its unit and
//! source (`crates/sim-core/timing-default.json`, explained in
//! `docs/timing.md`).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The built-in defaults.
pub const DEFAULT_TIMING_JSON: &str = include_str!("../timing-default.json");

/// One parameter as written in the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimingParam {
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// Where the value comes from.
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimingFile {
    #[serde(default)]
    #[allow(dead_code)]
    description: String,
    parameters: BTreeMap<String, RawParam>,
}

/// A parameter with its value's text as written, so that messages can
/// quote it exactly (an f64 would print u64::MAX as 18446744073709552000).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParam {
    value: Box<serde_json::value::RawValue>,
    unit: String,
    source: String,
}

/// The text of each parameter's value as a timing file writes it (plain,
/// `"name": N`, or full, `"name": {"value": N, …}`; at the top level or
/// under `parameters`); empty when the text is not such a file (the
/// parse proper reports that).
fn written_values(text: &str) -> BTreeMap<String, String> {
    use serde_json::value::RawValue;
    type Raw = BTreeMap<String, Box<RawValue>>;
    let Ok(top) = serde_json::from_str::<Raw>(text) else {
        return BTreeMap::new();
    };
    let params = match top.get("parameters") {
        Some(p) => serde_json::from_str::<Raw>(p.get()).unwrap_or_default(),
        None => top,
    };
    params
        .into_iter()
        .filter_map(|(name, v)| {
            let value = match serde_json::from_str::<Raw>(v.get()) {
                Ok(full) => full.get("value")?.get().to_string(),
                Err(_) => v.get().to_string(),
            };
            Some((name, value))
        })
        .collect()
}

/// Largest value of an integer parameter.
const MAX_INT_PARAM: u64 = 1_000_000_000_000;

/// The `clock_ghz` a timing file may give (docs/timing.md, Parameter
/// ranges): 100 MHz up to (not including) 100 GHz. At 0.1 GHz a cycle is
/// 10⁴ ps, so the picosecond time of every cycle the event queue keys
/// exactly (48 bits) fits the VCD's 64-bit time (2⁴⁸ × 10⁴ < 2⁶⁴), and
/// at under 100 GHz a cycle is more than 10 ps, so distinct cycles get
/// distinct times. A tiny clock (1e-300) once gave times that saturated
/// at u64::MAX and repeated.
pub const CLOCK_GHZ_RANGE: std::ops::Range<f64> = 0.1..100.0;

/// A bad timing file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimingError(pub String);

impl fmt::Display for TimingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timing config: {}", self.0)
    }
}

impl std::error::Error for TimingError {}

/// The timing model's parameters (docs/references/design.md §4).
#[derive(Clone, Debug, PartialEq)]
pub struct TimingConfig {
    /// DMA clock in GHz (cycles per ns).
    pub clock_ghz: f64,
    /// Bytes per data beat.
    pub beat_bytes: u64,
    /// Beats per AXI burst; bursts break at `beat_bytes × burst_beats` boundaries.
    pub burst_beats: u64,
    /// Idle cycles per burst.
    pub burst_gap_cycles: u64,
    /// Data-path cycles per descriptor.
    pub desc_overhead_cycles: u64,
    /// Latency of a descriptor prefetch.
    pub desc_fetch_latency_cycles: u64,
    /// Additional prefetch cycles per descriptor.
    pub desc_fetch_per_desc_cycles: u64,
    /// First-data latency of a read.
    pub read_latency_cycles: u64,
    /// Latency of a write until it is visible.
    pub write_latency_cycles: u64,
    /// From a doorbell write to the queue's tail update.
    pub doorbell_latency_cycles: u64,
    /// First-data latency of a read from host memory (PCIe).
    pub host_read_latency_cycles: u64,
    /// Latency of a write to host memory (PCIe).
    pub host_write_latency_cycles: u64,
    /// Q7 firmware: fetch, decode and plan one 64-byte instruction word.
    pub q7_decode_cycles: u64,
    /// Q7 firmware: write one 16-byte descriptor into the DGE carve-out.
    pub q7_desc_write_cycles: u64,
    /// Q7 firmware: interval between polls of a completion pointer or a
    /// ring with no room.
    pub q7_poll_cycles: u64,
    /// Q7 firmware: from the cycle a semaphore change lets a waiting
    /// word's EVENTS gate pass to the cycle the word starts (the
    /// sequencer's cross-engine semaphore wake).
    pub q7_sem_wake_cycles: u64,
    /// Q7 `c_memcpy_data_transfer`: bytes copied per cycle.
    pub q7_scalar_copy_bytes_per_cycle: u64,
    /// Q7 `vec_memcpy_data_transfer`: bytes copied per cycle.
    pub q7_vector_copy_bytes_per_cycle: u64,
    /// Bandwidth of one HBM stack shared by every engine, GB/s (bytes per
    /// ns); 0 = no limit ([`crate::HbmBandwidth`]).
    pub hbm_stack_gbps: f64,
    /// The axi2sram cross-bar: cycles per transposed column it lands
    /// (a cross-bar packet's data phase is at least columns × this; with
    /// an SBUF source the read and the transposed write share the SBUF
    /// port and add up).
    pub xbar_column_cycles: f64,
    /// Every parameter with unit and source, as loaded.
    pub params: BTreeMap<String, TimingParam>,
}

impl TimingConfig {
    /// The built-in defaults.
    pub fn default_config() -> Result<Self, TimingError> {
        // Parsed once per process; each caller gets its own copy.
        static DEFAULT: std::sync::OnceLock<Result<TimingConfig, TimingError>> =
            std::sync::OnceLock::new();
        DEFAULT
            .get_or_init(|| Self::from_json(DEFAULT_TIMING_JSON))
            .clone()
    }

    /// Parses a user's timing file over the built-in defaults: it gives
    /// only the parameters it changes, each as a plain number
    /// (`"clock_ghz": 1.4`) or in the full form (`{"value": 1.4, "unit":
    /// "GHz", "source": "…"}`, unit and source optional; a unit must be the
    /// parameter's), either at the top level or under `"parameters"`
    /// (docs/timing.md, "Timing files"). A value given as a plain number
    /// gets `source` = `file`. Unknown names are errors with a suggestion.
    pub fn from_json_over_defaults(text: &str, file: &str) -> Result<Self, TimingError> {
        use serde_json::Value;
        crate::no_duplicate_keys(text).map_err(TimingError)?;
        let user: Value =
            serde_json::from_str(text).map_err(|e| TimingError(format!("invalid JSON: {e}")))?;
        let Value::Object(top) = user else {
            return Err(TimingError(
                "expected a JSON object of parameters (like {\"clock_ghz\": 1.4})".into(),
            ));
        };
        let given = match top.get("parameters") {
            Some(Value::Object(p)) => {
                if let Some(k) = top.keys().find(|k| {
                    !matches!(k.as_str(), "parameters" | "description" | "schema_version")
                }) {
                    return Err(TimingError(format!(
                        "unknown key `{k}` next to `parameters` (a file has `description`, `schema_version` and `parameters`, or parameters at the top level)"
                    )));
                }
                p.clone()
            }
            Some(_) => return Err(TimingError("`parameters` must be an object".into())),
            None => top
                .into_iter()
                // `schema_version`: what `neuron-sim timing --json` wrote.
                .filter(|(k, _)| k != "description" && k != "schema_version")
                .collect(),
        };
        let mut merged: Value = serde_json::from_str(DEFAULT_TIMING_JSON)
            .map_err(|e| TimingError(format!("built-in defaults: {e}")))?;
        let Some(Value::Object(defaults)) = merged.get_mut("parameters") else {
            return Err(TimingError("built-in defaults have no parameters".into()));
        };
        for (name, v) in given {
            let Some(Value::Object(slot)) = defaults.get_mut(&name) else {
                return Err(TimingError(format!(
                    "unknown parameter `{name}` (known: {}){}",
                    KNOWN.join(", "),
                    trace_format::closest_name(&name, KNOWN.iter().copied())
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_default()
                )));
            };
            let unit = slot
                .get("unit")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            match v {
                Value::Number(_) => {
                    slot.insert("value".into(), v);
                    slot.insert("source".into(), Value::from(file));
                }
                Value::Object(o) => {
                    if !o.contains_key("value") {
                        return Err(TimingError(format!(
                            "parameter `{name}`: the full form needs `value` ({{\"value\": N, \"unit\": \"{unit}\", \"source\": \"…\"}})"
                        )));
                    }
                    if !o.contains_key("source") {
                        slot.insert("source".into(), Value::from(file));
                    }
                    for (k, x) in o {
                        match (k.as_str(), &x) {
                            ("value", _) => {
                                slot.insert(k, x);
                            }
                            ("unit", Value::String(u)) if *u == unit => {}
                            ("unit", _) => {
                                return Err(TimingError(format!(
                                    "parameter `{name}`: unit {x} is not the parameter's unit \"{unit}\""
                                )));
                            }
                            ("source", Value::String(_)) => {
                                slot.insert(k, x);
                            }
                            _ => {
                                return Err(TimingError(format!(
                                    "parameter `{name}`: unknown or bad key `{k}` (the full form is {{\"value\": N, \"unit\": \"{unit}\", \"source\": \"…\"}})"
                                )));
                            }
                        }
                    }
                }
                other => {
                    return Err(TimingError(format!(
                        "parameter `{name}`: expected a number or {{\"value\": N, …}}, found {other}"
                    )));
                }
            }
        }
        Self::from_json_quoting(&merged.to_string(), &written_values(text))
    }

    /// Parses a timing file; every parameter must be present and sane.
    pub fn from_json(text: &str) -> Result<Self, TimingError> {
        Self::from_json_quoting(text, &BTreeMap::new())
    }

    /// [`TimingConfig::from_json`], quoting a value out of range as
    /// `written` has it (the text of each value of the file laid over the
    /// defaults: merged, a value is re-serialized, `1e300` as `1e+300`).
    fn from_json_quoting(
        text: &str,
        written: &BTreeMap<String, String>,
    ) -> Result<Self, TimingError> {
        let file: TimingFile =
            serde_json::from_str(text).map_err(|e| TimingError(format!("invalid JSON: {e}")))?;
        let mut params = BTreeMap::new();
        for (name, raw) in &file.parameters {
            let text = written.get(name).map_or(raw.value.get(), String::as_str);
            let value = serde_json::from_str::<f64>(text)
                .ok()
                .or_else(|| {
                    // Numbers beyond f64 (`1e400`) read as infinite; strings do not.
                    text.parse::<f64>().ok().filter(|v| v.is_infinite())
                })
                .ok_or_else(|| {
                    TimingError(format!(
                        "parameter `{name}`: `value` must be a number, not {text}"
                    ))
                })?;
            params.insert(
                name.clone(),
                (
                    text,
                    TimingParam {
                        value,
                        unit: raw.unit.clone(),
                        source: raw.source.clone(),
                    },
                ),
            );
        }
        let p = &params;
        let get = |name: &str| -> Result<(f64, &str), TimingError> {
            p.get(name)
                .map(|(text, t)| (t.value, *text))
                .ok_or_else(|| TimingError(format!("parameter `{name}` is missing")))
        };
        let int = |name: &str, min: u64| -> Result<u64, TimingError> {
            let (v, text) = get(name)?;
            if v < min as f64 {
                return Err(TimingError(format!(
                    "parameter `{name}` = {text} must be ≥ {min}"
                )));
            }
            if v.is_nan() || v > MAX_INT_PARAM as f64 {
                return Err(TimingError(format!(
                    "parameter `{name}` = {text} is too large: at most {MAX_INT_PARAM}"
                )));
            }
            if v.fract() != 0.0 {
                return Err(TimingError(format!(
                    "parameter `{name}` = {text} must be a whole number"
                )));
            }
            Ok(v as u64)
        };
        for name in p.keys() {
            if !KNOWN.contains(&name.as_str()) {
                return Err(TimingError(format!(
                    "unknown parameter `{name}` (known: {})",
                    KNOWN.join(", ")
                )));
            }
        }
        let (clock_ghz, text) = get("clock_ghz")?;
        if !(clock_ghz.is_finite() && CLOCK_GHZ_RANGE.contains(&clock_ghz)) {
            return Err(TimingError(format!(
                "parameter `clock_ghz` = {text} must be in [{}, {}) GHz (docs/timing.md, Parameter ranges)",
                CLOCK_GHZ_RANGE.start, CLOCK_GHZ_RANGE.end
            )));
        }
        let (hbm_stack_gbps, text) = get("hbm_stack_gbps")?;
        if !(hbm_stack_gbps.is_finite() && (0.0..1e6).contains(&hbm_stack_gbps)) {
            return Err(TimingError(format!(
                "parameter `hbm_stack_gbps` = {text} must be in [0, 1e6) (0: no limit)"
            )));
        }
        let (xbar_column_cycles, text) = get("xbar_column_cycles")?;
        if !(xbar_column_cycles.is_finite() && (0.0..1e3).contains(&xbar_column_cycles)) {
            return Err(TimingError(format!(
                "parameter `xbar_column_cycles` = {text} must be in [0, 1000)"
            )));
        }
        Ok(Self {
            clock_ghz,
            beat_bytes: int("beat_bytes", 1)?,
            burst_beats: int("burst_beats", 1)?,
            burst_gap_cycles: int("burst_gap_cycles", 0)?,
            desc_overhead_cycles: int("desc_overhead_cycles", 0)?,
            desc_fetch_latency_cycles: int("desc_fetch_latency_cycles", 0)?,
            desc_fetch_per_desc_cycles: int("desc_fetch_per_desc_cycles", 0)?,
            read_latency_cycles: int("read_latency_cycles", 0)?,
            write_latency_cycles: int("write_latency_cycles", 0)?,
            doorbell_latency_cycles: int("doorbell_latency_cycles", 0)?,
            host_read_latency_cycles: int("host_read_latency_cycles", 0)?,
            host_write_latency_cycles: int("host_write_latency_cycles", 0)?,
            q7_decode_cycles: int("q7_decode_cycles", 0)?,
            q7_desc_write_cycles: int("q7_desc_write_cycles", 0)?,
            q7_poll_cycles: int("q7_poll_cycles", 1)?,
            q7_sem_wake_cycles: int("q7_sem_wake_cycles", 0)?,
            q7_scalar_copy_bytes_per_cycle: int("q7_scalar_copy_bytes_per_cycle", 1)?,
            q7_vector_copy_bytes_per_cycle: int("q7_vector_copy_bytes_per_cycle", 1)?,
            hbm_stack_gbps,
            xbar_column_cycles,
            params: params.into_iter().map(|(k, (_, t))| (k, t)).collect(),
        })
    }

    /// Read latency for a source at `addr`: host memory (PA | bit 46, below
    /// the die bit) goes over PCIe.
    pub fn read_latency(&self, addr: u64) -> u64 {
        if is_host(addr) {
            self.host_read_latency_cycles
        } else {
            self.read_latency_cycles
        }
    }

    /// Write latency for a destination at `addr`.
    pub fn write_latency(&self, addr: u64) -> u64 {
        if is_host(addr) {
            self.host_write_latency_cycles
        } else {
            self.write_latency_cycles
        }
    }

    /// Simulated nanoseconds for a cycle count.
    pub fn ns(&self, cycles: u64) -> f64 {
        cycles as f64 / self.clock_ghz
    }

    /// Data-path cycles to move `len` bytes starting at `addr`: one cycle per
    /// beat, plus the burst gap for every burst (bursts break at
    /// `beat_bytes × burst_beats` boundaries), plus the per-descriptor cost.
    pub fn transfer_cycles(&self, addr: u64, len: u64) -> u64 {
        if len == 0 {
            return self.desc_overhead_cycles;
        }
        let burst_bytes = self.beat_bytes * self.burst_beats;
        let end = addr.saturating_add(len) - 1;
        // Power-of-two sizes (the defaults) divide by shifting: the same
        // result without a 64-bit divide on every packet.
        let (bursts, beats) = if burst_bytes.is_power_of_two() && self.beat_bytes.is_power_of_two()
        {
            let s = burst_bytes.trailing_zeros();
            let b = self.beat_bytes.trailing_zeros();
            (
                (end >> s) - (addr >> s) + 1,
                (len >> b) + u64::from(len & (self.beat_bytes - 1) != 0),
            )
        } else {
            (
                end / burst_bytes - addr / burst_bytes + 1,
                len.div_ceil(self.beat_bytes),
            )
        };
        beats + bursts * self.burst_gap_cycles + self.desc_overhead_cycles
    }
}

/// Host memory is reached at PA | bit 46 (docs/references/driver.md §6.1); bit 47 is the
/// die bit.
fn is_host(addr: u64) -> bool {
    addr & (1 << 46) != 0 && addr & (1 << 47) == 0
}

const KNOWN: &[&str] = &[
    "clock_ghz",
    "beat_bytes",
    "burst_beats",
    "burst_gap_cycles",
    "desc_overhead_cycles",
    "desc_fetch_latency_cycles",
    "desc_fetch_per_desc_cycles",
    "read_latency_cycles",
    "write_latency_cycles",
    "doorbell_latency_cycles",
    "host_read_latency_cycles",
    "host_write_latency_cycles",
    "q7_decode_cycles",
    "q7_desc_write_cycles",
    "q7_poll_cycles",
    "q7_sem_wake_cycles",
    "q7_scalar_copy_bytes_per_cycle",
    "q7_vector_copy_bytes_per_cycle",
    "hbm_stack_gbps",
    "xbar_column_cycles",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A timing file gives only what it changes, flat or under
    /// `parameters`, plain or in the full form (issue 13 item 3).
    #[test]
    fn partial_files_lay_over_the_defaults() {
        let d = TimingConfig::default_config().unwrap();
        for text in [
            r#"{"clock_ghz": 1.4}"#,
            r#"{"parameters": {"clock_ghz": 1.4}}"#,
            r#"{"parameters": {"clock_ghz": {"value": 1.4, "unit": "GHz", "source": "me"}}}"#,
            r#"{"description": "x", "clock_ghz": {"value": 1.4}}"#,
        ] {
            let t = TimingConfig::from_json_over_defaults(text, "t.json").unwrap();
            assert_eq!(t.clock_ghz, 1.4, "{text}");
            assert_eq!(t.beat_bytes, d.beat_bytes, "{text}");
            assert_eq!(t.params["beat_bytes"], d.params["beat_bytes"], "{text}");
            assert_eq!(t.params["clock_ghz"].unit, "GHz");
            let want = if text.contains("\"me\"") {
                "me"
            } else {
                "t.json"
            };
            assert_eq!(t.params["clock_ghz"].source, want, "{text}");
        }
        // The built-in file itself is a (complete) timing file.
        assert_eq!(
            TimingConfig::from_json_over_defaults(DEFAULT_TIMING_JSON, "d").unwrap(),
            d
        );
        let e = |text: &str| {
            TimingConfig::from_json_over_defaults(text, "t.json")
                .unwrap_err()
                .0
        };
        assert!(e(r#"{"clock_ghzz": 1}"#).ends_with("did you mean `clock_ghz`?"));
        assert_eq!(
            e(r#"{"clock_ghz": {"value": 1, "unit": "MHz"}}"#),
            "parameter `clock_ghz`: unit \"MHz\" is not the parameter's unit \"GHz\""
        );
        assert!(e(r#"{"clock_ghz": {"unit": "GHz"}}"#).contains("needs `value`"));
        assert!(e(r#"{"clock_ghz": "fast"}"#).contains("expected a number"));
        assert!(e(r#"{"clock_ghz": 0}"#).contains("must be in [0.1, 100) GHz"));
        assert!(e(r#"{"parameters": {}, "extra": 1}"#).contains("unknown key `extra`"));
        assert!(e("[1]").contains("expected a JSON object"));
    }

    #[test]
    fn clock_ghz_is_held_to_its_range() {
        let parse = |v: &str| {
            TimingConfig::from_json_over_defaults(&format!("{{\"clock_ghz\": {v}}}"), "t.json")
        };
        // Quoted as written, not as serde prints the number (`1e+300`,
        // `100.0`): plain and full form alike.
        for bad in ["1e-300", "0.0999", "0", "-1", "100", "1000", "1e300", "1E2"] {
            let e = parse(bad).unwrap_err().0;
            assert_eq!(
                e,
                format!(
                    "parameter `clock_ghz` = {bad} must be in [0.1, 100) GHz (docs/timing.md, Parameter ranges)"
                ),
                "{bad}"
            );
        }
        let full = TimingConfig::from_json_over_defaults(
            r#"{"parameters": {"clock_ghz": {"value": 1e300, "unit": "GHz"}}}"#,
            "t.json",
        )
        .unwrap_err()
        .0;
        assert!(full.contains("`clock_ghz` = 1e300 must be"), "{full}");
        for good in ["0.1", "0.85", "1.4", "99.99"] {
            assert!(parse(good).is_ok(), "{good}");
        }
        // The range's reason: every 48-bit cycle's picosecond time fits 64 bits.
        let slowest_ps_per_cycle = 1000.0 / CLOCK_GHZ_RANGE.start;
        assert!((1u64 << 48) as f64 * slowest_ps_per_cycle < u64::MAX as f64);
    }

    /// The shift path for power-of-two sizes equals plain division.
    #[test]
    fn transfer_cycles_shift_path_matches_division() {
        let reference = |t: &TimingConfig, addr: u64, len: u64| {
            let burst = t.beat_bytes * t.burst_beats;
            let bursts = (addr + len - 1) / burst - addr / burst + 1;
            len.div_ceil(t.beat_bytes) + bursts * t.burst_gap_cycles + t.desc_overhead_cycles
        };
        let pow2 = TimingConfig::default_config().unwrap();
        let mut odd = pow2.clone();
        odd.beat_bytes = 24;
        odd.burst_beats = 3;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let addr = x % (1 << 40);
            let len = 1 + (x >> 40) % 70_000;
            for t in [&pow2, &odd] {
                assert_eq!(
                    t.transfer_cycles(addr, len),
                    reference(t, addr, len),
                    "{addr:#x} {len}"
                );
            }
        }
    }

    #[test]
    fn defaults_load_with_sources() {
        let t = TimingConfig::default_config().unwrap();
        assert_eq!(t.beat_bytes, 32);
        assert_eq!(t.burst_beats, 8);
        assert!((t.clock_ghz - 0.85).abs() < 1e-12);
        for p in t.params.values() {
            assert!(!p.source.is_empty() && !p.unit.is_empty());
        }
        // 32 KiB aligned: 1024 beats in 128 bursts.
        assert_eq!(
            t.transfer_cycles(0, 32 * 1024),
            1024 + 128 * t.burst_gap_cycles + t.desc_overhead_cycles
        );
        // An unaligned 4-byte access inside one burst.
        assert_eq!(
            t.transfer_cycles(0x1004, 4),
            1 + t.burst_gap_cycles + t.desc_overhead_cycles
        );
        // Crossing a 256-byte boundary costs a second burst.
        assert_eq!(
            t.transfer_cycles(0xFC, 8),
            1 + 2 * t.burst_gap_cycles + t.desc_overhead_cycles
        );
    }

    #[test]
    fn bad_files_name_the_parameter() {
        let e = TimingConfig::from_json(r#"{"parameters": {}}"#).unwrap_err();
        assert!(e.0.contains("`clock_ghz` is missing"), "{e}");
        let text = DEFAULT_TIMING_JSON.replace("\"burst_beats\"", "\"burst_beatz\"");
        let e = TimingConfig::from_json(&text).unwrap_err();
        assert!(e.0.contains("burst_beatz"), "{e}");
        let text = DEFAULT_TIMING_JSON.replace("\"value\": 32,", "\"value\": 32.5,");
        let e = TimingConfig::from_json(&text).unwrap_err();
        assert!(e.0.contains("beat_bytes"), "{e}");
    }

    /// The default file with `burst_gap_cycles` set to `value` (as written).
    fn with_gap(value: &str) -> String {
        let gap = DEFAULT_TIMING_JSON
            .find("\"burst_gap_cycles\"")
            .expect("burst_gap_cycles in the defaults");
        let at = gap
            + DEFAULT_TIMING_JSON[gap..]
                .find("\"value\": 1,")
                .expect("its value");
        format!(
            "{}\"value\": {value},{}",
            &DEFAULT_TIMING_JSON[..at],
            &DEFAULT_TIMING_JSON[at + "\"value\": 1,".len()..]
        )
    }

    #[test]
    fn too_large_values_are_printed_as_written() {
        // u64::MAX used to print as 18446744073709552000 "must be a whole number".
        for v in [
            "18446744073709551615",
            "18446744073709551616",
            "1e300",
            "1000000000001",
        ] {
            let e = TimingConfig::from_json(&with_gap(v))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("`burst_gap_cycles` = {v} is too large")),
                "{e}"
            );
            assert!(e.contains("at most 1000000000000"), "{e}");
        }
        let e = TimingConfig::from_json(&with_gap("2.50"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`burst_gap_cycles` = 2.50 must be a whole number"),
            "{e}"
        );
        let e = TimingConfig::from_json(&with_gap("-1"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`burst_gap_cycles` = -1 must be ≥ 0"), "{e}");
        let e = TimingConfig::from_json(&with_gap("\"3\""))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`burst_gap_cycles`: `value` must be a number"),
            "{e}"
        );
        assert_eq!(
            TimingConfig::from_json(&with_gap("1000000000000"))
                .unwrap()
                .burst_gap_cycles,
            1_000_000_000_000
        );
    }
}
