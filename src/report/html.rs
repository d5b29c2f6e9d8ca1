//! The report as one self-contained HTML page: inline CSS, inline SVG charts, no script to run
//! and no network load (a Content-Security-Policy forbids them), every text from the data
//! escaped. The numbers are also embedded as JSON (`<script type="application/json"
//! id="trajkit-report-data">`, a data block no browser runs) for tools and tests.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::histogram::Log2Histogram;
use super::outputs::{Rejects, RunCounts};
use super::profile::{Profile, Share};
use super::segments::SegmentProfile;
use super::svg::{bar_chart, escape};
use super::view::{Clipped, View};
use crate::redact::Redaction;

/// Tools, formats and files listed in the tables (all are in the embedded JSON).
const TABLE_ROWS: usize = 30;

/// Everything the page shows.
#[derive(Debug, Serialize)]
pub struct Report<'a> {
    /// trajkit's version.
    pub trajkit_version: &'static str,
    /// The inputs as given.
    pub inputs: &'a [String],
    /// The counts over the trajectories.
    pub profile: &'a Profile,
    /// Rejects read from a rejects file, when one was found or given.
    pub rejects: Option<&'a Rejects>,
    /// Stage counts from `run.json`, when one was found.
    pub run: Option<&'a RunCounts>,
    /// Redaction counts from `manifest.json`, when present.
    pub redaction: Option<&'a Redaction>,
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;\
padding:1em 2em;color:#1d232a;background:#fff}h1{margin-bottom:.2em}h2{border-bottom:1px solid \
#d6dbe0;padding-bottom:.2em;margin-top:2em}table{border-collapse:collapse;margin:.5em 0}\
td,th{padding:2px 10px;border-bottom:1px solid #eceff2;text-align:left;vertical-align:top}\
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}.grid{display:flex;flex-wrap:wrap;\
gap:1.5em}figure{margin:0;flex:0 1 490px;min-width:0}#overview-table{min-width:420px}figcaption{font-weight:600;margin-bottom:.3em}\
.chart text{font:11px system-ui,sans-serif;fill:#1d232a}.chart rect.bar{fill:#3b6ea8}\
.values{color:#56606b;font-size:12px;margin:.2em 0 0}.empty{font-size:1.2em;padding:1em;\
background:#fff6db;border:1px solid #e8d48b}.muted{color:#56606b}code{font-size:90%}\
details.example{border:1px solid #d6dbe0;border-radius:4px;margin:.6em 0;padding:.3em .8em}\
details.example>summary{cursor:pointer;font-weight:600}ol.steps{list-style:none;padding:0}\
li.step{margin:.5em 0;padding:.3em .6em;border-left:4px solid #9fb3c8}li.action{border-color:\
#3b6ea8;background:#f3f7fb}li.observation{border-color:#8aa17a;background:#f6f8f3}li.gap{color:\
#56606b;font-style:italic;margin:.5em 0}.head{font-size:12px;color:#3d4650}.cls{font-weight:600}\
pre{white-space:pre-wrap;word-break:break-word;margin:.3em 0;font-size:12.5px}.more{color:#8a5a00;\
font-size:12px}.thought{color:#56606b}";

/// The whole page.
pub fn render(r: &Report<'_>) -> String {
    let p = r.profile;
    let s = &p.stats;
    let mut out = String::with_capacity(64 << 10);
    out.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>trajkit report</title><style>",
    );
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n<h1>Dataset report</h1>\n");
    let _ = writeln!(
        out,
        "<p class=\"muted\">trajkit {} · inputs: {}</p>",
        r.trajkit_version,
        r.inputs
            .iter()
            .map(|i| format!("<code>{}</code>", escape(i)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if s.records == 0 {
        out.push_str("<p class=\"empty\" id=\"empty\">The input holds no trajectories.</p>\n");
    } else if s.valid == 0 {
        let _ = writeln!(
            out,
            "<p class=\"empty\" id=\"empty\">None of the {} records read is a valid ADP \
             trajectory (<code>trajkit validate</code> says why).</p>",
            s.records
        );
    }
    overview(&mut out, r);
    if s.valid > 0 {
        distributions(&mut out, p);
        if !p.segments.is_empty() {
            segments(&mut out, &p.segments);
        }
        tools(&mut out, p);
        breakdowns(&mut out, p);
    }
    rejects(&mut out, r);
    if let Some(red) = r.redaction {
        redaction(&mut out, red);
    }
    if s.valid > 0 {
        examples(&mut out, p);
    }
    out.push_str("<script type=\"application/json\" id=\"trajkit-report-data\">");
    out.push_str(&json_block(r));
    out.push_str("</script>\n</body></html>\n");
    out
}

/// The report's numbers as JSON safe inside a `<script>` element: `<`, `>` and `&` (which
/// occur only inside strings) written as `\u` escapes.
fn json_block(r: &Report<'_>) -> String {
    let text = serde_json::to_string(r).unwrap_or_else(|_| "null".to_owned());
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

fn row(out: &mut String, key: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "<tr><th>{key}</th><td class=\"n\">{value}</td></tr>");
}

fn overview(out: &mut String, r: &Report<'_>) {
    let p = r.profile;
    let s = &p.stats;
    out.push_str("<h2 id=\"overview\">Overview</h2>\n<table id=\"overview-table\">\n");
    row(out, "trajectories", s.valid);
    row(out, "records read", s.records);
    row(out, "invalid records", s.invalid);
    row(
        out,
        "steps",
        format!(
            "{} (mean {:.1}, max {})",
            s.steps, s.mean_steps, s.max_steps
        ),
    );
    row(
        out,
        "actions / observations",
        format!("{} / {}", s.actions, s.observations),
    );
    if let Some(t) = &s.tokens {
        row(
            out,
            "tokens",
            format!(
                "{} (p50 {}, p90 {}, p99 {}, max {})",
                t.total, t.p50, t.p90, t.p99, t.max
            ),
        );
    }
    row(out, "bytes read", p.bytes);
    row(
        out,
        "text characters",
        format!(
            "{} (mean {:.0}, max {})",
            s.text_chars, s.mean_text_chars, s.max_text_chars
        ),
    );
    row(out, "source formats", escape(&keys(p.formats.keys())));
    row(out, "source files", p.files.len());
    row(out, "ADP versions", escape(&keys(s.versions.keys())));
    out.push_str("</table>\n");
}

fn keys<'a>(k: impl Iterator<Item = &'a String>) -> String {
    k.map(String::as_str).collect::<Vec<_>>().join(", ")
}

/// A chart with its values as text under it.
fn figure(out: &mut String, id: &str, title: &str, rows: &[(String, u64)], note: &str) {
    let _ = write!(
        out,
        "<figure id=\"{id}\"><figcaption>{}</figcaption>",
        escape(title)
    );
    if rows.is_empty() {
        let _ = write!(out, "<p class=\"muted\">{}</p>", escape(note));
    } else {
        out.push_str(&bar_chart(title, rows));
        let values: Vec<String> = rows.iter().map(|(l, v)| format!("{l}: {v}")).collect();
        let _ = write!(
            out,
            "<p class=\"values\">{}</p>",
            escape(&values.join(" · "))
        );
    }
    out.push_str("</figure>\n");
}

fn sorted(map: &BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = map.iter().map(|(k, n)| (k.clone(), *n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

fn distributions(out: &mut String, p: &Profile) {
    out.push_str("<h2 id=\"distributions\">Distributions</h2>\n<div class=\"grid\">\n");
    let hist = |h: &Log2Histogram| h.rows();
    figure(
        out,
        "chart-steps",
        "Steps per trajectory",
        &hist(&p.steps_per_trajectory),
        "",
    );
    if let Some(t) = &p.tokens_per_trajectory {
        figure(out, "chart-tokens", "Tokens per trajectory", &hist(t), "");
    }
    figure(
        out,
        "chart-turns",
        "Agent turns per trajectory",
        &hist(&p.turns_per_trajectory),
        "",
    );
    let rewards = if p.rewards.count > 0 {
        p.rewards.rows()
    } else {
        Vec::new()
    };
    figure(
        out,
        "chart-rewards",
        "Rewards",
        &rewards,
        "No trajectory has a reward.",
    );
    figure(out, "chart-outcomes", "Outcomes", &sorted(&p.outcomes), "");
    figure(
        out,
        "chart-classes",
        "Steps by class",
        &sorted(&p.stats.steps_by_class),
        "",
    );
    out.push_str("</div>\n");
    if p.rewards.count > 0 {
        let _ = writeln!(
            out,
            "<p class=\"values\">{} trajectories with a reward: mean {:.3}, min {}, max {}.</p>",
            p.rewards.count,
            p.rewards.sum / p.rewards.count as f64,
            p.rewards.min.unwrap_or(0.0),
            p.rewards.max.unwrap_or(0.0)
        );
    }
}

/// The compacted sessions: segments per session, tokens per segment against the context, and
/// the first sessions with each segment's tokens (`*` marks one over the context).
fn segments(out: &mut String, s: &SegmentProfile) {
    out.push_str("<h2 id=\"segments\">Compaction segments</h2>\n");
    let _ = write!(
        out,
        "<p>{} sessions were compacted, into {} segments (<code>trajkit export --segments \
         compaction</code> writes one row each).",
        s.compacted, s.segments
    );
    if let (Some(c), Some(over), Some(whole)) =
        (s.context, s.segments_over_context, s.sessions_over_context)
    {
        let _ = write!(
            out,
            " Against a context of {c} tokens: {over} of the segments are longer, and {whole} \
             of the compacted sessions are as one row."
        );
    }
    out.push_str("</p>\n<div class=\"grid\">\n");
    figure(
        out,
        "chart-segments",
        "Segments per session",
        &s.segments_per_session.rows(),
        "",
    );
    if let Some(t) = &s.tokens_per_segment {
        figure(
            out,
            "chart-segment-tokens",
            "Tokens per segment (compacted sessions)",
            &t.rows(),
            "",
        );
    }
    out.push_str("</div>\n");
    out.push_str(
        "<table id=\"segments-table\"><tr><th>session</th><th class=\"n\">segments</th>\
         <th class=\"n\">tokens per segment</th><th class=\"n\">tokens as one row</th></tr>\n",
    );
    let mark = |n: u64| match s.context {
        Some(c) if n > c => format!("{n}*"),
        _ => n.to_string(),
    };
    for session in s.sessions.iter().take(TABLE_ROWS) {
        let tokens = session.tokens.as_ref().map_or_else(
            || "-".to_owned(),
            |t| {
                t.iter()
                    .map(|n| n.map_or_else(|| "-".to_owned(), mark))
                    .collect::<Vec<_>>()
                    .join(" · ")
            },
        );
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td></tr>",
            escape(&session.id),
            session.segments,
            tokens,
            session.whole.map_or_else(|| "-".to_owned(), mark)
        );
    }
    out.push_str("</table>\n");
    if s.context.is_some() {
        out.push_str("<p class=\"muted\">* longer than the context.</p>\n");
    }
    more(out, s.sessions.len());
}

fn tools(out: &mut String, p: &Profile) {
    out.push_str("<h2 id=\"tools\">Tools</h2>\n");
    if p.tools.is_empty() {
        out.push_str("<p class=\"muted\">No tool calls.</p>\n");
        return;
    }
    let mut v: Vec<_> = p.tools.iter().collect();
    v.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then_with(|| a.0.cmp(b.0)));
    let calls: Vec<(String, u64)> = v
        .iter()
        .take(15)
        .map(|(k, t)| ((*k).clone(), t.calls))
        .collect();
    figure(out, "chart-tools", "Calls by tool (top 15)", &calls, "");
    out.push_str(
        "<table id=\"tools-table\"><tr><th>tool</th><th class=\"n\">calls</th>\
         <th class=\"n\">error results</th><th class=\"n\">error share</th>\
         <th class=\"n\">unanswered</th></tr>\n",
    );
    for (name, t) in v.iter().take(TABLE_ROWS) {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{:.1}%</td><td class=\"n\">{}</td></tr>",
            escape(name),
            t.calls,
            t.errors,
            100.0 * t.errors as f64 / t.calls.max(1) as f64,
            t.unanswered
        );
    }
    out.push_str("</table>\n");
    more(out, v.len());
    out.push_str(
        "<p class=\"values\">A result counts as an error when its observation is named \
         <code>error</code> or starts with “error”, “traceback”, “exception” or “fatal:” \
         (ADP has no error flag).</p>\n",
    );
}

fn more(out: &mut String, n: usize) {
    if n > TABLE_ROWS {
        let _ = writeln!(
            out,
            "<p class=\"muted\">… {} more (all are in the embedded JSON).</p>",
            n - TABLE_ROWS
        );
    }
}

fn share_table(out: &mut String, id: &str, what: &str, map: &BTreeMap<String, Share>) {
    let mut v: Vec<_> = map.iter().collect();
    v.sort_by(|a, b| {
        b.1.trajectories
            .cmp(&a.1.trajectories)
            .then_with(|| a.0.cmp(b.0))
    });
    let _ = writeln!(
        out,
        "<table id=\"{id}\"><tr><th>{what}</th><th class=\"n\">trajectories</th>\
         <th class=\"n\">steps</th><th class=\"n\">bytes</th></tr>"
    );
    for (k, s) in v.iter().take(TABLE_ROWS) {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td></tr>",
            escape(k),
            s.trajectories,
            s.steps,
            s.bytes
        );
    }
    out.push_str("</table>\n");
    more(out, v.len());
}

fn breakdowns(out: &mut String, p: &Profile) {
    out.push_str("<h2 id=\"sources\">Sources</h2>\n");
    let formats: Vec<(String, u64)> = sorted(
        &p.formats
            .iter()
            .map(|(k, s)| (k.clone(), s.trajectories))
            .collect(),
    );
    figure(
        out,
        "chart-formats",
        "Trajectories by source format",
        &formats,
        "",
    );
    share_table(out, "formats-table", "source format", &p.formats);
    share_table(out, "files-table", "source file", &p.files);
}

fn rejects(out: &mut String, r: &Report<'_>) {
    out.push_str("<h2 id=\"rejects\">Rejects</h2>\n");
    let invalid = r.profile.stats.invalid;
    let mut said = false;
    if let Some(run) = r.run {
        if let Some(p) = &run.pipeline {
            let _ = writeln!(out, "<p>Run of <code>{}</code>, per stage:</p>", escape(p));
        }
        out.push_str(
            "<table id=\"stages-table\"><tr><th>stage</th><th class=\"n\">in</th>\
             <th class=\"n\">written</th><th class=\"n\">filtered</th><th class=\"n\">rejected</th></tr>\n",
        );
        for s in &run.stages {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                escape(&s.stage),
                s.records_in,
                s.written,
                s.filtered,
                s.rejected
            );
        }
        out.push_str("</table>\n");
        said = true;
    }
    if let Some(rej) = r.rejects {
        let rows: Vec<(String, u64)> = rej
            .by_stage
            .iter()
            .flat_map(|(stage, rules)| {
                rules
                    .iter()
                    .map(move |(rule, n)| (format!("{stage}: {rule}"), *n))
            })
            .collect();
        figure(
            out,
            "chart-rejects",
            "Rejected records by stage and rule",
            &rows,
            "The rejects file is empty.",
        );
        if rej.unreadable_lines > 0 {
            let _ = writeln!(
                out,
                "<p class=\"muted\">{} lines of the rejects file are not reject records.</p>",
                rej.unreadable_lines
            );
        }
        said = true;
    }
    if invalid > 0 {
        let _ = writeln!(
            out,
            "<p>{invalid} records of the input are not valid ADP (<code>trajkit validate</code> \
             names file, line and rule).</p>"
        );
        said = true;
    }
    if !said {
        out.push_str(
            "<p class=\"muted\">Every record read is a valid trajectory; no rejects file or \
             <code>run.json</code> was given or found.</p>\n",
        );
    }
}

fn redaction(out: &mut String, red: &Redaction) {
    out.push_str("<h2 id=\"redaction\">Redaction</h2>\n");
    let _ = writeln!(
        out,
        "<p>{} trajectories in, {} with something replaced, {} replacements, {} rejected.</p>",
        red.records_in, red.redacted, red.replacements, red.rejected
    );
    let rows: Vec<(String, u64)> = red
        .rules
        .iter()
        .map(|r| (format!("{} ({})", r.rule, r.kind), r.count))
        .collect();
    figure(
        out,
        "chart-redaction",
        "Replacements by rule",
        &rows,
        "Nothing was replaced.",
    );
}

fn examples(out: &mut String, p: &Profile) {
    out.push_str(
        "<h2 id=\"examples\">Examples</h2>\n<p class=\"muted\">Chosen the same way on every \
         run: the shortest and the longest trajectory, a typical one (in the step-count \
         bucket of the median, the smallest split hash of its id) and the first failure. \
         Long texts and long trajectories are cut, with a note.</p>\n",
    );
    for (e, (labels, v)) in p
        .examples
        .chosen(&p.steps_per_trajectory)
        .iter()
        .enumerate()
    {
        example(out, e, labels, v);
    }
}

fn clipped(out: &mut String, class: &str, c: &Clipped) {
    let _ = write!(out, "<pre class=\"{class}\">{}</pre>", escape(&c.text));
    if c.more_bytes > 0 {
        let _ = write!(out, "<p class=\"more\">… {} bytes more</p>", c.more_bytes);
    }
}

fn example(out: &mut String, e: usize, labels: &[&str], v: &View) {
    let mut facts = vec![format!("{} steps", v.steps_total)];
    facts.extend(v.outcome.as_ref().map(|o| format!("outcome {o}")));
    facts.extend(v.reward.map(|r| format!("reward {r}")));
    facts.extend(v.format.clone());
    let _ = writeln!(
        out,
        "<details class=\"example\" id=\"example-{e}\"><summary>{}: <code>{}</code> · {}</summary>\
         <ol class=\"steps\">",
        labels.join(", "),
        escape(&v.id),
        escape(&facts.join(" · "))
    );
    let mut next = 0;
    for s in &v.steps {
        if s.index > next {
            let _ = writeln!(
                out,
                "<li class=\"gap\">… {} steps not shown …</li>",
                s.index - next
            );
        }
        next = s.index + 1;
        let kind = if s.action { "action" } else { "observation" };
        let _ = write!(
            out,
            "<li class=\"step {kind}\" id=\"ex{e}-s{i}\"><div class=\"head\">{i} · \
             <span class=\"cls\">{cls}</span> · {heading}",
            i = s.index,
            cls = s.class,
            heading = escape(&s.heading)
        );
        if let Some(id) = &s.call_id {
            let _ = write!(out, " · <code>{}</code>", escape(id));
        }
        if let Some(a) = s.answers {
            let _ = write!(out, " · answers <a href=\"#ex{e}-s{a}\">step {a}</a>");
        }
        if let Some(a) = s.answered_by {
            let _ = write!(out, " · result: <a href=\"#ex{e}-s{a}\">step {a}</a>");
        }
        if let Some(r) = s.reward {
            let _ = write!(out, " · reward {r}");
        }
        out.push_str("</div>");
        if let Some(t) = &s.reasoning {
            clipped(out, "thought", t);
        }
        if let Some(t) = &s.description {
            clipped(out, "thought", t);
        }
        clipped(out, "body", &s.body);
        out.push_str("</li>\n");
    }
    out.push_str("</ol></details>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn an_empty_profile_says_so() {
        let p = Profile::default();
        let page = render(&Report {
            trajkit_version: "0",
            inputs: &[],
            profile: &p,
            rejects: None,
            run: None,
            redaction: None,
        });
        assert!(page.contains("The input holds no trajectories."));
        assert!(page.contains("Content-Security-Policy"));
    }

    #[test]
    fn the_json_block_cannot_close_its_script() {
        let mut p = Profile::default();
        p.outcomes.insert("</script><b>".into(), 1);
        let r = Report {
            trajkit_version: "0",
            inputs: &[],
            profile: &p,
            rejects: None,
            run: None,
            redaction: None,
        };
        let block = json_block(&r);
        assert!(!block.contains('<'));
        let back: serde_json::Value = serde_json::from_str(&block).unwrap();
        assert_eq!(back["profile"]["outcomes"]["</script><b>"], 1);
    }
}
