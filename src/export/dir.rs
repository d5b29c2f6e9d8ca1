//! The output directory of an export: what it holds (finished and partial shards, manifests),
//! whether it may be written ([`ExportError::Exists`] unless `force`; [`ExportError::Damaged`]
//! when a kill left it half written), its preparation, and the steps that replace an earlier
//! export ([`Earlier::commit`]).
//!
//! Replacing an export so that a reader never sees a mix. `datasets.load_dataset(DIR)` reads
//! the files the dataset card's front matter names (`data/{split}-*`), or without a card every
//! `data/{split}-NNNNN-of-NNNNN.*`; hidden files and directories only where a pattern names
//! them, and a pattern with a wildcard that matches nothing is passed over. The old and new
//! shards have the same names, so the commit of an export ([`Earlier::commit`], then the
//! shards' renames, the manifest and the card) goes:
//! 1. the card names each old split's files both in `data/` and in `data/.trajkit-old/`;
//! 2. the old shards move into `data/.trajkit-old/` (the card reads the same files throughout);
//! 3. the card names only `data/.trajkit-old/` (the same files still);
//! 4. the old manifest goes, the new shards are renamed into `data/`, the new manifest is
//!    written, then the new card: from that one rename on, the reader reads the new export;
//! 5. `data/.trajkit-old/` is removed.
//!
//! With no earlier export, step 3's card names a file that does not exist, so that a reader
//! fails (rather than read part of the new shards) until the new card is written. The cards of
//! steps 1–3 say that the export is unfinished; the next export refuses such a directory as
//! damaged unless `force`, which finishes replacing it from where the kill left it.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::manifest::manifest_name;
use super::shard;
use crate::engine::output::{Commit, Prepare};
use crate::engine::partition::{state_dir, Partition};

/// Why an export could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The directory holds an earlier export and `force` is off.
    #[error(
        "{0} already holds an export (manifest.json or data files); pass --force to replace it"
    )]
    Exists(String),
    /// The directory holds an export that a kill interrupted, or whose files do not match its
    /// manifest, and `force` is off.
    #[error(
        "{dir} holds a damaged export: {why}; replace it with --force (in a pipeline, \
         `force = true` in its [[export]] table)"
    )]
    Damaged {
        /// The output directory.
        dir: String,
        /// What is wrong with it.
        why: String,
    },
    /// Creating or finishing the outputs failed.
    #[error("cannot write the export in {dir}: {source}")]
    Io {
        /// The output directory.
        dir: String,
        /// Why.
        source: io::Error,
    },
}

impl ExportError {
    /// True when the directory, not the machine, is the cause: it holds an export (or a
    /// damaged one) that `force` would replace (a usage error on the command line).
    pub fn is_usage(&self) -> bool {
        matches!(self, ExportError::Exists(_) | ExportError::Damaged { .. })
    }
}

/// The directory under `data/` where an earlier export's shards wait while a new export
/// replaces them (hidden: `load_dataset` reads it only where a card names it).
pub const SET_ASIDE: &str = ".trajkit-old";

/// The line of a card written while an export is unfinished, before the stage it is at.
const UNFINISHED: &str = "<!-- trajkit: unfinished export, ";

/// The path the card of an unfinished export with nothing earlier names: it does not exist,
/// so `load_dataset` fails naming it.
const NOTHING_YET: &str = "UNFINISHED-EXPORT-see-README.md";

/// What the card of an unfinished export reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unfinished {
    /// The earlier shards, in `data/` and set aside (steps 1–2).
    Both,
    /// The earlier shards, all set aside (step 3 onwards).
    SetAside,
    /// Nothing: there was no earlier export.
    Nothing,
}

impl Unfinished {
    const ALL: [Unfinished; 3] = [Unfinished::Both, Unfinished::SetAside, Unfinished::Nothing];

