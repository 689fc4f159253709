//! The report's plots, each drawn by plotters into an SVG string (no scripts, no fonts to
//! fetch: text is SVG `<text>` in the page's sans-serif).

use chrono::{DateTime, Utc};
use plotters::prelude::*;

/// Colours of the series, in order (Okabe–Ito, readable by colour-blind readers).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// Draws the series' legend of `chart` at `position`, in one style for every plot.
fn legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
    font_size: u32,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", font_size))
        .draw()
        .map_err(err)
}

/// A failure while drawing, as text.
pub type DrawResult = Result<String, String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("drawing a plot failed: {e}")
}

/// Seconds since the epoch, the x value of the time plots.
pub fn secs(t: DateTime<Utc>) -> f64 {
    t.timestamp_micros() as f64 / 1e6
}

/// The format of time-axis labels for an axis spanning `range` seconds: milliseconds for
/// a span under 20 s, seconds under ten minutes, minutes under two days, else days (UTC).
fn time_format(range: &std::ops::Range<f64>) -> &'static str {
    match range.end - range.start {
        s if s < 20.0 => "%H:%M:%S%.3f",
        s if s < 600.0 => "%H:%M:%S",
        s if s < 2.0 * 86_400.0 => "%m-%d %H:%M",
        _ => "%Y-%m-%d",
    }
}

/// A time-axis label for `x` seconds since the epoch, in `format`.
fn time_label(x: f64, format: &str) -> String {
    DateTime::from_timestamp_micros((x * 1e6).round() as i64)
        .map(|t| t.format(format).to_string())
        .unwrap_or_default()
}

/// A range that contains every `x` with some room, never empty.
fn span(xs: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let pad = ((hi - lo) * 0.04).max(0.5);
    (lo - pad)..(hi + pad)
}

/// One bin of a reliability diagram: mean confidence, accuracy, count.
pub type Bin = (f64, f64, usize);

