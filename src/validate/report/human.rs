//! The default report: one line per diagnostic, compiler style.

use std::io::{self, Write};

use super::{locus, Reporter, ValidationSummary};
use crate::validate::diagnostic::Diagnostic;

/// `file:line: error[rule] id="…" /pointer: message`
pub struct Human {
    out: Box<dyn Write + Send>,
}

impl Human {
    /// A human reporter writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Human { out }
    }
}

impl Reporter for Human {
    fn diagnostic(&mut self, d: &Diagnostic) -> io::Result<()> {
        let message = d.message.replace('\n', " ");
        writeln!(
            self.out,
            "{}:{}: {}[{}] {}: {}",
            d.file,
            d.line,
            d.severity.as_str(),
            d.rule,
            locus(d),
            message
        )
    }

    fn finish(&mut self, _summary: &ValidationSummary) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::render;
    use super::super::ReportFormat;

    #[test]
    fn one_line_per_diagnostic() {
        assert_eq!(
            render(ReportFormat::Human),
            "data/a,b.jsonl:7: error[schema-enum] id=\"t<1>\" /content/2/source: \"bot\" is not one of [\"user\"] second line & more\n"
        );
    }
}
