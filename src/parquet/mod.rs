//! trajkit's Parquet layout, written and read: one row per ADP 1.5.0 trajectory. The export
//! target writes shard files with it ([`crate::export::parquet`]); the `parquet` format reads
//! them back (`crate::formats::parquet`).
//!
//! - [`schema`]: the Arrow schema (documented in docs/export.md, "Parquet layout");
//! - [`row`]: a trajectory taken apart into the values of one row (done by the parallel
//!   workers, so writing the row only copies);
//! - [`columns`]: rows accumulated into Arrow arrays, a record batch at a time;
//! - [`decode`]: rows back into trajectories (`convert --from parquet`), the exact inverse of
//!   [`row`] for everything in `steps`, `details` and the top-level ADP fields.
//!
//! There are no Arrow union types: `steps` is a list of one struct with a `class` tag and a
//! nullable field for every class's fields. Free-form values (kwargs, JSON observation content,
//! annotations, details) are JSON text. The columns derived from `details` (`source_format`,
//! `outcome`, `reward`, `reward_components`, `reflections`) and the counts are conveniences for
//! queries: reading a file back uses `details`, so nothing depends on them.

pub mod columns;
pub mod decode;
pub mod row;
pub mod schema;

pub use row::Row;