/// A reliability diagram: accuracy against mean confidence per bin, raw and calibrated, the
/// diagonal of perfect calibration, and the bin counts as grey bars along the bottom (scaled
/// to a quarter of the height, the count written above each).
pub fn reliability(
    title: &str,
    raw: &[Bin],
    calibrated: &[Bin],
    bins: &[(f64, f64, usize)],
) -> DrawResult {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (380, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(40)
            .build_cartesian_2d(0f64..1f64, 0f64..1f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("confidence")
            .y_desc("accuracy")
            .x_labels(6)
            .y_labels(6)
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(err)?;
        let most = bins.iter().map(|b| b.2).max().unwrap_or(0).max(1) as f64;
        chart
            .draw_series(bins.iter().filter(|b| b.2 > 0).map(|&(lo, hi, n)| {
                let h = 0.25 * n as f64 / most;
                Rectangle::new(
                    [(lo + 0.005, 0.0), (hi - 0.005, h)],
                    RGBColor(200, 200, 200).filled(),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(bins.iter().filter(|b| b.2 > 0).map(|&(lo, hi, n)| {
                let h = 0.25 * n as f64 / most;
                Text::new(
                    n.to_string(),
                    ((lo + hi) / 2.0 - 0.03, h + 0.05),
                    ("sans-serif", 10).into_font().color(&RGBColor(90, 90, 90)),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], BLACK.mix(0.35)))
            .map_err(err)?;
        for (i, (name, points)) in [("raw", raw), ("temperature-calibrated", calibrated)]
            .into_iter()
            .enumerate()
        {
            let c = PALETTE[if i == 0 {
                super::RAW_COLOR
            } else {
                super::CALIBRATED_COLOR
            }];
            let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
            chart
                .draw_series(LineSeries::new(xy.clone(), c.stroke_width(2)))
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2)));
            chart
                .draw_series(xy.into_iter().map(|p| Circle::new(p, 3, c.filled())))
                .map_err(err)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, 11)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One named series of `(seconds, value)` points.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points, in time order.
    pub points: Vec<(f64, f64)>,
    /// Drawn as steps (a count that changes at each point) rather than straight segments.
    pub steps: bool,
    /// Index into [`PALETTE`].
    pub color: usize,
}

/// A vertical marker at a time.
pub struct Marker {
    /// Seconds since the epoch.
    pub at: f64,
    /// Index into [`PALETTE`].
    pub color: usize,
}

/// Lines over time, with vertical markers (escalations) and a legend for the markers' kinds.
pub fn over_time(
    title: &str,
    y_desc: &str,
    y: std::ops::Range<f64>,
    series: &[Series],
    markers: &[Marker],
    marker_legend: &[(&str, usize)],
) -> DrawResult {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (780, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let x = span(
            series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .chain(markers.iter().map(|m| m.at)),
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(48)
            .build_cartesian_2d(x.clone(), y.clone())
            .map_err(err)?;
        let format = time_format(&x);
        chart
            .configure_mesh()
            .x_labels(7)
            .y_labels(6)
            .x_label_formatter(&|v| time_label(*v, format))
            .x_desc("time (UTC)")
            .y_desc(y_desc)
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(err)?;
        for m in markers {
            let c = PALETTE[m.color % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(
                    [(m.at, y.start), (m.at, y.end)],
                    c.mix(0.7).stroke_width(2),
                ))
                .map_err(err)?;
        }
        for &(name, color) in marker_legend {
            let c = PALETTE[color % PALETTE.len()];
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new([(x + 8, y - 6), (x + 8, y + 6)], c.stroke_width(2))
                });
        }
        for s in series {
            let c = PALETTE[s.color % PALETTE.len()];
            let mut pts = Vec::with_capacity(s.points.len() * 2);
            for (k, p) in s.points.iter().enumerate() {
                if s.steps && k > 0 {
                    pts.push((p.0, s.points[k - 1].1));
                }
                pts.push(*p);
            }
            if s.steps
                && let Some(last) = s.points.last()
            {
                pts.push((x.end, last.1));
            }
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(err)?
                .label(s.name.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2)));
            if !s.steps {
                chart
                    .draw_series(s.points.iter().map(|p| Circle::new(*p, 2, c.filled())))
                    .map_err(err)?;
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight, 11)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The posterior densities `Beta(1 + s, 1 + f)` of one domain's Thompson arms, one curve per
/// candidate threshold.
pub fn arms(title: &str, arms: &[(f64, u64, u64)]) -> DrawResult {
    const STEPS: usize = 200;
    let curves: Vec<Vec<(f64, f64)>> = arms
        .iter()
        .map(|&(_, s, f)| {
            (1..STEPS)
                .map(|k| {
                    let x = k as f64 / STEPS as f64;
                    (x, beta_pdf(x, s as f64 + 1.0, f as f64 + 1.0))
                })
                .collect()
        })
        .collect();
    let top = curves.iter().flatten().map(|p| p.1).fold(1.0f64, f64::max) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (380, 300)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(44)
            .build_cartesian_2d(0f64..1f64, 0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("success probability")
            .y_desc("posterior density")
            .x_labels(6)
            .y_labels(5)
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(err)?;
        for (i, (curve, &(cand, s, f))) in curves.into_iter().zip(arms).enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(curve, c.stroke_width(2)))
                .map_err(err)?
                .label(format!("θ = {cand:.2} ({s}✓ {f}✗)"))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, 10)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Events on rows by kind over time: one row per name in `rows`, a dot per `(seconds, row)`.
pub fn timeline(title: &str, rows: &[&str], points: &[(f64, usize)]) -> DrawResult {
    let mut svg = String::new();
    let names: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    {
        let root = SVGBackend::with_string(&mut svg, (780, 240)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let x = span(points.iter().map(|p| p.0));
        let format = time_format(&x);
        let label = |y: &f64| {
            let i = y.round();
            if (y - i).abs() < 1e-9 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(96)
            .build_cartesian_2d(x, -0.5f64..(rows.len() as f64 - 0.5))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(7)
            .y_labels(rows.len() * 2 + 1)
            .x_label_formatter(&|v| time_label(*v, format))
            .y_label_formatter(&label)
            .x_desc("time (UTC)")
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(points.iter().map(|&(t, row)| {
                Circle::new(
                    (t, row as f64),
                    5,
                    PALETTE[row % PALETTE.len()].mix(0.8).filled(),
                )
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The Beta density `x^(a−1) (1−x)^(b−1) / B(a, b)` for `x` in (0, 1), `a, b ≥ 1`, computed
/// in logarithms (so that thousands of pulls do not overflow).
pub fn beta_pdf(x: f64, a: f64, b: f64) -> f64 {
    let ln_beta = ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b);
    ((a - 1.0) * x.ln() + (b - 1.0) * (1.0 - x).ln() - ln_beta).exp()
}

/// `ln Γ(x)` for `x > 0` by the Lanczos approximation (g = 7, 9 coefficients; relative error
/// below 1e-13 — Numerical Recipes, 3rd ed., §6.1; coefficients of Godfrey, as in Boost).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tolerance of the ln Γ and Beta checks.
    const TOL: f64 = 1e-10;

    #[test]
    fn ln_gamma_matches_factorials_and_the_half() {
        // Γ(n) = (n − 1)!, Γ(1/2) = √π.
        for (x, want) in [(1.0, 1.0f64), (2.0, 1.0), (5.0, 24.0), (10.0, 362_880.0)] {
            assert!((ln_gamma(x) - want.ln()).abs() < TOL, "ln Γ({x})");
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < TOL);
    }

    #[test]
    fn beta_density_integrates_to_one() {
        for (a, b) in [(1.0, 1.0), (3.0, 8.0), (120.0, 40.0)] {
            let n = 20_000;
            let sum: f64 = (0..n)
                .map(|k| beta_pdf((k as f64 + 0.5) / n as f64, a, b) / n as f64)
                .sum();
            assert!(
                (sum - 1.0).abs() < 1e-3,
                "Beta({a}, {b}) integrates to {sum}"
            );
        }
    }
}
