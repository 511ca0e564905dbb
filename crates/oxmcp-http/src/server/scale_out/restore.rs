//! Finding a session on any instance: the one held here (if the store still has it), or one
//! restored from the store.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use oxmcp_jsonrpc::{Inbound, Message, RequestId};
use oxmcp_types::ProtocolVersion;

use super::{Shared, store_failed};
use crate::server::endpoint::Inner;
use crate::server::refusal::Refusal;
use crate::server::session::HttpSession;

/// Request-id blocks are 2^32 wide; block numbers wrap below 2^20 so that ids stay exact
/// in a JSON number (below 2^53).
const BLOCKS: u64 = 1 << 20;

/// The session `id` for `principal`, from this instance (if the store still has it) or
/// restored from the store.
pub(crate) async fn lookup(
    inner: &Arc<Inner>,
    shared: &Arc<Shared>,
    id: &str,
    principal: Option<&str>,
) -> Result<Arc<HttpSession>, Refusal> {
    let local = inner.sessions().get(id).cloned();
    match local {
        Some(s) if s.owner.as_deref() != principal => Err(Refusal::unknown_session()),
        Some(s) if leased(&s, shared) => Ok(s),
        Some(s) => match shared.op(shared.store.touch_session(id)).await {
            Ok(true) => {
                lease(&s, shared);
                Ok(s)
            }
            Ok(false) => {
                // Deleted on another instance (or expired in the store).
                inner.drop_local(id);
                Err(Refusal::unknown_session())
            }
            Err(e) => Err(store_failed(&e)),
        },
        None => restore(inner, shared, id, principal).await,
    }
}

/// A session's lease, packed in one word: the bus connection it was granted under (the
/// store's [`oxmcp_store::Store::bus_breaks`], its low 20 bits) and when it ends (the rest:
/// milliseconds of [`clock_ms`]). 0 is no lease.
const BREAK_BITS: u32 = 20;

/// Milliseconds since this process first asked (a monotonic clock), from 1.
fn clock_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(std::time::Instant::now);
    start.elapsed().as_millis() as u64 + 1
}

fn breaks(shared: &Shared) -> u64 {
    shared.store.bus_breaks() & ((1 << BREAK_BITS) - 1)
}

/// Whether this instance may serve `session` without asking the store whether it still
/// exists: it asked within [`oxmcp_store::StoreConfig::session_lease`], and the bus has
/// not broken since (while the bus works, a DELETE elsewhere reaches here as
/// [`oxmcp_store::BusEvent::SessionEnded`], which drops the session).
fn leased(session: &HttpSession, shared: &Shared) -> bool {
    let word = session.store_lease.load(Ordering::Acquire);
    word != 0 && word & ((1 << BREAK_BITS) - 1) == breaks(shared) && word >> BREAK_BITS > clock_ms()
}

/// Grants `session` a lease from now (the store has just said it exists), unless leases
/// are off (a zero [`oxmcp_store::StoreConfig::session_lease`]).
fn lease(session: &HttpSession, shared: &Shared) {
    let ms = shared.store.config().session_lease.as_millis() as u64;
    if ms == 0 {
        return;
    }
    let word = ((clock_ms() + ms) << BREAK_BITS) | breaks(shared);
    session.store_lease.store(word, Ordering::Release);
}

/// Starts serving a session another instance made: its engine gets the client's
/// `initialize`, `notifications/initialized`, log level and subscriptions again (their
/// answers go nowhere), and is then ready for the client's request.
async fn restore(
    inner: &Arc<Inner>,
    shared: &Arc<Shared>,
    id: &str,
    principal: Option<&str>,
) -> Result<Arc<HttpSession>, Refusal> {
    let lock = shared.restore_lock(id);
    let _one = lock.lock().await;
    if let Some(s) = inner.sessions().get(id).cloned() {
        return match s.owner.as_deref() == principal {
            true => Ok(s),
            false => Err(Refusal::unknown_session()),
        };
    }
    let record = match shared.op(shared.store.load_session(id)).await {
        Ok(Some(r)) if r.owner.as_deref() == principal => r,
        Ok(_) => return Err(Refusal::unknown_session()),
        Err(e) => return Err(store_failed(&e)),
    };
    // A request here is a use of the session like any other: its keys live on.
    if let Err(e) = shared.op(shared.store.touch_session(id)).await {
        return Err(store_failed(&e));
    }
    inner.session_room()?;
    let block = match shared.op(shared.store.next_block(id)).await {
        Ok(b) => b % BLOCKS,
        Err(e) => return Err(store_failed(&e)),
    };
    let init = match Message::decode_str(&record.init) {
        Ok(Message::Request(r)) if r.method == "initialize" => r,
        _ => {
            tracing::warn!(
                session = id,
                "stored session has no usable initialize; dropped"
            );
            return Err(Refusal::unknown_session());
        }
    };
    let params: serde_json::Value = init
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    let version = ProtocolVersion::parse(&record.version).unwrap_or(ProtocolVersion::LATEST_LEGACY);
    let first_id = ((block as i64) << 32) | 1;
    let session = inner.start_replica(id.to_owned(), version, record.owner.clone(), first_id);
    let own = |n: &str| RequestId::String(format!("oxmcp-store-{n}"));
    session.feed_own(own("init"), "initialize", params).await;
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    session.feed(Inbound::Frame(initialized.to_vec())).await;
    let mut applied = oxmcp_store::SessionRecord {
        log_level: None,
        subscriptions: Vec::new(),
        ..record.clone()
    };
    catch_up(&session, &mut applied, &record).await;
    // A change made elsewhere between the read and this instance holding the session went
    // by on the bus unseen here: read once more now that the bus reaches the session.
    match shared.op(shared.store.load_session(id)).await {
        Ok(Some(now)) => catch_up(&session, &mut applied, &now).await,
        Ok(None) => {
            inner.drop_local(id);
            return Err(Refusal::unknown_session());
        }
        Err(e) => tracing::debug!(session = id, "second read of a restored session: {e}"),
    }
    session.mark_initialized();
    lease(&session, shared);
    tracing::debug!(
        session = id,
        instance = shared.instance(),
        "session restored from the store"
    );
    Ok(session)
}

/// Makes the session's engine hold what `target` says (log level, subscriptions), given what
/// it holds now (`applied`, updated).
async fn catch_up(
    session: &Arc<HttpSession>,
    applied: &mut oxmcp_store::SessionRecord,
    target: &oxmcp_store::SessionRecord,
) {
    use oxmcp_store::StateChange;
    let mut changes = Vec::new();
    if let Some(level) = target
        .log_level
        .as_ref()
        .filter(|l| applied.log_level.as_ref() != Some(*l))
    {
        changes.push(StateChange::LogLevel(level.clone()));
    }
    for uri in &target.subscriptions {
        if !applied.subscriptions.contains(uri) {
            changes.push(StateChange::Subscribe(uri.clone()));
        }
    }
    for uri in &applied.subscriptions {
        if !target.subscriptions.contains(uri) {
            changes.push(StateChange::Unsubscribe(uri.clone()));
        }
    }
    for change in changes {
        let (method, params) = change.as_request();
        let n = RESTORED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = RequestId::String(format!("oxmcp-store-restore-{n}"));
        session.feed_own(id, method, params).await;
        change.apply(applied);
    }
}

/// Numbers the requests a restoration sends (unique in the process).
static RESTORED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
