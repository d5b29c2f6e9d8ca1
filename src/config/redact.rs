//! The `[redact]` table of a pipeline file: redaction inside `trajkit run`, after convert and
//! the joins, before every export (docs/pipeline.md, docs/redaction.md).

use serde::{Deserialize, Serialize};

use super::rule_file::rule_set;
use super::ConfigError;
use crate::redact::{Redactor, Scanner, HASH_KEY_ENV};

/// `[redact]`: its presence turns redaction on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct RedactConfig {
    /// The environment variable holding the key of the keyed hash in placeholders (`redact
    /// --hash-key`). A pipeline file holds no key: files are shared and committed. Default:
    /// TRAJKIT_REDACT_KEY, used when set; a variable named here must be set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub hash_key_env: Option<String>,
    /// Count private IPv4 addresses too (`redact --private-ips`).
    #[serde(default)]
    pub private_ips: bool,
    /// A rule file of the user's own (`redact --rules`; docs/redaction.md): rules added,
    /// built-in rules disabled, values and paths allowed. Relative to the pipeline file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub rules: Option<String>,
}

/// The redaction options on a command line (`trajkit redact`, `export --redact`): the
/// `[redact]` table's, with the key itself (`--hash-key`) where the table names the
/// environment variable that holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RedactFlags {
    /// Key of the keyed hash (HMAC-SHA256) added to placeholders, so that the same secret gets
    /// the same placeholder across a dataset (`<SECRET:github_token:7f3a91c2>`). Default: the
    /// TRAJKIT_REDACT_KEY environment variable; without either, placeholders carry no hash.
    #[cfg_attr(feature = "cli", arg(long, value_name = "KEY"))]
    pub hash_key: Option<String>,
    /// Count private IPv4 addresses (10/8, 172.16/12, 192.168/16, link-local, CGNAT) too.
    #[cfg_attr(feature = "cli", arg(long))]
    pub private_ips: bool,
    /// Add the rules of this TOML file to the built-in ones, disable built-in ones, allow
    /// values and JSON paths (docs/redaction.md#rules-of-your-own).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub rules: Option<String>,
}

impl RedactFlags {
    /// The redactor these flags make (the rule file read and checked).
    pub fn redactor(&self) -> Result<Redactor, ConfigError> {
        redactor(
            self.hash_key.as_deref(),
            self.rules.as_deref(),
            self.private_ips,
        )
    }
}

impl RedactConfig {
    /// The key of the keyed hash, read from the environment.
    pub fn hash_key(&self) -> Result<Option<String>, ConfigError> {
        match &self.hash_key_env {
            Some(name) => match std::env::var(name) {
                Ok(k) if !k.is_empty() => Ok(Some(k)),
                _ => Err(ConfigError::Invalid(format!(
                    "[redact] hash_key_env: the environment variable {name} is not set (or \
                     empty); set it to the key of the placeholders' hash"
                ))),
            },
            None => Ok(std::env::var(HASH_KEY_ENV).ok().filter(|k| !k.is_empty())),
        }
    }

    /// The redactor these options make (the rule file read and checked).
    pub fn redactor(&self) -> Result<Redactor, ConfigError> {
        let key = self.hash_key()?;
        redactor(key.as_deref(), self.rules.as_deref(), self.private_ips)
    }
}

/// The redactor of a hash key (`--hash-key`; without one, the TRAJKIT_REDACT_KEY environment
/// variable when set; an empty key is none), a rule file (`--rules`) and `--private-ips`:
/// `trajkit redact`'s, `export --redact`'s and the `[redact]` table's.
pub fn redactor(
    hash_key: Option<&str>,
    rules: Option<&str>,
    private_ips: bool,
) -> Result<Redactor, ConfigError> {
    let key = hash_key
        .map(str::to_owned)
        .or_else(|| std::env::var(HASH_KEY_ENV).ok())
        .filter(|k| !k.is_empty());
    let scanner = scanner(rules, private_ips)?;
    Ok(Redactor::new(key.as_deref().map(str::as_bytes), scanner))
}

/// The compiled rules: the built-in ones, with the rule file at `rules` when given.
pub fn scanner(rules: Option<&str>, private_ips: bool) -> Result<Scanner, ConfigError> {
    let set = rule_set(rules, private_ips)?;
    // A rule file's patterns were compiled when it was read; this only fails on limits.
    Scanner::new(set).map_err(|e| ConfigError::Invalid(format!("redaction rules: {e}")))
}
