//! `--report junit`: JUnit XML, one test suite per input file and one failed test case per
//! invalid record; the valid records of a file count as one passing case.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::Arc;

use super::{locus, Reporter, ValidationSummary};
use crate::validate::diagnostic::Diagnostic;

/// Collects diagnostics by record and writes the XML at the end.
pub struct Junit {
    out: Box<dyn Write + Send>,
    failures: BTreeMap<Arc<str>, BTreeMap<u64, Vec<Diagnostic>>>,
}

impl Junit {
    /// A JUnit reporter writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Junit {
            out,
            failures: BTreeMap::new(),
        }
    }
}

/// Escapes text for XML attributes and content. Characters XML 1.0 does not allow at all
/// (control characters other than tab, newline and carriage return; U+FFFE and U+FFFF) become
/// U+FFFD, so the report stays well-formed and shows that something was there.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c < ' ' && !matches!(c, '\n' | '\t' | '\r'))
                || matches!(c, '\u{FFFE}' | '\u{FFFF}') =>
            {
                out.push('\u{FFFD}')
            }
            c => out.push(c),
        }
    }
    out
}

impl Reporter for Junit {
    fn diagnostic(&mut self, d: &Diagnostic) -> io::Result<()> {
        self.failures
            .entry(d.file.clone())
            .or_default()
            .entry(d.index)
            .or_default()
            .push(d.clone());
        Ok(())
    }

    fn finish(&mut self, s: &ValidationSummary) -> io::Result<()> {
        let o = &mut self.out;
        writeln!(o, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
        writeln!(
            o,
            r#"<testsuites name="trajkit validate" tests="{}" failures="{}">"#,
            s.records, s.invalid
        )?;
        for f in &s.files {
            let empty = BTreeMap::new();
            let records = self.failures.get(&f.file).unwrap_or(&empty);
            let valid = f.records.saturating_sub(f.invalid);
            writeln!(
                o,
                r#"  <testsuite name="{}" tests="{}" failures="{}">"#,
                xml(&f.file),
                records.len() as u64 + u64::from(valid > 0),
                records.len()
            )?;
            if valid > 0 {
                writeln!(
                    o,
                    r#"    <testcase classname="{}" name="{valid} valid records"/>"#,
                    xml(&f.file)
                )?;
            }
            for (index, diags) in records {
                let first = &diags[0];
                let name = match &first.record_id {
                    Some(id) => format!("record {index} (line {}, id {id})", first.line),
                    None => format!("record {index} (line {})", first.line),
                };
                writeln!(
                    o,
                    r#"    <testcase classname="{}" name="{}">"#,
                    xml(&f.file),
                    xml(&name)
                )?;
                let body: Vec<String> = diags
                    .iter()
                    .map(|d| format!("[{}] {}: {}", d.rule, locus(d), d.message))
                    .collect();
                writeln!(
                    o,
                    r#"      <failure message="{}" type="{}">{}</failure>"#,
                    xml(&first.message),
                    xml(&first.rule),
                    xml(&body.join("\n"))
                )?;
                writeln!(o, "    </testcase>")?;
            }
            writeln!(o, "  </testsuite>")?;
        }
        writeln!(o, "</testsuites>")?;
        o.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::render;
    use super::super::ReportFormat;

    #[test]
    fn suite_per_file_case_per_invalid_record() {
        let text = render(ReportFormat::Junit);
        assert!(text.contains(r#"<testsuite name="data/a,b.jsonl" tests="2" failures="1">"#));
        assert!(text.contains(r#"name="9 valid records""#));
        assert!(text.contains(r#"name="record 3 (line 7, id t&lt;1&gt;)""#));
        assert!(text.contains(r#"type="schema-enum""#));
        assert!(text.contains("second line &amp; more"));
    }

    #[test]
    fn characters_xml_does_not_allow_are_replaced() {
        assert_eq!(
            super::xml("a\u{FFFE}b\u{FFFF}c\u{1}d\u{1F}e\tf\ng\u{FFFD}<"),
            "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}e\tf\ng\u{FFFD}&lt;"
        );
    }
}
