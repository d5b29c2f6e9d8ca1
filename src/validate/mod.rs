//! Validation: JSON Schemas from `schemas/` plus semantic rules, producing diagnostics, and the
//! reporters that show them.

pub mod check;
pub mod diagnostic;
pub mod report;
pub mod schemas;

pub use check::{check_adp, Checked};
pub use diagnostic::{Diagnostic, Severity};
