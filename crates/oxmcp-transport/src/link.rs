//! What a connection opened besides its channels (a child process, an HTTP session), so
//! that whoever owns the connection closes it without knowing which transport it is.

use futures::future::BoxFuture;

/// How a child process ended when its connection was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited after its stdin was closed (or had exited already).
    Closed,
    /// It needed SIGTERM.
    Terminated,
    /// It needed SIGKILL.
    Killed,
}

/// The resources of one transport connection: closing it ends what the transport opened (a
/// child is shut down with stdin closed, SIGTERM, SIGKILL; an HTTP session is ended with
/// DELETE).
pub trait Link: Send + Sync + 'static {
    /// Ends what the connection opened. Returns how a child process ended; `None` for
    /// transports without one.
    fn close(self: Box<Self>) -> BoxFuture<'static, Option<Exit>>;

    /// The child's process id, for a child process.
    fn pid(&self) -> Option<u32> {
        None
    }
}

/// A boxed link is a link, so code choosing a transport at run time can hand any one on.
impl Link for Box<dyn Link> {
    fn close(self: Box<Self>) -> BoxFuture<'static, Option<Exit>> {
        let inner: Box<dyn Link> = *self;
        <dyn Link as Link>::close(inner)
    }

    fn pid(&self) -> Option<u32> {
        (**self).pid()
    }
}
