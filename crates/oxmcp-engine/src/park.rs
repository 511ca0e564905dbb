//! Parking a connection: its engine ends while the service keeps the session's state, and a
//! later connection of the same session takes that state up again. A transport parks a
//! session that sits idle, so that it holds no running engine (its channels, tasks and
//! in-flight tables) while nobody uses it.
//!
//! The slot is shared by the transport and each connection it starts for the session, one
//! after the other:
//!
//! 1. The service [`ParkSlot::offer`]s parking when it sets up a connection (and gets back
//!    the state a parked connection before it kept, if any). A service that never offers
//!    it is never parked.
//! 2. The transport [`ParkSlot::begin`]s parking, then closes the connection's input.
//! 3. When its connection ends, the service sees [`ParkSlot::parking`] and
//!    [`ParkSlot::keep`]s its state instead of ending it.
//! 4. The transport, once the connection's future is done, [`ParkSlot::settle`]s: parked
//!    if the state was kept, ended otherwise. Requests that came meanwhile
//!    [`ParkSlot::wait`] for that.
//! 5. The next connection the transport starts with the slot gets the state in step 1.
//!
//! State dropped while parked (the session expired or was deleted) is dropped like any
//! value: the service ends the session's state in its `Drop`.

use std::any::Any;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// A session's state kept by the service while no connection runs.
pub type ParkedState = Box<dyn Any + Send + Sync>;

#[derive(Default)]
enum Stage {
    /// The current connection (if any) cannot be parked.
    #[default]
    Unoffered,
    /// The current connection may be parked while no more than this many handles on its
    /// peer are alive beyond the engine's own.
    Offered(usize),
    /// Parking has begun: the connection's input is closed and it is ending.
    Parking,
    /// The connection ended and its service kept this; the transport has not settled yet.
    Kept(ParkedState),
    /// Parked: no connection runs, and this waits for the next one.
    Parked(ParkedState),
    /// Parking was begun and the connection ended without keeping anything: the session
    /// is over.
    Ended,
}

struct Inner {
    stage: Mutex<Stage>,
    settled: Notify,
}

/// Shared by a transport and the connections it starts for one session, to park it and
/// take it up again (see the module's documentation). Cheap to clone.
#[derive(Clone)]
pub struct ParkSlot(Arc<Inner>);

impl Default for ParkSlot {
    fn default() -> Self {
        Self(Arc::new(Inner {
            stage: Mutex::new(Stage::Unoffered),
            settled: Notify::new(),
        }))
    }
}

impl std::fmt::Debug for ParkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stage = match &*self.0.stage.lock() {
            Stage::Unoffered => "unoffered",
            Stage::Offered(_) => "offered",
            Stage::Parking => "parking",
            Stage::Kept(_) => "kept",
            Stage::Parked(_) => "parked",
            Stage::Ended => "ended",
        };
        f.debug_tuple("ParkSlot").field(&stage).finish()
    }
}

impl ParkSlot {
    /// A slot for a session's first connection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Service: the connection being set up may be parked, while the service itself keeps
    /// no more than `kept` handles on its peer beyond the one it gave the engine (more mean
    /// work still running that could send on it). Gives the state the parked connection
    /// before it kept, if there is one. A slot whose previous connection is still being
    /// parked, or is over, is left as it is (and offers nothing).
    pub fn offer(&self, kept: usize) -> Option<ParkedState> {
        let mut stage = self.0.stage.lock();
        match std::mem::take(&mut *stage) {
            Stage::Parked(state) => {
                *stage = Stage::Offered(kept);
                Some(state)
            }
            Stage::Unoffered | Stage::Offered(_) => {
                *stage = Stage::Offered(kept);
                None
            }
            busy @ (Stage::Parking | Stage::Kept(_) | Stage::Ended) => {
                *stage = busy;
                None
            }
        }
    }

    /// Transport: starts parking the current connection, if its service offered it and no
    /// more than the handles it declared are alive on its peer (`peer_handles`, the
    /// engine's own included: [`crate::Direct::peer_handles`]); then the transport closes
    /// the connection's input. False: it cannot be parked now.
    pub fn begin(&self, peer_handles: usize) -> bool {
        let mut stage = self.0.stage.lock();
        if matches!(*stage, Stage::Offered(kept) if peer_handles <= kept + 1) {
            *stage = Stage::Parking;
            true
        } else {
            false
        }
    }

    /// Service, as its connection ends: whether it is being parked (then it should
    /// [`ParkSlot::keep`] its session's state rather than end it).
    pub fn parking(&self) -> bool {
        matches!(*self.0.stage.lock(), Stage::Parking)
    }

