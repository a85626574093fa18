//! The SVG plot of bandwidth versus the x parameter.

use crate::csv::{Csv, SweepMeta};
use crate::params::Published;

// -------------------------------------------------------------------- SVG

/// A published figure to draw.
struct Figure {
    /// x in bytes, or None for a horizontal line across the plot.
    x: Option<f64>,
    /// GB/s.
    y: f64,
    /// What it is and where it is published.
    label: &'static str,
    /// x is bytes per partition (drawn only when the x axis is).
    per_partition: bool,
}

/// The published figures of a set (docs/references/figures.md §0, §A.1–A.4).
fn figures(set: Published) -> Vec<Figure> {
    match set {
        Published::Engine => vec![
            Figure {
                x: None,
                y: 23.0,
                label: "23 B/ns: one engine's peak (§0, §A.7)",
                per_partition: false,
            },
            Figure {
                x: Some(32768.0),
                y: 32768.0 / 1416.0,
                label: "32 KiB in 1416 ns, one engine (§0, §A.3)",
                per_partition: false,
            },
            Figure {
                x: Some(4096.0),
                y: 23.0,
                label: "≥ 4 KiB/partition saturates (§A.4)",
                per_partition: true,
            },
        ],
        Published::Core => vec![
            Figure {
                x: None,
                y: 368.0,
                label: "368 GB/s: 16 engines × 23 B/ns (§0)",
                per_partition: false,
            },
            Figure {
                x: Some(4096.0),
                y: 368.0,
                label: "≥ 4 KiB/partition saturates (§A.4)",
                per_partition: true,
            },
        ],
        Published::Chip => vec![
            Figure {
                x: None,
                y: 2900.0,
                label: "2.9 TB/s: chip HBM (§0, §A.1)",
                per_partition: false,
            },
            Figure {
                x: Some(4096.0),
                y: 2900.0,
                label: "≥ 4 KiB/partition saturates HBM (§A.4)",
                per_partition: true,
            },
        ],
        Published::Auto | Published::None => Vec::new(),
    }
}

fn resolve_published(set: Published, max_gbps: f64) -> Published {
    if set != Published::Auto {
        return set;
    }
    let peaks = [
        (Published::Engine, 23.0f64),
        (Published::Core, 368.0),
        (Published::Chip, 2900.0),
    ];
    let m = max_gbps.max(1e-9);
    peaks
        .iter()
        .min_by(|a, b| {
            let da = (a.1 / m).ln().abs();
            let db = (b.1 / m).ln().abs();
            da.total_cmp(&db)
        })
        .map_or(Published::None, |p| p.0)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn size_label(v: f64) -> String {
    let v = v as u64;
    if v >= 1 << 30 && v.is_multiple_of(1 << 30) {
        format!("{} GiB", v >> 30)
    } else if v >= 1 << 20 && v.is_multiple_of(1 << 20) {
        format!("{} MiB", v >> 20)
    } else if v >= 1 << 10 && v.is_multiple_of(1 << 10) {
        format!("{} KiB", v >> 10)
    } else {
        format!("{v}")
    }
}

/// A "nice" axis top and tick step for `max`.
fn nice_axis(max: f64) -> (f64, f64) {
    let max = max.max(1e-9);
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
];

/// A point of a series: x, GB/s, whether it moved no bytes.
type SeriesPoint = (f64, f64, bool);

/// Marker `i` of a series: a filled circle for the first series, hollow
/// and larger shapes for the next, so series with the same points stay
/// visible one around the other.
fn marker(i: usize, cx: f64, cy: f64, color: &str) -> String {
    let r = 3.5 + 1.5 * (i % 4) as f64;
    let style = if i == 0 {
        format!("fill=\"{color}\"")
    } else {
        format!("fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"")
    };
    match i % 4 {
        0 => {
            format!("<circle class=\"sim-point\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{r}\" {style}>")
        }
        1 => format!(
            "<rect class=\"sim-point\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" {style}>",
            cx - r,
            cy - r,
            2.0 * r,
            2.0 * r
        ),
        2 => format!(
            "<path class=\"sim-point\" d=\"M {cx:.1} {:.1} L {:.1} {:.1} L {:.1} {:.1} Z\" {style}>",
            cy - r,
            cx + r,
            cy + r,
            cx - r,
            cy + r
        ),
        _ => format!(
            "<path class=\"sim-point\" d=\"M {cx:.1} {:.1} L {:.1} {cy:.1} L {cx:.1} {:.1} L {:.1} {cy:.1} Z\" {style}>",
            cy - r,
            cx + r,
            cy + r,
            cx - r
        ),
    }
}

/// The closing tag of [`marker`] `i`.
fn marker_end(i: usize) -> &'static str {
    match i % 4 {
        0 => "</circle>",
        1 => "</rect>",
        _ => "</path>",
    }
}

/// The dash pattern of series `i`'s line (the first solid).
fn dashes(i: usize) -> &'static str {
    match i % 4 {
        0 => "",
        1 => " stroke-dasharray=\"8 4\"",
        2 => " stroke-dasharray=\"3 3\"",
        _ => " stroke-dasharray=\"10 3 2 3\"",
    }
}

