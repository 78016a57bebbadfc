//! Hand-written SVG charts for reports: box plots and stacked bars, with a
//! title, a labelled value axis from 0 and one labelled slot per category.
//! The output is a standalone SVG 1.1 document; text is XML-escaped and
//! every element is closed, so the file opens in a browser or an editor.

use std::fmt::Write;

use crate::statistics::FiveNumbers;

/// Colours of categories and series (the Okabe-Ito palette, readable with
/// the common colour-vision deficiencies), reused in turn.
const PALETTE: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#999999",
];

const HEIGHT: f64 = 420.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 110.0;
const LEFT: f64 = 80.0;
const SLOT: f64 = 80.0;

/// Escapes text for XML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A short number for labels: up to 3 decimals, trailing zeros removed.
fn short(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// Axis ticks from 0: a step of 1, 2, 2.5 or 5 times a power of ten giving
/// about five intervals, and the top tick at or above `max`.
fn ticks(max: f64) -> (f64, f64) {
    if !(max > 0.0 && max.is_finite()) {
        return (0.2, 1.0);
    }
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude);
    (step, (max / step).ceil() * step)
}

/// The frame shared by both charts: title, value axis, grid, category
/// labels.
struct Frame {
    width: f64,
    plot_right: f64,
    step: f64,
    top_value: f64,
}

impl Frame {
    fn new(categories: usize, extra_right: f64, max: f64, title: &str) -> Self {
        let plot_right = LEFT + SLOT * categories.max(1) as f64;
        let (step, top_value) = ticks(max);
        // Wide enough for the title (bold 15 px: about 9 px a character).
        let title_width = 40.0 + 9.0 * title.chars().count() as f64;
        Frame {
            width: (plot_right + 20.0 + extra_right).max(title_width),
            plot_right,
            step,
            top_value,
        }
    }

    /// The y coordinate of a value.
    fn y(&self, value: f64) -> f64 {
        let bottom = HEIGHT - BOTTOM;
        bottom - (value.max(0.0) / self.top_value) * (bottom - TOP)
    }

    /// The x coordinate of the centre of category `i`.
    fn x(&self, i: usize) -> f64 {
        LEFT + SLOT * (i as f64 + 0.5)
    }

    fn open(&self, svg: &mut String, title: &str, axis_labels: [&str; 2], labels: &[String]) {
        let [x_label, y_label] = axis_labels;
        let (w, h) = (self.width, HEIGHT);
        let _ = writeln!(
            svg,
            r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif" font-size="12">
<rect x="0" y="0" width="{w:.0}" height="{h:.0}" fill="white"/>
<text class="title" x="{:.1}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            w / 2.0,
            escape(title)
        );
        let bottom = HEIGHT - BOTTOM;
        let mut value = 0.0;
        while value <= self.top_value + self.step / 2.0 {
            let y = self.y(value);
            let _ = writeln!(
                svg,
                r##"<line class="grid" x1="{LEFT:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#dddddd"/>
<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                self.plot_right,
                LEFT - 6.0,
                y + 4.0,
                short(value)
            );
            value += self.step;
        }
        let middle = (TOP + bottom) / 2.0;
        let _ = writeln!(
            svg,
            r##"<line class="axis" x1="{LEFT:.1}" y1="{TOP:.1}" x2="{LEFT:.1}" y2="{bottom:.1}" stroke="black"/>
<line class="axis" x1="{LEFT:.1}" y1="{bottom:.1}" x2="{:.1}" y2="{bottom:.1}" stroke="black"/>
<text class="axis-label" x="20" y="{middle:.1}" text-anchor="middle" transform="rotate(-90 20 {middle:.1})">{}</text>
<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            self.plot_right,
            escape(y_label),
            (LEFT + self.plot_right) / 2.0,
            HEIGHT - 8.0,
            escape(x_label)
        );
        for (i, label) in labels.iter().enumerate() {
            let (x, y) = (self.x(i), bottom + 16.0);
            let _ = writeln!(
                svg,
                r#"<text class="category" x="{x:.1}" y="{y:.1}" text-anchor="end" transform="rotate(-30 {x:.1} {y:.1})">{}</text>"#,
                escape(label)
            );
        }
    }
}

