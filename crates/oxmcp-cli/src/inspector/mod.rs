//! `oxmcp inspect`: a web inspector for any MCP server, served on 127.0.0.1 and opened in
//! the browser.
//!
//! - [`guard`]: who may use it (the one-time token, its cookie, `Host` and `Origin`).
//! - [`web`]: the page, built into the binary, and the WebSocket it talks over.
//! - [`ops`]: what the page can ask: list, call, read, subscribe, get, complete, cancel, and
//!   answer the server's requests.
//! - [`hub`]: what the pages share: the client, the traffic so far, the open requests;
//!   [`calls`]: the tool calls the pages have running.
//! - [`link`]: the client, connected through the CLI's usual path with every message
//!   recorded.
//!
//! What the inspector talks to is fixed by its command line: no page can start a process or
//! choose another server.

mod calls;
mod guard;
mod hub;
mod link;
mod ops;
mod web;

use std::io::Write as _;
use std::sync::Arc;

use anyhow::{Context, bail};

use crate::auth::Auth;
use crate::target::Target;
use guard::Guard;
use hub::Hub;

/// The arguments of `oxmcp inspect`.
#[derive(clap::Args, Debug)]
pub(crate) struct InspectArgs {
    /// The server's URL: http(s):// (Streamable HTTP, or legacy HTTP+SSE at an `/sse`
    /// endpoint), ws(s):// or grpc(s)://. Or a command after `--` (stdio).
    pub(crate) url: Option<String>,
    /// Print the page's address only; do not open a browser.
    #[arg(long)]
    pub(crate) no_open: bool,
    /// The port of the page on 127.0.0.1 (default: any free port).
    #[arg(long, default_value_t = 0)]
    pub(crate) port: u16,
    #[command(flatten)]
    pub(crate) auth: Auth,
    /// The server command and its arguments (instead of a URL).
    #[arg(last = true)]
    pub(crate) server: Vec<String>,
}

/// One running inspector.
pub(crate) struct Inspector {
    hub: Arc<Hub>,
    guard: Guard,
    reach: link::Reach,
    listening: link::Listening,
    /// One connection attempt at a time.
    connecting: tokio::sync::Mutex<()>,
}

impl Inspector {
    /// Connects to the server again (the old connection is closed).
    async fn connect(&self) {
        let _one = self.connecting.lock().await;
        link::connect(&self.hub, &self.reach, &self.listening).await;
    }

    /// `oxmcp login` for the server's URL: the authorization server's page is offered on the
    /// inspector's page (the person is at a browser already), and its redirect comes back to
    /// a loopback listener as with `oxmcp login`; the tokens are stored.
    async fn login(&self) -> anyhow::Result<()> {
        let Target::Url(url) = &self.reach.target else {
            bail!("logging in is for servers reached by an http(s) URL");
        };
        let agent = link::PageAgent {
            browser: oxmcp_auth::client::Loopback::bind(0, false).await?,
            hub: self.hub.clone(),
        };
        crate::login::login_with(
            crate::login::LoginArgs {
                url: url.clone(),
                no_browser: false,
                client_id: None,
                client_secret_file: None,
                client_metadata_url: None,
                scopes: vec![],
                port: 0,
                allow_private_hosts: false,
            },
            Arc::new(agent),
        )
        .await
    }
}

/// A random hex secret of `bytes` bytes from the OS.
fn secret(bytes: usize) -> anyhow::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// `oxmcp inspect`.
pub(crate) async fn run(args: InspectArgs) -> anyhow::Result<()> {
    let target = Target::from_parts(args.url, args.server)?;
    let roots = crate::client_side::roots(&args.auth.side.roots)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
    let port = listener.local_addr()?.port();
    let token = secret(16)?;
    let app = Arc::new(Inspector {
        hub: Hub::new(target.describe(), roots),
        guard: Guard::new(port, token.clone(), secret(32)?, secret(32)?),
        reach: link::Reach {
            target,
            auth: args.auth,
        },
        listening: link::Listening::default(),
        connecting: tokio::sync::Mutex::new(()),
    });
    let address = format!("http://127.0.0.1:{port}/?token={token}");
    // The address goes to the terminal only (never to the log).
    println!("oxmcp inspect: {address}");
    let _ = std::io::stdout().flush();
    eprintln!(
        "oxmcp: the inspector of {} is at the address above (Ctrl-C to stop)",
        app.hub.target
    );
    let connecting = app.clone();
    tokio::spawn(async move { connecting.connect().await });
    let opener = match args.no_open {
        true => None,
        false => open_page(&address),
    };
    if !args.no_open && opener.is_none() {
        eprintln!("oxmcp: could not open a browser; open the address above");
    }
    let stop = oxmcp_http::shutdown_on_signal();
    axum::serve(listener, web::router(app.clone()))
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
        .context("the inspector's web server failed")?;
    app.hub.set_client(Err("stopped".into())).await;
    if let Some(file) = opener {
        let _ = std::fs::remove_file(file);
    }
    Ok(())
}

/// Opens the page in the browser without putting the token on a command line (where other
/// users of the machine could read it, in the process list): the browser is given a file
/// only this user can read, which sends it on to `address`. The file's path, if it opened.
#[cfg(unix)]
fn open_page(address: &str) -> Option<std::path::PathBuf> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let name = format!("oxmcp-inspect-{}.html", secret(8).ok()?);
    let path = std::env::temp_dir().join(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .ok()?;
    let page = format!(
        "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={address}\">\
         <title>oxmcp inspect</title><a href=\"{address}\">oxmcp inspect</a>\n"
    );
    let url = url::Url::from_file_path(&path).ok();
    let opened = match (file.write_all(page.as_bytes()), url) {
        (Ok(()), Some(url)) => oxmcp_auth::client::open_browser(url.as_str()),
        _ => false,
    };
    if !opened {
        let _ = std::fs::remove_file(&path);
        return None;
    }
    Some(path)
}

/// Opens the page in the browser.
#[cfg(not(unix))]
fn open_page(address: &str) -> Option<std::path::PathBuf> {
    oxmcp_auth::client::open_browser(address).then(std::path::PathBuf::new)
}
