//! TLS for every connection of a client (Java's `useTLS`): [`Tls`] says how to verify the
//! servers and whether to show a client certificate; the handshake runs over the runtime's TCP
//! stream (`crate::transport` picks plain or TLS).
//!
//! rustls does the protocol (no OpenSSL), over any `futures-io` stream, so both adapters get
//! it from here. Plain TCP stays the default: a client without [`Tls`] never wraps its
//! connections.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use consumer_core::ConfigError;
use futures_io::{AsyncRead, AsyncWrite};
use futures_rustls::TlsConnector;
use futures_rustls::client::TlsStream;
use futures_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use futures_rustls::rustls::crypto::{self, CryptoProvider};
use futures_rustls::rustls::pki_types::pem::PemObject;
use futures_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use futures_rustls::rustls::{self, ClientConfig, DigitallySignedStruct, RootCertStore};

/// How a client's connections use TLS. Build one and give it to a builder's `tls` method.
///
/// ```
/// # use rocketmq_driver::Tls;
/// let tls = Tls::new()
///     .ca_file("/etc/rocketmq/ca.pem")          // else the platform's roots
///     .client_certificate("client.pem", "client-key.pem") // mutual TLS, when the broker asks
///     .server_name("broker.internal");          // else the host of each address
/// ```
#[derive(Clone, Default)]
pub struct Tls {
    ca_file: Option<PathBuf>,
    client: Option<(PathBuf, PathBuf)>,
    server_name: Option<String>,
    verify: bool,
}

impl Tls {
    /// TLS with the servers' certificates checked against the platform's trusted roots, and
    /// against the host of each address (an IP address must be in the certificate's
    /// subjectAltName).
    pub fn new() -> Self {
        Self {
            verify: true,
            ..Self::default()
        }
    }

    /// Trusts the CA certificates in this PEM file instead of the platform's roots.
    #[must_use]
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Shows this certificate chain (PEM) and private key (PEM: PKCS#8, PKCS#1 or SEC1) when
    /// a server asks for one (mutual TLS).
    #[must_use]
    pub fn client_certificate(
        mut self,
        chain: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Self {
        self.client = Some((chain.into(), key.into()));
        self
    }

    /// Checks every server's certificate against this name instead of the host of its
    /// address (brokers advertise IP addresses; their certificates may name a host).
    #[must_use]
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// **Accepts any server certificate, unchecked**: the connection is encrypted but anyone
    /// in the middle can read it. Only for test clusters with throwaway certificates; a warning
    /// is logged for every connection made so.
    #[must_use]
    pub fn dangerous_accept_any_server_certificate(mut self) -> Self {
        self.verify = false;
        self
    }

    /// The rustls client configuration this describes (the driver's connections use it; so
    /// can a blocking client of your own, as `rmq`'s admin commands do). Bad files are a
    /// [`ConfigError`] naming them.
    pub fn rustls_client_config(&self) -> Result<Arc<ClientConfig>, ConfigError> {
        let provider = Arc::new(crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError(format!("TLS: {e}")))?;
        let builder = if self.verify {
            builder.with_root_certificates(self.roots()?)
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
        };
        let config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => builder
                .with_client_auth_cert(certificates(chain)?, private_key(key)?)
                .map_err(|e| ConfigError(format!("TLS client certificate: {e}")))?,
        };
        Ok(Arc::new(config))
    }

    /// The name the certificate of the server at `addr` (`host:port`) must carry: the one set
    /// with [`Tls::server_name`], else the host.
    pub fn server_name_for(&self, addr: &str) -> Result<ServerName<'static>, ConfigError> {
        let host = match &self.server_name {
            Some(name) => name.as_str(),
            None => addr
                .rsplit_once(':')
                .map_or(addr, |(host, _)| host)
                .trim_start_matches('[')
                .trim_end_matches(']'),
        };
        ServerName::try_from(host.to_owned())
            .map_err(|e| ConfigError(format!("TLS server name {host:?} of {addr}: {e}")))
    }

    /// Whether server certificates are checked.
    pub fn verifies(&self) -> bool {
        self.verify
    }

    /// The connector the driver's connections share.
    pub(crate) fn connector(&self) -> Result<Connector, ConfigError> {
        if let Some(name) = &self.server_name {
            ServerName::try_from(name.clone())
                .map_err(|e| ConfigError(format!("TLS server name {name:?}: {e}")))?;
        }
        Ok(Connector {
            inner: TlsConnector::from(self.rustls_client_config()?),
            tls: self.clone(),
        })
    }

