//! The sweep CSV: rows, the shard header line and `sweep merge`.

use std::collections::BTreeMap;

use super::params::Published;
use super::parse_shard;
use super::run::{Job, Measured, label};

// -------------------------------------------------------------------- CSV

/// One CSV row, formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Row {
    pub(super) point: usize,
    pub(super) values: Vec<String>,
    pub(super) cycles: u64,
    pub(super) ns: String,
    pub(super) payload: u64,
    pub(super) gbps: String,
    pub(super) descriptors: u64,
    pub(super) exit: u8,
    pub(super) host_seconds: String,
}

impl Row {
    pub(super) fn new(job: &Job, m: &Measured, host_time: bool) -> Self {
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
            host_seconds: if host_time {
                format!("{:.6}", m.host_seconds)
            } else {
                String::new()
            },
        }
    }

    pub(super) fn label(&self, names: &[String]) -> String {
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
            self.host_seconds.clone(),
        ]);
        cells.join(",")
    }
}

/// Columns after the parameters.
const RESULT_COLUMNS: [&str; 7] = [
    "cycles",
    "ns",
    "payload_bytes",
    "gbps",
    "descriptors",
    "exit",
    "host_seconds",
];

/// What a partial CSV's first line records, for `sweep merge`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SweepMeta {
    pub(super) points: usize,
    pub(super) x: Option<String>,
    pub(super) published: Published,
    pub(super) trace: String,
}

const SHARD_PREFIX: &str = "# neuron-sim sweep shard ";

impl SweepMeta {
    pub(super) fn line(&self, (i, n): (usize, usize)) -> String {
        format!(
            "{SHARD_PREFIX}{i}/{n}: points={} x={} published={} trace={}",
            self.points,
            self.x.as_deref().unwrap_or("-"),
            self.published.name(),
            self.trace
        )
    }

    /// Parses the first line of a partial CSV: (meta, shard).
    pub(super) fn parse(line: &str) -> Option<(Self, (usize, usize))> {
        let rest = line.strip_prefix(SHARD_PREFIX)?;
        let (shard, rest) = rest.split_once(": ")?;
        let shard = parse_shard(shard).ok()?;
        let rest = rest.strip_prefix("points=")?;
        let (points, rest) = rest.split_once(" x=")?;
        let (x, rest) = rest.split_once(" published=")?;
        let (published, trace) = rest.split_once(" trace=")?;
        Some((
            SweepMeta {
                points: points.parse().ok()?,
                x: (x != "-").then(|| x.to_string()),
                published: Published::from_name(published)?,
                trace: trace.to_string(),
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

pub(super) fn render_csv(
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
pub(super) struct Csv {
    pub(super) names: Vec<String>,
    pub(super) rows: Vec<Row>,
}

impl Csv {
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let mut lines = text.lines().filter(|l| !l.starts_with('#'));
        let head = lines.next().ok_or("empty CSV")?;
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
        for (i, line) in lines.enumerate() {
            let c: Vec<&str> = line.split(',').collect();
            let bad = || format!("CSV row {}: `{line}`", i + 1);
            if c.len() != n {
                return Err(bad());
            }
            let p = names.len() + 1;
            let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
            rows.push(Row {
                point: c[0].parse().map_err(|_| bad())?,
                values: c[1..p].iter().map(|s| (*s).to_string()).collect(),
                cycles: num(c[p])?,
                ns: c[p + 1].to_string(),
                payload: num(c[p + 2])?,
                gbps: c[p + 3].to_string(),
                descriptors: num(c[p + 4])?,
                exit: c[p + 5].parse().map_err(|_| bad())?,
                host_seconds: c[p + 6].to_string(),
            });
        }
        Ok(Csv { names, rows })
    }
}

/// Joins partial CSVs (name, text) into the CSV of one run.
pub(super) fn merge(parts: &[(String, String)]) -> Result<(String, SweepMeta), String> {
    let mut meta: Option<SweepMeta> = None;
    let mut names: Option<Vec<String>> = None;
    let mut shards_seen = BTreeMap::new();
    let mut rows: Vec<Row> = Vec::new();
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
                    "{file}: from another sweep (`{first}` vs points={} trace={})",
                    prev.points, prev.trace
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
            if r.point % n != i {
                return Err(format!(
                    "{file}: point {} does not belong to shard {i}/{n}",
                    r.point
                ));
            }
            rows.push(r);
        }
    }
    let (Some(meta), Some(names), Some(n)) = (meta, names, total_shards) else {
        return Err("no parts to merge".into());
    };
    let missing: Vec<usize> = (0..n).filter(|i| !shards_seen.contains_key(i)).collect();
    if !missing.is_empty() {
        return Err(format!("missing shard(s) {missing:?} of {n}"));
    }
    rows.sort_by_key(|r| r.point);
    let indices: Vec<usize> = rows.iter().map(|r| r.point).collect();
    if indices != (0..meta.points).collect::<Vec<_>>() {
        return Err(format!(
            "the parts hold points {indices:?}, expected 0..{} once each",
            meta.points
        ));
    }
    Ok((render_csv(&names, &rows, None), meta))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::sweep) fn row(point: usize, bytes: u64, gbps: f64) -> Row {
        Row {
            point,
            values: vec![bytes.to_string()],
            cycles: 100 + point as u64,
            ns: "117.6".into(),
            payload: bytes,
            gbps: format!("{gbps:.3}"),
            descriptors: 4,
            exit: 0,
            host_seconds: String::new(),
        }
    }

    #[test]
    fn merge_rebuilds_the_single_run() {
        let names = vec!["bytes".to_string()];
        let rows: Vec<Row> = (0..5)
            .map(|k| row(k, 128 << k, 10.0 * k as f64 + 1.0))
            .collect();
        let meta = SweepMeta {
            points: 5,
            x: None,
            published: Published::Auto,
            trace: "t.trace".into(),
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
    }
}
