//! The engine: the streaming, parallel, order-preserving runner ([`pipeline`]), atomic and
//! locked outputs ([`output`]), the rejects file ([`rejects`]) and partitions ([`partition`]).
//! It knows no format, stage or command: stages plug in through [`pipeline::Sink`] and the
//! per-record function they give the runner.

pub mod output;
pub mod partition;
pub mod pipeline;
pub mod rejects;
pub mod stage;