    fn roots(&self) -> Result<RootCertStore, ConfigError> {
        let mut roots = RootCertStore::empty();
        match &self.ca_file {
            Some(path) => {
                for certificate in certificates(path)? {
                    roots
                        .add(certificate)
                        .map_err(|e| ConfigError(format!("TLS CA file {}: {e}", path.display())))?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                for certificate in found.certs {
                    // One odd platform certificate is no reason to trust none.
                    let _ = roots.add(certificate);
                }
            }
        }
        if roots.is_empty() {
            return Err(ConfigError(
                "TLS: no trusted CA certificate (give a CA file)".to_owned(),
            ));
        }
        Ok(roots)
    }
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key's path is no secret; its contents are never read into this value.
        f.debug_struct("Tls")
            .field("ca_file", &self.ca_file)
            .field("client_certificate", &self.client.as_ref().map(|(c, _)| c))
            .field("server_name", &self.server_name)
            .field("verify", &self.verify)
            .finish()
    }
}

/// The PEM certificates of `path`; none, or a bad file, is an error naming it.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let bad =
        |e: &dyn fmt::Display| ConfigError(format!("TLS certificate file {}: {e}", path.display()));
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certificates.is_empty() {
        return Err(bad(&"no certificate in it"));
    }
    Ok(certificates)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, ConfigError> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| ConfigError(format!("TLS private key file {}: {e}", path.display())))
}

/// A [`Tls`] made ready: shared by every connection of a client.
#[derive(Clone)]
pub(crate) struct Connector {
    inner: TlsConnector,
    tls: Tls,
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

/// The TLS handshake over `stream`, connected to `addr`: a bad or unknown certificate, a name
/// mismatch or a plain server is an error saying so.
pub(crate) async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    connector: &Connector,
    addr: &str,
    stream: S,
) -> io::Result<TlsStream<S>> {
    let name = connector
        .tls
        .server_name_for(addr)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.0))?;
    if !connector.tls.verify {
        tracing::warn!(peer = %addr, "TLS without certificate verification");
    }
    connector
        .inner
        .connect(name, stream)
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("TLS handshake with {addr} failed: {e}")))
}

/// The verifier of [`Tls::dangerous_accept_any_server_certificate`]: every certificate is
/// taken, but the handshake's signatures are still checked (so the session is really keyed
/// to the certificate shown).
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, contents: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("rmq-tls-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).expect("the temp dir is writable");
        path
    }

    /// Bad TLS settings are a configuration error naming what is wrong, not a panic and not a
    /// silently plain connection.
    #[test]
    fn bad_files_and_names_are_refused_with_the_reason() {
        let missing = Tls::new().ca_file("/nonexistent/ca.pem").connector();
        let error = missing.expect_err("a missing CA file is refused");
        assert!(error.0.contains("/nonexistent/ca.pem"), "{error:?}");

        let empty = temp_file("empty.pem", "not a certificate\n");
        let error = Tls::new()
            .ca_file(&empty)
            .connector()
            .expect_err("a CA file without certificates is refused");
        assert!(error.0.contains("no certificate"), "{error:?}");

        let error = Tls::new()
            .dangerous_accept_any_server_certificate()
            .client_certificate(&empty, &empty)
            .connector()
            .expect_err("a client certificate file without certificates is refused");
        assert!(error.0.contains("certificate file"), "{error:?}");
        let _ = std::fs::remove_file(empty);

        let error = Tls::new()
            .dangerous_accept_any_server_certificate()
            .server_name("not a name!")
            .connector()
            .expect_err("an invalid server name is refused");
        assert!(error.0.contains("server name"), "{error:?}");
    }

    /// Each address's host is the name checked, IP addresses included; a set name wins.
    #[test]
    fn the_server_name_comes_from_the_address() {
        let tls = Tls::new();
        let name = |addr| {
            tls.server_name_for(addr)
                .map(|n| n.to_str().into_owned())
                .expect("a name")
        };
        assert_eq!(name("127.0.0.1:10911"), "127.0.0.1");
        assert_eq!(name("broker-a.internal:10911"), "broker-a.internal");
        assert_eq!(name("[::1]:10911"), "::1");
        let named = Tls::new().server_name("rocketmq.internal");
        assert_eq!(
            named
                .server_name_for("10.0.0.1:10911")
                .map(|n| n.to_str().into_owned())
                .expect("a name"),
            "rocketmq.internal"
        );
        assert!(
            !Tls::new()
                .dangerous_accept_any_server_certificate()
                .verifies()
        );
    }
}
