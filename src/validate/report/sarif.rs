//! `--report sarif`: a SARIF 2.1.0 log with one result per diagnostic.

use std::collections::BTreeSet;
use std::io::{self, Write};

use serde_json::{json, Value};

use super::{Reporter, ValidationSummary};
use crate::validate::diagnostic::Diagnostic;

/// Collects results and writes the SARIF document at the end.
pub struct Sarif {
    out: Box<dyn Write + Send>,
    results: Vec<Value>,
    rules: BTreeSet<String>,
}

impl Sarif {
    /// A SARIF reporter writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Sarif {
            out,
            results: Vec::new(),
            rules: BTreeSet::new(),
        }
    }
}

impl Reporter for Sarif {
    fn diagnostic(&mut self, d: &Diagnostic) -> io::Result<()> {
        self.rules.insert(d.rule.clone());
        let pointer = if d.pointer.is_empty() {
            "/"
        } else {
            &d.pointer
        };
        self.results.push(json!({
            "ruleId": d.rule,
            "level": d.severity.as_str(),
            "message": {"text": format!("{pointer}: {}", d.message)},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": d.file.as_ref()},
                    "region": {"startLine": d.line}
                },
                "logicalLocations": [{"name": pointer, "kind": "member"}]
            }],
            "properties": {"recordIndex": d.index, "recordId": d.record_id, "pointer": pointer}
        }));
        Ok(())
    }

    fn finish(&mut self, _summary: &ValidationSummary) -> io::Result<()> {
        let rules: Vec<Value> = self.rules.iter().map(|r| json!({"id": r})).collect();
        let log = json!({
            "version": "2.1.0",
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "runs": [{
                "tool": {"driver": {
                    "name": "trajkit",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules
                }},
                "results": std::mem::take(&mut self.results)
            }]
        });
        serde_json::to_writer_pretty(&mut self.out, &log)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::render;
    use super::super::ReportFormat;
    use serde_json::Value;

    #[test]
    fn is_a_sarif_2_1_0_log() {
        let v: Value = serde_json::from_str(&render(ReportFormat::Sarif)).expect("JSON");
        assert_eq!(v["version"], "2.1.0");
        let result = &v["runs"][0]["results"][0];
        assert_eq!(result["ruleId"], "schema-enum");
        assert_eq!(result["level"], "error");
        assert_eq!(
            result["locations"][0]["physicalLocation"]["region"]["startLine"],
            7
        );
        assert_eq!(
            v["runs"][0]["tool"]["driver"]["rules"][0]["id"],
            "schema-enum"
        );
    }
}
