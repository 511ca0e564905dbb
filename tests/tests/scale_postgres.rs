//! What is particular to PostgreSQL as the store of several `oxmcp serve --store postgres://`
//! instances (the scale-out, kill, task and handler-state tests run on it too, beside
//! Redis): an outage and its end, a database unreachable at start, TLS with a private CA,
//! instances that migrate the schema at once, and expired rows deleted by the instances.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use oxmcp_tests::postgres::Postgres;
use oxmcp_tests::scale::{Instance, call, open_session, post, result_text, tool};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

/// The status an echo call on `sid` at `url` gets once it is not `skip` (trying every
/// 100 ms for at most `within`).
async fn status_once_not(url: &str, sid: &str, skip: u16, within: Duration) -> u16 {
    let t0 = Instant::now();
    let mut id = 100;
    loop {
        id += 1;
        let status = call(url, sid, V, &tool(id, "echo", json!({"message":"x"})))
            .await
            .0;
        if status != skip || t0.elapsed() > within {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// PostgreSQL stops: every instance answers 503 with Retry-After (a transient JSON-RPC
/// error), at once, and nothing panics; it comes back with its data: the instances recover
/// by themselves and the old session goes on (it was durable).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_503_everywhere_and_the_sessions_outlive_it() {
    let mut pg = Postgres::start().await;
    let all = [
        Instance::start(&pg, "a", &[]).await,
        Instance::start(&pg, "b", &[]).await,
    ];
    let sid = open_session(&all[0].url, V).await;
    assert_eq!(
        status_once_not(&all[1].url, &sid, 0, Duration::ZERO).await,
        200
    );
    pg.stop().await;
    for inst in &all {
        let t0 = Instant::now();
        let r = loop {
            let r = post(&inst.url, &sid, V, &tool(2, "echo", json!({"message":"x"})))
                .send()
                .await
                .unwrap();
            if r.status() != 200 || t0.elapsed() > Duration::from_secs(5) {
                break r;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(r.status(), 503, "{}", inst.name);
        assert!(r.headers().contains_key("retry-after"));
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], -32000, "{v}");
        assert_eq!(v["error"]["data"]["transient"], true, "{v}");
        assert!(t0.elapsed() < Duration::from_secs(8), "answered at once");
    }
    let r = oxmcp_tests::scale::initialize(&all[0].url, V).await;
    assert_eq!(r.status(), 503, "no session without the store");
    assert!(r.headers().get("mcp-session-id").is_none());
    pg.start_again().await;
    for inst in &all {
        let status = status_once_not(&inst.url, &sid, 503, Duration::from_secs(30)).await;
        assert_eq!(status, 200, "{} serves the old session again", inst.name);
    }
    // The bus is back too: sampling asked on b is answered on a.
    let r = post(
        &all[1].url,
        &sid,
        V,
        &tool(5, "sample", json!({"prompt":"p"})),
    )
    .send()
    .await
    .unwrap();
    let mut sse = oxmcp_tests::scale::SseReader::new(r);
    let ask = sse.next_message(10).await.unwrap().data.unwrap();
    let answer = oxmcp_tests::scale::sampled(&ask, "back");
    let mut delivered = false;
    for _ in 0..100 {
        if call(&all[0].url, &sid, V, &answer).await.0 == 202 {
            delivered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(delivered);
    let done = sse.next_message(20).await.unwrap().data.unwrap();
    assert_eq!(result_text(&done), "back", "{done}");
}

/// A database nobody answers at, or a wrong user: one line on stderr, no password, and a
/// non-zero exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_at_start_is_one_line() {
    let pg = Postgres::start().await;
    let nowhere = oxmcp_tests::scale::free_port();
    for bad in [
        format!("postgres://mcp:s3cret@127.0.0.1:{nowhere}/mcp"),
        format!("postgresql://nobody:s3cret@127.0.0.1:{}/postgres", pg.port),
    ] {
        let out = tokio::process::Command::new(oxmcp_tests::oxmcp())
            .args(["serve", "--listen", "127.0.0.1:0", "--store", &bad])
            .env("MCP_LOG", "off")
            .output()
            .await
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.contains("PostgreSQL"), "{err}");
        assert!(!err.contains("s3cret"), "no password shown: {err}");
    }
}

/// `sslmode=require` with a private CA (`--store-ca`): sessions cross instances over TLS;
/// without the CA the certificate is refused at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_postgres_with_a_private_ca() {
    let (_dir, cert, key, ca) = oxmcp_tests::tls::certificates();
    let pg = Postgres::start_with_tls(Some((&cert, &key))).await;
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=require",
        pg.port
    );
    let ca = ca.to_str().unwrap().to_owned();
    let a = Instance::start_url(&url, "a", &["--store-ca", &ca]).await;
    let b = Instance::start_url(&url, "b", &["--store-ca", &ca]).await;
    let sid = open_session(&a.url, V).await;
    let (status, m) = call(&b.url, &sid, V, &tool(1, "echo", json!({"message": "tls"}))).await;
    assert_eq!(status, 200);
    assert_eq!(result_text(&m[0]), "tls");
    let ssl: String = pg.psql("SELECT count(*) FROM pg_stat_ssl WHERE ssl");
    assert_ne!(ssl, "0", "the instances' connections use TLS");
    let out = tokio::process::Command::new(oxmcp_tests::oxmcp())
        .args(["serve", "--listen", "127.0.0.1:0", "--store", &url])
        .env("MCP_LOG", "off")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("certificate") || err.contains("Certificate"),
        "{err}"
    );
}

