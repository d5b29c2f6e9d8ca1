//! Horizontal bar charts as inline SVG: one bar per row, its label on the left and its value
//! at the bar's end. Accessible: `role="img"`, a `<title>` and an `aria-label`; the page also
//! prints the values as a table under each chart.

use std::fmt::Write as _;

const WIDTH: u32 = 490;
const LABEL: u32 = 150;
const ROW: u32 = 20;
const LABEL_CHARS: usize = 24;

/// A chart of `rows` (`(label, value)`) titled `title`: `<svg class="chart">` with one
/// `<rect class="bar">` per row, and `data-bars` holding the row count.
pub fn bar_chart(title: &str, rows: &[(String, u64)]) -> String {
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    let height = ROW * rows.len() as u32 + 4;
    let room = f64::from(WIDTH - LABEL - 60);
    let title = escape(title);
    let mut svg = format!(
        "<svg class=\"chart\" role=\"img\" aria-label=\"{title}\" data-bars=\"{}\" \
         width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" \
         xmlns=\"http://www.w3.org/2000/svg\"><title>{title}</title>",
        rows.len()
    );
    for (i, (label, value)) in rows.iter().enumerate() {
        let y = ROW * i as u32 + 2;
        let w = (room * *value as f64 / max as f64)
            .round()
            .max(if *value > 0 { 1.0 } else { 0.0 });
        let short: String = if label.chars().count() > LABEL_CHARS {
            label.chars().take(LABEL_CHARS - 1).chain(['…']).collect()
        } else {
            label.clone()
        };
        let _ = write!(
            svg,
            "<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{short}</text>\
             <rect class=\"bar\" x=\"{LABEL}\" y=\"{y}\" width=\"{w}\" height=\"{bh}\"><title>{full}: {value}</title></rect>\
             <text x=\"{vx}\" y=\"{ty}\">{value}</text>",
            lx = LABEL - 6,
            ty = y + 13,
            short = escape(&short),
            full = escape(label),
            bh = ROW - 4,
            vx = f64::from(LABEL) + w + 4.0,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// `text` with `&`, `<`, `>`, `"` and `'` escaped, for text and attribute values of SVG and
/// HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_per_row_with_escaped_labels() {
        let svg = bar_chart("a<b", &[("<x>".into(), 3), ("y".into(), 0)]);
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), 2);
        assert!(svg.contains("data-bars=\"2\""));
        assert!(svg.contains("&lt;x&gt;") && !svg.contains("<x>"));
        assert!(svg.contains("<title>a&lt;b</title>"));
    }
}
