//! Resource subscriptions through the gateway: only to what the upstream lists, bounded per
//! client and per principal, held upstream exactly as long as some client holds them, and one
//! client's (or principal's) flood does not cost another its updates or its subscriptions.

use super::*;

/// A gateway over one HTTP upstream (`remote`, the demo, handshake era), and a client of that
/// upstream to ask it how many subscriptions it holds.
async fn gateway_and_upstream(
    tag: &str,
) -> (
    std::path::PathBuf,
    Vec<tokio::process::Child>,
    String,
    Client,
) {
    gateway_and_upstream_with(tag, &[]).await
}

/// [`gateway_and_upstream`] with more arguments of the gateway.
async fn gateway_and_upstream_with(
    tag: &str,
    more: &[&str],
) -> (
    std::path::PathBuf,
    Vec<tokio::process::Child>,
    String,
    Client,
) {
    let (upstream, upstream_url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let (dir, config) = config_file(
        tag,
        &format!(
            r#"heartbeat_ms = 1000

[[upstream]]
name = "remote"
url = "{upstream_url}"
era = "legacy"
"#
        ),
    );
    let mut args = vec![
        "--config",
        config.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ];
    args.extend(more);
    let (gateway, url) = oxmcp_tests::serve_http(&args).await;
    let direct = client(&upstream_url, EraChoice::Legacy).await;
    (dir, vec![upstream, gateway], url, direct)
}

/// A gateway client that keeps its HTTP handle (to end the session with DELETE).
async fn closable(url: &str) -> (Client, oxmcp_http::HttpClientHandle) {
    connect(url, ClientHandlers::new(), EraChoice::Legacy).await
}

/// Waits until the upstream's clients hold `want` subscriptions.
async fn upstream_holds(direct: &Client, want: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = direct
            .call_tool("subscriptions", JsonObject::new())
            .await
            .unwrap();
        let held: usize = r.content[0].as_text().unwrap().parse().unwrap();
        if held == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream holds {held} subscriptions, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_are_released_upstream_when_their_clients_are_gone() {
    let (dir, _procs, url, direct) = gateway_and_upstream("mcp-gateway-subs").await;
    let (a, a_http) = closable(&url).await;
    let (b, b_http) = closable(&url).await;
    let uri = |i: usize| format!("gateway://remote/demo://greeting/many-{i}");
    for i in 0..60 {
        a.subscribe(&uri(i)).await.unwrap();
    }
    // B shares ten of them: the upstream holds each once.
    for i in 50..70 {
        b.subscribe(&uri(i)).await.unwrap();
    }
    upstream_holds(&direct, 70).await;
    // Unsubscribed by A: gone upstream unless B holds it too.
    for i in 40..55 {
        a.unsubscribe(&uri(i)).await.unwrap();
    }
    upstream_holds(&direct, 60).await;
    // A's session ends: what only A held goes; what B holds stays.
    a_http.close().await;
    upstream_holds(&direct, 20).await;
    b_http.close().await;
    upstream_holds(&direct, 0).await;
    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clients_flood_does_not_cost_another_its_updates() {
    let (dir, _procs, url, direct) = gateway_and_upstream("mcp-gateway-flood").await;
    let (flood, _flood_http) = closable(&url).await;
    // Subscribes until refused (or a thousand, the upstream's own limit per session).
    let mut accepted = 0;
    let mut refusal = None;
    for i in 0..1000 {
        match flood
            .subscribe(&format!("gateway://remote/demo://greeting/flood-{i}"))
            .await
        {
            Ok(()) => accepted += 1,
            Err(e) => {
                refusal = Some(e);
                break;
            }
        }
    }
    upstream_holds(&direct, accepted).await;
    // Another client still gets its updates.
    let (b, events) = answering_client(&url, EraChoice::Legacy).await;
    b.subscribe("gateway://remote/demo://readme").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        b.call_tool("remote__touch", args(json!({"uri": "demo://readme"})))
            .await
            .unwrap();
        let updated = events.lock().unwrap().iter().any(|e| {
            matches!(e, ServerEvent::ResourceUpdated(u) if u == "gateway://remote/demo://readme")
        });
        if updated {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no resources/updated for the second client after {accepted} subscriptions of the first"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The flood was cut off at the gateway's limit per client, with a clear error.
    assert_eq!(accepted, 100, "subscriptions one client may hold");
    let refusal = refusal.expect("the 101st subscription is refused");
    assert_eq!(refusal.rpc().map(|e| e.code.0), Some(-32602), "{refusal}");
    upstream_holds(&direct, 101).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The code of a refused subscription.
fn refused(r: Result<(), oxmcp_client::CallError>) -> Option<i32> {
    r.err().and_then(|e| e.rpc().map(|e| e.code.0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_what_the_upstream_lists_is_subscribed_to() {
    let (dir, _procs, url, direct) = gateway_and_upstream("mcp-gateway-junk").await;
    let c = client(&url, EraChoice::Legacy).await;
    // Not listed, matching no listed template, no such upstream, not a gateway URI.
    for junk in [
        "gateway://remote/demo://junk/1",
        "gateway://remote/file:///etc/passwd",
        "gateway://nobody/demo://readme",
        "demo://readme",
    ] {
        assert_eq!(refused(c.subscribe(junk).await), Some(-32602), "{junk}");
    }
    // A listed resource, and a URI of a listed template.
    c.subscribe("gateway://remote/demo://readme").await.unwrap();
    c.subscribe("gateway://remote/demo://greeting/Ada")
        .await
        .unwrap();
    upstream_holds(&direct, 2).await;
    // What was refused never reached the upstream.
    tokio::time::sleep(Duration::from_millis(300)).await;
    upstream_holds(&direct, 2).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A gateway client authenticated by `token`.
async fn client_of(url: &str, token: &str) -> Client {
    let headers = vec![("authorization".to_owned(), format!("Bearer {token}"))];
    let t = oxmcp_http::client::connect(url, HttpClientConfig::default().headers(headers)).unwrap();
    let config = ClientConfig::default().era(EraChoice::Legacy);
    Client::connect(t.incoming, t.outgoing, ClientHandlers::new(), config)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_principal_filling_its_share_does_not_block_another() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), "mallory-token mallory\nalice-token alice\n").unwrap();
    let (dir, _procs, url, direct) = gateway_and_upstream_with(
        "mcp-gateway-share",
        &["--auth-token-file", tokens.path().to_str().unwrap()],
    )
    .await;
    // Mallory opens eleven sessions and subscribes to a hundred listed URIs in each, as
    // far as she is let.
    let mut accepted = 0;
    let mut refusal = None;
    let mut sessions = Vec::new();
    for s in 0..11 {
        let c = client_of(&url, "mallory-token").await;
        for i in 0..100 {
            match c
                .subscribe(&format!("gateway://remote/demo://greeting/m{s}-{i}"))
                .await
            {
                Ok(()) => accepted += 1,
                Err(e) => {
                    refusal = Some(e);
                    break;
                }
            }
        }
        sessions.push(c);
    }
    // Alice still subscribes.
    let alice = client_of(&url, "alice-token").await;
    alice
        .subscribe("gateway://remote/demo://readme")
        .await
        .expect("another principal's subscription is accepted");
    // Mallory was cut off at her share, with a clear error.
    assert_eq!(
        accepted, 250,
        "subscriptions one principal may hold per upstream"
    );
    let refusal = refusal.expect("Mallory's 251st subscription is refused");
    assert_eq!(refusal.rpc().map(|e| e.code.0), Some(-32602), "{refusal}");
    upstream_holds(&direct, 251).await;
    let _ = std::fs::remove_dir_all(&dir);
}
