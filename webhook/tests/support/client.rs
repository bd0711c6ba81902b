//! A small HTTPS client on hyper's connection API: one TLS connection per `Conn`, HTTP/1.1 with
//! keep-alive or HTTP/2 (chosen by ALPN), the server certificate verified against a CA.
//! Shared by the integration tests and the load benchmark.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::{http1, http2};
use hyper::header::{HeaderMap, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore, SupportedProtocolVersion};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A client configuration trusting only `ca_pem`, offering `alpn`, limited to `version` if
/// given.
pub fn tls_config(
    ca_pem: &[u8],
    alpn: &[&[u8]],
    version: Option<&'static SupportedProtocolVersion>,
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.expect("CA PEM")).expect("CA certificate");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider);
    let builder = match version {
        Some(v) => builder.with_protocol_versions(&[v]),
        None => builder.with_safe_default_protocol_versions(),
    }
    .expect("protocol versions");
    let mut config = builder.with_root_certificates(roots).with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// What the handshake settled.
#[derive(Clone, Debug)]
pub struct TlsInfo {
    pub alpn: Option<Vec<u8>>,
    pub version: Option<rustls::ProtocolVersion>,
    /// DER of the server's leaf certificate.
    pub leaf: Vec<u8>,
}

pub enum Conn {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

pub struct HttpResponse {
    pub status: u16,
    pub version: Version,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl HttpResponse {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("response is not JSON ({e}): {}", self.text()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The server asked to close the connection after this response.
    pub fn closes(&self) -> bool {
        self.headers
            .get(hyper::header::CONNECTION)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"))
    }
}

/// Open a TLS connection (verifying `server_name` against the CA) and start HTTP/2 if ALPN chose
/// it, HTTP/1.1 otherwise.
pub async fn connect(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    server_name: &str,
) -> Result<(Conn, TlsInfo), BoxError> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let name = ServerName::try_from(server_name.to_string())?;
    let tls = TlsConnector::from(config).connect(name, tcp).await?;
    let (_, session) = tls.get_ref();
    let info = TlsInfo {
        alpn: session.alpn_protocol().map(<[u8]>::to_vec),
        version: session.protocol_version(),
        leaf: session
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.to_vec())
            .unwrap_or_default(),
    };
    let io = TokioIo::new(tls);
    let conn = if info.alpn.as_deref() == Some(b"h2") {
        let (sender, connection) = http2::handshake(TokioExecutor::new(), io).await?;
        tokio::spawn(connection);
        Conn::H2(sender)
    } else {
        let (sender, connection) = http1::handshake(io).await?;
        tokio::spawn(connection);
        Conn::H1(sender)
    };
    Ok((conn, info))
}

impl Conn {
    pub async fn post(&mut self, path: &str, body: Vec<u8>) -> Result<HttpResponse, BoxError> {
        self.send(Method::POST, path, body).await
    }

    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<HttpResponse, BoxError> {
        let builder = Request::builder()
            .method(method)
            .header(CONTENT_TYPE, "application/json");
        let request = match self {
            Conn::H1(_) => builder.uri(path).header(HOST, "localhost"),
            Conn::H2(_) => builder.uri(format!("https://localhost{path}")),
        }
        .body(Full::new(Bytes::from(body)))?;
        let response = match self {
            Conn::H1(sender) => {
                sender.ready().await?;
                sender.send_request(request).await?
            }
            Conn::H2(sender) => {
                sender.ready().await?;
                sender.send_request(request).await?
            }
        };
        let status = response.status().as_u16();
        let version = response.version();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await?.to_bytes();
        Ok(HttpResponse {
            status,
            version,
            headers,
            body,
        })
    }

    /// An HTTP/2 connection can carry concurrent requests: a second handle to it.
    pub fn h2_clone(&self) -> Option<Conn> {
        match self {
            Conn::H2(sender) => Some(Conn::H2(sender.clone())),
            Conn::H1(_) => None,
        }
    }
}

/// GET over plain HTTP/1.1 (the metrics listener).
pub async fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), BoxError> {
    let tcp = TcpStream::connect(addr).await?;
    let (mut sender, connection) = http1::handshake(TokioIo::new(tcp)).await?;
    tokio::spawn(connection);
    let request = Request::builder()
        .uri(path)
        .header(HOST, "localhost")
        .body(Full::new(Bytes::new()))?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// A verified TLS stream without HTTP on top, for tests that write bytes by hand.
pub async fn raw_tls(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, BoxError> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let name = ServerName::try_from("localhost".to_string())?;
    Ok(TlsConnector::from(config).connect(name, tcp).await?)
}
