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

// Font sizes as plotters takes them: its SVG writes `font-size` as the size / 1.24, so 16
// shows as 12.9 px.

/// Font size of a plot's caption (17.7 px in the SVG).
pub const CAPTION_PX: u32 = 22;

/// Font size of axis descriptions (14.5 px in the SVG).
pub const LABEL_PX: u32 = 18;

/// Font size of tick labels, legends and bin counts (12.9 px in the SVG): the smallest text of
/// the page. The page shows the SVGs at their own size.
pub const TEXT_PX: u32 = 16;

/// Width of a plot that spans the page, in px.
pub const WIDE: u32 = 1140;

/// Width of a plot of a grid row (three fit beside each other in a [`WIDE`] row).
pub const NARROW: u32 = 372;

/// Dash patterns (dash, gap in px) of the series of one plot, in order: solid, long dashes,
/// short dashes, dots. With [`Shape`]s and stacked widths, series that are equal stay
/// distinguishable even where they lie on each other.
const DASHES: [Option<(u32, u32)>; 4] = [None, Some((12, 6)), Some((5, 4)), Some((2, 4))];

/// A point marker's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A filled circle.
    Circle,
    /// A filled triangle.
    Triangle,
    /// A filled square.
    Square,
    /// A cross.
    Cross,
}

/// Shapes of the series of one plot, in order.
const SHAPES: [Shape; 4] = [Shape::Circle, Shape::Triangle, Shape::Square, Shape::Cross];

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
pub struct Swatch {
    /// Index into [`PALETTE`].
    pub color: usize,
    /// Dash pattern of the line; `None` is solid.
    pub dash: Option<(u32, u32)>,
    /// Line width in px.
    pub width: u32,
    /// The marker drawn on it, if any.
    pub shape: Option<Shape>,
    /// A vertical rule (an event marker) instead of a horizontal line.
    pub vertical: bool,
}

/// Pixel width of `text` at `px` as plotters is given it, estimated generously: the SVG shows
/// it at px / 1.24, where sans-serif averages about 0.55 of the size (capitals up to 0.68).
fn text_width(text: &str, px: u32) -> i32 {
    (text.chars().count() as f64 * px as f64 * 0.55).ceil() as i32
}

/// Width of a legend entry's swatch and the gaps around it, in px.
const SWATCH: i32 = 34;

/// The legend's rows for `entries` in `width` px: entries flow left to right and wrap, so
/// that the legend never runs outside the plot.
fn legend_rows(entries: &[(String, Swatch)], width: i32) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = 0;
    for (i, (name, _)) in entries.iter().enumerate() {
        let w = SWATCH + text_width(name, TEXT_PX) + 18;
        if used + w > width && !rows.last().is_some_and(Vec::is_empty) {
            rows.push(Vec::new());
            used = 0;
        }
        rows.last_mut().expect("a row").push(i);
        used += w;
    }
    rows
}

/// Height of a legend row, in px.
const LEGEND_ROW: i32 = 22;

/// Height the legend of `entries` takes below a plot `width` px wide.
fn legend_height(entries: &[(String, Swatch)], width: u32) -> u32 {
    if entries.is_empty() {
        return 0;
    }
    (legend_rows(entries, width as i32 - 20).len() as i32 * LEGEND_ROW + 8) as u32
}

/// Draw a short horizontal or vertical line from `a` to `b` (pixels) with `dash`.
fn dashed_pixels(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    a: (i32, i32),
    b: (i32, i32),
    dash: Option<(u32, u32)>,
    style: ShapeStyle,
) -> Result<(), String> {
    let Some((on, off)) = dash else {
        return area.draw(&PathElement::new([a, b], style)).map_err(err);
    };
    let len = ((b.0 - a.0).abs() + (b.1 - a.1).abs()).max(1);
    let (dx, dy) = (
        (b.0 - a.0) as f64 / len as f64,
        (b.1 - a.1) as f64 / len as f64,
    );
    let mut t = 0;
    while t < len {
        let e = (t + on as i32).min(len);
        let p = |k: i32| {
            (
                a.0 + (dx * k as f64).round() as i32,
                a.1 + (dy * k as f64).round() as i32,
            )
        };
        area.draw(&PathElement::new([p(t), p(e)], style))
            .map_err(err)?;
        t = e + off as i32;
    }
    Ok(())
}

