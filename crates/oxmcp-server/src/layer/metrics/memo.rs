//! The memo of the [`super::MetricsLayer`]: the series a request of a given method, target
//! and outcome was recorded in, so that the next such request skips the label work (the
//! registry's look-up, the set of known names, the hash of every label of the family).
//!
//! Requests that name nothing find their series in a fixed array, and the first names of
//! each kind in a small table read without a lock (its cells are filled once and never
//! emptied); only the names past it take the read lock of a map.

use std::collections::HashMap;
use std::hash::BuildHasher as _;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

use super::{Durations, METHODS, OTHER, Operation};
use crate::layer::{Outcome, Target};

/// Names or URIs remembered per kind at most in the map, past those of the table: a
/// resource template's series is shared by many URIs, each remembered apart. Past it,
/// calls take the long way, as they did before.
const MAX_REMEMBERED: usize = 4 * super::MAX_NAMES;

/// Cells of the table read without a lock, per kind (16 bytes each).
const CELLS: usize = 128;

/// Cells a name may sit in, from the one its hash picks: past them it goes to the map.
const PROBES: usize = 8;

/// Series a name keeps in its cell: a target is named by few methods (a resource by
/// `resources/read`, `resources/subscribe`, `resources/unsubscribe` and
/// `completion/complete`), each with a result or a tool error.
const PER_NAME: usize = 4;

/// A series of the operation histogram, with its labels.
pub(super) struct Series {
    pub(super) histogram: Durations,
    pub(super) op: Operation,
}

impl Series {
    /// The tool, prompt or resource label, if the series has one.
    fn target_label(&self) -> Option<&str> {
        let op = &self.op;
        op.gen_ai_tool_name
            .as_deref()
            .or(op.gen_ai_prompt_name.as_deref())
            .or(op.mcp_resource_uri.as_deref())
    }
}

/// Which of a target's series: the method (its place in [`METHODS`]) and whether the
/// request ended with a result or with a tool error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    method: usize,
    tool_error: bool,
}

type Named = HashMap<Arc<str>, Vec<(Slot, Series)>, foldhash::fast::RandomState>;

/// A name's series in the table read without a lock.
struct Cell {
    name: Box<str>,
    kept: [OnceLock<(Slot, Series)>; PER_NAME],
}

impl Cell {
    fn find(&self, slot: Slot) -> Option<&Series> {
        self.kept
            .iter()
            .map_while(OnceLock::get)
            .find(|(s, _)| *s == slot)
            .map(|(_, series)| series)
    }
}

/// The first names of a kind, found without a lock: each cell is set once, under the map's
/// write lock, and never changed after (a name's series are added to its cell the same way).
struct Table {
    cells: [OnceLock<Box<Cell>>; CELLS],
}

impl Default for Table {
    fn default() -> Self {
        Self {
            cells: [const { OnceLock::new() }; CELLS],
        }
    }
}

impl Table {
    /// The cells `hash` may be in, in order.
    fn probe(&self, hash: u64) -> impl Iterator<Item = &OnceLock<Box<Cell>>> {
        // Truncation is fine: only the low bits pick the cell.
        let start = hash as usize;
        (0..PROBES).map(move |p| &self.cells[start.wrapping_add(p) % CELLS])
    }

    fn find(&self, hash: u64, name: &str, slot: Slot) -> Option<&Series> {
        for cell in self.probe(hash) {
            // An empty cell: the name was never put past it.
            let cell = cell.get()?;
            if *cell.name == *name {
                return cell.find(slot);
            }
        }
        None
    }

