//! The sweep CSV: rows, the shard header line and `sweep merge`.

use std::collections::BTreeMap;

use crate::params::Published;
use crate::parse_shard;
use crate::run::{Job, Measured, label};

// -------------------------------------------------------------------- CSV

/// One CSV row, formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub point: usize,
    pub values: Vec<String>,
    pub cycles: u64,
    pub ns: String,
    pub payload: u64,
    pub gbps: String,
    pub descriptors: u64,
    pub exit: u8,
    /// Expectations the point skipped: in timing-only mode, checks of
    /// bytes no DMA moved (neither passed nor failed).
    pub expectations_skipped: usize,
    pub host_seconds: String,
}

impl Row {
    pub fn new(job: &Job, m: &Measured, host_time: bool) -> Self {
        let gbps = if m.ns > 0.0 {
            m.payload as f64 / m.ns
        } else {
            0.0
        };
        Row {
            point: job.point,
            values: job.values.clone(),
            cycles: m.cycles,
            ns: format!("{:.1}", m.ns),
            payload: m.payload,
            gbps: format!("{gbps:.3}"),
            descriptors: m.descriptors,
            exit: m.exit,
            expectations_skipped: m.expectations_skipped,
            host_seconds: if host_time {
                format!("{:.6}", m.host_seconds)
            } else {
                String::new()
            },
        }
    }

    pub fn label(&self, names: &[String]) -> String {
        label(names, &self.values)
    }

    fn line(&self) -> String {
        let mut cells = vec![self.point.to_string()];
        cells.extend(self.values.iter().cloned());
        cells.extend([
            self.cycles.to_string(),
            self.ns.clone(),
            self.payload.to_string(),
            self.gbps.clone(),
            self.descriptors.to_string(),
            self.exit.to_string(),
            self.expectations_skipped.to_string(),
            self.host_seconds.clone(),
        ]);
        cells.join(",")
    }
}

/// What the rows skipped, for a line beside the CSV: `K of N points
/// skipped E expectation(s) (timing-only: …)`; None when no row skipped
/// one. A skipped check is neither passed nor failed (an exit 0 does not
/// say it held), so a sweep that skipped checks says so.
pub fn skipped_note(rows: &[Row]) -> Option<String> {
    let points = rows.iter().filter(|r| r.expectations_skipped > 0).count();
    let skipped: usize = rows.iter().map(|r| r.expectations_skipped).sum();
    (points > 0).then(|| {
        format!(
            "{points} of {} points skipped {skipped} expectation(s) (timing-only: bytes not moved): \
             not checked, neither passed nor failed",
            rows.len()
        )
    })
}

/// Columns after the parameters.
const RESULT_COLUMNS: [&str; 8] = [
    "cycles",
    "ns",
    "payload_bytes",
    "gbps",
    "descriptors",
    "exit",
    "expectations_skipped",
    "host_seconds",
];

/// Every column that is not a parameter's, in header order: no
/// parameter may take one of these names ([`crate::parse_param`]).
pub(crate) const COLUMNS_BESIDE_PARAMETERS: [&str; 1 + RESULT_COLUMNS.len()] = [
    "point",
    RESULT_COLUMNS[0],
    RESULT_COLUMNS[1],
    RESULT_COLUMNS[2],
    RESULT_COLUMNS[3],
    RESULT_COLUMNS[4],
    RESULT_COLUMNS[5],
    RESULT_COLUMNS[6],
    RESULT_COLUMNS[7],
];

/// What a partial CSV's first line records, for `sweep merge`, and what
/// the plot says besides the rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepMeta {
    /// Points of the whole sweep.
    pub points: usize,
    /// The x parameter (`#@ x`, `--x`).
    pub x: Option<String>,
    /// The published set (`#@ published`, `--published`).
    pub published: Published,
    /// The trace as named on the command line.
    pub trace: String,
    /// Timing-only mode (no payload bytes moved; the same cycles).
    pub timing_only: bool,
    /// The timing file (`--timing`), or None for the built-in timing.
    pub timing: Option<String>,
    /// The parameter that is bytes per partition (`#@ partition-bytes`):
    /// the plot draws the bytes-per-partition guidance only over it.
    pub partition_bytes: Option<String>,
    /// What the sweep is, as 16 hex digits: a digest of the trace's text,
    /// the effective timing parameters and [`SweepMeta::values`]
    /// ([`sweep_id`]), so that `sweep merge` refuses parts of another
    /// sweep of the same name, or of one run with other timing.
    pub id: String,
    /// A digest of the parameters' names and every point's values, in
    /// point order ([`values_digest`]), 16 hex digits: `sweep merge`
    /// computes it again from the rows it joins, so a row whose values no
    /// point of the sweep has is refused.
    pub values: String,
}