/// Bandwidth (GB/s) versus the x parameter on a log axis, one series per
/// combination of the other parameters, published figures overlaid. The
/// caption says the mode and timing of `meta`'s sweep; the
/// bytes-per-partition guidance is drawn only when x is the parameter
/// `meta` names bytes per partition.
pub fn render_svg(
    csv: &Csv,
    x: Option<&str>,
    published: Published,
    meta: &SweepMeta,
) -> Result<String, String> {
    let title = meta.trace.as_str();
    let numeric = |i: usize| {
        csv.rows.iter().all(|r| {
            r.values
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|v| v > 0)
        })
    };
    let xi = match x {
        Some(name) => {
            let i = csv.names.iter().position(|n| n == name).ok_or_else(|| {
                format!(
                    "--x {name}: no such parameter (have: {})",
                    csv.names.join(", ")
                )
            })?;
            if !numeric(i) {
                return Err(format!("--x {name}: the plot needs positive numbers"));
            }
            i
        }
        None => (0..csv.names.len())
            .find(|&i| {
                numeric(i) && {
                    let mut v: Vec<&String> =
                        csv.rows.iter().filter_map(|r| r.values.get(i)).collect();
                    v.sort();
                    v.dedup();
                    v.len() > 1
                }
            })
            .ok_or("the plot needs a numeric parameter with several values (--x NAME)")?,
    };
    let per_partition = meta.partition_bytes.as_deref() == Some(csv.names[xi].as_str());
    // (x, GB/s, the other parameters, moved no bytes)
    let pts: Vec<(f64, f64, String, bool)> = csv
        .rows
        .iter()
        .map(|r| {
            let xv = r
                .values
                .get(xi)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(1) as f64;
            let y = r.gbps.parse::<f64>().unwrap_or(0.0);
            let others: Vec<String> = csv
                .names
                .iter()
                .zip(&r.values)
                .enumerate()
                .filter(|(i, _)| *i != xi)
                .map(|(_, (n, v))| format!("{n}={v}"))
                .collect();
            (xv, y, others.join(" "), r.payload == 0)
        })
        .collect();
    let max_y = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let set = resolve_published(published, max_y);
    let figs: Vec<Figure> = figures(set)
        .into_iter()
        .filter(|f| per_partition || !f.per_partition)
        .collect();
    let (mut x_lo, mut x_hi) = pts
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    for f in &figs {
        if let Some(fx) = f.x {
            x_lo = x_lo.min(fx);
            x_hi = x_hi.max(fx);
        }
    }
    let (lx0, mut lx1) = (x_lo.log2().floor(), x_hi.log2().ceil());
    if lx1 <= lx0 {
        lx1 = lx0 + 1.0;
    }
    let y_top_raw = figs.iter().map(|f| f.y).fold(max_y, f64::max) * 1.08;
    let (y_top, y_step) = nice_axis(y_top_raw);
    // The caption: the mode and timing, a note when the simulated peak is
    // above the published one, the sources.
    let mut caption = vec![format!(
        "Mode: {}; timing: {}.",
        if meta.timing_only {
            "timing-only (no payload bytes moved; the same cycles)"
        } else {
            "data (payload bytes moved and checked)"
        },
        match &meta.timing {
            Some(t) => format!("file {t}"),
            None => "built-in defaults (docs/timing.md)".to_string(),
        }
    )];
    if let Some(peak) = figs.iter().find(|f| f.x.is_none())
        && max_y > peak.y
    {
        caption.push(format!(
            "Note: the simulated peak, {} GB/s, is above the published {} GB/s ({}). The published figure holds for its path: a sweep with more engines or cores",
            trim_float(max_y),
            trim_float(peak.y),
            peak.label
        ));
        caption.push(
            "than the set, bytes that do not cross HBM (SBUF to SBUF) or a #@ payload that counts more bytes can pass it; --published picks another set.".to_string(),
        );
    }
    caption.push("Published figures: docs/references/figures.md §0, §A.1–A.4 (AWS Neuron docs: Trn2 chip page, NKI DMA overview, DMA bandwidth guide).".to_string());
    let (w, plot_h) = (900.0, 520.0);
    let h = plot_h + 14.0 * (caption.len() - 1) as f64;
    let (left, right, top, bottom) = (80.0, 270.0, 50.0, 70.0);
    let pw = w - left - right;
    let ph = plot_h - top - bottom;
    let sx = |v: f64| left + (v.log2() - lx0) / (lx1 - lx0) * pw;
    let sy = |v: f64| top + ph - v / y_top * ph;
    let mut s = String::new();
    s.push_str(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    ));
    s.push_str(&format!(
        "<title>neuron-sim sweep: {}</title>\n<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"white\"/>\n",
        xml_escape(title)
    ));
    s.push_str(&format!(
        "<text x=\"{left}\" y=\"24\" font-size=\"15\">Bandwidth vs {} — {}</text>\n",
        xml_escape(&csv.names[xi]),
        xml_escape(title)
    ));
    // Axes and grid.
    s.push_str(&format!(
        "<g class=\"axes\" stroke=\"#333\"><line x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/><line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{:.1}\"/></g>\n",
        top + ph,
        left + pw,
        top + ph,
        top + ph
    ));
    let mut e = lx0;
    while e <= lx1 + 1e-9 {
        let v = e.exp2();
        let px = sx(v);
        s.push_str(&format!(
            "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            top + ph,
            top + ph + 16.0,
            size_label(v)
        ));
        e += 1.0;
    }
    let mut yv = 0.0;
    while yv <= y_top + 1e-9 {
        let py = sy(yv);
        s.push_str(&format!(
            "<line x1=\"{left}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left + pw,
            left - 6.0,
            py + 4.0,
            trim_float(yv)
        ));
        yv += y_step;
    }
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{} (log scale)</text>\n<text transform=\"translate(20 {:.1}) rotate(-90)\" text-anchor=\"middle\">GB/s (bytes per ns)</text>\n",
        left + pw / 2.0,
        plot_h - 30.0,
        xml_escape(&csv.names[xi]),
        top + ph / 2.0
    ));
    // Published guidance on bytes per partition (§A.4), only over bytes
    // per partition.
    let guidance: &[(f64, &str)] = if per_partition {
        &[
            (256.0, "< 256 B: overhead-bound"),
            (2048.0, "≥ 2 KiB: minimum recommended"),
        ]
    } else {
        &[]
    };
    s.push_str("<g class=\"guidance\" stroke=\"#999\" stroke-dasharray=\"2 3\">\n");
    for &(gx, text) in guidance {
        if gx >= lx0.exp2() && gx <= lx1.exp2() {
            let px = sx(gx);
            s.push_str(&format!(
                "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" stroke=\"none\" fill=\"#777\" font-size=\"10\">{}</text>\n",
                top + ph,
                px + 3.0,
                top + 12.0,
                xml_escape(text)
            ));
        }
    }
    s.push_str("</g>\n");
    // Series.
    let mut series: Vec<(String, Vec<SeriesPoint>)> = Vec::new();
    for (xv, y, key, empty) in &pts {
        match series.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => v.push((*xv, *y, *empty)),
            None => series.push((key.clone(), vec![(*xv, *y, *empty)])),
        }
    }
    for (_, v) in &mut series {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let mut legend_y = top + 10.0;
    let lx = left + pw + 20.0;
    let name_of = |key: &str| {
        if key.is_empty() {
            "simulated".to_string()
        } else {
            format!("simulated {key}")
        }
    };
    let mut empties = 0usize;
    for (i, (key, v)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let path: Vec<String> = v
            .iter()
            .map(|(a, b, _)| format!("{:.1},{:.1}", sx(*a), sy(*b)))
            .collect();
        s.push_str(&format!(
            "<g class=\"sim\"><polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{} points=\"{}\"/>\n",
            dashes(i),
            path.join(" ")
        ));
        for (a, b, empty) in v {
            if *empty {
                // A point that moved no bytes: a cross, not a silent 0 GB/s.
                empties += 1;
                let (cx, cy) = (sx(*a), sy(*b));
                s.push_str(&format!(
                    "<path class=\"empty-point\" d=\"M {:.1} {:.1} L {:.1} {:.1} M {:.1} {:.1} L {:.1} {:.1}\" stroke=\"{color}\" stroke-width=\"2\"><title>{}: moved no bytes</title></path>\n",
                    cx - 5.0,
                    cy - 5.0,
                    cx + 5.0,
                    cy + 5.0,
                    cx - 5.0,
                    cy + 5.0,
                    cx + 5.0,
                    cy - 5.0,
                    size_label(*a)
                ));
                continue;
            }
            s.push_str(&format!(
                "{}<title>{}: {} GB/s</title>{}\n",
                marker(i, sx(*a), sy(*b), color),
                size_label(*a),
                trim_float(*b),
                marker_end(i)
            ));
        }
        s.push_str("</g>\n");
        // A series with the same points as an earlier one says so (its
        // hollow markers and dashes sit around and over that one's).
        let same = series[..i]
            .iter()
            .find(|(_, w)| w == v)
            .map(|(k, _)| format!(" (same points as {})", name_of(k)))
            .unwrap_or_default();
        s.push_str(&format!(
            "<line x1=\"{lx}\" y1=\"{legend_y:.1}\" x2=\"{:.1}\" y2=\"{legend_y:.1}\" stroke=\"{color}\" stroke-width=\"2\"{}/>{}{}<text x=\"{:.1}\" y=\"{:.1}\">{}{}</text>\n",
            lx + 20.0,
            dashes(i),
            marker(i, lx + 10.0, legend_y, color).replace("class=\"sim-point\"", "class=\"legend-point\""),
            marker_end(i),
            lx + 26.0,
            legend_y + 4.0,
            xml_escape(&name_of(key)),
            xml_escape(&same)
        ));
        legend_y += 18.0;
    }
    if empties > 0 {
        s.push_str(&format!(
            "<text class=\"empty-legend\" x=\"{lx}\" y=\"{:.1}\" font-size=\"10\">× moved no bytes ({empties} point{})</text>\n",
            legend_y + 4.0,
            if empties == 1 { "" } else { "s" }
        ));
        legend_y += 16.0;
    }
    // Published figures.
    if !figs.is_empty() {
        s.push_str("<g class=\"published\" fill=\"none\" stroke=\"#000\">\n");
        for f in &figs {
            let py = sy(f.y);
            match f.x {
                None => s.push_str(&format!(
                    "<line class=\"published-line\" x1=\"{left}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke-dasharray=\"6 4\"><title>{}</title></line>\n",
                    left + pw,
                    xml_escape(f.label)
                )),
                Some(fx) => {
                    let px = sx(fx);
                    s.push_str(&format!(
                        "<path class=\"published-point\" d=\"M {px:.1} {:.1} L {:.1} {py:.1} L {px:.1} {:.1} L {:.1} {py:.1} Z\" stroke-width=\"1.5\"><title>{}</title></path>\n",
                        py - 6.0,
                        px + 6.0,
                        py + 6.0,
                        px - 6.0,
                        xml_escape(f.label)
                    ));
                }
            }
            s.push_str(&format!(
                "<text x=\"{lx}\" y=\"{:.1}\" stroke=\"none\" fill=\"#000\" font-size=\"10\">{} {}</text>\n",
                legend_y + 4.0,
                if f.x.is_some() { "◇" } else { "- -" },
                xml_escape(f.label)
            ));
            legend_y += 16.0;
        }
        s.push_str("</g>\n");
    }
    for (k, line) in caption.iter().enumerate() {
        s.push_str(&format!(
            "<text class=\"caption\" x=\"{left}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555\">{}</text>\n",
            plot_h - 8.0 + 14.0 * k as f64,
            xml_escape(line)
        ));
    }
    s.push_str("</svg>\n");
    Ok(s)
}

