//! `--report json`: one JSON object per diagnostic per line.

use std::io::{self, Write};

use super::{Reporter, ValidationSummary};
use crate::validate::diagnostic::Diagnostic;

/// Writes each diagnostic as a JSON line with `file`, `line`, `index`, `record_id`, `pointer`,
/// `rule`, `message` and `severity`.
pub struct JsonLines {
    out: Box<dyn Write + Send>,
}

impl JsonLines {
    /// A JSON-lines reporter writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        JsonLines { out }
    }
}

impl Reporter for JsonLines {
    fn diagnostic(&mut self, d: &Diagnostic) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, d)?;
        self.out.write_all(b"\n")
    }

    fn finish(&mut self, _summary: &ValidationSummary) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::render;
    use super::super::ReportFormat;
    use serde_json::Value;

    #[test]
    fn every_field_is_present() {
        let text = render(ReportFormat::Json);
        let v: Value = serde_json::from_str(text.trim_end()).expect("one JSON line");
        assert_eq!(v["file"], "data/a,b.jsonl");
        assert_eq!(v["line"], 7);
        assert_eq!(v["record_id"], "t<1>");
        assert_eq!(v["pointer"], "/content/2/source");
        assert_eq!(v["rule"], "schema-enum");
        assert_eq!(v["severity"], "error");
        assert!(v["message"].as_str().is_some_and(|m| m.contains("bot")));
    }
}