/// A box plot: one box per `(label, figures)` from q1 to q3 with a line at
/// the median and whiskers to the minimum and the maximum. Each box is a
/// `<rect class="box">` in a `<g class="box-plot">` whose `<title>` (shown
/// on hover) gives the five figures. `axis_labels` are those of the
/// category axis and of the value axis.
pub fn box_plot(title: &str, axis_labels: [&str; 2], boxes: &[(String, FiveNumbers)]) -> String {
    let max = boxes
        .iter()
        .map(|(_, f)| f.max)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let frame = Frame::new(boxes.len(), 0.0, max, title);
    let labels: Vec<String> = boxes.iter().map(|(label, _)| label.clone()).collect();
    let mut svg = String::new();
    frame.open(&mut svg, title, axis_labels, &labels);
    let half = (SLOT * 0.3).min(30.0);
    for (i, (label, f)) in boxes.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let x = frame.x(i);
        let (y_min, y_q1, y_median, y_q3, y_max) = (
            frame.y(f.min),
            frame.y(f.q1),
            frame.y(f.median),
            frame.y(f.q3),
            frame.y(f.max),
        );
        let _ = writeln!(
            svg,
            r#"<g class="box-plot" stroke="black">
<title>{}: min {}, q1 {}, median {}, q3 {}, max {}</title>
<line class="whisker" x1="{x:.1}" y1="{y_min:.1}" x2="{x:.1}" y2="{y_q1:.1}"/>
<line class="whisker" x1="{x:.1}" y1="{y_q3:.1}" x2="{x:.1}" y2="{y_max:.1}"/>
<line class="cap" x1="{:.1}" y1="{y_min:.1}" x2="{:.1}" y2="{y_min:.1}"/>
<line class="cap" x1="{:.1}" y1="{y_max:.1}" x2="{:.1}" y2="{y_max:.1}"/>
<rect class="box" x="{:.1}" y="{y_q3:.1}" width="{:.1}" height="{:.1}" fill="{colour}" fill-opacity="0.35"/>
<line class="median" x1="{:.1}" y1="{y_median:.1}" x2="{:.1}" y2="{y_median:.1}" stroke-width="2.5"/>
</g>"#,
            escape(label),
            short(f.min),
            short(f.q1),
            short(f.median),
            short(f.q3),
            short(f.max),
            x - half / 2.0,
            x + half / 2.0,
            x - half / 2.0,
            x + half / 2.0,
            x - half,
            2.0 * half,
            (y_q1 - y_q3).max(0.0),
            x - half,
            x + half,
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Stacked bars: for each `(label, values)` a bar of `values[k]` stacked
/// in the order of `series` (first at the bottom), with a legend. Each
/// segment is a `<rect class="segment">`; negative or NaN values draw
/// nothing. `axis_labels` are those of the category axis and of the value
/// axis.
pub fn stacked_bars(
    title: &str,
    axis_labels: [&str; 2],
    series: &[&str],
    bars: &[(String, Vec<f64>)],
) -> String {
    let clean = |v: f64| if v > 0.0 && v.is_finite() { v } else { 0.0 };
    let max = bars
        .iter()
        .map(|(_, values)| values.iter().copied().map(clean).sum::<f64>())
        .fold(0.0, f64::max);
    let frame = Frame::new(bars.len(), 150.0, max, title);
    let labels: Vec<String> = bars.iter().map(|(label, _)| label.clone()).collect();
    let mut svg = String::new();
    frame.open(&mut svg, title, axis_labels, &labels);
    let half = (SLOT * 0.3).min(30.0);
    for (i, (label, values)) in bars.iter().enumerate() {
        let x = frame.x(i) - half;
        let parts: Vec<String> = series
            .iter()
            .zip(values)
            .map(|(name, v)| format!("{name} {}", short(*v)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<g class="bar"><title>{}: {}</title>"#,
            escape(label),
            escape(&parts.join(", "))
        );
        let mut base = 0.0;
        for (k, value) in values.iter().copied().map(clean).enumerate() {
            let (y_top, y_base) = (frame.y(base + value), frame.y(base));
            let _ = writeln!(
                svg,
                r#"<rect class="segment" x="{x:.1}" y="{y_top:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                2.0 * half,
                (y_base - y_top).max(0.0),
                PALETTE[k % PALETTE.len()]
            );
            base += value;
        }
        svg.push_str("</g>\n");
    }
    let legend_x = frame.plot_right + 20.0;
    for (k, name) in series.iter().enumerate().rev() {
        // The legend lists series top-down in the order they stack.
        let y = TOP + 20.0 * (series.len() - 1 - k) as f64;
        let _ = writeln!(
            svg,
            r#"<rect class="legend" x="{legend_x:.1}" y="{y:.1}" width="12" height="12" fill="{}"/>
<text x="{:.1}" y="{:.1}">{}</text>"#,
            PALETTE[k % PALETTE.len()],
            legend_x + 18.0,
            y + 10.0,
            escape(name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(453.1), (100.0, 500.0));
        assert_eq!(ticks(9.0), (2.0, 10.0));
        assert_eq!(ticks(12.0), (2.5, 12.5));
        assert_eq!(ticks(0.0), (0.2, 1.0));
        assert_eq!(ticks(f64::NAN), (0.2, 1.0));
    }

    #[test]
    fn one_box_and_one_bar_per_category() {
        let f = FiveNumbers {
            min: 1.0,
            q1: 2.0,
            median: 3.0,
            q3: 4.0,
            max: 5.0,
        };
        let boxes = [("a<1>".to_string(), f), ("b".to_string(), f)];
        let svg = box_plot("t & u", ["x", "y"], &boxes);
        assert_eq!(svg.matches(r#"<rect class="box""#).count(), 2);
        assert!(svg.contains("t &amp; u") && svg.contains("a&lt;1&gt;"));
        assert!(!svg.contains("a<1>"));
        let bars = [("a".to_string(), vec![1.0, f64::NAN, 2.0])];
        let svg = stacked_bars("t", ["x", "y"], &["p", "q", "r"], &bars);
        assert_eq!(svg.matches(r#"<rect class="segment""#).count(), 3);
        assert!(
            svg.contains(r#"height="0.0""#),
            "NaN draws an empty segment"
        );
    }

    #[test]
    fn labels_are_escaped_and_short() {
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(short(2.5), "2.5");
        assert_eq!(short(100.0), "100");
        assert_eq!(short(0.1234), "0.123");
        assert_eq!(short(-0.0001), "0");
    }
}