    fn name(self) -> &'static str {
        match self {
            Unfinished::Both => "earlier shards being set aside",
            Unfinished::SetAside => "earlier shards set aside",
            Unfinished::Nothing => "nothing earlier",
        }
    }

    /// The stage the card `text` was written at, if it is the card of an unfinished export.
    fn of_card(text: &str) -> Option<Unfinished> {
        let rest = &text[text.find(UNFINISHED)? + UNFINISHED.len()..];
        Unfinished::ALL
            .into_iter()
            .find(|u| rest.starts_with(u.name()))
    }

    /// The card written at this stage, for the earlier export's `splits`.
    fn card(self, splits: &BTreeSet<String>) -> String {
        let mut out = String::from("---\nconfigs:\n- config_name: default\n  data_files:\n");
        if self == Unfinished::Nothing {
            out.push_str(&format!("  - split: train\n    path: \"{NOTHING_YET}\"\n"));
        }
        for s in splits.iter().filter(|_| self != Unfinished::Nothing) {
            out.push_str(&format!("  - split: {s}\n    path:\n"));
            if self == Unfinished::Both {
                out.push_str(&format!("    - \"data/{s}-*\"\n"));
            }
            out.push_str(&format!("    - \"data/{SET_ASIDE}/{s}-*\"\n"));
        }
        out.push_str(&format!("---\n\n{UNFINISHED}{} -->\n\n", self.name()));
        out.push_str("# An unfinished export\n\nA trajkit export was writing this directory and has not finished. ");
        out.push_str(match self {
            Unfinished::Nothing => {
                "There was no dataset here before it: `datasets.load_dataset` fails on purpose \
                 (the file the front matter names does not exist) rather than read part of the \
                 new files."
            }
            _ => {
                "`datasets.load_dataset` reads the dataset that was here before it, whose files \
                 are set aside under `data/.trajkit-old/` while the new ones are put in place."
            }
        });
        out.push_str(
            " If no export is running, it was interrupted: run it again with `--force` (in a \
             pipeline, `force = true` in its `[[export]]` table) to replace this directory, or \
             `trajkit run --resume` to finish an interrupted run.\n",
        );
        out
    }
}

/// What an export replaces in its directory, and the first steps of its commit.
#[derive(Debug)]
pub struct Earlier {
    dir: PathBuf,
    what: Replaced,
}

#[derive(Debug)]
enum Replaced {
    /// A partition's own earlier shards, removed before its new ones are renamed in (its
    /// directory has no card until `merge-manifests`: see [`super::manifest::manifest_commit`]).
    Partition(Vec<PathBuf>),
    /// An export's shards that a reader reads now: `shown` in `data/`, `aside` already set aside
    /// by an interrupted export.
    Export {
        shown: Vec<PathBuf>,
        aside: Vec<PathBuf>,
    },
}

impl Earlier {
    /// The steps that set the earlier export aside (see the module's doc) and remove its
    /// manifest, and once the new shards, manifest and card are in place, remove it. The new
    /// export's renames and writes follow.
    pub fn commit(&self) -> Commit {
        let (shown, aside) = match &self.what {
            Replaced::Partition(shards) => {
                return Commit {
                    remove: shards.clone(),
                    ..Commit::default()
                }
            }
            Replaced::Export { shown, aside } => (shown, aside),
        };
        let held = self.dir.join("data").join(SET_ASIDE);
        let card = self.dir.join("README.md");
        let splits: BTreeSet<String> = shown
            .iter()
            .chain(aside)
            .filter_map(|p| split_of(p))
            .collect();
        let mut commit = Commit::default();
        let mut set_aside: Vec<PathBuf> = aside.clone();
        if !shown.is_empty() {
            commit
                .prepare
                .push(Prepare::Write(card.clone(), Unfinished::Both.card(&splits)));
            for p in shown {
                let to = held.join(p.file_name().unwrap_or_default());
                commit.prepare.push(Prepare::Rename(p.clone(), to.clone()));
                set_aside.push(to);
            }
        }
        let reads = if splits.is_empty() {
            Unfinished::Nothing
        } else {
            Unfinished::SetAside
        };
        commit
            .prepare
            .push(Prepare::Write(card, reads.card(&splits)));
        commit.remove.push(self.dir.join("manifest.json"));
        if !set_aside.is_empty() {
            commit.clean = set_aside;
            commit.clean.push(held);
        }
        commit
    }
}

/// The split of a shard file (its name up to the first `-`: split names have none).
fn split_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    name.split_once('-').map(|(s, _)| s.to_owned())
}

/// The shard files in `data` (finished and partial ones), sorted: all of them, or only
/// `partition`'s.
pub(super) fn earlier_shards(
    data: &Path,
    partition: Option<&Partition>,
) -> io::Result<Vec<PathBuf>> {
    if !data.is_dir() {
        return Ok(Vec::new());
    }
    let tag = partition.map(|p| format!("-{}-", p.tag()));
    let mut found = Vec::new();
    for entry in fs::read_dir(data)? {
        let path = entry?.path();
        if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            shard::is_shard_name(n) && tag.as_ref().is_none_or(|t| n.contains(t.as_str()))
        }) {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// True for a shard's partial name (`.{split}-{i}.partial`).
pub(super) fn is_partial(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "partial")
}

