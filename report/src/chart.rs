//! The SVG charts of the HTML page, drawn with plotters' SVG backend.

use memlint_runtime::phases::PhaseRow;
use memlint_runtime::view::{ReportView, SampleView, SourceView};
use plotters::prelude::*;

use crate::RenderError;

const WIDTH: u32 = 960;
const HEIGHT: u32 = 340;
const MIB: f64 = 1024.0 * 1024.0;
const ALLOCATED: RGBColor = RGBColor(31, 119, 180);
const RESERVED: RGBColor = RGBColor(44, 160, 44);
const PEAK: RGBColor = RGBColor(255, 127, 14);
const TREND: RGBColor = RGBColor(214, 39, 40);
const FIRST: RGBColor = RGBColor(148, 103, 189);

/// A named, coloured line of points.
type Series = (&'static str, RGBColor, Vec<(f64, f64)>);

fn err(chart: &'static str) -> impl Fn(String) -> RenderError {
    move |message| RenderError { chart, message }
}

/// The fitted trend of the post-warm-up samples: `allocated ≈ intercept + growth × iteration`,
/// the intercept being the median of `allocated − growth × iteration` (as robust as the slope).
pub fn trend(samples: &[SampleView], warmup: u64, growth: f64) -> Option<(f64, f64)> {
    let mut offsets: Vec<f64> = samples
        .iter()
        .filter(|s| s.iteration >= warmup)
        .map(|s| s.allocated_bytes as f64 - growth * s.iteration as f64)
        .collect();
    if offsets.is_empty() {
        return None;
    }
    offsets.sort_by(f64::total_cmp);
    Some((offsets[offsets.len() / 2], growth))
}

/// Memory of one source per iteration: allocated, reserved and per-iteration peak, the warm-up
/// span shaded and (for the primary source) the fitted trend.
pub fn timeline(report: &ReportView, source: &SourceView, primary: bool) -> Result<String, RenderError> {
    let e = err("timeline");
    let samples = &source.samples;
    let last = samples.last().map_or(1, |s| s.iteration.max(1)) as f64;
    let top = samples
        .iter()
        .map(|s| s.peak_bytes.unwrap_or(0).max(s.reserved_bytes.unwrap_or(0)).max(s.allocated_bytes))
        .max()
        .unwrap_or(1) as f64
        / MIB;
    let bottom = samples.iter().map(|s| s.allocated_bytes).min().unwrap_or(0) as f64 / MIB;
    let (y0, y1) = padded(bottom, top);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
        let caption = format!("{} ({}): memory per iteration", source.source, source.device);
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..last, y0..y1)
            .map_err(|x| e(x.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("iteration")
            .y_desc("MiB")
            .x_label_formatter(&|x: &f64| format!("{x:.0}"))
            .y_label_formatter(&|y: &f64| format!("{y:.1}"))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|x| e(x.to_string()))?;
        let warmup = (report.warmup as f64).min(last);
        if warmup > 0.0 {
            chart
                .draw_series(std::iter::once(Rectangle::new([(0.0, y0), (warmup, y1)], BLACK.mix(0.08).filled())))
                .map_err(|x| e(x.to_string()))?
                .label(format!("warm-up ({} iterations)", report.warmup))
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], BLACK.mix(0.15).filled()));
        }
        let series = |f: fn(&SampleView) -> Option<u64>| -> Vec<(f64, f64)> {
            samples.iter().filter_map(|s| f(s).map(|b| (s.iteration as f64, b as f64 / MIB))).collect()
        };
        let lines: [Series; 3] = [
            ("peak in iteration", PEAK, series(|s| s.peak_bytes)),
            ("reserved", RESERVED, series(|s| s.reserved_bytes)),
            ("allocated", ALLOCATED, series(|s| Some(s.allocated_bytes))),
        ];
        for (name, color, points) in lines {
            if points.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|x| e(x.to_string()))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        }
        let verdict = source.verdict.clone().unwrap_or_default();
        if primary && let Some((a, b)) = trend(samples, report.warmup, verdict.growth_bytes_per_iteration) {
            let from = report.warmup as f64;
            let points = vec![(from, (a + b * from) / MIB), (last, (a + b * last) / MIB)];
            chart
                .draw_series(LineSeries::new(points, TREND.stroke_width(1)))
                .map_err(|x| e(x.to_string()))?
                .label(format!("trend: {:+.0} B/iteration", verdict.growth_bytes_per_iteration))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], TREND));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(|x| e(x.to_string()))?;
        root.present().map_err(|x| e(x.to_string()))?;
    }
    Ok(svg)
}

