//! The engine connection of one 2026-07-28 request, kept on the POST's own task while the
//! request is answered there ([`oxmcp_engine::Direct`]), and put on a task of its own only
//! when it has to run on without the POST: the handler spoke before its response (the rest
//! streams as SSE), or the client went away (the engine must hear the cancellation and wind
//! down).

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::OwnedSemaphorePermit;

/// One request's engine connection ([`oxmcp_engine::Serve::serve_request`]'s future) and the
/// endpoint permits it counts against: they are released when the engine has finished, not
/// before (a handler cancelled because its client hung up may still be finishing).
pub(crate) struct OneRequest {
    serving: Option<BoxFuture<'static, ()>>,
    permits: Vec<OwnedSemaphorePermit>,
}

impl OneRequest {
    /// Takes the connection's future and polls it once: a service that offers a
    /// [`oxmcp_engine::Direct`] handle has set it up by then (`oxmcp_server::Server` when
    /// it made the future, a service that calls `oxmcp_engine::run_with` inside its own
    /// future at this first poll); the loop waits for input after.
    pub(crate) fn start(
        serving: BoxFuture<'static, ()>,
        permits: Vec<OwnedSemaphorePermit>,
    ) -> Self {
        let mut this = Self {
            serving: Some(serving),
            permits,
        };
        this.poll_once();
        this
    }

    /// Polls the connection once; it is gone (with the permits) once it has ended.
    fn poll_once(&mut self) {
        let Some(serving) = self.serving.as_mut() else {
            return;
        };
        if serving.now_or_never().is_some() {
            self.serving = None;
            self.permits.clear();
        }
    }

    /// The request was answered here and its input is closed: the connection winds down at
    /// once (nothing else is in flight), here, or on a task of its own if it has to wait.
    pub(crate) fn finish(mut self) {
        self.poll_once();
        self.detach();
    }

    /// Runs the connection on a task of its own from now on, holding the permits.
    pub(crate) fn detach(&mut self) {
        let Some(serving) = self.serving.take() else {
            return;
        };
        let permits = std::mem::take(&mut self.permits);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _permits = permits;
                serving.await;
            });
        }
    }
}

impl Drop for OneRequest {
    /// The POST went away while its request was answered here: the connection runs on, so
    /// that it hears the cancellation and the handler's end.
    fn drop(&mut self) {
        self.detach();
    }
}