/// `12.5`, `300` (no trailing zeros).
fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csv::tests::row;
    use crate::csv::{Row, SweepMeta, render_csv};

    /// The meta of a sweep over `bytes`, bytes per partition.
    fn meta(title: &str) -> SweepMeta {
        SweepMeta {
            trace: title.into(),
            partition_bytes: Some("bytes".into()),
            ..SweepMeta::default()
        }
    }

    fn csv_of(names: &[&str], rows: &[Row]) -> Csv {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        Csv::parse(&render_csv(&names, rows, None)).unwrap()
    }

    #[test]
    fn svg_has_series_and_published_markers() {
        let rows: Vec<Row> = (0..6)
            .map(|k| row(k, 128 << k, 50.0 * k as f64 + 20.0))
            .collect();
        let csv = csv_of(&["bytes"], &rows);
        let svg = render_svg(&csv, None, Published::Auto, &meta("t & <t>")).unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("class=\"sim-point\"").count(), 6);
        // Max 270 GB/s: the NeuronCore set (368 GB/s) is the nearest.
        assert!(svg.contains("368 GB/s"));
        assert!(svg.contains("class=\"published-point\""));
        assert!(svg.contains("class=\"published-line\""));
        assert!(svg.contains("t &amp; &lt;t&gt;"));
        assert!(render_svg(&csv, Some("nope"), Published::Core, &meta("t")).is_err());
        let none = render_svg(&csv, None, Published::None, &meta("t")).unwrap();
        assert!(!none.contains("published-point"));
    }

    /// The bytes-per-partition guidance (256 B, 2 KiB, "≥ 4 KiB/partition
    /// saturates") is drawn over bytes per partition only: not over a
    /// descriptor size, nor over another parameter of a per-partition sweep.
    #[test]
    fn partition_guidance_only_over_partition_bytes() {
        let rows: Vec<Row> = (0..6)
            .map(|k| row(k, 128 << k, 50.0 * k as f64 + 20.0))
            .collect();
        let csv = csv_of(&["bytes"], &rows);
        let per_partition = render_svg(&csv, None, Published::Core, &meta("t")).unwrap();
        assert!(per_partition.contains("minimum recommended"));
        assert!(per_partition.contains("KiB/partition saturates"));
        let other = SweepMeta {
            partition_bytes: Some("rows".into()),
            ..meta("t")
        };
        for m in [other, SweepMeta::default()] {
            let svg = render_svg(&csv, None, Published::Core, &m).unwrap();
            assert!(!svg.contains("minimum recommended"), "{m:?}");
            assert!(!svg.contains("overhead-bound"), "{m:?}");
            assert!(!svg.contains("partition saturates"), "{m:?}");
            // The peak line stays: it does not depend on the x axis.
            assert!(svg.contains("class=\"published-line\""));
        }
    }

    /// Two series with the same points: the second is drawn with other,
    /// hollow and larger markers and a dashed line (so the first shows
    /// through), and its legend says whose points it repeats.
    #[test]
    fn identical_series_stay_visible() {
        let rows: Vec<Row> = (0..6)
            .map(|k| {
                let mut r = row(k, 256 << (k % 3), 40.0 * (k % 3) as f64 + 20.0);
                r.values.push((k / 3).to_string());
                r
            })
            .collect();
        let csv = csv_of(&["bytes", "eng"], &rows);
        let svg = render_svg(&csv, Some("bytes"), Published::Core, &meta("t")).unwrap();
        assert_eq!(svg.matches("<circle class=\"sim-point\"").count(), 3);
        assert_eq!(svg.matches("<rect class=\"sim-point\"").count(), 3);
        assert!(svg.contains("fill=\"none\" stroke=\"#d62728\""));
        assert!(svg.contains("stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"8 4\""));
        assert!(svg.contains("simulated eng=1 (same points as simulated eng=0)"));
        assert!(!svg.contains("simulated eng=0 (same"));
    }

    /// A point that moved no bytes is a cross with its own legend line, not
    /// a silent 0 GB/s dot.
    #[test]
    fn points_that_moved_no_bytes_are_marked() {
        let mut rows: Vec<Row> = (0..4).map(|k| row(k, 256 << k, 30.0)).collect();
        rows[1].payload = 0;
        rows[1].gbps = "0.000".into();
        let csv = csv_of(&["bytes"], &rows);
        let svg = render_svg(&csv, None, Published::Core, &meta("t")).unwrap();
        assert_eq!(svg.matches("class=\"empty-point\"").count(), 1);
        assert_eq!(svg.matches("class=\"sim-point\"").count(), 3);
        assert!(svg.contains("512: moved no bytes"));
        assert!(svg.contains("× moved no bytes (1 point)"));
        let full = render_svg(
            &csv_of(&["bytes"], &rows[2..]),
            None,
            Published::Core,
            &meta("t"),
        )
        .unwrap();
        assert!(!full.contains("moved no bytes"));
    }

    /// The caption names the mode and the timing (file or built-in).
    #[test]
    fn caption_names_mode_and_timing() {
        let rows: Vec<Row> = (0..3).map(|k| row(k, 256 << k, 30.0)).collect();
        let csv = csv_of(&["bytes"], &rows);
        let data = render_svg(&csv, None, Published::Core, &meta("t")).unwrap();
        assert!(data.contains(
            "Mode: data (payload bytes moved and checked); timing: built-in defaults (docs/timing.md)."
        ));
        let timing_only = SweepMeta {
            timing_only: true,
            timing: Some("slow <hbm>.json".into()),
            ..meta("t")
        };
        let svg = render_svg(&csv, None, Published::Core, &timing_only).unwrap();
        assert!(svg.contains(
            "Mode: timing-only (no payload bytes moved; the same cycles); timing: file slow &lt;hbm&gt;.json."
        ));
    }

    /// A simulated peak above the published one gets a note in the caption
    /// (and a taller picture for it); at or below, none.
    #[test]
    fn peak_above_the_published_is_explained() {
        let rows: Vec<Row> = (0..3)
            .map(|k| row(k, 1024 << k, 200.0 * (k + 1) as f64))
            .collect();
        let csv = csv_of(&["bytes"], &rows);
        let svg = render_svg(&csv, None, Published::Core, &meta("t")).unwrap();
        assert!(
            svg.contains("Note: the simulated peak, 600 GB/s, is above the published 368 GB/s")
        );
        assert!(svg.contains("height=\"562\""), "4 caption lines");
        // 200 and 368 GB/s: at the published peak is not above it.
        let at: Vec<Row> = (0..2)
            .map(|k| row(k, 1024 << k, [200.0, 368.0][k]))
            .collect();
        let below =
            render_svg(&csv_of(&["bytes"], &at), None, Published::Core, &meta("t")).unwrap();
        assert!(!below.contains("Note:"));
        assert!(below.contains("height=\"534\""), "2 caption lines");
    }

    #[test]
    fn nice_axes() {
        assert_eq!(nice_axis(397.0), (400.0, 100.0));
        assert_eq!(nice_axis(26.0), (30.0, 10.0));
        assert_eq!(resolve_published(Published::Auto, 24.0), Published::Engine);
        assert_eq!(resolve_published(Published::Auto, 2800.0), Published::Chip);
        assert_eq!(resolve_published(Published::None, 2800.0), Published::None);
    }
}
