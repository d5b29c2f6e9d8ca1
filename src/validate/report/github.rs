//! `--report github`: GitHub Actions workflow commands, shown as annotations on the files.

use std::io::{self, Write};

use super::{locus, Reporter, ValidationSummary};
use crate::terminal::escape_controls;
use crate::validate::diagnostic::Diagnostic;

/// `::error file=F,line=L,title=RULE::message`
pub struct Github {
    out: Box<dyn Write + Send>,
}

impl Github {
    /// A GitHub reporter writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Github { out }
    }
}

/// Escaping of workflow-command data: `%`, CR and LF as the runner decodes them; any other
/// control character from the data (an ESC sequence the log viewer would act on) written
/// visibly, as [`escape_controls`] writes it.
fn escape_data(s: &str) -> String {
    let s = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    escape_controls(&s).into_owned()
}

/// Escaping of workflow-command properties (also `:` and `,`).
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

impl Reporter for Github {
    fn diagnostic(&mut self, d: &Diagnostic) -> io::Result<()> {
        writeln!(
            self.out,
            "::{} file={},line={},title={}::{}",
            d.severity.as_str(),
            escape_property(&d.file),
            d.line,
            escape_property(&d.rule),
            escape_data(&format!("{}: {}", locus(d), d.message))
        )
    }

    fn finish(&mut self, s: &ValidationSummary) -> io::Result<()> {
        writeln!(
            self.out,
            "::notice title=trajkit validate::{} records, {} valid, {} invalid",
            s.records, s.valid, s.invalid
        )?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::render;
    use super::super::ReportFormat;

    #[test]
    fn escapes_properties_and_data() {
        let text = render(ReportFormat::Github);
        let first = text.lines().next().expect("a line");
        assert!(first.starts_with("::error file=data/a%2Cb.jsonl,line=7,title=schema-enum::"));
        assert!(first.contains("%0Asecond line"));
        assert!(text.contains("::notice title=trajkit validate::10 records, 9 valid, 1 invalid"));
    }

    #[test]
    fn control_characters_from_the_data_are_written_visibly() {
        let data = super::escape_data("title \u{1b}]0;owned\u{7}\tok\r\n");
        assert_eq!(data, "title \\u{1b}]0;owned\\u{7}\tok%0D%0A");
    }
}