/// FNV-1a over `fields`, each followed by a separator byte no text holds
/// (so that fields do not run together), as 16 hex digits.
fn fnv_fields<'a>(fields: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for bytes in fields {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// [`SweepMeta::values`] of a sweep: the parameter names, then each
/// point's values, in order.
pub fn values_digest<P: AsRef<[V]>, V: std::fmt::Display>(
    names: &[String],
    points: &[P],
) -> String {
    let values: Vec<String> = points
        .iter()
        .flat_map(|p| p.as_ref().iter().map(ToString::to_string))
        .collect();
    fnv_fields(
        names
            .iter()
            .map(String::as_bytes)
            .chain(values.iter().map(String::as_bytes)),
    )
}

/// [`SweepMeta::id`] of a sweep: the trace text, the effective timing
/// parameters (`timing`, as the device factory describes them) and the
/// [`values_digest`].
pub fn sweep_id(text: &str, timing: &str, values: &str) -> String {
    fnv_fields([text.as_bytes(), timing.as_bytes(), values.as_bytes()])
}

const SHARD_PREFIX: &str = "# neuron-sim sweep shard ";

impl SweepMeta {
    /// The first line of shard `(i, n)`'s partial CSV.
    pub fn line(&self, (i, n): (usize, usize)) -> String {
        format!(
            "{SHARD_PREFIX}{i}/{n}: points={} x={} published={} mode={} partition-bytes={} timing={} id={} values={} trace={}",
            self.points,
            self.x.as_deref().unwrap_or("-"),
            self.published.name(),
            self.mode(),
            self.partition_bytes.as_deref().unwrap_or("-"),
            self.timing.as_deref().unwrap_or("-"),
            if self.id.is_empty() { "-" } else { &self.id },
            if self.values.is_empty() {
                "-"
            } else {
                &self.values
            },
            self.trace
        )
    }

    /// `timing-only` or `data`.
    pub fn mode(&self) -> &'static str {
        if self.timing_only {
            "timing-only"
        } else {
            "data"
        }
    }

    /// Parses the first line of a partial CSV: (meta, shard).
    pub fn parse(line: &str) -> Option<(Self, (usize, usize))> {
        let rest = line.strip_prefix(SHARD_PREFIX)?;
        let (shard, rest) = rest.split_once(": ")?;
        let shard = parse_shard(shard).ok()?;
        let rest = rest.strip_prefix("points=")?;
        let (points, rest) = rest.split_once(" x=")?;
        let (x, rest) = rest.split_once(" published=")?;
        let (published, rest) = rest.split_once(" mode=")?;
        let (mode, rest) = rest.split_once(" partition-bytes=")?;
        let (partition_bytes, rest) = rest.split_once(" timing=")?;
        let (timing, rest) = rest.split_once(" id=")?;
        let (id, rest) = rest.split_once(" values=")?;
        let (values, trace) = rest.split_once(" trace=")?;
        let named = |v: &str| (v != "-").then(|| v.to_string());
        Some((
            SweepMeta {
                points: points.parse().ok()?,
                x: named(x),
                published: Published::from_name(published)?,
                trace: trace.to_string(),
                timing_only: match mode {
                    "timing-only" => true,
                    "data" => false,
                    _ => return None,
                },
                timing: named(timing),
                partition_bytes: named(partition_bytes),
                id: named(id).unwrap_or_default(),
                values: named(values).unwrap_or_default(),
            },
            shard,
        ))
    }
}

fn header(names: &[String]) -> String {
    let mut cols = vec!["point".to_string()];
    cols.extend(names.iter().cloned());
    cols.extend(RESULT_COLUMNS.iter().map(|c| (*c).to_string()));
    cols.join(",")
}

