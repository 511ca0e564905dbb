//! [`ServerBuilder::handler`]: a server answering from the user's [`ServerHandler`].

use std::sync::Arc;

use super::{BuildError, ServerBuilder};
use crate::dynamic::{Handler, ServerHandler, UserHandler};

impl ServerBuilder {
    /// Answers `tools/*`, `prompts/*`, `resources/*` and `completion/complete` from
    /// `handler`, which computes them per request (per caller, per tenant, from a database):
    /// see [`ServerHandler`]. The capabilities declared are the handler's
    /// ([`ServerHandler::capabilities`]), plus any `declare_*` made here.
    ///
    /// Everything else stays the builder's: settings, logging, instructions, custom methods
    /// and extensions, subscription hooks, and tasks (turned on with
    /// [`ServerBuilder::tasks`]: then the handler's tools whose definition allows tasks run as
    /// tasks when the client asks).
    ///
    /// A handler answers alone: registering tools, prompts, resources, templates or a
    /// completion provider on the same builder makes [`ServerBuilder::build`] fail with
    /// [`BuildError::HandlerAndRegistry`], rather than one silently hiding the other. To
    /// serve fixed items next to computed ones, build a [`crate::Server`] with them and
    /// delegate to it from the handler (it implements [`ServerHandler`]). A second call
    /// replaces the first handler.
    pub fn handler(mut self, handler: impl ServerHandler) -> Self {
        self.handler = Some(Arc::new(UserHandler::new(handler)));
        self
    }

    /// The user's handler for the server, if one was given; refused next to registered
    /// items.
    pub(super) fn take_handler(&mut self) -> Result<Option<Arc<dyn Handler>>, BuildError> {
        let Some(handler) = self.handler.take() else {
            return Ok(None);
        };
        let reg = &self.registry;
        let kind = if !reg.tools.is_empty() {
            Some("tool")
        } else if !reg.prompts.is_empty() {
            Some("prompt")
        } else if !reg.resources.is_empty() {
            Some("resource")
        } else if !reg.templates.is_empty() {
            Some("template")
        } else if self.completion.is_some() {
            Some("completion")
        } else {
            None
        };
        if let Some(kind) = kind {
            return Err(BuildError::HandlerAndRegistry { kind });
        }
        Ok(Some(handler))
    }
}
