//! A TCP proxy on loopback between one client and a server (a controller replica and the API
//! server), that a test turns faulty for that client alone: a network partition
//! ([`FaultProxy::cut`]: open connections closed, new ones refused) or a server that stops
//! answering ([`FaultProxy::hang`]: connections stay open, nothing is forwarded either way).
//! A proxy can also slow every exchange down ([`FaultProxy::delay`]). When a hang ends, the
//! connections it held are reset rather than resumed, as a middlebox that dropped the flows does:
//! a request held past the end of the sender's Lease term and delivered afterwards would be
//! applied by the API server whatever the sender decided since (no Lease-based controller,
//! client-go's included, can recall a request already on the wire), and what keeps such a late
//! write harmless is its `resourceVersion` guard, not the Lease.
//! TLS passes through untouched, so the client still verifies the server's certificate (issued
//! for `127.0.0.1`, where the proxy listens too).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Mode {
    #[default]
    Pass,
    Cut,
    Hang,
    /// Every chunk forwarded (either way) after this long.
    Delay(std::time::Duration),
}

#[derive(Default)]
struct Shared {
    mode: Mutex<Mode>,
    /// Signalled when the mode changes, for the copies held back by a hang.
    changed: Condvar,
    /// Every connection's two ends, to close them at once on a cut.
    open: Mutex<Vec<(TcpStream, TcpStream)>>,
    stop: AtomicBool,
}

impl Shared {
    fn mode(&self) -> Mode {
        *lock(&self.mode)
    }

    fn set(&self, mode: Mode) {
        let mut current = lock(&self.mode);
        if *current == Mode::Hang && mode != Mode::Hang {
            // Reset what the hang held (see the module documentation), before any held copy
            // can see the hang is over.
            self.close_all();
        }
        *current = mode;
        drop(current);
        self.changed.notify_all();
    }

    fn close_all(&self) {
        for (client, server) in lock(&self.open).drain(..) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
    }

    /// Block while the proxy hangs.
    fn wait_while_hanging(&self) {
        let guard = lock(&self.mode);
        let _released = self
            .changed
            .wait_while(guard, |m| *m == Mode::Hang)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}

pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// A proxy to `target`, passing everything through until told otherwise.
    pub fn start(target: SocketAddr) -> std::io::Result<FaultProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                if accepting.mode() == Mode::Cut {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(target) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
                    lock(&accepting.open).push((c, s));
                }
                for (from, to) in [(&client, &server), (&server, &client)] {
                    let (Ok(from), Ok(to)) = (from.try_clone(), to.try_clone()) else {
                        continue;
                    };
                    let shared = accepting.clone();
                    std::thread::spawn(move || forward(from, to, &shared));
                }
            }
        });
        Ok(FaultProxy { addr, shared })
    }

    /// `https://127.0.0.1:PORT`: the server URL a kubeconfig names to go through the proxy.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// A partition: every open connection closed, new ones refused.
    pub fn cut(&self) {
        self.shared.set(Mode::Cut);
        self.shared.close_all();
    }

    /// A server that stops answering: connections are accepted and kept, nothing is forwarded.
    pub fn hang(&self) {
        self.shared.set(Mode::Hang);
    }

    /// A slow network: every chunk is forwarded `by` late, in both directions.
    pub fn delay(&self, by: std::time::Duration) {
        self.shared.set(Mode::Delay(by));
    }

    /// Back to passing everything through (connections closed by a cut stay closed; those held
    /// by a hang are reset).
    pub fn heal(&self) {
        self.shared.set(Mode::Pass);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // A cut, not a hang: every copy held back is released and ends.
        self.cut();
        // Wake the accept loop so that it sees `stop`.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Copy `from` to `to`, holding bytes back while the proxy hangs; stop when either side closes
/// (a cut closes both).
fn forward(mut from: TcpStream, mut to: TcpStream, shared: &Shared) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        shared.wait_while_hanging();
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Read before (or while) a hang began: held until it ends, as a stalled peer would never
        // have passed it on.
        shared.wait_while_hanging();
        if let Mode::Delay(by) = shared.mode() {
            std::thread::sleep(by);
        }
        if shared.stop.load(Ordering::SeqCst) || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
