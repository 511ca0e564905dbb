//! Extensions (SEP-2133) over Streamable HTTP in both eras: the server's declared
//! `extensions` capability, custom methods on the server (typed params, their errors), the
//! client's declared extensions as the server sees them, and a server-to-client custom
//! request answered by the client's handler.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice};
use oxmcp::jsonrpc::ErrorObject;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{BuildError, Ctx, Server};
use serde_json::{Value, json};
use tokio::net::TcpListener;

const EXT: &str = "com.example/reindex";

#[derive(serde::Deserialize)]
struct Reindex {
    index: String,
}

fn server() -> Server {
    let mut settings = oxmcp::types::JsonObject::new();
    settings.insert("maxIndexes".into(), json!(3));
    Server::builder("ext-test", "1")
        .extension(EXT, settings)
        .method("acme/reindex", |ctx: Ctx, p: Reindex| async move {
            Ok::<_, ErrorObject>(json!({
                "reindexed": p.index,
                "clientDeclares": ctx.client_supports_extension(EXT),
            }))
        })
        .method("acme/ask", |ctx: Ctx, _p: Value| async move {
            // A legacy session can ask the client a custom question of its own.
            let answer = ctx
                .peer()
                .request_raw(
                    "acme/question",
                    json!({"q": "colour?"}),
                    &Default::default(),
                )
                .await
                .map_err(|e| ErrorObject::internal(e.to_string()))?;
            let v: Value = serde_json::from_str(answer.get()).unwrap();
            Ok::<_, ErrorObject>(json!({ "heard": v }))
        })
        .build()
        .unwrap()
}

async fn serve() -> String {
    let http = oxmcp::http::StreamableHttp::new(server(), oxmcp::http::HttpConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    format!("http://{addr}/mcp")
}

fn remote(era: EraChoice, declare: bool) -> Remote {
    let mut handlers = ClientHandlers::new().method("acme/question", |p| async move {
        Ok(json!({ "answer": "blue", "asked": p }))
    });
    if declare {
        handlers = handlers.extension(EXT, Default::default());
    }
    Remote::default()
        .handlers(handlers)
        .client(ClientConfig::default().era(era))
}

#[tokio::test]
async fn custom_methods_and_declared_extensions_in_both_eras() {
    let url = serve().await;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = connect(&url, remote(era, true)).await.unwrap();
        let ext = client.server_capabilities().extensions.clone().unwrap();
        assert_eq!(ext[EXT]["maxIndexes"], json!(3), "{era:?}");

        let r = client
            .request("acme/reindex", json!({"index": "books"}))
            .await
            .unwrap();
        assert_eq!(r["reindexed"], "books", "{era:?}");
        assert_eq!(r["clientDeclares"], true, "{era:?}: {r}");

        // Params that do not fit: -32602, the connection goes on.
        let e = client
            .request("acme/reindex", json!({"index": 7}))
            .await
            .unwrap_err();
        assert_eq!(rpc_code(&e), Some(-32602), "{era:?}: {e}");
        let e = client.request("acme/nothing", json!({})).await.unwrap_err();
        assert_eq!(rpc_code(&e), Some(-32601), "{era:?}: {e}");
        client.close().await;

        let plain = connect(&url, remote(era, false)).await.unwrap();
        let r = plain
            .request("acme/reindex", json!({"index": "a"}))
            .await
            .unwrap();
        assert_eq!(r["clientDeclares"], false, "{era:?}: {r}");
        plain.close().await;
    }
}

#[tokio::test]
async fn a_server_asks_the_client_a_custom_request() {
    let url = serve().await;
    let client = connect(&url, remote(EraChoice::Legacy, false))
        .await
        .unwrap();
    let r = client.request("acme/ask", json!({})).await.unwrap();
    assert_eq!(r["heard"]["answer"], "blue", "{r}");
    assert_eq!(r["heard"]["asked"]["q"], "colour?", "{r}");
    client.close().await;
}

#[test]
fn specification_method_names_are_refused() {
    let err = Server::builder("x", "1")
        .method("tools/call", |_c: Ctx, _p: Value| async move {
            Ok::<_, ErrorObject>(json!({}))
        })
        .build()
        .unwrap_err();
    assert!(matches!(err, BuildError::MethodName { .. }), "{err}");
    let err = Server::builder("x", "1")
        .method("a/b", |_c: Ctx, _p: Value| async move {
            Ok::<_, ErrorObject>(json!({}))
        })
        .method("a/b", |_c: Ctx, _p: Value| async move {
            Ok::<_, ErrorObject>(json!({}))
        })
        .build()
        .unwrap_err();
    assert!(matches!(err, BuildError::Duplicate { .. }), "{err}");
}

fn rpc_code(e: &oxmcp::client::CallError) -> Option<i64> {
    match e {
        oxmcp::client::CallError::Rpc(o) => Some(o.code.0.into()),
        _ => None,
    }
}