pub fn render_csv(
    names: &[String],
    rows: &[Row],
    shard: Option<((usize, usize), &SweepMeta)>,
) -> String {
    let mut out = String::new();
    if let Some((s, meta)) = shard {
        out.push_str(&meta.line(s));
        out.push('\n');
    }
    out.push_str(&header(names));
    out.push('\n');
    for r in rows {
        out.push_str(&r.line());
        out.push('\n');
    }
    out
}

/// A sweep CSV read back.
#[derive(Clone, Debug)]
pub struct Csv {
    pub names: Vec<String>,
    pub rows: Vec<Row>,
}

impl Csv {
    /// Errors name the line (1-based, comment lines counted), the column
    /// and what is wrong with the cell.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.starts_with('#'));
        let (_, head) = lines.next().ok_or("empty CSV")?;
        let cols: Vec<&str> = head.split(',').collect();
        let n = cols.len();
        if n < 1 + RESULT_COLUMNS.len()
            || cols[0] != "point"
            || cols[n - RESULT_COLUMNS.len()..] != RESULT_COLUMNS
        {
            return Err(format!("not a neuron-sim sweep CSV header: `{head}`"));
        }
        let names: Vec<String> = cols[1..n - RESULT_COLUMNS.len()]
            .iter()
            .map(|s| (*s).to_string())
            .collect();
        let mut rows = Vec::new();
        for (i, line) in lines {
            let c: Vec<&str> = line.split(',').collect();
            if c.len() != n {
                return Err(format!(
                    "line {}: {} columns, the header has {n} ({head})",
                    i + 1,
                    c.len()
                ));
            }
            let p = names.len() + 1;
            let cell = |k: usize, why: &str| {
                format!("line {}: column `{}` = `{}`: {why}", i + 1, cols[k], c[k])
            };
            let int = |k: usize| -> Result<u64, String> {
                let s = c[k];
                if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(cell(k, "not a whole number"));
                }
                s.parse::<u64>()
                    .map_err(|_| cell(k, &format!("too large (at most {})", u64::MAX)))
            };
            let real = |k: usize, empty_ok: bool| -> Result<String, String> {
                let s = c[k];
                if (empty_ok && s.is_empty()) || s.parse::<f64>().is_ok_and(f64::is_finite) {
                    Ok(s.to_string())
                } else if empty_ok {
                    Err(cell(k, "not a number (or empty)"))
                } else {
                    Err(cell(k, "not a number"))
                }
            };
            let point = usize::try_from(int(0)?)
                .map_err(|_| cell(0, &format!("too large (at most {})", usize::MAX)))?;
            let exit = u8::try_from(int(p + 5)?)
                .map_err(|_| cell(p + 5, "not an exit status (0..=255)"))?;
            rows.push(Row {
                point,
                values: c[1..p].iter().map(|s| (*s).to_string()).collect(),
                cycles: int(p)?,
                ns: real(p + 1, false)?,
                payload: int(p + 2)?,
                gbps: real(p + 3, false)?,
                descriptors: int(p + 4)?,
                exit,
                expectations_skipped: usize::try_from(int(p + 6)?)
                    .map_err(|_| cell(p + 6, &format!("too large (at most {})", usize::MAX)))?,
                host_seconds: real(p + 7, true)?,
            });
        }
        Ok(Csv { names, rows })
    }
}

