//! Run with: cargo run -p oxmcp --example stdio
//!
//! The stdio transport: this program starts itself again as a child process (with
//! `--serve`, when it is the server, reading requests on stdin and answering on stdout),
//! connects to the child as a client in each protocol era, calls a tool and closes it.

use oxmcp::client::{Client, ClientConfig, ClientHandlers, EraChoice};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{Content, JsonObject};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "--serve") {
        // The child: stdout carries the protocol, so anything else goes to stderr.
        let server = Server::builder("stdio-example", "1.0.0")
            .tool("greet", "Greets someone", |_: Ctx, a: Greet| async move {
                Ok::<_, String>(format!(
                    "Hello, {}! (from process {})",
                    a.name,
                    std::process::id()
                ))
            })
            .build()?;
        oxmcp::serve_stdio(&server).await?;
        eprintln!("child: stdin closed, exiting");
        return Ok(());
    }

    let exe = std::env::current_exe()?;
    let exe = exe.to_str().ok_or("the executable's path is not UTF-8")?;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let config = ClientConfig::default().era(era);
        let client = Client::spawn(exe, &["--serve"], ClientHandlers::new(), config).await?;
        let pid = client.child_pid().await;
        println!(
            "{era:?}: started {exe} --serve as process {pid:?}, protocol {:?}",
            client.protocol_version()
        );
        let mut args = JsonObject::new();
        args.insert("name".into(), "stdio".into());
        let result = client.call_tool("greet", args).await?;
        let text = result
            .content
            .first()
            .and_then(Content::as_text)
            .unwrap_or_default();
        println!("{era:?}: {text}");
        if !text.starts_with("Hello, stdio!") {
            return Err(format!("{era:?}: unexpected result {result:?}").into());
        }
        // Closing ends the child's stdin; it exits by itself.
        let exit = client.close().await;
        println!("{era:?}: the child ended: {exit:?}");
    }
    Ok(())
}
