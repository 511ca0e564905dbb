//! [`Register`]: things that add themselves to a [`ServerBuilder`] (what the attribute
//! macros generate), [`ServerBuilder::add`], and per-argument completers
//! ([`ServerBuilder::complete_argument`]) that the single `completion/complete` provider
//! dispatches on.
#![allow(clippy::field_reassign_with_default)] // protocol structs may become non_exhaustive

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{CompleteParams, CompleteResult, Completion, CompletionReference};

use crate::builder::{BuildError, ServerBuilder};
use crate::context::Ctx;
use crate::handler::CompletionFn;

/// Something that registers itself (tools, prompts, resources, completion) on a
/// [`ServerBuilder`]: what `#[server]` and the free-function `#[tool]`, `#[prompt]`,
/// `#[resource]` and `#[completion]` macros implement. Add it with [`ServerBuilder::add`].
pub trait Register {
    /// Adds what `self` holds to `builder` and returns it.
    fn register(self, builder: ServerBuilder) -> ServerBuilder;
}

/// Registration from a shared value: what `#[server]` implements for its type, so that both
/// the value and an `Arc` of it (one shared with other code) are [`Register`].
pub trait RegisterShared: Send + Sync + 'static {
    /// Adds what `this` holds to `builder`; its handlers keep clones of `this`.
    fn register_shared(self: Arc<Self>, builder: ServerBuilder) -> ServerBuilder;
}

impl<T: RegisterShared> Register for Arc<T> {
    fn register(self, builder: ServerBuilder) -> ServerBuilder {
        T::register_shared(self, builder)
    }
}

/// The whole tool arguments parsed into one struct `T` (its schema is the tool's input
/// schema): in a `#[tool]` function, a parameter of type `Args<T>` instead of one parameter
/// per argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Args<T>(pub T);

/// A completer of one argument: gets the text typed so far, answers candidates.
pub type ArgCompleterFn =
    Arc<dyn Fn(Ctx, String) -> BoxFuture<'static, Result<Vec<String>, ErrorObject>> + Send + Sync>;

/// Which argument a completer completes: a prompt's or a resource template's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CompletionTarget {
    /// An argument of the prompt with this name.
    Prompt(String),
    /// A variable of the resource template with this URI template.
    Resource(String),
}

impl CompletionTarget {
    fn of(reference: &CompletionReference) -> Self {
        match reference {
            CompletionReference::Prompt { name } => Self::Prompt(name.clone()),
            CompletionReference::Resource { uri } => Self::Resource(uri.clone()),
        }
    }
}

/// The per-argument completers of a builder.
#[derive(Default)]
pub(crate) struct Completers {
    table: BTreeMap<(CompletionTarget, String), ArgCompleterFn>,
    duplicate: Option<BuildError>,
}

/// The most values one completion answer holds (the specification's limit).
pub const MAX_COMPLETION_VALUES: usize = 100;

impl Completers {
    /// The provider for `build`: `explicit` (from [`ServerBuilder::completion`]) or the table,
    /// not both.
    pub(crate) fn into_provider(
        self,
        explicit: Option<CompletionFn>,
    ) -> Result<Option<CompletionFn>, BuildError> {
        if let Some(e) = self.duplicate {
            return Err(e);
        }
        if self.table.is_empty() {
            return Ok(explicit);
        }
        if explicit.is_some() {
            return Err(BuildError::Duplicate {
                kind: "completion provider",
                name: "completion/complete (a completion function and per-argument completers)"
                    .to_owned(),
            });
        }
        let table = Arc::new(self.table);
        Ok(Some(Arc::new(move |ctx, params: CompleteParams| {
            let key = (
                CompletionTarget::of(&params.reference),
                params.argument.name,
            );
            let found = table.get(&key).cloned();
            let typed = params.argument.value;
            Box::pin(async move {
                let values = match found {
                    Some(f) => f(ctx, typed.clone()).await?,
                    None => Vec::new(),
                };
                Ok(completion_result(&typed, values))
            })
        })))
    }
}

/// The answer for `values`: those starting with `typed` (ignoring ASCII case), at most
/// [`MAX_COMPLETION_VALUES`], with `total` and `hasMore`.
pub fn completion_result(typed: &str, values: Vec<String>) -> CompleteResult {
    let lower = typed.to_ascii_lowercase();
    let mut kept: Vec<String> = values
        .into_iter()
        .filter(|v| v.to_ascii_lowercase().starts_with(&lower))
        .collect();
    let total = kept.len();
    kept.truncate(MAX_COMPLETION_VALUES);
    let mut completion = Completion::default();
    completion.has_more = Some(total > kept.len());
    completion.total = Some(total as u64);
    completion.values = kept;
    let mut result = CompleteResult::default();
    result.completion = completion;
    result
}

impl ServerBuilder {
    /// Adds what `item` registers: a `#[server]` value, or a `#[tool]`, `#[prompt]`,
    /// `#[resource]` or `#[completion]` function.
    // A builder method, not arithmetic: `Server::builder(..).add(echo).add(greet)`.
    #[allow(clippy::should_implement_trait)]
    pub fn add(self, item: impl Register) -> Self {
        item.register(self)
    }

    /// Completes the argument `argument` of `target` with `f`, which gets the text typed so
    /// far and returns candidates; those not starting with it (ignoring ASCII case) are
    /// dropped and at most 100 are sent, with `total` and `hasMore`. Several completers
    /// make up the one `completion/complete` provider, so this and
    /// [`ServerBuilder::completion`] exclude each other (a build error). An argument
    /// without a completer gets no values.
    pub fn complete_argument<F, Fut>(
        mut self,
        target: CompletionTarget,
        argument: &str,
        f: F,
    ) -> Self
    where
        F: Fn(Ctx, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorObject>> + Send + 'static,
    {
        let handler: ArgCompleterFn = Arc::new(move |ctx, typed| Box::pin(f(ctx, typed)));
        let key = (target, argument.to_owned());
        let completers = &mut self.completers;
        if completers.table.insert(key.clone(), handler).is_some() {
            completers.duplicate.get_or_insert(BuildError::Duplicate {
                kind: "completer",
                name: format!("{:?} argument {}", key.0, key.1),
            });
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_filtered_and_capped() {
        let values: Vec<String> = (0..150).map(|i| format!("a{i}")).collect();
        let r = completion_result("A", values);
        assert_eq!(r.completion.values.len(), 100);
        assert_eq!(r.completion.total, Some(150));
        assert_eq!(r.completion.has_more, Some(true));
        let r = completion_result("b", vec!["ab".into(), "Bc".into()]);
        assert_eq!(r.completion.values, vec!["Bc".to_owned()]);
        assert_eq!(r.completion.has_more, Some(false));
    }
}
