//! Explicit conversion of a trajectory from the version it was read in to the version written.
//!
//! Nothing here runs during validation: upgrading changes data (it adds link ids, re-labels
//! tool results, fills `available_code_languages`), so only `convert` and later stages do it.

use serde_json::Value;

use super::links::backfill_links;
use super::rules::{fit, Violation};
use super::trajectory::Trajectory;
use super::version::AdpVersion;

/// Which JSON-encoded string values in `details` to decode into JSON values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DetailsDecode {
    /// Leave every value as it is (the default).
    #[default]
    None,
    /// Decode the named keys.
    Keys(Vec<String>),
    /// Decode every key whose value is a string holding a JSON object or array.
    All,
}

/// Options of [`upgrade`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeOptions {
    /// The version to write.
    pub target: AdpVersion,
    /// Which `details` strings to decode.
    pub decode_details: DetailsDecode,
}

impl UpgradeOptions {
    /// True when upgrading with `self` a trajectory already upgraded (and checked) with
    /// `done` changes nothing and finds nothing: the same target and no `details` to decode
    /// ([`upgrade`] is then idempotent, and the rules look only at the steps and
    /// `available_code_languages`, which later stages leave alone).
    pub fn is_done_by(&self, done: &UpgradeOptions) -> bool {
        self == done && self.decode_details == DetailsDecode::None
    }
}

impl Default for UpgradeOptions {
    fn default() -> Self {
        UpgradeOptions {
            target: AdpVersion::LATEST,
            decode_details: DetailsDecode::None,
        }
    }
}

/// Converts `traj` in place to `opts.target`. Returns what cannot be represented in the target
/// version (empty on success); the caller rejects the record when it is not empty.
///
/// Upgrading to 1.3+ backfills tool-call links (see [`backfill_links`]); to 1.4+ fills
/// `available_code_languages` from the code actions when absent; to 1.5 renames
/// `available_apis` to `available_custom_tools` (and back when writing 1.1 to 1.4).
pub fn upgrade(traj: &mut Trajectory, opts: &UpgradeOptions) -> Vec<Violation> {
    let target = opts.target;
    decode_details(traj, &opts.decode_details);
    if target.has_available_custom_tools() && traj.available_custom_tools.is_none() {
        traj.available_custom_tools = traj.available_apis.take();
    }
    if target.has_available_apis() && traj.available_apis.is_none() {
        traj.available_apis = traj.available_custom_tools.take();
    }
    if target.has_tool_call_links() {
        backfill_links(&mut traj.content);
    }
    let used = traj.used_code_languages();
    if target.has_available_code_languages() {
        if traj.available_code_languages.is_none() {
            traj.available_code_languages = used;
        }
    } else if traj.available_code_languages == used {
        // Derived data: writing an older version drops it without loss.
        traj.available_code_languages = None;
    }
    if traj.schema_version.as_deref() != target.schema_version() {
        traj.schema_version = target.schema_version().map(str::to_owned);
    }
    fit(traj, target)
}

fn decode_details(traj: &mut Trajectory, which: &DetailsDecode) {
    let wanted = |k: &str| match which {
        DetailsDecode::None => false,
        DetailsDecode::All => true,
        DetailsDecode::Keys(keys) => keys.iter().any(|x| x == k),
    };
    for (k, v) in traj.details.iter_mut() {
        let Value::String(s) = v else { continue };
        if !wanted(k) || !matches!(s.trim_start().as_bytes().first(), Some(b'{' | b'[')) {
            continue;
        }
        if let Ok(decoded) = serde_json::from_str::<Value>(s) {
            *v = decoded;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn traj(v: Value) -> Trajectory {
        serde_json::from_value(v).expect("test trajectory")
    }

    #[test]
    fn an_upgrade_is_done_by_the_same_options_without_decoding() {
        let latest = UpgradeOptions::default();
        assert!(latest.is_done_by(&UpgradeOptions::default()));
        let older = UpgradeOptions {
            target: AdpVersion::V1_3,
            ..UpgradeOptions::default()
        };
        assert!(!older.is_done_by(&latest));
        assert!(!latest.is_done_by(&older));
        let decoding = UpgradeOptions {
            decode_details: DetailsDecode::All,
            ..UpgradeOptions::default()
        };
        assert!(!decoding.is_done_by(&decoding.clone()));
    }

    #[test]
    fn unversioned_to_latest_links_and_fills_languages() {
        let mut t = traj(json!({
            "id": "t1",
            "content": [
                {"class_": "text_observation", "content": "task", "name": null, "source": "user"},
                {"class_": "code_action", "language": "bash", "content": "ls", "description": null},
                {"class_": "text_observation", "content": "a b", "name": null, "source": "user"},
                {"class_": "message_action", "content": "done", "description": null}
            ],
            "details": {"tools": "[{\"name\": \"x\"}]", "note": "[not json"}
        }));
        let opts = UpgradeOptions {
            decode_details: DetailsDecode::Keys(vec!["tools".into(), "note".into()]),
            ..Default::default()
        };
        assert!(upgrade(&mut t, &opts).is_empty());
        let out = serde_json::to_value(&t).expect("serializes");
        assert_eq!(out["schema_version"], "1.5.0");
        assert_eq!(out["content"][1]["tool_call_id"], "call_000001");
        assert_eq!(out["content"][2]["tool_call_id"], "call_000001");
        assert_eq!(out["content"][2]["source"], "environment");
        assert_eq!(out["content"][0]["source"], "user");
        assert_eq!(out["available_code_languages"], json!(["bash"]));
        assert_eq!(out["details"]["tools"], json!([{"name": "x"}]));
        assert_eq!(out["details"]["note"], "[not json");
    }

    #[test]
    fn downgrade_refuses_what_does_not_fit() {
        let mut t = traj(json!({
            "schema_version": "1.5.0",
            "id": "t1",
            "content": [
                {"class_": "api_action", "function": "f", "kwargs": {}, "tool_call_id": "c1", "reward": 1.0},
                {"class_": "text_observation", "content": "r", "source": "environment", "tool_call_id": "c1"}
            ],
            "details": {"n": 3}
        }));
        let opts = UpgradeOptions {
            target: AdpVersion::Unversioned,
            ..Default::default()
        };
        let rules: Vec<String> = upgrade(&mut t, &opts)
            .into_iter()
            .map(|v| v.pointer)
            .collect();
        assert_eq!(
            rules,
            vec![
                "/details/n",
                "/content/0/tool_call_id",
                "/content/0/reward",
                "/content/1/tool_call_id"
            ]
        );
    }

    #[test]
    fn available_apis_is_renamed_for_1_5_and_back() {
        let mut t = traj(
            json!({"schema_version": "1.2.0", "id": "t", "content": [], "available_apis": ["f"]}),
        );
        assert!(upgrade(&mut t, &UpgradeOptions::default()).is_empty());
        assert_eq!(t.available_custom_tools, Some(vec!["f".to_owned()]));
        assert_eq!(t.available_apis, None);
        let back = UpgradeOptions {
            target: AdpVersion::V1_4,
            ..Default::default()
        };
        assert!(upgrade(&mut t, &back).is_empty());
        assert_eq!(t.available_apis, Some(vec!["f".to_owned()]));
    }
}