    /// Service, as its parked connection ends: keeps `state` for the next connection. Given
    /// back (not kept) when the connection is not being parked.
    pub fn keep(&self, state: ParkedState) -> Result<(), ParkedState> {
        let mut stage = self.0.stage.lock();
        if matches!(*stage, Stage::Parking) {
            *stage = Stage::Kept(state);
            Ok(())
        } else {
            Err(state)
        }
    }

    /// Transport, once the connection's future is done: parked (true) if parking was begun
    /// and the service kept its state; otherwise the session is over (false, and what it
    /// kept, if anything, is dropped). Wakes every [`ParkSlot::wait`]er.
    pub fn settle(&self) -> bool {
        let ended = {
            let mut stage = self.0.stage.lock();
            match std::mem::replace(&mut *stage, Stage::Ended) {
                Stage::Kept(state) => {
                    *stage = Stage::Parked(state);
                    None
                }
                other => Some(other),
            }
        };
        self.0.settled.notify_waiters();
        // Dropped outside the lock: ending a session's state may run the service's code.
        ended.is_none()
    }

    /// Transport: waits until a connection being parked has settled; true if it was parked
    /// (its state ready for the next connection, which another caller may have started
    /// already), false if the session is over.
    pub async fn wait(&self) -> bool {
        loop {
            let settled = self.0.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            match &*self.0.stage.lock() {
                Stage::Parking | Stage::Kept(_) => {}
                Stage::Ended => return false,
                // Parked, or taken up since by the next connection (offered again).
                Stage::Parked(_) | Stage::Offered(_) | Stage::Unoffered => return true,
            }
            settled.await;
        }
    }

    /// Whether the session is parked: no connection runs, and its state waits for the next.
    pub fn is_parked(&self) -> bool {
        matches!(*self.0.stage.lock(), Stage::Parked(_))
    }

    /// Transport: the session is over. What a parked connection kept is dropped (which
    /// ends it), and no later connection takes anything up.
    pub fn end(&self) {
        let kept = std::mem::replace(&mut *self.0.stage.lock(), Stage::Ended);
        self.0.settled.notify_waiters();
        drop(kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_state_goes_to_the_next_connection() {
        let slot = ParkSlot::new();
        assert!(!slot.begin(1), "not offered: not parked");
        assert!(slot.offer(0).is_none());
        assert!(!slot.begin(2), "a handle beyond the engine's: still in use");
        assert!(slot.begin(1));
        assert!(slot.parking());
        assert!(slot.keep(Box::new(7u32)).is_ok());
        assert!(!slot.is_parked(), "not before the transport settles");
        assert!(slot.settle());
        assert!(slot.is_parked());
        let state = slot.offer(0).expect("the kept state");
        assert_eq!(state.downcast_ref::<u32>(), Some(&7));
        assert!(!slot.parking());
        assert!(slot.keep(Box::new(8u32)).is_err(), "not parking: not kept");
    }

    #[test]
    fn ending_unkept_or_parked_is_final() {
        let slot = ParkSlot::new();
        slot.offer(0);
        assert!(slot.begin(1));
        assert!(!slot.settle(), "nothing kept: over");
        assert!(slot.offer(0).is_none());
        assert!(!slot.begin(1), "an ended session stays ended");

        struct Ends(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Ends {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let slot = ParkSlot::new();
        slot.offer(0);
        slot.begin(1);
        assert!(slot.keep(Box::new(Ends(flag.clone()))).is_ok());
        assert!(slot.settle());
        slot.end();
        assert!(
            flag.load(std::sync::atomic::Ordering::SeqCst),
            "dropped: ended"
        );
        assert!(!slot.is_parked());
    }

    /// A slot being parked, whose kept state has settled while a waiter waited for it.
    async fn settled_with_a_waiter() -> (ParkSlot, tokio::task::JoinHandle<bool>) {
        let slot = ParkSlot::new();
        slot.offer(0);
        slot.begin(1);
        let waiter = tokio::spawn({
            let slot = slot.clone();
            async move { slot.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(slot.keep(Box::new(())).is_ok());
        assert!(slot.settle());
        (slot, waiter)
    }

    #[tokio::test]
    async fn waiters_learn_how_parking_settled() {
        let (slot, waiter) = settled_with_a_waiter().await;
        assert!(waiter.await.unwrap());
        assert!(slot.wait().await, "parked: no wait");
        slot.end();
        assert!(!slot.wait().await);
    }

    #[tokio::test]
    async fn a_waiter_is_not_told_the_session_is_over_when_the_next_connection_took_it_up() {
        let (slot, waiter) = settled_with_a_waiter().await;
        // Another request starts the next connection before the waiter runs again.
        assert!(slot.offer(0).is_some());
        assert!(
            waiter.await.unwrap(),
            "settled parked, then taken up: not over"
        );
    }
}
