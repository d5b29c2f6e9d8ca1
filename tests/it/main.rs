//! The integration tests, linked into one binary (one link against the library instead of one
//! per file): a module per area, the shared helpers in `common`. Run one area with
//! `cargo test --release --test it AREA::`, e.g. `cargo test --release --test it mutants::`.
//!
//! Every test runs the `trajkit` binary or calls the library without touching process-wide
//! state (environment, current directory, signal handlers): test hooks such as
//! `TRAJKIT_TEST_ABORT_AFTER_RECORDS` go into the child command's environment only, so the
//! areas can share this process and its test threads. Keep it that way.
//!
//! Fixtures stay outside this folder: `tests/fixtures/` and `tests/interop/check.py`, found
//! from `CARGO_MANIFEST_DIR`.

mod common;
mod stores;

mod agent_logs;
mod aider;
mod anthropic;
mod atif;
mod bad_input;
mod chat_formats;
mod claude_code;
mod codex;
mod convert_cli;
mod copilot_cli;
mod corpus;
mod crush;
mod cursor;
mod detection;
mod droid;
mod entire;
mod export;
mod filter;
mod gemini_cli;
mod goose;
mod hermes;
mod inspect;
mod interop;
mod join;
mod kimi_cli;
mod layering;
mod ledgermind;
mod left_out;
mod letta_code;
mod mini_swe_agent;
mod mutants;
mod opencode;
mod parquet;
mod partition;
mod pi;
mod qwen_code;
mod ralph;
mod redact;
mod redact_rules;
mod report;
mod resume;
mod robust_frame;
mod robust_outputs;
mod run;
mod run_segments;
mod seed_formats;
mod segment;
mod specs;
mod swe_openhands;
mod token_counts;
mod training;
mod training_limits;
mod validate_cli;