    /// Puts `series` in `name`'s cell, or in a new one; gives it back when neither has room.
    /// Callers hold the kind's write lock, so that two never fill one cell.
    fn put(&self, hash: u64, name: &str, slot: Slot, series: Series) -> Result<(), Series> {
        for cell in self.probe(hash) {
            let Some(found) = cell.get() else {
                let kept = [const { OnceLock::new() }; PER_NAME];
                let _ = kept[0].set((slot, series));
                let _ = cell.set(Box::new(Cell {
                    name: name.into(),
                    kept,
                }));
                return Ok(());
            };
            if *found.name == *name {
                if found.find(slot).is_some() {
                    return Ok(());
                }
                return match found.kept.iter().find(|k| k.get().is_none()) {
                    Some(free) => free.set((slot, series)).map_err(|(_, s)| s),
                    None => Err(series),
                };
            }
        }
        Err(series)
    }
}

/// The series of requests answered before. Only answers (results and tool errors) of MCP's
/// own methods are remembered, and only when their target has a series of its own: the
/// label of a name counted as `_other` may change once the registry has it, and a
/// JSON-RPC error's label depends on the registry at the time.
#[derive(Default)]
pub(super) struct Memo {
    /// Requests that named nothing: by method, then result or tool error.
    plain: [[OnceLock<Series>; 2]; METHODS.len()],
    /// Requests that named a target, by kind (tools, prompts, resources): the first names,
    /// read without a lock...
    fast: [Table; 3],
    /// ...and the others, by the name or URI as sent.
    named: [RwLock<Named>; 3],
    hasher: foldhash::fast::RandomState,
}

fn kind(target: &Target) -> usize {
    match target {
        Target::Tool(_) => 0,
        Target::Prompt(_) => 1,
        Target::Resource(_) => 2,
    }
}

impl Memo {
    /// Where a request of `method` ending with `outcome` is remembered (`None`: never).
    pub(super) fn slot(method: Option<usize>, outcome: Outcome) -> Option<Slot> {
        let tool_error = match outcome {
            Outcome::Ok => false,
            Outcome::ToolError => true,
            Outcome::Error(_) => return None,
        };
        Some(Slot {
            method: method?,
            tool_error,
        })
    }

    /// Gives `observe` the series remembered for `slot` and `target`; false if none is.
    pub(super) fn observe(
        &self,
        slot: Slot,
        target: Option<&Target>,
        observe: impl FnOnce(&Series),
    ) -> bool {
        let Some(target) = target else {
            let Some(series) = self.plain[slot.method][usize::from(slot.tool_error)].get() else {
                return false;
            };
            observe(series);
            return true;
        };
        let kind = kind(target);
        let hash = self.hasher.hash_one(target.name());
        if let Some(series) = self.fast[kind].find(hash, target.name(), slot) {
            observe(series);
            return true;
        }
        let named = self.named[kind].read();
        let found = named
            .get(target.name())
            .and_then(|kept| kept.iter().find(|(s, _)| *s == slot));
        match found {
            Some((_, series)) => {
                observe(series);
                true
            }
            None => false,
        }
    }

