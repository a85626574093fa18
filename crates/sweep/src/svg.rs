//! The SVG plot of bandwidth versus the x parameter.

use crate::csv::Csv;
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
}

/// The published figures of a set (docs/references/figures.md §0, §A.1–A.4).
fn figures(set: Published) -> Vec<Figure> {
    match set {
        Published::Engine => vec![
            Figure {
                x: None,
                y: 23.0,
                label: "23 B/ns: one engine's peak (§0, §A.7)",
            },
            Figure {
                x: Some(32768.0),
                y: 32768.0 / 1416.0,
                label: "32 KiB in 1416 ns, one engine (§0, §A.3)",
            },
            Figure {
                x: Some(4096.0),
                y: 23.0,
                label: "≥ 4 KiB/partition saturates (§A.4)",
            },
        ],
        Published::Core => vec![
            Figure {
                x: None,
                y: 368.0,
                label: "368 GB/s: 16 engines × 23 B/ns (§0)",
            },
            Figure {
                x: Some(4096.0),
                y: 368.0,
                label: "≥ 4 KiB/partition saturates (§A.4)",
            },
        ],
        Published::Chip => vec![
            Figure {
                x: None,
                y: 2900.0,
                label: "2.9 TB/s: chip HBM (§0, §A.1)",
            },
            Figure {
                x: Some(4096.0),
                y: 2900.0,
                label: "≥ 4 KiB/partition saturates HBM (§A.4)",
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

/// Bandwidth (GB/s) versus the x parameter on a log axis, one series per
/// combination of the other parameters, published figures overlaid.
pub fn render_svg(
    csv: &Csv,
    x: Option<&str>,
    published: Published,
    title: &str,
) -> Result<String, String> {
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
    let pts: Vec<(f64, f64, String)> = csv
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
            (xv, y, others.join(" "))
        })
        .collect();
    let max_y = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let set = resolve_published(published, max_y);
    let figs = figures(set);
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
    let (w, h) = (900.0, 520.0);
    let (left, right, top, bottom) = (80.0, 270.0, 50.0, 70.0);
    let pw = w - left - right;
    let ph = h - top - bottom;
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
        h - 30.0,
        xml_escape(&csv.names[xi]),
        top + ph / 2.0
    ));
    // Published guidance on bytes per partition (§A.4).
    s.push_str("<g class=\"guidance\" stroke=\"#999\" stroke-dasharray=\"2 3\">\n");
    for (gx, text) in [
        (256.0, "< 256 B: overhead-bound"),
        (2048.0, "≥ 2 KiB: minimum recommended"),
    ] {
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
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (xv, y, key) in &pts {
        match series.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => v.push((*xv, *y)),
            None => series.push((key.clone(), vec![(*xv, *y)])),
        }
    }
    let mut legend_y = top + 10.0;
    let lx = left + pw + 20.0;
    for (i, (key, mut v)) in series.into_iter().enumerate() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = PALETTE[i % PALETTE.len()];
        let path: Vec<String> = v
            .iter()
            .map(|(a, b)| format!("{:.1},{:.1}", sx(*a), sy(*b)))
            .collect();
        s.push_str(&format!(
            "<g class=\"sim\"><polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\n",
            path.join(" ")
        ));
        for (a, b) in &v {
            s.push_str(&format!(
                "<circle class=\"sim-point\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{color}\"><title>{}: {} GB/s</title></circle>\n",
                sx(*a),
                sy(*b),
                size_label(*a),
                trim_float(*b)
            ));
        }
        s.push_str("</g>\n");
        let name = if key.is_empty() {
            "simulated".to_string()
        } else {
            format!("simulated {key}")
        };
        s.push_str(&format!(
            "<line x1=\"{lx}\" y1=\"{legend_y:.1}\" x2=\"{:.1}\" y2=\"{legend_y:.1}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            lx + 20.0,
            lx + 26.0,
            legend_y + 4.0,
            xml_escape(&name)
        ));
        legend_y += 18.0;
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
    s.push_str(&format!(
        "<text x=\"{left}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555\">Published figures: docs/references/figures.md §0, §A.1–A.4 (AWS Neuron docs: Trn2 chip page, NKI DMA overview, DMA bandwidth guide).</text>\n",
        h - 8.0
    ));
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
    use crate::csv::{Row, render_csv};

    #[test]
    fn svg_has_series_and_published_markers() {
        let names = vec!["bytes".to_string()];
        let rows: Vec<Row> = (0..6)
            .map(|k| row(k, 128 << k, 50.0 * k as f64 + 20.0))
            .collect();
        let csv = Csv::parse(&render_csv(&names, &rows, None)).unwrap();
        let svg = render_svg(&csv, None, Published::Auto, "t & <t>").unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("class=\"sim-point\"").count(), 6);
        // Max 270 GB/s: the NeuronCore set (368 GB/s) is the nearest.
        assert!(svg.contains("368 GB/s"));
        assert!(svg.contains("class=\"published-point\""));
        assert!(svg.contains("class=\"published-line\""));
        assert!(svg.contains("t &amp; &lt;t&gt;"));
        assert!(render_svg(&csv, Some("nope"), Published::Core, "t").is_err());
        let none = render_svg(&csv, None, Published::None, "t").unwrap();
        assert!(!none.contains("published-point"));
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
