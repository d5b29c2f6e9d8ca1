//! The default report: one line per diagnostic, compiler style, with the control characters
//! of the data escaped (`\u{1b}`), newlines of a file name or pointer too.

use std::io::{self, Write};

use super::{locus, Reporter, ValidationSummary};
use crate::terminal::escape_line;
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
        let line = format!(
            "{}:{}: {}[{}] {}: {}",
            d.file,
            d.line,
            d.severity.as_str(),
            d.rule,
            locus(d),
            message
        );
        // The message, pointer and file quote the data: no control character reaches a
        // terminal, and no newline breaks the line (the id is quoted with its escapes).
        writeln!(self.out, "{}", escape_line(&line))
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

    #[test]
    fn control_characters_of_the_data_are_escaped() {
        use super::super::tests::sample;
        use super::*;
        let (mut d, _) = sample();
        d.file = "a\x1b[2J.jsonl".into();
        d.record_id = Some("t\x1b]0;x\x07".into());
        d.pointer = "/details/\u{9b}31m".into();
        d.message = "\"\x1b]52;c;ZXZpbA==\x07\r\x08\tok\"".into();
        let buf = super::super::tests::SharedBuf::default();
        let mut r = Human::new(Box::new(buf.clone()));
        r.diagnostic(&d).expect("write");
        let text = String::from_utf8(buf.0.lock().expect("lock").clone()).expect("utf-8");
        assert_eq!(
            text,
            "a\\u{1b}[2J.jsonl:7: error[schema-enum] id=\"t\\u{1b}]0;x\\u{7}\" \
             /details/\\u{9b}31m: \"\\u{1b}]52;c;ZXZpbA==\\u{7}\\u{d}\\u{8}\tok\"\n"
        );
    }
}
