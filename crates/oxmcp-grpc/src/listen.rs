//! Serving the gRPC service on a listener of its own, with or without TLS.

use std::future::Future;
use std::time::Duration;

use tonic::service::Routes;
use tonic::transport::{Identity, Server, ServerTlsConfig};

/// A certificate chain and its private key, both PEM.
#[derive(Clone)]
pub struct TlsPem {
    /// The certificate chain.
    pub cert: Vec<u8>,
    /// The private key.
    pub key: Vec<u8>,
}

impl std::fmt::Debug for TlsPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsPem").finish_non_exhaustive()
    }
}

/// Why the gRPC listener stopped.
#[derive(Debug, thiserror::Error)]
#[error("gRPC listener: {0}")]
pub struct ListenError(String);

/// Serves `router` (from [`crate::Grpc::router`]) on `listener` over HTTP/2, with TLS when
/// `tls` is given, until `shutdown` completes; then lets open calls finish and returns.
/// HTTP/2 keep-alive pings every 20 s drop clients that stopped answering. With TLS and no
/// process-wide rustls crypto provider installed yet, this installs aws-lc-rs's.
///
/// # Errors
/// [`ListenError`] for unusable TLS material or a failing listener.
pub async fn serve_grpc(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    tls: Option<TlsPem>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ListenError> {
    let mut server = Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(20)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)))
        .tcp_nodelay(true);
    if let Some(tls) = tls {
        // rustls picks its process-wide crypto provider from crate features; if a program
        // links in more than one it cannot choose, so choose ours (aws-lc-rs, as reqwest's)
        // unless the program already did.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
        let identity = Identity::from_pem(tls.cert, tls.key);
        server = server
            .tls_config(ServerTlsConfig::new().identity(identity))
            .map_err(|e| {
                ListenError(format!(
                    "the TLS certificate or key: {}",
                    crate::error_chain(&e)
                ))
            })?;
    }
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    server
        .add_routes(Routes::from(router))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| ListenError(crate::error_chain(&e)))
}