/// Checks that `dir` may be written (no earlier export unless `force`), creates `dir/data`,
/// and returns it with the earlier export to replace. A partition looks only at its own
/// shards and manifest (and at a merged `manifest.json`): the other partitions may be writing
/// to the same directory.
pub fn prepare_dir(
    dir: &Path,
    force: bool,
    partition: Option<&Partition>,
) -> Result<(PathBuf, Earlier), ExportError> {
    let io_err = |source: io::Error| ExportError::Io {
        dir: dir.display().to_string(),
        source,
    };
    let data = dir.join("data");
    let partial: Vec<PathBuf> = earlier_shards(&data, partition)
        .map_err(io_err)?
        .into_iter()
        .filter(|p| is_partial(p))
        .collect();
    // Partial files beside the journal of a killed `run` are what `--resume` goes on from:
    // kept unless `force`. Any other partial file was left by a killed command (the
    // directory's lock keeps out a running one): removed now, as this run writes partial
    // files of the same names.
    let interrupted = !partial.is_empty() && state_dir(dir, partition).exists();
    let earlier = earlier_export(dir, force, partition, interrupted)?;
    for p in &partial {
        fs::remove_file(p).map_err(io_err)?;
    }
    fs::create_dir_all(&data).map_err(io_err)?;
    Ok((data, earlier))
}

/// The earlier export in `dir` that an export of `partition` replaces, refused unless `force`
/// when there is one (or `interrupted`, the files of a killed run) or when it is damaged.
/// With `force`, what an interrupted export left that no reader reads is removed now (new
/// shards it renamed under a card that reads the set-aside ones, set-aside shards under the
/// new card), so that the commit goes on from what a reader reads. Partial files are left to
/// the caller.
pub(super) fn earlier_export(
    dir: &Path,
    force: bool,
    partition: Option<&Partition>,
    interrupted: bool,
) -> Result<Earlier, ExportError> {
    let io_err = |source: io::Error| ExportError::Io {
        dir: dir.display().to_string(),
        source,
    };
    let data = dir.join("data");
    let finished: Vec<PathBuf> = earlier_shards(&data, partition)
        .map_err(io_err)?
        .into_iter()
        .filter(|p| !is_partial(p))
        .collect();
    let manifest = dir.join(manifest_name(partition));
    let holds = !finished.is_empty() || dir.join("manifest.json").exists() || manifest.exists();
    if partition.is_some() {
        if !force && (interrupted || holds) {
            return Err(ExportError::Exists(dir.display().to_string()));
        }
        return Ok(Earlier {
            dir: dir.to_owned(),
            what: Replaced::Partition(finished),
        });
    }
    let card = fs::read_to_string(dir.join("README.md")).unwrap_or_default();
    let unfinished = Unfinished::of_card(&card);
    let held = data.join(SET_ASIDE);
    let aside = earlier_shards(&held, None).map_err(io_err)?;
    if !force {
        if !interrupted {
            if let Some(why) = damage(dir, unfinished, &finished) {
                return Err(ExportError::Damaged {
                    dir: dir.display().to_string(),
                    why,
                });
            }
        }
        if interrupted || holds {
            return Err(ExportError::Exists(dir.display().to_string()));
        }
    }
    let remove = |paths: &[PathBuf]| -> Result<(), ExportError> {
        for p in paths {
            fs::remove_file(p).map_err(io_err)?;
        }
        Ok(())
    };
    let (shown, aside) = match unfinished {
        None | Some(Unfinished::Nothing) => {
            remove(&aside)?;
            let _ = fs::remove_dir(&held);
            if unfinished.is_some() {
                remove(&finished)?;
                (Vec::new(), Vec::new())
            } else {
                (finished, Vec::new())
            }
        }
        Some(Unfinished::Both) => (finished, aside),
        Some(Unfinished::SetAside) => {
            remove(&finished)?;
            (Vec::new(), aside)
        }
    };
    Ok(Earlier {
        dir: dir.to_owned(),
        what: Replaced::Export { shown, aside },
    })
}

