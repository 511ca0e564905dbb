//! The two scopes of handler state a request reaches through its [`Ctx`].

use crate::Ctx;

use super::{ScopedState, StateError, StateScope};

impl Ctx {
    /// This session's state: kept between the requests of one legacy session over
    /// Streamable HTTP (at every instance, with a shared store) or of one stdio, WebSocket
    /// or gRPC connection, and gone when the session ends.
    ///
    /// # Errors
    /// [`StateError::NoSession`] for a 2026-07-28 request over Streamable HTTP, which has no
    /// session (keep per-user state with [`Ctx::user_state`] instead).
    pub fn session_state(&self) -> Result<ScopedState, StateError> {
        let name = self.session.state_name().ok_or(StateError::NoSession)?;
        Ok(self.scoped(StateScope::Session(name.to_owned())))
    }

    /// The verified caller's state, in any protocol era: shared by all of that caller's
    /// sessions and requests, and kept until
    /// [`StateLimits::principal_ttl`](super::StateLimits::principal_ttl) after its last
    /// write.
    ///
    /// # Errors
    /// [`StateError::NoPrincipal`] when nobody verified the caller (a server without
    /// authentication, stdio).
    pub fn user_state(&self) -> Result<ScopedState, StateError> {
        let owner = self.owner().ok_or(StateError::NoPrincipal)?;
        Ok(self.scoped(StateScope::Principal(owner)))
    }

    fn scoped(&self, scope: StateScope) -> ScopedState {
        let state = &self.session.server.features.state;
        ScopedState::new(state.store.clone(), scope, state.limits.clone())
    }
}
