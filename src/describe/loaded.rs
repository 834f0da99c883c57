//! The described dialects of this run (`--dialect FILE`, `dialects = [...]` in the
//! configuration): loaded once before any capture is read, their rules registered after the
//! catalog's, and kept for the whole run, as the bundled dialects are compiled in.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::Described;
use crate::proto::{Named, Rule, RuleInfo};

/// The most described dialects in one run.
pub const MAX_DIALECTS: usize = 16;

/// One loaded description, and the number of its first rule among all rules.
pub struct Loaded {
    pub described: Described,
    pub first_rule: Rule,
    /// Each enum's names as display filters read them (`== bydos`), by enum index.
    pub enum_names: Vec<&'static [Named]>,
}

static LOADED: OnceLock<Vec<Loaded>> = OnceLock::new();

/// Loads the descriptions at `paths` (in order) and registers their rules. Call once, before
/// any capture is read; the bundled dialects' ids may not be taken.
pub fn load(paths: &[PathBuf]) -> Result<(), String> {
    if paths.len() > MAX_DIALECTS {
        return Err(format!("at most {MAX_DIALECTS} dialect descriptions"));
    }
    let mut all: Vec<Described> = Vec::new();
    for path in paths {
        let d = Described::open(path)?;
        let id = &d.description.id;
        if ["rtype", "rt", "rtnp"].contains(&id.as_str())
            || all.iter().any(|o| &o.description.id == id)
        {
            return Err(format!(
                "{}: the dialect id `{id}` is taken",
                path.display()
            ));
        }
        all.push(d);
    }
    let mut infos = Vec::new();
    let mut firsts = Vec::new();
    for d in &all {
        firsts.push(infos.len());
        infos.extend(d.description.rules.iter().map(|r| RuleInfo {
            id: leak(&r.id),
            severity: r.severity,
            section: leak(
                &if d.description.document.is_empty() || r.section.is_empty() {
                    r.section.clone()
                } else {
                    format!("{} §{}", d.description.document, r.section)
                },
            ),
            summary: leak(&r.summary),
        }));
    }
    let base = if infos.is_empty() {
        None
    } else {
        Some(Rule::register(infos)?)
    };
    let loaded = all
        .into_iter()
        .zip(firsts)
        .map(|(described, first)| Loaded {
            enum_names: described
                .description
                .enums
                .iter()
                .map(|e| {
                    let named: Vec<Named> = e
                        .values
                        .iter()
                        .filter_map(|(v, name)| {
                            Some(Named {
                                value: u32::try_from(*v).ok()?,
                                name: leak(name),
                            })
                        })
                        .collect();
                    &*Box::leak(named.into_boxed_slice())
                })
                .collect(),
            described,
            first_rule: base.map_or(Rule::ALL[0], |b| Rule::from_index(b.index() + first)),
        })
        .collect();
    LOADED
        .set(loaded)
        .map_err(|_| "the dialect descriptions are loaded once".to_string())
}

/// Rule texts live as long as the run, as the catalog's do: loaded once, bounded by the
/// descriptions' size.
fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// The described dialects of this run (none unless [`load`] was called).
pub fn all() -> &'static [Loaded] {
    LOADED.get().map_or(&[], Vec::as_slice)
}

impl Loaded {
    /// The run's rule for the description's rule number `i`.
    pub fn rule(&self, i: usize) -> Rule {
        Rule::from_index(self.first_rule.index() + i)
    }
}
