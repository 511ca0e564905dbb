//! State a handler keeps between requests, per session or per user: [`ScopedState`], what
//! [`crate::Ctx::session_state`] and [`crate::Ctx::user_state`] give. The backend is any
//! [`StateStore`]: [`MemoryStateStore`] by default, or a shared store of `oxmcp-store`'s
//! (Redis, PostgreSQL) set as [`crate::ServerConfig::state_store`].

mod ctx;
mod scoped;

pub use oxmcp_store::state::{
    Expect, MemoryStateStore, Removed, StateError, StateLimits, StateScope, StateStore, Stored,
    Written,
};
pub use scoped::{ScopedState, Versioned};
