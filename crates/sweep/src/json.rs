//! `sweep --json`: the points and a summary as JSON, the same data as the
//! CSV (built from the CSV's rows, so `sweep merge --json` writes the same
//! document as a single run). Keys follow the other JSON outputs: the CSV's
//! `ns` is `sim_ns` and `gbps` is `bandwidth_gbps`, as in `run --json`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::csv::{Csv, SweepMeta};

/// The whole sweep (docs/schemas/sweep.schema.json).
#[derive(Debug, Serialize, JsonSchema)]
pub struct SweepJson {
    /// The parameterised trace.
    pub trace: String,
    /// Parameter names, in the CSV's column order (the first varies
    /// slowest).
    pub parameters: Vec<String>,
    /// The plot's x parameter, if one was named.
    pub x: Option<String>,
    /// The published figures the plot overlays (`auto`, `engine`, `core`,
    /// `chip`, `none`).
    pub published: String,
    /// One entry per point, in point order.
    pub points: Vec<SweepPoint>,
    /// Totals over the points.
    pub summary: SweepSummary,
}

/// One point: its parameter values and what it measured.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SweepPoint {
    /// Index in the sweep (from 0).
    pub point: usize,
    /// Parameter name → value as substituted (a number or a word).
    pub values: BTreeMap<String, String>,
    /// Simulated cycles.
    pub cycles: u64,
    /// Simulated nanoseconds (CSV `ns`, one decimal).
    pub sim_ns: f64,
    /// Payload bytes: the trace's `#@ payload`, else the bytes moved.
    pub payload_bytes: u64,
    /// Payload bytes per simulated nanosecond (CSV `gbps`, three decimals).
    pub bandwidth_gbps: f64,
    /// Descriptors processed.
    pub descriptors: u64,
    /// The point's exit status (0 ok, 1 an expectation failed, 2 error).
    pub exit: u8,
    /// Expectations the point skipped (timing-only: checks of bytes no
    /// DMA moved): neither passed nor failed, not checked.
    pub expectations_skipped: usize,
    /// Host wall-clock seconds of the point; absent with `--no-host-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_seconds: Option<f64>,
}

/// Totals over a sweep's points.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SweepSummary {
    /// Points in the sweep.
    pub points: usize,
    /// Points whose exit status is not 0.
    pub failed_points: usize,
    /// Points that skipped at least one expectation (timing-only): their
    /// exit 0 is not a pass of those checks.
    pub skipped_points: usize,
    /// Points that moved no payload bytes (drawn as such on the plot).
    pub empty_points: usize,
    /// The highest bandwidth of a point.
    pub peak_bandwidth_gbps: f64,
    /// The point with that bandwidth (the first, on a tie); absent when no
    /// point moved bytes.
    pub peak_point: Option<usize>,
}

/// A cell the CSV parser accepted as a finite number (or empty).
fn number(cell: &str) -> f64 {
    cell.parse().unwrap_or(0.0)
}

impl SweepJson {
    /// The document of `csv`, the sweep `meta` describes.
    pub fn new(csv: &Csv, meta: &SweepMeta) -> Self {
        let points: Vec<SweepPoint> = csv
            .rows
            .iter()
            .map(|r| SweepPoint {
                point: r.point,
                values: csv.names.iter().cloned().zip(r.values.clone()).collect(),
                cycles: r.cycles,
                sim_ns: number(&r.ns),
                payload_bytes: r.payload,
                bandwidth_gbps: number(&r.gbps),
                descriptors: r.descriptors,
                exit: r.exit,
                expectations_skipped: r.expectations_skipped,
                host_seconds: (!r.host_seconds.is_empty()).then(|| number(&r.host_seconds)),
            })
            .collect();
        let peak =
            points
                .iter()
                .filter(|p| p.payload_bytes > 0)
                .fold(None::<&SweepPoint>, |best, p| match best {
                    Some(b) if b.bandwidth_gbps >= p.bandwidth_gbps => Some(b),
                    _ => Some(p),
                });
        let summary = SweepSummary {
            points: points.len(),
            failed_points: points.iter().filter(|p| p.exit != 0).count(),
            skipped_points: points.iter().filter(|p| p.expectations_skipped > 0).count(),
            empty_points: points.iter().filter(|p| p.payload_bytes == 0).count(),
            peak_bandwidth_gbps: peak.map_or(0.0, |p| p.bandwidth_gbps),
            peak_point: peak.map(|p| p.point),
        };
        SweepJson {
            trace: meta.trace.clone(),
            parameters: csv.names.clone(),
            x: meta.x.clone(),
            published: meta.published.name().to_string(),
            points,
            summary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Published;

    #[test]
    fn the_json_is_the_csv_data() {
        let csv = Csv::parse(
            "point,bytes,cycles,ns,payload_bytes,gbps,descriptors,exit,expectations_skipped,host_seconds\n\
             0,512,100,117.6,512,4.354,2,0,0,\n\
             1,1024,150,176.5,1024,5.802,2,0,2,\n\
             2,0,10,11.8,0,0.000,1,1,0,\n",
        )
        .unwrap();
        let meta = SweepMeta {
            points: 3,
            x: Some("bytes".into()),
            published: Published::Core,
            trace: "t.trace".into(),
            ..SweepMeta::default()
        };
        let j = SweepJson::new(&csv, &meta);
        assert_eq!(j.parameters, ["bytes"]);
        assert_eq!(j.points[1].values["bytes"], "1024");
        assert_eq!(j.points[1].sim_ns, 176.5);
        assert_eq!(j.points[1].bandwidth_gbps, 5.802);
        assert_eq!(j.points[0].host_seconds, None);
        assert_eq!(j.summary.points, 3);
        assert_eq!(j.summary.failed_points, 1);
        assert_eq!(j.points[1].expectations_skipped, 2);
        assert_eq!(j.summary.skipped_points, 1);
        assert_eq!(j.summary.empty_points, 1);
        assert_eq!(j.summary.peak_point, Some(1));
        assert_eq!(j.summary.peak_bandwidth_gbps, 5.802);
        let v = serde_json::to_value(&j).unwrap();
        assert!(v["points"][0].get("host_seconds").is_none());
        assert_eq!(v["published"], "core");
    }
}
