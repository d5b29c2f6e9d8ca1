//! A broken semantic rule, as the rules ([`super::rules`], [`super::links`]) report it.

/// One broken rule, located by a JSON pointer into the trajectory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer (RFC 6901) to the offending value.
    pub pointer: String,
    /// Stable rule name, e.g. `link-dangling`.
    pub rule: &'static str,
    /// Readable explanation.
    pub message: String,
}

impl Violation {
    /// Builds a violation.
    pub fn new(pointer: impl Into<String>, rule: &'static str, message: impl Into<String>) -> Self {
        Violation {
            pointer: pointer.into(),
            rule,
            message: message.into(),
        }
    }
}
