//! The memo of the [`super::MetricsLayer`]: the series a request of a given method, target
//! and outcome was recorded in, so that the next such request skips the label work (the
//! registry's look-up, the set of known names, the hash of every label of the family).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use prometheus_client::metrics::histogram::Histogram;

use super::{METHODS, OTHER, Operation};
use crate::layer::{Outcome, Target};

/// Names or URIs remembered per kind at most: a resource template's series is shared by
/// many URIs, each remembered apart. Past it, calls take the long way, as they did before.
const MAX_REMEMBERED: usize = 4 * super::MAX_NAMES;

/// A series of the operation histogram, with its labels.
pub(super) struct Series {
    pub(super) histogram: Histogram,
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

/// The series of requests answered before. Only answers (results and tool errors) of MCP's
/// own methods are remembered, and only when their target has a series of its own: the
/// label of a name counted as `_other` may change once the registry has it, and a
/// JSON-RPC error's label depends on the registry at the time.
#[derive(Default)]
pub(super) struct Memo {
    /// Requests that named nothing: by method, then result or tool error.
    plain: [[OnceLock<Series>; 2]; METHODS.len()],
    /// Requests that named a target: by kind (tools, prompts, resources), then the name or
    /// URI as sent.
    named: [RwLock<Named>; 3],
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
        let named = self.named[kind(target)].read();
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
        let mut named = self.named[kind(target)].write();
        if let Some(kept) = named.get_mut(target.name()) {
            if !kept.iter().any(|(s, _)| *s == slot) {
                kept.push((slot, series));
            }
            return;
        }
        if named.len() < MAX_REMEMBERED {
            named.insert(Arc::from(target.name()), vec![(slot, series)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn series(tool: Option<&str>) -> Series {
        Series {
            histogram: super::super::histogram(),
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
        for n in 0..MAX_REMEMBERED {
            let t = Target::Tool(format!("t{n}"));
            memo.keep(ok, Some(&t), series(Some("t")));
        }
        let last = Target::Tool("one-too-many".into());
        memo.keep(ok, Some(&last), series(Some("one-too-many")));
        assert_eq!(label(&memo, ok, Some(&last)), None);
        let first = Target::Tool("t0".into());
        assert_eq!(label(&memo, ok, Some(&first)).as_deref(), Some("t"));
    }
}