    /// Remembers `series` as that of `slot` and `target`, if it may be (see [`Memo`]).
    pub(super) fn keep(&self, slot: Slot, target: Option<&Target>, series: Series) {
        let Some(target) = target else {
            let _ = self.plain[slot.method][usize::from(slot.tool_error)].set(series);
            return;
        };
        if series.target_label().is_none_or(|label| label == OTHER) {
            return;
        }
        let kind = kind(target);
        let name = target.name();
        let mut named = self.named[kind].write();
        // A name in the map stays there, so that its series are found in one place.
        let series = if named.contains_key(name) {
            series
        } else {
            match self.fast[kind].put(self.hasher.hash_one(name), name, slot, series) {
                Ok(()) => return,
                Err(series) => series,
            }
        };
        if let Some(kept) = named.get_mut(name) {
            if !kept.iter().any(|(s, _)| *s == slot) {
                kept.push((slot, series));
            }
            return;
        }
        if named.len() < MAX_REMEMBERED {
            named.insert(Arc::from(name), vec![(slot, series)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn series(tool: Option<&str>) -> Series {
        Series {
            histogram: Durations::default(),
            op: Operation {
                mcp_method_name: Cow::Borrowed("tools/call"),
                gen_ai_tool_name: tool.map(Arc::from),
                gen_ai_prompt_name: None,
                mcp_resource_uri: None,
                error_type: Cow::Borrowed(""),
            },
        }
    }

    fn label(memo: &Memo, slot: Slot, target: Option<&Target>) -> Option<String> {
        let mut found = None;
        memo.observe(slot, target, |s| {
            found = Some(s.target_label().unwrap_or("-").to_owned());
        });
        found
    }

    #[test]
    fn only_answers_of_mcp_methods_have_a_slot() {
        assert!(Memo::slot(Some(0), Outcome::Error(-32602)).is_none());
        assert!(Memo::slot(None, Outcome::Ok).is_none());
        let ok = Memo::slot(Some(0), Outcome::Ok).unwrap();
        assert_ne!(Some(ok), Memo::slot(Some(0), Outcome::ToolError));
    }

    #[test]
    fn a_series_is_found_again_by_its_slot_and_target() {
        let memo = Memo::default();
        let ok = Memo::slot(Some(0), Outcome::Ok).unwrap();
        let failed = Memo::slot(Some(0), Outcome::ToolError).unwrap();
        let echo = Target::Tool("echo".into());
        assert_eq!(label(&memo, ok, Some(&echo)), None);
        memo.keep(ok, Some(&echo), series(Some("echo")));
        assert_eq!(label(&memo, ok, Some(&echo)).as_deref(), Some("echo"));
        assert_eq!(label(&memo, failed, Some(&echo)), None, "another outcome");
        let other = Target::Prompt("echo".into());
        assert_eq!(label(&memo, ok, Some(&other)), None, "another kind");
        memo.keep(ok, None, series(None));
        assert_eq!(label(&memo, ok, None).as_deref(), Some("-"));
    }

    #[test]
    fn names_without_a_series_and_names_past_the_bound_are_not_kept() {
        let memo = Memo::default();
        let ok = Memo::slot(Some(0), Outcome::Ok).unwrap();
        let stranger = Target::Tool("stranger".into());
        memo.keep(ok, Some(&stranger), series(Some(OTHER)));
        assert_eq!(label(&memo, ok, Some(&stranger)), None);
        let names = MAX_REMEMBERED + CELLS + 10;
        for n in 0..names {
            let t = Target::Tool(format!("t{n}"));
            memo.keep(ok, Some(&t), series(Some("t")));
        }
        let found = (0..names)
            .filter(|n| label(&memo, ok, Some(&Target::Tool(format!("t{n}")))).is_some())
            .count();
        assert!(found >= MAX_REMEMBERED, "{found}");
        assert!(found <= MAX_REMEMBERED + CELLS, "{found}");
        let first = Target::Tool("t0".into());
        assert_eq!(label(&memo, ok, Some(&first)).as_deref(), Some("t"));
    }

    #[test]
    fn a_name_keeps_its_series_in_its_cell_and_past_it_in_the_map() {
        let memo = Memo::default();
        let read = Target::Resource("demo://a".into());
        let slots: Vec<Slot> = (0..PER_NAME + 2)
            .map(|m| Memo::slot(Some(m), Outcome::Ok).unwrap())
            .collect();
        for (i, slot) in slots.iter().enumerate() {
            memo.keep(*slot, Some(&read), series(Some(format!("s{i}").as_str())));
        }
        for (i, slot) in slots.iter().enumerate() {
            assert_eq!(
                label(&memo, *slot, Some(&read)).as_deref(),
                Some(format!("s{i}").as_str())
            );
        }
        let hash = memo.hasher.hash_one("demo://a");
        assert!(memo.fast[2].find(hash, "demo://a", slots[0]).is_some());
        assert!(
            memo.fast[2]
                .find(hash, "demo://a", slots[PER_NAME])
                .is_none()
        );
        assert!(memo.named[2].read().contains_key("demo://a"));
        // Kept again: found once, not added twice.
        memo.keep(slots[0], Some(&read), series(Some("again")));
        assert_eq!(label(&memo, slots[0], Some(&read)).as_deref(), Some("s0"));
    }
}