/// Joins partial CSVs (name, text) into the CSV of one run.
pub fn merge(parts: &[(String, String)]) -> Result<(String, SweepMeta), String> {
    let mut meta: Option<SweepMeta> = None;
    let mut names: Option<Vec<String>> = None;
    let mut shards_seen = BTreeMap::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut seen_points: BTreeMap<usize, String> = BTreeMap::new();
    let mut total_shards = None;
    for (file, text) in parts {
        let first = text.lines().next().unwrap_or("");
        let (m, (i, n)) = SweepMeta::parse(first).ok_or_else(|| {
            format!("{file}: not a partial sweep CSV (first line `{SHARD_PREFIX}I/N: …`; run with --shard)")
        })?;
        match &meta {
            None => meta = Some(m),
            Some(prev) if *prev != m => {
                return Err(format!(
                    "{file}: from another sweep (`{first}` vs points={} id={} trace={}: the id is a digest of the trace's text, the timing parameters and every point's values)",
                    prev.points, prev.id, prev.trace
                ));
            }
            Some(_) => {}
        }
        if *total_shards.get_or_insert(n) != n {
            return Err(format!(
                "{file}: shard {i}/{n}, but other parts have N = {total_shards:?}"
            ));
        }
        if let Some(other) = shards_seen.insert(i, file.clone()) {
            return Err(format!("{file}: shard {i}/{n} given twice (also {other})"));
        }
        let csv = Csv::parse(text).map_err(|e| format!("{file}: {e}"))?;
        match &names {
            None => names = Some(csv.names.clone()),
            Some(prev) if *prev != csv.names => {
                return Err(format!(
                    "{file}: other parameters ({:?} vs {prev:?})",
                    csv.names
                ));
            }
            Some(_) => {}
        }
        for r in csv.rows {
            if r.point >= meta.as_ref().map_or(0, |m| m.points) {
                return Err(format!(
                    "{file}: point {} is past the sweep's {} points",
                    r.point,
                    meta.as_ref().map_or(0, |m| m.points)
                ));
            }
            if r.point % n != i {
                return Err(format!(
                    "{file}: point {} does not belong to shard {i}/{n}",
                    r.point
                ));
            }
            if let Some(other) = seen_points.insert(r.point, file.clone()) {
                return Err(if other == *file {
                    format!("{file}: point {} appears twice", r.point)
                } else {
                    format!("{file}: point {} is also in {other}", r.point)
                });
            }
            rows.push(r);
        }
    }
    let (Some(meta), Some(names), Some(n)) = (meta, names, total_shards) else {
        return Err("no parts to merge".into());
    };
    // The first gap is found within the shards given (N may be huge).
    if let Some(first) = (0..n).find(|i| !shards_seen.contains_key(i)) {
        return Err(format!(
            "missing shard {first}/{n} ({} of {n} not given)",
            n - shards_seen.len()
        ));
    }
    rows.sort_by_key(|r| r.point);
    if let Some(k) = (0..meta.points).find(|k| !seen_points.contains_key(k)) {
        return Err(format!("point {k} of 0..{} is in no part", meta.points));
    }
    // Every row's values, against the digest of the sweep's points.
    let values: Vec<&[String]> = rows.iter().map(|r| r.values.as_slice()).collect();
    let found = values_digest(&names, &values);
    if found != meta.values {
        return Err(format!(
            "the rows' parameter values are not the sweep's (their digest is {found}, the parts' \
             headers say values={}): a part was edited, or has rows of another sweep",
            meta.values
        ));
    }
    Ok((render_csv(&names, &rows, None), meta))
}

#[cfg(test)]
pub mod tests {
    use super::*;

    pub(crate) fn row(point: usize, bytes: u64, gbps: f64) -> Row {
        Row {
            point,
            values: vec![bytes.to_string()],
            cycles: 100 + point as u64,
            ns: "117.6".into(),
            payload: bytes,
            gbps: format!("{gbps:.3}"),
            descriptors: 4,
            exit: 0,
            expectations_skipped: 0,
            host_seconds: String::new(),
        }
    }

    #[test]
    fn bad_rows_name_the_line_the_column_and_why() {
        let head = "point,bytes,cycles,ns,payload_bytes,gbps,descriptors,exit,expectations_skipped,host_seconds";
        assert_eq!(header(&["bytes".to_string()]), head);
        let err = |rows: &str| Csv::parse(&format!("# c\n{head}\n{rows}")).unwrap_err();
        let good = "0,128,100,117.6,128,1.088,4,0,0,";
        assert!(Csv::parse(&format!("{head}\n{good}\n")).is_ok());
        assert_eq!(
            err(&format!("{good}\n0,128,1x0,117.6,128,1.088,4,0,0,\n")),
            "line 4: column `cycles` = `1x0`: not a whole number"
        );
        assert_eq!(
            err("0,128,100,117.6,128,1.088,4\n"),
            "line 3: 7 columns, the header has 10 (point,bytes,cycles,ns,payload_bytes,gbps,descriptors,exit,expectations_skipped,host_seconds)"
        );
        assert_eq!(
            err("0,128,100,fast,128,1.088,4,0,0,\n"),
            "line 3: column `ns` = `fast`: not a number"
        );
        assert_eq!(
            err("0,128,100,117.6,128,1.088,4,300,0,\n"),
            "line 3: column `exit` = `300`: not an exit status (0..=255)"
        );
        assert_eq!(
            err("0,128,100,117.6,18446744073709551616,1.088,4,0,0,\n"),
            "line 3: column `payload_bytes` = `18446744073709551616`: too large (at most 18446744073709551615)"
        );
        assert_eq!(
            err("-1,128,100,117.6,128,1.088,4,0,0,\n"),
            "line 3: column `point` = `-1`: not a whole number"
        );
        assert_eq!(
            err("0,128,100,117.6,128,1.088,4,0,0,soon\n"),
            "line 3: column `host_seconds` = `soon`: not a number (or empty)"
        );
        assert_eq!(
            err("0,128,100,117.6,128,1.088,4,0,one,\n"),
            "line 3: column `expectations_skipped` = `one`: not a whole number"
        );
    }

