//! The dataset report (`trajkit report`) and the one-trajectory view (`trajkit show`).
//!
//! [`profile`] counts what a stream of trajectories holds in one pass with bounded memory
//! (fixed histograms, capped tables, a few clipped examples); [`html`] draws it as one
//! self-contained page with [`svg`] charts; [`view`] is a trajectory clipped for reading,
//! shared by the report's examples and `show`, which prints it as [`mod@show`] renders it.

pub mod examples;
pub mod histogram;
pub mod html;
pub mod outputs;
pub mod profile;
pub mod segments;
pub mod show;
pub mod stats;
pub mod svg;
pub mod view;

pub use profile::Profile;
