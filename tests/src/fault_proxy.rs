//! A TCP proxy on loopback between one client and a server (a controller replica and the API
//! server), that a test turns faulty for that client alone: a network partition
//! ([`FaultProxy::cut`]: open connections closed, new ones refused) or a server that stops
//! answering ([`FaultProxy::hang`]: connections stay open, nothing is forwarded either way).
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
        *lock(&self.mode) = mode;
        self.changed.notify_all();
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
        for (client, server) in lock(&self.shared.open).drain(..) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
    }

    /// A server that stops answering: connections are accepted and kept, nothing is forwarded.
    pub fn hang(&self) {
        self.shared.set(Mode::Hang);
    }

    /// Back to passing everything through (connections closed by a cut stay closed).
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
        if shared.stop.load(Ordering::SeqCst) || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
