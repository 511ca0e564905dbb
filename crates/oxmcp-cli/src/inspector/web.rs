//! The inspector's web app: the page (HTML, CSS and JavaScript built into the binary), and
//! the WebSocket it talks over. Every route is behind [`super::guard`].

use std::sync::Arc;

use axum::Router;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinSet;

use super::Inspector;
use super::guard::{Request, forbidden};
use super::ops;

const INDEX: &str = include_str!("assets/index.html");

/// The page's scripts and style, by path (the page loads the scripts in this order).
const ASSETS: [(&str, &str, &str); 5] = [
    ("/dom.js", JS, include_str!("assets/dom.js")),
    ("/forms.js", JS, include_str!("assets/forms.js")),
    ("/render.js", JS, include_str!("assets/render.js")),
    ("/app.js", JS, include_str!("assets/app.js")),
    (
        "/app.css",
        "text/css; charset=utf-8",
        include_str!("assets/app.css"),
    ),
];
const JS: &str = "text/javascript; charset=utf-8";

/// The largest message a page may send (a tool's arguments, an answer).
const MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// Operations of one page running at once.
const OPS_IN_FLIGHT: usize = 64;

/// The app's routes.
pub(crate) fn router(app: Arc<Inspector>) -> Router {
    let mut router = Router::new()
        .route("/", get(index))
        .route("/ws", get(socket));
    for (path, kind, body) in ASSETS {
        router = router.route(
            path,
            get(
                move |State(app): State<Arc<Inspector>>, headers: HeaderMap| async move {
                    asset(&app, &headers, kind, body)
                },
            ),
        );
    }
    router.fallback(not_found).with_state(app)
}

/// The headers of every answer: nothing cached, nothing framed, no referrer, only the
/// app's own scripts and connections.
fn secure(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self' data: blob:; media-src 'self' data: blob:; frame-ancestors 'none'; \
             base-uri 'none'; form-action 'none'",
        ),
    );
    r
}

/// Checks site and cookie: the 403 to answer, if the request is refused.
fn refusal(app: &Inspector, headers: &HeaderMap, kind: Request) -> Option<Response> {
    if let Err(why) = app.guard.check_site(headers, kind) {
        return Some(secure(forbidden(why.0).into_response()));
    }
    if !app.guard.has_cookie(headers) {
        return Some(secure(
            forbidden("open the address oxmcp inspect printed (with its token)").into_response(),
        ));
    }
    None
}

#[derive(serde::Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