/// Draw `shape` centred on the pixel `at`.
fn shape_pixels(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    at: (i32, i32),
    shape: Shape,
    color: RGBColor,
) -> Result<(), String> {
    match shape {
        Shape::Circle => area.draw(&Circle::new(at, 4, color.filled())),
        Shape::Triangle => area.draw(&TriangleMarker::new(at, 6, color.filled())),
        Shape::Square => area.draw(&Rectangle::new(
            [(at.0 - 4, at.1 - 4), (at.0 + 4, at.1 + 4)],
            color.filled(),
        )),
        Shape::Cross => area.draw(&Cross::new(at, 5, color.stroke_width(2))),
    }
    .map_err(err)
}

/// Draw the legend of `entries` into `area` (below the plot): rows that wrap, names cut with
/// `…` only if one alone is wider than the plot.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    entries: &[(String, Swatch)],
) -> Result<(), String> {
    let width = area.dim_in_pixel().0 as i32 - 20;
    let font = ("sans-serif", TEXT_PX).into_font().color(&BLACK);
    for (r, row) in legend_rows(entries, width).iter().enumerate() {
        let y = 4 + r as i32 * LEGEND_ROW + LEGEND_ROW / 2;
        let mut x = 12;
        for &i in row {
            let (name, sw) = &entries[i];
            let c = PALETTE[sw.color % PALETTE.len()];
            let style = c.stroke_width(sw.width);
            if sw.vertical {
                dashed_pixels(area, (x + 12, y - 8), (x + 12, y + 8), sw.dash, style)?;
            } else {
                dashed_pixels(area, (x, y), (x + 26, y), sw.dash, style)?;
            }
            if let Some(shape) = sw.shape {
                shape_pixels(
                    area,
                    (x + 13, if sw.vertical { y - 8 } else { y }),
                    shape,
                    c,
                )?;
            }
            let room = (width - x - SWATCH).max(20);
            let mut text = name.clone();
            while text_width(&text, TEXT_PX) > room && text.chars().count() > 2 {
                text.pop();
                text.pop();
                text.push('…');
            }
            area.draw(&Text::new(
                text.clone(),
                (x + SWATCH, y - TEXT_PX as i32 / 2 - 1),
                font.clone(),
            ))
            .map_err(err)?;
            x += SWATCH + text_width(&text, TEXT_PX) + 18;
        }
    }
    Ok(())
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

/// A time axis at a resolution that suits its span: the unit its x values count (seconds,
/// minutes or days since the epoch, so that ticks fall on whole units), the label format and
/// the axis description (which carries the date when the labels do not).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeAxis {
    /// Seconds per x unit.
    pub unit: f64,
    /// chrono format of the tick labels.
    pub format: &'static str,
    /// The axis description.
    pub desc: String,
}

impl TimeAxis {
    /// The axis for times from `lo` to `hi` seconds since the epoch: whole seconds up to ten
    /// minutes, whole minutes up to two days, else days.
    pub fn for_span(lo: f64, hi: f64) -> TimeAxis {
        let day = |x: f64, f: &str| time_label(x, f);
        let dates = if day(lo, "%F") == day(hi, "%F") {
            day(lo, "%F")
        } else {
            format!("{} to {}", day(lo, "%F"), day(hi, "%F"))
        };
        match hi - lo {
            s if s <= 600.0 => TimeAxis {
                unit: 1.0,
                format: "%H:%M:%S",
                desc: format!("time (UTC, {dates})"),
            },
            s if s <= 2.0 * 86_400.0 => TimeAxis {
                unit: 60.0,
                format: "%H:%M",
                desc: format!("time (UTC, {dates})"),
            },
            _ => TimeAxis {
                unit: 86_400.0,
                format: "%b %d",
                desc: format!("date (UTC, {dates})"),
            },
        }
    }

    /// The x range (in units) holding `lo..hi` seconds with some room, and how many tick
    /// labels it gets (never more than whole units in it, so no two labels read the same).
    fn range(&self, lo: f64, hi: f64) -> (std::ops::Range<f64>, usize) {
        let (a, b) = (lo / self.unit, hi / self.unit);
        // At least a unit of room each side: a burst within one second still gets labels.
        let pad = ((b - a) * 0.04).max(1.0);
        let r = (a - pad)..(b + pad);
        let whole = (r.end.floor() - r.start.ceil()) as usize + 1;
        (r, whole.clamp(2, 8))
    }

