//! From a URL to a pool: `postgres://` or `postgresql://` URLs and their `sslmode`, TLS with
//! rustls (the web's root certificates, or a CA of the caller's), and the URL shown without
//! its password.

use std::sync::Arc;

use tokio_postgres_rustls::MakeRustlsConnect;

/// A URL's settings for the driver, with what this crate reads itself taken out of it.
pub(crate) struct Target {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) tls: MakeRustlsConnect,
}

/// `url` without its password, in the user part or as a `password=` parameter (for
/// messages and logs).
pub fn redacted(url: &str) -> String {
    let Ok(mut u) = url::Url::parse(url) else {
        return url.to_owned();
    };
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
    }
    if u.query_pairs().any(|(k, _)| k == "password") {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "password" { "***".into() } else { v };
                (k.into_owned(), v.into_owned())
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    u.to_string()
}

/// Parses `url`: `postgres://` or `postgresql://`, with the driver's parameters
/// (`sslmode=disable|prefer|require`, `connect_timeout`, `application_name`, ...). Without
/// `sslmode` the driver's default is `prefer`: TLS when the server offers it, verified as
/// below (a server with a self-signed certificate then needs `--store-ca`, or
/// `sslmode=disable`).
/// `sslmode=verify-ca` and `verify-full` are taken as `require`: the server's certificate is
/// always verified (against `ca_pem` when given, else the web's root certificates), and its
/// name too. `sslrootcert=FILE` names the CA file when `ca_pem` is `None`.
pub(crate) fn target(url: &str, ca_pem: Option<Vec<u8>>) -> Result<Target, String> {
    let mut parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    if parsed.scheme() != "postgres" && parsed.scheme() != "postgresql" {
        return Err(format!(
            "not a PostgreSQL URL: {:?} (postgres:// or postgresql://)",
            redacted(url)
        ));
    }
    let mut ca = ca_pem;
    let mut kept = Vec::new();
    for (k, v) in parsed.query_pairs() {
        match (k.as_ref(), v.as_ref()) {
            ("sslmode", "verify-ca" | "verify-full") => {
                kept.push(("sslmode".to_owned(), "require".to_owned()));
            }
            ("sslrootcert", file) => {
                if ca.is_none() {
                    ca = Some(std::fs::read(file).map_err(|e| format!("reading {file}: {e}"))?);
                }
            }
            (k, v) => kept.push((k.to_owned(), v.to_owned())),
        }
    }
    parsed.set_query(None);
    if !kept.is_empty() {
        parsed.query_pairs_mut().extend_pairs(kept);
    }
    let config: tokio_postgres::Config = parsed
        .as_str()
        .parse()
        .map_err(|e| format!("bad PostgreSQL URL {:?}: {e}", redacted(url)))?;
    let tls = tls(ca.as_deref())?;
    Ok(Target { config, tls })
}

fn tls(ca_pem: Option<&[u8]>) -> Result<MakeRustlsConnect, String> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_pem {
        Some(pem) => {
            use rustls_pki_types::pem::PemObject;
            let mut n = 0;
            for cert in rustls_pki_types::CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| format!("the CA file: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("the CA file's certificate: {e}"))?;
                n += 1;
            }
            if n == 0 {
                return Err("the CA file holds no PEM certificate".to_owned());
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::{redacted, target};
    use tokio_postgres::config::SslMode;

    fn wants_tls(config: &tokio_postgres::Config) -> bool {
        !matches!(config.get_ssl_mode(), SslMode::Disable)
    }

    #[test]
    fn urls() {
        let t = target("postgres://u:pw@127.0.0.1:5433/db?sslmode=disable", None).unwrap();
        assert!(!wants_tls(&t.config));
        assert_eq!(t.config.get_dbname(), Some("db"));
        let t = target("postgresql://u@h/db?sslmode=verify-full", None).unwrap();
        assert!(wants_tls(&t.config));
        assert!(target("redis://h", None).is_err());
        assert!(target("postgres://h/db?sslrootcert=/nonexistent", None).is_err());
        assert_eq!(
            redacted("postgres://u:secret@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(redacted("postgres://u@h/db"), "postgres://u@h/db");
        assert!(!redacted("postgres://u@h/db?password=secret&sslmode=require").contains("secret"));
    }
}
