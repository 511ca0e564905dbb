//! The tool calls the pages have running, each under its page's number and the page's own id
//! for it: a page cancels only its own calls, and a page that goes away takes its calls with
//! it.

use std::collections::HashMap;

use parking_lot::Mutex;
use tokio::task::AbortHandle;

/// A call: which page, and that page's id for it.
pub(crate) type CallKey = (u64, u64);

struct Running {
    handle: AbortHandle,
    /// The server's task, when the call runs as one.
    task: Option<String>,
}

/// The running calls of every page.
#[derive(Default)]
pub(crate) struct Calls {
    running: Mutex<HashMap<CallKey, Running>>,
}

impl Calls {
    /// Keeps the handle of call `key` until it ends.
    pub(crate) fn start(&self, key: CallKey, handle: AbortHandle) {
        self.running
            .lock()
            .insert(key, Running { handle, task: None });
    }

    /// Notes that call `key` runs as the server's task `task`.
    pub(crate) fn set_task(&self, key: CallKey, task: &str) {
        if let Some(r) = self.running.lock().get_mut(&key) {
            r.task = Some(task.to_owned());
        }
    }

    pub(crate) fn end(&self, key: CallKey) {
        self.running.lock().remove(&key);
    }

    /// Stops call `key` (its request is then cancelled). `None` when it is not running;
    /// else the server's task it runs as, if any, for the caller to cancel too.
    pub(crate) fn cancel(&self, key: CallKey) -> Option<Option<String>> {
        let r = self.running.lock().remove(&key)?;
        r.handle.abort();
        Some(r.task)
    }

    /// Stops every call of page `page` (the page went away). The server's tasks they ran
    /// as go on: the Tasks panel of another page can still see and cancel them.
    pub(crate) fn cancel_page(&self, page: u64) {
        self.running.lock().retain(|(p, _), r| {
            if *p == page {
                r.handle.abort();
            }
            *p != page
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_page_cancels_its_own_calls_only() {
        let calls = Calls::default();
        let forever = || tokio::spawn(std::future::pending::<()>());
        let (a, b, c) = (forever(), forever(), forever());
        calls.start((1, 1), a.abort_handle());
        calls.start((2, 1), b.abort_handle());
        calls.start((2, 2), c.abort_handle());
        calls.set_task((2, 2), "t-1");
        assert_eq!(calls.cancel((1, 1)), Some(None));
        assert!(a.await.expect_err("aborted").is_cancelled());
        assert_eq!(calls.cancel((1, 1)), None, "once");
        assert!(!b.is_finished(), "page 2's call 1 runs on");
        assert_eq!(calls.cancel((2, 2)), Some(Some("t-1".to_owned())));
        calls.cancel_page(2);
        assert!(b.await.expect_err("aborted").is_cancelled());
        assert!(c.await.expect_err("aborted").is_cancelled());
        assert_eq!(calls.cancel((2, 1)), None);
    }
}
