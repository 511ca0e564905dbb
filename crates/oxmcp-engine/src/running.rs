//! Where a connection's requests run while its message loop goes on.
//!
//! On a multi-thread runtime each runs on a task of its own, so requests use every core. On
//! a current-thread runtime (`oxmcp serve`, and any server built on one) a task of its own
//! buys nothing, since everything runs on the one thread anyway, and costs its spawn, its
//! scheduling and its join: there they run inside the loop's own task, which polls them.

use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};

use futures::future::{AbortHandle as InlineAbort, Abortable, BoxFuture};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::task::{AbortHandle, JoinSet};

/// Stops one piece of running work.
pub(crate) enum Abort {
    Task(AbortHandle),
    Inline(InlineAbort),
}

impl Abort {
    /// Stops it: a task is dropped at its next await; work inside the loop the next time the
    /// loop polls its work.
    pub(crate) fn abort(&self) {
        match self {
            Self::Task(h) => h.abort(),
            Self::Inline(h) => h.abort(),
        }
    }

    /// Whether it is known to have finished (work inside the loop never says so).
    pub(crate) fn is_finished(&self) -> bool {
        match self {
            Self::Task(h) => h.is_finished(),
            Self::Inline(_) => false,
        }
    }
}

type Inline = FuturesUnordered<Abortable<BoxFuture<'static, ()>>>;

/// One connection's running work: its requests' handlers and its batches' answers.
pub(crate) struct Running {
    tasks: JoinSet<()>,
    /// On a current-thread runtime.
    one_thread: bool,
    /// The work polled by the loop, made with the first piece: a connection that has run
    /// none holds none.
    inline: Option<Inline>,
}

impl Running {
    /// For the runtime this is called on.
    pub(crate) fn new() -> Self {
        let one_thread =
            Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::CurrentThread);
        Self {
            tasks: JoinSet::new(),
            one_thread,
            inline: None,
        }
    }

    /// Starts `work`. A panic in it ends that work only, as a task's would.
    pub(crate) fn spawn<F>(&mut self, work: F) -> Abort
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if !self.one_thread {
            return Abort::Task(self.tasks.spawn(work));
        }
        let work = AssertUnwindSafe(work).catch_unwind().map(drop).boxed();
        let (work, handle) = futures::future::abortable(work);
        self.inline
            .get_or_insert_with(FuturesUnordered::new)
            .push(work);
        Abort::Inline(handle)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.inline.as_ref().is_none_or(FuturesUnordered::is_empty)
    }

    /// Stops all of it (work inside the loop is dropped here and now; a panic while it is
    /// dropped is contained, as a task's would be).
    pub(crate) fn abort_all(&mut self) {
        self.tasks.abort_all();
        if let Some(set) = self.inline.take() {
            let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(set)));
        }
    }

    /// Runs the work inside the loop, and waits until a piece of it finishes: `None` once
    /// nothing is left.
    pub(crate) async fn next(&mut self) -> Option<()> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        let mut pending = false;
        if let Some(set) = &mut self.inline {
            // A panic here (a piece's drop, once it is done or aborted) ends that piece only.
            let polled = std::panic::catch_unwind(AssertUnwindSafe(|| set.poll_next_unpin(cx)));
            match polled {
                Ok(Poll::Ready(Some(_))) | Err(_) => return Poll::Ready(Some(())),
                Ok(Poll::Ready(None)) => {}
                Ok(Poll::Pending) => pending = true,
            }
        }
        if !self.tasks.is_empty() {
            match self.tasks.poll_join_next(cx) {
                Poll::Ready(Some(_)) => return Poll::Ready(Some(())),
                Poll::Ready(None) => {}
                Poll::Pending => pending = true,
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(None)
        }
    }
}
