//! The engine: the streaming, parallel, order-preserving runner ([`pipeline`]), the shape of a
//! stage of a pass ([`stage`]), atomic and locked outputs ([`output`]), the rejects file
//! ([`rejects`]) and partitions ([`partition`]). It knows no format, stage or command: stages
//! implement [`stage::Stage`], and commands plug into the runner through [`pipeline::Sink`] and
//! the per-record function they give it.

pub mod output;
pub mod partition;
pub mod pipeline;
pub mod rejects;
pub mod stage;