/// What is wrong with the unpartitioned export in `dir`, if anything: a card saying it is
/// unfinished, data files that do not match `manifest.json`, or data files
/// with no manifest (a kill while an export was committing, before exports set the earlier
/// one aside).
fn damage(dir: &Path, unfinished: Option<Unfinished>, finished: &[PathBuf]) -> Option<String> {
    match unfinished {
        Some(Unfinished::Nothing) => {
            return Some(
                "an export writing it was interrupted (its README.md says so); \
                 datasets.load_dataset refuses it"
                    .to_owned(),
            )
        }
        Some(_) => {
            return Some(format!(
                "an export replacing it was interrupted (its README.md says so); \
                 datasets.load_dataset still reads the earlier export, set aside under \
                 data/{SET_ASIDE}/"
            ))
        }
        None => {}
    }
    let names: BTreeSet<String> = finished
        .iter()
        .filter_map(|p| Some(format!("data/{}", p.file_name()?.to_str()?)))
        .collect();
    let text = match fs::read_to_string(dir.join("manifest.json")) {
        Ok(text) => text,
        Err(_) if names.is_empty() => return None,
        Err(_) => {
            let partitions = fs::read_dir(dir).ok()?.flatten().any(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with("manifest.part-"))
            });
            return (!partitions).then(|| {
                format!(
                    "it has data files ({}, ...) but no manifest.json, as an export killed while \
                     it was renaming its shards leaves it",
                    names.first().map_or("", String::as_str)
                )
            });
        }
    };
    #[derive(Deserialize)]
    struct Listed {
        files: Vec<ListedFile>,
    }
    #[derive(Deserialize)]
    struct ListedFile {
        path: String,
    }
    let listed: BTreeSet<String> = match serde_json::from_str::<Listed>(&text) {
        Ok(l) => l.files.into_iter().map(|f| f.path).collect(),
        Err(e) => return Some(format!("its manifest.json cannot be read ({e})")),
    };
    let missing: Vec<&String> = listed.difference(&names).collect();
    let unlisted: Vec<&String> = names.difference(&listed).collect();
    if missing.is_empty() && unlisted.is_empty() {
        return None;
    }
    let example = missing.first().or(unlisted.first());
    Some(format!(
        "its data files do not match its manifest.json ({} of the {} files it lists are \
         missing, {} data files are not in it{}), as an export killed while it was replacing \
         them leaves it",
        missing.len(),
        listed.len(),
        unlisted.len(),
        example.map_or(String::new(), |e| format!(": {e}")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each card of an unfinished export is known for what it is, and names the earlier
    /// splits where they are at its stage.
    #[test]
    fn the_cards_of_an_unfinished_export_say_so() {
        let splits: BTreeSet<String> = ["train", "validation"].map(String::from).into();
        for stage in Unfinished::ALL {
            let card = stage.card(&splits);
            assert_eq!(Unfinished::of_card(&card), Some(stage), "{card}");
            assert!(card.starts_with("---\nconfigs:\n"), "{card}");
            let in_data = card.contains("\"data/validation-*\"");
            let aside = card.contains("\"data/.trajkit-old/validation-*\"");
            match stage {
                Unfinished::Both => assert!(in_data && aside, "{card}"),
                Unfinished::SetAside => assert!(!in_data && aside, "{card}"),
                Unfinished::Nothing => {
                    assert!(!in_data && !aside && card.contains(NOTHING_YET), "{card}")
                }
            }
        }
        assert_eq!(
            Unfinished::of_card("---\nconfigs: []\n---\n# A dataset\n"),
            None
        );
    }

    /// Replacing shards sets them aside between two cards that read them, removes the
    /// manifest, and cleans up after; with nothing earlier, one card that reads nothing.
    #[test]
    fn the_commit_sets_the_earlier_shards_aside() {
        let dir = Path::new("out");
        let shard = dir.join("data/train-00000-of-00001.jsonl");
        let earlier = Earlier {
            dir: dir.to_owned(),
            what: Replaced::Export {
                shown: vec![shard.clone()],
                aside: Vec::new(),
            },
        };
        let c = earlier.commit();
        let held = dir.join("data/.trajkit-old/train-00000-of-00001.jsonl");
        assert!(matches!(&c.prepare[..], [
            Prepare::Write(a, _),
            Prepare::Rename(from, to),
            Prepare::Write(b, _),
        ] if *a == dir.join("README.md") && *from == shard && *to == held && a == b));
        assert_eq!(c.remove, [dir.join("manifest.json")]);
        assert_eq!(c.clean, [held, dir.join("data/.trajkit-old")]);
        let fresh = Earlier {
            dir: dir.to_owned(),
            what: Replaced::Export {
                shown: Vec::new(),
                aside: Vec::new(),
            },
        };
        let c = fresh.commit();
        assert!(matches!(&c.prepare[..], [Prepare::Write(_, card)] if card.contains(NOTHING_YET)));
        assert!(c.clean.is_empty());
    }
}
