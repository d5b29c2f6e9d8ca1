//! What is shown of a record a redacting run rejects: its diagnostics and the record itself,
//! with every text a rule finds replaced by its key-less placeholder (`<SECRET:rule>`), so
//! that neither the rejects file nor a report holds a secret the outputs do not.

use std::io;

use serde_json::{Map, Value};

use super::scan::Scanner;
use crate::validate::report::{Reporter, ValidationSummary};
use crate::validate::Diagnostic;

impl Scanner {
    /// `diagnostics` as they may be shown: what a rule finds in a record id, a pointer (member
    /// names) or a message (a value quoted by a schema error) replaced by its placeholder.
    pub fn masked(&self, mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        for d in &mut diagnostics {
            self.mask_diagnostic(d);
        }
        diagnostics
    }

    /// [`Scanner::masked`] of one diagnostic.
    pub fn mask_diagnostic(&self, d: &mut Diagnostic) {
        if let Some(id) = &mut d.record_id {
            *id = self.mask(id).into_owned();
        }
        d.pointer = self.mask(&d.pointer).into_owned();
        d.message = self.mask(&d.message).into_owned();
    }

    /// Masks every string of `value` and every member name, at any depth.
    pub fn mask_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let std::borrow::Cow::Owned(m) = self.mask(s) {
                    *s = m;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.mask_value(v)),
            Value::Object(map) => {
                let old = std::mem::take(map);
                let mut new = Map::with_capacity(old.len());
                for (k, mut v) in old {
                    self.mask_value(&mut v);
                    // Two names masked alike: the later member is kept under a numbered name,
                    // so nothing of the record is lost.
                    let mut key = self.mask(&k).into_owned();
                    let mut n = 1;
                    while new.contains_key(&key) {
                        n += 1;
                        key = format!("{}#{n}", self.mask(&k));
                    }
                    new.insert(key, v);
                }
                *map = new;
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// A reporter that masks each diagnostic before handing it on.
pub struct MaskedReporter {
    inner: Box<dyn Reporter>,
    scanner: Scanner,
}

impl MaskedReporter {
    /// Reports to `inner`, masking with `scanner`.
    pub fn new(inner: Box<dyn Reporter>, scanner: Scanner) -> MaskedReporter {
        MaskedReporter { inner, scanner }
    }
}

impl Reporter for MaskedReporter {
    fn diagnostic(&mut self, d: &Diagnostic) -> io::Result<()> {
        let mut d = d.clone();
        self.scanner.mask_diagnostic(&mut d);
        self.inner.diagnostic(&d)
    }

    fn finish(&mut self, summary: &ValidationSummary) -> io::Result<()> {
        self.inner.finish(summary)
    }
}

impl crate::engine::rejects::Mask for Scanner {
    fn mask_value(&self, value: &mut Value) {
        Scanner::mask_value(self, value);
    }

    fn mask_text<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        self.mask(text)
    }

    fn mask_diagnostics(&self, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        self.masked(diagnostics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_masked_at_any_depth_names_included() {
        let s = Scanner::builtin(false);
        let mail = ["jane.roe", "@", "mailhost.io"].concat();
        let mut v = serde_json::json!({"a": [{"b": format!("to {mail}")}], mail.clone(): 1,
            "<PII:email>": 2});
        s.mask_value(&mut v);
        let text = v.to_string();
        assert!(!text.contains(&mail), "{text}");
        assert_eq!(v["a"][0]["b"], "to <PII:email>");
        assert_eq!(v.as_object().map(Map::len), Some(3), "nothing lost: {text}");
    }
}
