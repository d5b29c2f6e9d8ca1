//! The standardized trajectory model (ADP), its versions and the rules JSON Schema cannot
//! express.

pub mod languages;
pub mod links;
pub mod rules;
pub mod step;
pub mod trajectory;
pub mod upgrade;
pub mod version;
pub mod violation;

pub use step::{
    ApiAction, CodeAction, ImageObservation, JsonObject, JsonObservation, MessageAction, Source,
    Step, TaggedImage, TextObservation, WebObservation,
};
pub use trajectory::Trajectory;
pub use version::AdpVersion;