/// Three instances start at once on an empty database: the schema is made once (one
/// migration recorded, nobody fails). Sessions idle past their timeout, with their streams,
/// events and handler state, are deleted by the instances themselves: nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_migrate_together_and_leave_no_expired_rows() {
    let pg = Postgres::start().await;
    let idle = ["--session-idle-timeout", "2s", "--response-mode", "sse"];
    let (a, b, c) = tokio::join!(
        Instance::start(&pg, "a", &idle),
        Instance::start(&pg, "b", &idle),
        Instance::start(&pg, "c", &idle),
    );
    assert_eq!(pg.psql("SELECT count(*) FROM mcp.migrations"), "1");
    for (i, inst) in [&a, &b, &c].into_iter().enumerate() {
        let sid = open_session(&inst.url, V).await;
        let (status, _) = call(&inst.url, &sid, V, &tool(1, "cd", json!({"path": "docs"}))).await;
        assert_eq!(status, 200, "{i}");
        let (status, m) = call(&inst.url, &sid, V, &tool(2, "pwd", json!({}))).await;
        assert_eq!((status, result_text(&m[0])), (200, "/docs".to_owned()));
    }
    assert!(pg.count("sessions") >= 3);
    assert!(
        pg.count("events") > 0,
        "SSE answers are logged for resumption"
    );
    assert!(pg.count("state") >= 3);
    let t0 = Instant::now();
    let tables = [
        "sessions",
        "pending",
        "streams",
        "events",
        "state_scopes",
        "state",
    ];
    loop {
        let left: Vec<(&str, u64)> = tables.iter().map(|t| (*t, pg.count(t))).collect();
        if left.iter().all(|(_, n)| *n == 0) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "rows left 30 s after their sessions went idle: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The store itself, on a fresh database: four instances connecting at once all get the
/// schema and the same shared secret; a stream's writer and ids live as long as its session
/// (its events go after `stream_ttl`); writes and clears of one scope racing each other all
/// succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_under_races_and_expiry() {
    use oxmcp_server::{ScopedState, StateLimits, StateScope};
    use oxmcp_store::{AppendEvent, EventLog, SessionRecord, Store, StoreConfig, StreamInfo};
    use oxmcp_store_postgres::PostgresStore;
    let pg = Postgres::start().await;
    let config = StoreConfig::default().stream_ttl(Duration::from_millis(300));
    let url = pg.url();
    let stores = futures::future::join_all(
        ["a", "b", "c", "d"].map(|n| PostgresStore::connect(&url, n, config.clone())),
    )
    .await;
    let stores: Vec<PostgresStore> = stores.into_iter().map(Result::unwrap).collect();
    let secrets =
        futures::future::join_all(stores.iter().map(|s| s.shared_secret("request-state"))).await;
    let first = secrets[0].clone().unwrap();
    assert!(secrets.iter().all(|s| s.as_ref().unwrap() == &first));

    let s = &stores[0];
    let record = SessionRecord {
        version: V.into(),
        owner: None,
        init: "{}".into(),
        log_level: None,
        subscriptions: vec![],
        created_ms: 0,
    };
    s.create_session("s1", &record).await.unwrap();
    let info = StreamInfo {
        owner: "a".into(),
        ids: vec![json!(7)],
        batch: false,
    };
    s.append(AppendEvent {
        session: "s1",
        stream: "t1",
        seq: 1,
        data: "{}",
        last: false,
        info: Some(&info),
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    s.sweep().await.unwrap();
    assert!(
        s.replay("s1", "t1", 0).await.unwrap().is_empty(),
        "events expired"
    );
    assert_eq!(
        stores[1].stream_info("s1", "t1").await.unwrap(),
        Some(info),
        "who writes the stream is known while the session lives"
    );

    let limits = std::sync::Arc::new(StateLimits::default());
    let scope = StateScope::Principal("racer".into());
    let racing = (0..40).map(|i| {
        let state = ScopedState::new(
            std::sync::Arc::new(stores[i % 4].clone()),
            scope.clone(),
            limits.clone(),
        );
        async move {
            if i % 2 == 0 {
                state
                    .update("n", |n: Option<u64>| Some(n.unwrap_or(0) + 1))
                    .await
                    .map(|_| ())
            } else {
                state.clear().await
            }
        }
    });
    for r in futures::future::join_all(racing).await {
        r.unwrap();
    }
}

/// A task id holding a NUL (which PostgreSQL's text cannot hold) is an unknown task, not a
/// store failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_a_task_id_is_an_unknown_task() {
    let pg = Postgres::start().await;
    let a = Instance::start(&pg, "a", &[]).await;
    let sid = open_session(&a.url, V).await;
    let get = json!({"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x\u{0}y"}});
    let (status, m) = call(&a.url, &sid, V, &get).await;
    assert_eq!(status, 200, "{m:?}");
    let error = &m[0]["error"];
    assert_ne!(error["code"], -32603, "{m:?}");
    assert_ne!(error["code"], -32000, "{m:?}");
}