/// The trend extended to the memory limit: only when the report projects an exhaustion.
pub fn projection(report: &ReportView) -> Result<Option<String>, RenderError> {
    let e = err("projection");
    let v = &report.verdict;
    let (Some(n), Some(limit)) = (v.projected_iterations_to_exhaustion, v.exhaustion_limit.as_deref()) else {
        return Ok(None);
    };
    let Some((a, b)) = trend(&report.samples, report.warmup, v.growth_bytes_per_iteration) else { return Ok(None) };
    let Some(last) = report.samples.last() else { return Ok(None) };
    let end = last.iteration as f64 + n as f64;
    let level = last.allocated_bytes as f64 + v.growth_bytes_per_iteration * n as f64;
    let top = level.max(a + b * end) / MIB;
    let (y0, y1) = padded(0.0, top);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
        let caption = format!("projection: {limit} memory runs out after about {n} more iterations");
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..end, y0..y1)
            .map_err(|x| e(x.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("iteration")
            .y_desc("MiB")
            .x_label_formatter(&|x: &f64| format!("{x:.0}"))
            .y_label_formatter(&|y: &f64| format!("{y:.0}"))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|x| e(x.to_string()))?;
        let measured: Vec<(f64, f64)> =
            report.samples.iter().map(|s| (s.iteration as f64, s.allocated_bytes as f64 / MIB)).collect();
        chart
            .draw_series(LineSeries::new(measured, ALLOCATED.stroke_width(2)))
            .map_err(|x| e(x.to_string()))?
            .label("allocated (measured)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], ALLOCATED.stroke_width(2)));
        let from = last.iteration as f64;
        let points = vec![(from, last.allocated_bytes as f64 / MIB), (end, level / MIB)];
        chart
            .draw_series(LineSeries::new(points, TREND.stroke_width(2)))
            .map_err(|x| e(x.to_string()))?
            .label("projected at the fitted growth")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], TREND.stroke_width(2)));
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, level / MIB), (end, level / MIB)],
                BLACK.mix(0.5),
            )))
            .map_err(|x| e(x.to_string()))?
            .label(format!("{limit} limit"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.5)));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(|x| e(x.to_string()))?;
        root.present().map_err(|x| e(x.to_string()))?;
    }
    Ok(Some(svg))
}

/// Bars per phase: memory added across it (delta) and its peak above the iteration's start,
/// first iteration next to the steady state; `source` named in the caption when given (reports
/// with phases of several sources).
pub fn phase_bars(
    table: &[PhaseRow],
    start_first: u64,
    start_steady: u64,
    source: Option<&str>,
) -> Result<String, RenderError> {
    let e = err("phase");
    let value = |row: &PhaseRow, first: bool| -> (f64, f64) {
        let (v, start) = if first { (row.first, start_first) } else { (row.steady, start_steady) };
        v.map_or((0.0, 0.0), |v| (v.delta_bytes as f64 / MIB, (v.peak_bytes as f64 - start as f64) / MIB))
    };
    let values: Vec<f64> =
        table.iter().flat_map(|r| [value(r, true), value(r, false)]).flat_map(|(d, p)| [d, p]).collect();
    let (y0, y1) = padded(values.iter().copied().fold(0.0, f64::min), values.iter().copied().fold(0.0, f64::max));
    let n = table.len().max(1) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                match source {
                    Some(source) => format!("phases of {source}: memory added (bars), peak above the start (ticks)"),
                    None => "phases: memory added (bars) and peak above the iteration's start (ticks)".to_owned(),
                },
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..n, y0..y1)
            .map_err(|x| e(x.to_string()))?;
        let names: Vec<String> = table.iter().map(|r| r.phase.clone()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(table.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 0.01 {
                    names.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("MiB")
            .draw()
            .map_err(|x| e(x.to_string()))?;
        for (first, color, offset, name) in
            [(true, FIRST, 0.15, "first iteration"), (false, ALLOCATED, 0.5, "steady (median)")]
        {
            let bars: Vec<Rectangle<(f64, f64)>> = (0..table.len())
                .map(|i| {
                    let (delta, _) = value(&table[i], first);
                    let x = i as f64 + offset;
                    Rectangle::new([(x, 0.0), (x + 0.33, delta)], color.filled())
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(|x| e(x.to_string()))?
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.filled()));
            let ticks: Vec<PathElement<(f64, f64)>> = (0..table.len())
                .map(|i| {
                    let (_, peak) = value(&table[i], first);
                    let x = i as f64 + offset;
                    PathElement::new(vec![(x, peak), (x + 0.33, peak)], PEAK.stroke_width(3))
                })
                .collect();
            chart.draw_series(ticks).map_err(|x| e(x.to_string()))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(|x| e(x.to_string()))?;
        root.present().map_err(|x| e(x.to_string()))?;
    }
    Ok(svg)
}

/// A y range around `[low, high]` with 5 % room, never empty.
fn padded(low: f64, high: f64) -> (f64, f64) {
    let span = (high - low).abs().max(1e-3);
    (low - span * 0.05, high + span * 0.05)
}
