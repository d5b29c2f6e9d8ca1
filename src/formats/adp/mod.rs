//! ADP itself as an input format (any version): the identity and upgrade path.

use serde_json::Value;

use crate::convert::{Converter, FormatOptions};
use crate::formats::Format;
use crate::ingest::RawRecord;
use crate::model::{AdpVersion, Trajectory};
use crate::validate::{check_adp, Diagnostic};

/// Reads ADP trajectories of any supported version, validating them in that version.
pub struct Adp;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Adp,
    side: None,
};

impl Converter for Adp {
    fn name(&self) -> &'static str {
        "adp"
    }

    fn description(&self) -> &'static str {
        "ADP standardized trajectories, unversioned or 1.0.0 to 1.5.0 (JSON lines or a JSON array)"
    }

    fn reads_adp(&self) -> bool {
        true
    }

    fn sniff(&self, first: &Value) -> bool {
        first["id"].is_string()
            && first["content"]
                .as_array()
                .is_some_and(|steps| steps.iter().all(|s| s.get("class_").is_some()))
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        // Nothing is left out: a record is ADP already, read whole (or rejected), and the
        // `details.source.left_out` it carries is the one its own reader wrote.
        check_adp(record).into_result().map(|t| vec![t])
    }
}
