//! What both echo servers share: arguments and runtimes, so only the SDK differs.
#![allow(dead_code)]

/// `--stdio`, or `--listen ADDR` (prints `listening on http://ADDR/mcp` on stderr).
pub enum Mode {
    Stdio,
    Http(String),
}

pub fn mode() -> Mode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag] if flag == "--stdio" => Mode::Stdio,
        [flag, addr] if flag == "--listen" => Mode::Http(addr.clone()),
        _ => {
            eprintln!("usage: echo --stdio | echo --listen 127.0.0.1:0");
            std::process::exit(2);
        }
    }
}

/// stdio: one thread (one connection); HTTP: the multi-threaded runtime, as servers run.
pub fn runtime(mode: &Mode) -> tokio::runtime::Runtime {
    let built = match mode {
        Mode::Stdio => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Mode::Http(_) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    };
    built.expect("a tokio runtime")
}

/// Binds `addr` and sets TCP_NODELAY on every connection (without it, a response written in
/// two parts waits for the client's delayed ACK: about 40 ms a call on Linux).
pub async fn listen(
    addr: &str,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
    let local = listener.local_addr().expect("local address");
    eprintln!("listening on http://{local}/mcp");
    listener.tap_io(nodelay as fn(&mut tokio::net::TcpStream))
}

fn nodelay(tcp: &mut tokio::net::TcpStream) {
    let _ = tcp.set_nodelay(true);
}