async fn index(
    State(app): State<Arc<Inspector>>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    let kind = match q.token {
        Some(_) => Request::TokenLink,
        None => Request::Page,
    };
    if let Err(why) = app.guard.check_site(&headers, kind) {
        return secure(forbidden(why.0).into_response());
    }
    if let Some(token) = q.token {
        // The token for a cookie, once; then the address without it.
        let fresh = app.guard.redeem(&token);
        if !fresh && !app.guard.has_cookie(&headers) {
            return secure(
                forbidden("this token is wrong or was used already: start oxmcp inspect again")
                    .into_response(),
            );
        }
        // The first time: the cookie, and a page of our own that goes on to the app with the
        // page's key in the fragment (the browser keeps it and never sends it to a server).
        // Going on from a page of ours, not by a redirect, keeps the chain same-origin when
        // the browser came from elsewhere (a local file, a terminal), so the SameSite=Strict
        // cookie is sent.
        let mut r = match fresh {
            true => {
                let to = app.guard.page_location();
                let page = format!(
                    "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={to}\">\
                     <title>oxmcp inspect</title><a href=\"{to}\">oxmcp inspect</a>\n"
                );
                ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
            }
            false => (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response(),
        };
        if fresh {
            r.headers_mut()
                .insert(header::SET_COOKIE, app.guard.set_cookie());
        }
        return secure(r);
    }
    if let Some(r) = refusal(&app, &headers, Request::Page) {
        return r;
    }
    secure(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response())
}

fn asset(app: &Inspector, headers: &HeaderMap, kind: &'static str, body: &'static str) -> Response {
    if let Some(r) = refusal(app, headers, Request::Page) {
        return r;
    }
    secure(([(header::CONTENT_TYPE, kind)], body).into_response())
}

async fn not_found(State(app): State<Arc<Inspector>>, headers: HeaderMap) -> Response {
    if let Some(r) = refusal(&app, &headers, Request::Page) {
        return r;
    }
    secure((StatusCode::NOT_FOUND, "not found\n").into_response())
}

#[derive(serde::Deserialize)]
struct KeyQuery {
    key: Option<String>,
}

async fn socket(
    State(app): State<Arc<Inspector>>,
    Query(q): Query<KeyQuery>,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    // Refused before anything else is said about the request.
    if let Some(r) = refusal(&app, &headers, Request::Socket) {
        return r;
    }
    // The cookie goes to every port of 127.0.0.1 the browser visits; the page's key does not.
    if !q.key.is_some_and(|k| app.guard.is_page_key(&k)) {
        return secure(forbidden("the page's key is missing or wrong").into_response());
    }
    let ws = match ws {
        Ok(ws) => ws,
        Err(e) => return secure(e.into_response()),
    };
    ws.max_message_size(MAX_MESSAGE)
        .on_upgrade(move |socket| serve_page(app, socket))
}

/// One page: its operations in, their answers and every event out. When the page goes away,
/// its operations and tool calls stop.
async fn serve_page(app: Arc<Inspector>, socket: WebSocket) {
    let page = app.hub.next_number();
    let (mut sink, mut stream) = socket.split();
    let mut events = app.hub.subscribe();
    let (replies, mut answers) = mpsc::channel::<String>(OPS_IN_FLIGHT);
    let mut running = JoinSet::new();
    let connected = app.hub.client().await.is_some();
    let hello = json!({
        "ev": "hello", "page": page, "target": app.hub.target, "connected": connected,
        "error": app.hub.failure(), "roots": app.hub.roots(), "version": env!("CARGO_PKG_VERSION"),
    });
    let mut first = vec![Arc::<str>::from(hello.to_string())];
    first.extend(app.hub.history());
    for text in first {
        if sink
            .send(Message::Text(text.as_ref().into()))
            .await
            .is_err()
        {
            return;
        }
    }
    loop {
        let out: String = tokio::select! {
            e = events.recv() => match e {
                Ok(text) => text.as_ref().to_owned(),
                Err(broadcast::error::RecvError::Lagged(n)) => json!({"ev": "lagged", "missed": n}).to_string(),
                Err(broadcast::error::RecvError::Closed) => break,
            },
            Some(reply) = answers.recv() => reply,
            Some(_) = running.join_next(), if !running.is_empty() => continue,
            m = stream.next() => match m {
                Some(Ok(Message::Text(text))) => match start_op(&app, page, text.as_str(), &replies, &mut running) {
                    Some(refusal) => refusal,
                    None => continue,
                },
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => continue,
            },
        };
        if sink.send(Message::Text(out.into())).await.is_err() {
            break;
        }
    }
    running.abort_all();
    app.hub.calls.cancel_page(page);
}

/// Starts one operation of page `page`; its answer goes back on `replies`. What is refused at
/// once (not JSON, not an operation, too many at once) is the answer returned.
fn start_op(
    app: &Arc<Inspector>,
    page: u64,
    text: &str,
    replies: &mpsc::Sender<String>,
    running: &mut JoinSet<()>,
) -> Option<String> {
    let parsed: Result<Value, _> = serde_json::from_str(text);
    let id = parsed
        .as_ref()
        .ok()
        .and_then(|v| v.get("id"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let refuse = |why: String| Some(json!({"re": id, "error": {"message": why}}).to_string());
    let op = match parsed.map(serde_json::from_value::<ops::Op>) {
        Ok(Ok(op)) => op,
        Ok(Err(e)) => return refuse(format!("not an operation: {e}")),
        Err(e) => return refuse(format!("not JSON: {e}")),
    };
    if running.len() >= OPS_IN_FLIGHT {
        return refuse(format!("more than {OPS_IN_FLIGHT} operations at once"));
    }
    let (app, replies) = (app.clone(), replies.clone());
    running.spawn(async move {
        let reply = match ops::run(&app, page, id, op).await {
            Ok(ok) => json!({"re": id, "ok": ok}),
            Err(e) => json!({"re": id, "error": e.0}),
        };
        let _ = replies.send(reply.to_string()).await;
    });
    None
}