    #[test]
    fn merge_names_the_point_that_is_missing_or_doubled() {
        let names = vec!["bytes".to_string()];
        let meta = SweepMeta {
            points: 3,
            x: None,
            published: Published::Auto,
            trace: "t.trace".into(),
            ..SweepMeta::default()
        };
        let part = |i: usize, points: &[usize]| {
            let mine: Vec<Row> = points.iter().map(|&k| row(k, 128, 1.0)).collect();
            (
                format!("p{i}"),
                render_csv(&names, &mine, Some(((i, 2), &meta))),
            )
        };
        let e = merge(&[part(0, &[0]), part(1, &[1])]).unwrap_err();
        assert_eq!(e, "point 2 of 0..3 is in no part");
        let e = merge(&[part(0, &[0, 2, 2]), part(1, &[1])]).unwrap_err();
        assert_eq!(e, "p0: point 2 appears twice");
        let e = merge(&[part(0, &[0, 2, 4]), part(1, &[1])]).unwrap_err();
        assert_eq!(e, "p0: point 4 is past the sweep's 3 points");
    }

    #[test]
    fn a_huge_shard_count_is_reported_without_listing_every_shard() {
        // Found by the fuzz campaign (sweep-merge): N = u64::MAX made the
        // merge collect every missing shard index (memory without bound).
        let names = vec!["bytes".to_string()];
        let meta = SweepMeta {
            points: 6,
            x: None,
            published: Published::Auto,
            trace: "t.trace".into(),
            ..SweepMeta::default()
        };
        let n = usize::MAX;
        let part = render_csv(&names, &[row(0, 128, 1.0)], Some(((0, n), &meta)));
        let started = std::time::Instant::now();
        let e = merge(&[("p0".into(), part)]).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(
            e,
            format!("missing shard 1/{n} ({} of {n} not given)", n - 1)
        );
    }

    #[test]
    fn merge_rebuilds_the_single_run() {
        let names = vec!["bytes".to_string()];
        let rows: Vec<Row> = (0..5)
            .map(|k| row(k, 128 << k, 10.0 * k as f64 + 1.0))
            .collect();
        let values: Vec<&[String]> = rows.iter().map(|r| r.values.as_slice()).collect();
        let meta = SweepMeta {
            points: 5,
            x: None,
            published: Published::Auto,
            trace: "t.trace".into(),
            values: values_digest(&names, &values),
            ..SweepMeta::default()
        };
        let full = render_csv(&names, &rows, None);
        let parts: Vec<(String, String)> = (0..2)
            .rev()
            .map(|i| {
                let mine: Vec<Row> = rows.iter().filter(|r| r.point % 2 == i).cloned().collect();
                (
                    format!("p{i}"),
                    render_csv(&names, &mine, Some(((i, 2), &meta))),
                )
            })
            .collect();
        let (merged, m) = merge(&parts).unwrap();
        assert_eq!(merged, full);
        assert_eq!(m, meta);
        // A missing or doubled part is an error.
        assert!(merge(&parts[..1]).unwrap_err().contains("missing shard"));
        let doubled = vec![parts[0].clone(), parts[0].clone()];
        assert!(merge(&doubled).unwrap_err().contains("twice"));
        assert!(merge(&[("f".into(), full)]).is_err());
        // A row whose value no point of the sweep has (finding 6 of the
        // probe report sweep-etc.md): refused.
        let mut edited = parts.clone();
        edited[0].1 = edited[0].1.replace("\n3,1024,", "\n3,1000,");
        assert_ne!(edited, parts);
        let e = merge(&edited).unwrap_err();
        assert!(
            e.starts_with("the rows' parameter values are not the sweep's"),
            "{e}"
        );
    }
}