    /// The label of a tick at `x` units: only whole units are labelled, so that no two
    /// labels read the same and none shows a fraction of its unit.
    fn label(&self, x: f64) -> String {
        if (x - x.round()).abs() > 1e-6 {
            return String::new();
        }
        time_label(x.round() * self.unit, self.format)
    }
}

/// A time label for `x` seconds since the epoch, in `format`.
fn time_label(x: f64, format: &str) -> String {
    DateTime::from_timestamp_micros((x * 1e6).round() as i64)
        .map(|t| t.format(format).to_string())
        .unwrap_or_default()
}

/// The smallest and largest of `xs` (0..1 when there is none).
fn extent(xs: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) }
}

/// One bin of a reliability diagram: mean confidence, accuracy, count.
pub type Bin = (f64, f64, usize);

/// The plot area and the legend area below it of a `width`×`height` plot with `legend`.
type Areas<'a> = (
    DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
);

fn split<'a>(root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>, height: u32) -> Areas<'a> {
    root.split_vertically(height)
}

/// A reliability diagram: accuracy against mean confidence per bin, raw and calibrated, the
/// diagonal of perfect calibration, and the bin counts as grey bars along the bottom (scaled
/// to a quarter of the height, the count written above each); the legend (`names` of the raw
/// and the calibrated line) below the plot.
pub fn reliability(
    title: &str,
    names: [&str; 2],
    raw: &[Bin],
    calibrated: &[Bin],
    bins: &[(f64, f64, usize)],
) -> DrawResult {
    let lines = [
        (names[0], raw, super::RAW_COLOR, None, Shape::Circle),
        (
            names[1],
            calibrated,
            super::CALIBRATED_COLOR,
            Some((8, 4)),
            Shape::Square,
        ),
    ];
    let entries: Vec<(String, Swatch)> = lines
        .iter()
        .map(|(name, _, color, dash, shape)| {
            (
                name.to_string(),
                Swatch {
                    color: *color,
                    dash: *dash,
                    width: 2,
                    shape: Some(*shape),
                    vertical: false,
                },
            )
        })
        .collect();
    let plot_h = 340;
    let legend_h = legend_height(&entries, NARROW);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (NARROW, plot_h + legend_h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, bottom) = split(&root, plot_h);
        let mut chart = ChartBuilder::on(&top)
            .caption(title, ("sans-serif", LABEL_PX))
            .margin(10)
            .x_label_area_size(44)
            .y_label_area_size(52)
            .build_cartesian_2d(0f64..1f64, 0f64..1f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("confidence")
            .y_desc("accuracy")
            .axis_desc_style(("sans-serif", LABEL_PX))
            .label_style(("sans-serif", TEXT_PX))
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
                    RGBColor(205, 205, 205).filled(),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(bins.iter().filter(|b| b.2 > 0).map(|&(lo, hi, n)| {
                let h = 0.25 * n as f64 / most;
                Text::new(
                    n.to_string(),
                    ((lo + hi) / 2.0 - 0.035, h + 0.06),
                    ("sans-serif", TEXT_PX - 1)
                        .into_font()
                        .color(&RGBColor(80, 80, 80)),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], BLACK.mix(0.35)))
            .map_err(err)?;
        for (_, points, color, dash, shape) in lines {
            let c = PALETTE[color];
            let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
            line(&mut chart, &xy, c, dash, 2)?;
            markers(&mut chart, &xy, c, shape)?;
        }
        draw_legend(&bottom, &entries)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The chart type of every plot: f64 on both axes, into an SVG string.
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Draw `points` as a line of colour `c`, solid or with `dash`.
fn line(
    chart: &mut Chart<'_, '_>,
    points: &[(f64, f64)],
    c: RGBColor,
    dash: Option<(u32, u32)>,
    width: u32,
) -> Result<(), String> {
    match dash {
        None => chart
            .draw_series(LineSeries::new(points.to_vec(), c.stroke_width(width)))
            .map(drop),
        Some((on, off)) => chart
            .draw_series(DashedLineSeries::new(
                points.to_vec(),
                on,
                off,
                c.stroke_width(width),
            ))
            .map(drop),
    }
    .map_err(err)
}

/// Draw a `shape` of colour `c` at every point.
fn markers(
    chart: &mut Chart<'_, '_>,
    points: &[(f64, f64)],
    c: RGBColor,
    shape: Shape,
) -> Result<(), String> {
    let p = points.iter().copied();
    match shape {
        Shape::Circle => chart
            .draw_series(p.map(|p| Circle::new(p, 4, c.filled())))
            .map(drop),
        Shape::Triangle => chart
            .draw_series(p.map(|p| TriangleMarker::new(p, 6, c.filled())))
            .map(drop),
        Shape::Square => chart
            .draw_series(
                p.map(|p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], c.filled())),
            )
            .map(drop),
        Shape::Cross => chart
            .draw_series(p.map(|p| Cross::new(p, 5, c.stroke_width(2))))
            .map(drop),
    }
    .map_err(err)
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

/// A kind of vertical marker at event times: drawn as a rule with its own dash and a symbol
/// at its own height near the top, so that two kinds at the same moment both show.
pub struct MarkerKind {
    /// Legend text.
    pub name: String,
    /// Index into [`PALETTE`].
    pub color: usize,
    /// The events' times, seconds since the epoch.
    pub at: Vec<f64>,
}

/// The y axis of a time plot.
pub struct YAxis<'a> {
    /// Its description.
    pub desc: &'a str,
    /// Its range.
    pub range: std::ops::Range<f64>,
    /// Whether it counts things: whole-number ticks only.
    pub counts: bool,
}

/// Lines over time across the page, with vertical event markers; the legend below the plot.
/// Series are told apart by colour, dash, marker shape and width (the first drawn widest), and
/// step series are drawn a few pixels apart, so that equal counts never hide each other.
pub fn over_time(
    title: &str,
    y: &YAxis<'_>,
    series: &[Series],
    marker_kinds: &[MarkerKind],
) -> DrawResult {
    let mut entries: Vec<(String, Swatch)> = Vec::new();
    let style = |i: usize, s: &Series| Swatch {
        color: s.color,
        dash: DASHES[i % DASHES.len()],
        width: if s.steps { (4 - i.min(2)) as u32 } else { 2 },
        shape: Some(SHAPES[i % SHAPES.len()]),
        vertical: false,
    };
    for (i, s) in series.iter().enumerate() {
        entries.push((s.name.clone(), style(i, s)));
    }
    let kind_style = |k: usize, m: &MarkerKind| Swatch {
        color: m.color,
        dash: DASHES[(k + 1) % DASHES.len()],
        width: 2,
        shape: Some(SHAPES[(k + 1) % SHAPES.len()]),
        vertical: true,
    };
    for (k, m) in marker_kinds.iter().enumerate() {
        entries.push((format!("{} ({})", m.name, m.at.len()), kind_style(k, m)));
    }
    let plot_h = 360;
    let legend_h = legend_height(&entries, WIDE);
    let (lo, hi) = extent(
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(marker_kinds.iter().flat_map(|m| m.at.iter().copied())),
    );
    let axis = TimeAxis::for_span(lo, hi);
    let (x, x_labels) = axis.range(lo, hi);
    let u = axis.unit;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDE, plot_h + legend_h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, bottom) = split(&root, plot_h);
        let mut chart = ChartBuilder::on(&top)
            .caption(title, ("sans-serif", CAPTION_PX))
            .margin(12)
            .x_label_area_size(46)
            .y_label_area_size(60)
            .build_cartesian_2d(x.clone(), y.range.clone())
            .map_err(err)?;
        let whole = |v: &f64| {
            if (v - v.round()).abs() < 1e-9 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        };
        let plain = |v: &f64| format!("{v:.2}");
        let y_labels = if y.counts {
            (y.range.end - y.range.start).round() as usize + 1
        } else {
            6
        };
        chart
            .configure_mesh()
            .x_labels(x_labels)
            .y_labels(y_labels.clamp(2, 11))
            .x_label_formatter(&|v| axis.label(*v))
            .y_label_formatter(if y.counts { &whole } else { &plain })
            .x_desc(axis.desc.as_str())
            .y_desc(y.desc)
            .axis_desc_style(("sans-serif", LABEL_PX))
            .label_style(("sans-serif", TEXT_PX))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(err)?;
        let band = (y.range.end - y.range.start) / 14.0;
        for (k, m) in marker_kinds.iter().enumerate() {
            let sw = kind_style(k, m);
            let c = PALETTE[sw.color % PALETTE.len()];
            for &t in &m.at {
                let xs = t / u;
                line(
                    &mut chart,
                    &[(xs, y.range.start), (xs, y.range.end)],
                    c,
                    sw.dash,
                    2,
                )?;
            }
            let tops: Vec<(f64, f64)> =
                m.at.iter()
                    .map(|t| (t / u, y.range.end - band * (k as f64 + 0.6)))
                    .collect();
            markers(&mut chart, &tops, c, sw.shape.unwrap_or(Shape::Circle))?;
        }
        // Step series a few pixels apart: 3 px in data units of the plot's height.
        let px = (y.range.end - y.range.start) / (plot_h as f64 - 100.0);
        let stepped = series.iter().filter(|s| s.steps).count() as f64;
        for (i, s) in series.iter().enumerate() {
            let sw = style(i, s);
            let c = PALETTE[s.color % PALETTE.len()];
            let shift = if s.steps {
                (i as f64 - (stepped - 1.0) / 2.0) * 3.0 * px
            } else {
                0.0
            };
            let at = |p: &(f64, f64)| (p.0 / u, p.1 + shift);
            let mut pts = Vec::with_capacity(s.points.len() * 2 + 1);
            for (k, p) in s.points.iter().enumerate() {
                if s.steps && k > 0 {
                    pts.push((p.0 / u, s.points[k - 1].1 + shift));
                }
                pts.push(at(p));
            }
            if s.steps
                && let Some(last) = s.points.last()
            {
                pts.push((x.end, last.1 + shift));
            }
            line(&mut chart, &pts, c, sw.dash, sw.width)?;
            let dots: Vec<(f64, f64)> = s.points.iter().map(at).collect();
            markers(&mut chart, &dots, c, sw.shape.unwrap_or(Shape::Circle))?;
        }
        draw_legend(&bottom, &entries)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The posterior densities `Beta(1 + s, 1 + f)` of one domain's Thompson arms, one curve per
/// candidate threshold, each with its own colour and dash; the legend below the plot.
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
    let entries: Vec<(String, Swatch)> = arms
        .iter()
        .enumerate()
        .map(|(i, &(cand, s, f))| {
            (
                format!("θ = {cand:.2} ({s}✓ {f}✗)"),
                Swatch {
                    color: i % PALETTE.len(),
                    dash: DASHES[i % DASHES.len()],
                    width: 2,
                    shape: None,
                    vertical: false,
                },
            )
        })
        .collect();
    let top = curves.iter().flatten().map(|p| p.1).fold(1.0f64, f64::max) * 1.1;
    let plot_h = 320;
    let legend_h = legend_height(&entries, NARROW);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (NARROW, plot_h + legend_h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (area, bottom) = split(&root, plot_h);
        let mut chart = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", CAPTION_PX))
            .margin(10)
            .x_label_area_size(44)
            .y_label_area_size(52)
            .build_cartesian_2d(0f64..1f64, 0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("success probability")
            .y_desc("posterior density")
            .axis_desc_style(("sans-serif", LABEL_PX))
            .label_style(("sans-serif", TEXT_PX))
            .x_labels(6)
            .y_labels(5)
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(err)?;
        for (curve, (_, sw)) in curves.into_iter().zip(&entries) {
            line(
                &mut chart,
                &curve,
                PALETTE[sw.color % PALETTE.len()],
                sw.dash,
                2,
            )?;
        }
        draw_legend(&bottom, &entries)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Events on rows by kind over time, across the page: one row per name in `rows`, a marker
/// per `(seconds, row)`.
pub fn timeline(title: &str, rows: &[&str], points: &[(f64, usize)]) -> DrawResult {
    let mut svg = String::new();
    let names: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDE, 260)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (lo, hi) = extent(points.iter().map(|p| p.0));
        let axis = TimeAxis::for_span(lo, hi);
        let (x, x_labels) = axis.range(lo, hi);
        let label = |y: &f64| {
            let i = y.round();
            if (y - i).abs() < 1e-9 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", CAPTION_PX))
            .margin(12)
            .x_label_area_size(46)
            .y_label_area_size(120)
            .build_cartesian_2d(x, -0.5f64..(rows.len() as f64 - 0.5))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(x_labels)
            .y_labels(rows.len() * 2 + 1)
            .x_label_formatter(&|v| axis.label(*v))
            .y_label_formatter(&label)
            .x_desc(axis.desc.as_str())
            .axis_desc_style(("sans-serif", LABEL_PX))
            .label_style(("sans-serif", TEXT_PX))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(err)?;
        for row in 0..rows.len() {
            let dots: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.1 == row)
                .map(|&(t, r)| (t / axis.unit, r as f64))
                .collect();
            markers(
                &mut chart,
                &dots,
                PALETTE[row % PALETTE.len()],
                SHAPES[row % SHAPES.len()],
            )?;
        }
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
