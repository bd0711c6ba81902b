//! A forward proxy on loopback that records what it forwards: HTTP `CONNECT` tunnels (a
//! kubeconfig `proxy-url: http://…`, `HTTPS_PROXY`) and SOCKS5 `CONNECT`s (`socks5://…`), told
//! apart by the first byte a client sends. Host names listed with [`ForwardProxy::alias`] are
//! reached at 127.0.0.1, so a test can name a server by something that is not loopback (an
//! environment proxy is never used for loopback) and still only talk to this machine; any
//! other name is refused, never resolved.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One tunnel the proxy opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunnel {
    /// `"http"` (CONNECT) or `"socks5"`.
    pub protocol: &'static str,
    /// `host:port` as the client asked for it.
    pub target: String,
}

#[derive(Default)]
struct Shared {
    tunnels: Mutex<Vec<Tunnel>>,
    aliases: Mutex<HashMap<String, String>>,
    /// Bytes forwarded from the clients to the targets.
    upstream_bytes: AtomicU64,
    stop: AtomicBool,
}

pub struct ForwardProxy {
    port: u16,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl ForwardProxy {
    pub fn start() -> std::io::Result<ForwardProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared::default());
        let for_thread = shared.clone();
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if for_thread.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let shared = for_thread.clone();
                std::thread::spawn(move || serve(conn, &shared));
            }
        });
        Ok(ForwardProxy {
            port,
            shared,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `socks5://127.0.0.1:PORT`.
    pub fn socks5_url(&self) -> String {
        format!("socks5://127.0.0.1:{}", self.port)
    }

    /// Connect requests for `name` go to 127.0.0.1.
    pub fn alias(&self, name: &str) {
        self.shared
            .aliases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), "127.0.0.1".to_string());
    }

    pub fn tunnels(&self) -> Vec<Tunnel> {
        self.shared
            .tunnels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn upstream_bytes(&self) -> u64 {
        self.shared.upstream_bytes.load(Ordering::SeqCst)
    }
}

impl Drop for ForwardProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn serve(conn: TcpStream, shared: &Shared) {
    let mut first = [0u8; 1];
    if conn.peek(&mut first).ok() != Some(1) {
        return;
    }
    let opened = if first[0] == 5 {
        socks5(conn, shared)
    } else {
        http_connect(conn, shared)
    };
    if let Some((client, upstream)) = opened {
        pipe(client, upstream, shared);
    }
}

/// Where a requested `host:port` is dialled: aliases at 127.0.0.1, loopback as is, nothing else.
fn dial(shared: &Shared, host: &str, port: u16) -> Option<TcpStream> {
    let aliased = shared
        .aliases
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(host)
        .cloned();
    let addr = match aliased {
        Some(a) => a,
        None if host == "127.0.0.1" || host == "localhost" => "127.0.0.1".to_string(),
        None => return None,
    };
    TcpStream::connect((addr.as_str(), port)).ok()
}

fn record(shared: &Shared, protocol: &'static str, target: String) {
    shared
        .tunnels
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Tunnel { protocol, target });
}

fn http_connect(conn: TcpStream, shared: &Shared) -> Option<(TcpStream, TcpStream)> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    let mut conn = conn;
    let mut parts = request_line.split_whitespace();
    let (Some("CONNECT"), Some(target)) = (parts.next(), parts.next()) else {
        let _ = conn.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
        return None;
    };
    let (host, port) = target.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let Some(upstream) = port.parse().ok().and_then(|p| dial(shared, host, p)) else {
        let _ = conn.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
        return None;
    };
    record(shared, "http", target.to_string());
    conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .ok()?;
    // Bytes the client sent after its request head (none for a TLS client that waits for 200).
    let buffered = reader.buffer().to_vec();
    let mut upstream = upstream;
    if !buffered.is_empty() {
        shared
            .upstream_bytes
            .fetch_add(buffered.len() as u64, Ordering::SeqCst);
        upstream.write_all(&buffered).ok()?;
    }
    Some((conn, upstream))
}

/// RFC 1928, no authentication, CONNECT only.
fn socks5(mut conn: TcpStream, shared: &Shared) -> Option<(TcpStream, TcpStream)> {
    let mut head = [0u8; 2];
    conn.read_exact(&mut head).ok()?;
    let mut methods = vec![0u8; usize::from(head[1])];
    conn.read_exact(&mut methods).ok()?;
    if !methods.contains(&0) {
        let _ = conn.write_all(&[5, 0xff]);
        return None;
    }
    conn.write_all(&[5, 0]).ok()?;
    let mut req = [0u8; 4];
    conn.read_exact(&mut req).ok()?;
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            conn.read_exact(&mut a).ok()?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            conn.read_exact(&mut len).ok()?;
            let mut name = vec![0u8; usize::from(len[0])];
            conn.read_exact(&mut name).ok()?;
            String::from_utf8(name).ok()?
        }
        4 => {
            let mut a = [0u8; 16];
            conn.read_exact(&mut a).ok()?;
            std::net::Ipv6Addr::from(a).to_string()
        }
        _ => return None,
    };
    let mut port = [0u8; 2];
    conn.read_exact(&mut port).ok()?;
    let port = u16::from_be_bytes(port);
    let refuse = |conn: &mut TcpStream, code: u8| {
        let _ = conn.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
    };
    if req[1] != 1 {
        refuse(&mut conn, 7);
        return None;
    }
    let Some(upstream) = dial(shared, &host, port) else {
        refuse(&mut conn, 4);
        return None;
    };
    record(shared, "socks5", format!("{host}:{port}"));
    conn.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).ok()?;
    Some((conn, upstream))
}

/// Copy both ways until either side closes. Client bytes are counted before they are passed
/// on, so once a client has an answer, what it sent for it is counted.
fn pipe(client: TcpStream, upstream: TcpStream, shared: &Shared) {
    let (Ok(mut client_r), Ok(mut upstream_w)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            while let Ok(n) = client_r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shared.upstream_bytes.fetch_add(n as u64, Ordering::SeqCst);
                if upstream_w.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = upstream_w.shutdown(Shutdown::Write);
        });
        let (mut upstream_r, mut client_w) = (upstream, client);
        let _ = std::io::copy(&mut upstream_r, &mut client_w);
        let _ = client_w.shutdown(Shutdown::Write);
    });
}
