//! Where log lines go: an in-memory buffer that one thread writes to stderr in batches.
//!
//! Every admission logs a line. Handing each line to a writer thread (tracing-appender's
//! `non_blocking`) costs a thread wake-up and a `write` per request, which under load was a
//! sixth of the server's CPU. Here request threads only append to a buffer; the writer thread
//! sleeps until there is something to write, writes everything that is queued in one call,
//! and then waits a short coalescing window before its next write, so under load there are at
//! most `1 / FLUSH_INTERVAL` writes per second whatever the request rate, and when idle a line
//! still appears at once.
//!
//! Nothing is dropped: past `MAX_BUFFERED` bytes (the writer is stuck, e.g. a full pipe) the
//! appending thread waits for the writer, as a blocking stderr would make it.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

const FLUSH_INTERVAL: Duration = Duration::from_millis(10);
const MAX_BUFFERED: usize = 4 * 1024 * 1024;

#[derive(Default)]
struct State {
    pending: Vec<u8>,
    /// The writer thread is waiting for lines (so an append must wake it).
    writer_idle: bool,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled when lines arrive for an idle writer, and when the buffer has been taken.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock can only come from a failed allocation; the bytes
        // are still consistent, so keep logging.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The `MakeWriter` handed to tracing-subscriber.
#[derive(Clone)]
pub struct BatchedWriter {
    shared: Arc<Shared>,
}

/// Writes what is still buffered and stops the writer thread when dropped.
pub struct FlushGuard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Start the writer thread for `sink`.
pub fn spawn<W: Write + Send + 'static>(sink: W) -> std::io::Result<(BatchedWriter, FlushGuard)> {
    let shared = Arc::new(Shared::default());
    let thread = std::thread::Builder::new()
        .name("log-writer".into())
        .spawn({
            let shared = shared.clone();
            move || write_loop(&shared, sink)
        })?;
    Ok((
        BatchedWriter {
            shared: shared.clone(),
        },
        FlushGuard {
            shared,
            thread: Some(thread),
        },
    ))
}

fn write_loop<W: Write>(shared: &Shared, mut sink: W) {
    let mut batch = Vec::new();
    loop {
        let closed = {
            let mut state = shared.lock();
            while state.pending.is_empty() && !state.closed {
                state.writer_idle = true;
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner());
            }
            state.writer_idle = false;
            std::mem::swap(&mut batch, &mut state.pending);
            state.closed
        };
        // Appenders waiting for room can go on.
        shared.changed.notify_all();
        // A failing stderr cannot be reported anywhere; the lines are dropped, the server
        // goes on.
        let _ = sink.write_all(&batch).and_then(|()| sink.flush());
        batch.clear();
        if closed {
            let rest = std::mem::take(&mut shared.lock().pending);
            let _ = sink.write_all(&rest).and_then(|()| sink.flush());
            return;
        }
        std::thread::sleep(FLUSH_INTERVAL);
    }
}

impl BatchedWriter {
    fn append(&self, bytes: &[u8]) {
        let mut state = self.shared.lock();
        while state.pending.len() >= MAX_BUFFERED && !state.closed {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        state.pending.extend_from_slice(bytes);
        let wake = state.writer_idle;
        state.writer_idle = false;
        drop(state);
        if wake {
            self.shared.changed.notify_all();
        }
    }
}

/// One event's line: tracing-subscriber formats an event into one buffer and writes it with a
/// single `write_all`, so lines are never interleaved.
pub struct LineWriter<'a> {
    writer: &'a BatchedWriter,
}

impl Write for LineWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.writer.append(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for BatchedWriter {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter { writer: self }
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Sink {
        bytes: Arc<Mutex<Vec<u8>>>,
        writes: Arc<Mutex<usize>>,
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes.lock().unwrap().extend_from_slice(buf);
            *self.writes.lock().unwrap() += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_arrives_in_order_and_in_few_writes() {
        let sink = Sink::default();
        let (writer, guard) = spawn(sink.clone()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let writer = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        writer
                            .make_writer()
                            .write_all(format!("{t} {i}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(sink.bytes.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 20_000);
        for t in 0..4 {
            let own: Vec<usize> = lines
                .iter()
                .filter_map(|l| l.strip_prefix(&format!("{t} ")))
                .map(|i| i.parse().unwrap())
                .collect();
            assert_eq!(own, (0..5_000).collect::<Vec<_>>(), "thread {t}");
        }
        let writes = *sink.writes.lock().unwrap();
        assert!(writes < 20_000, "{writes} writes for 20,000 lines");
    }

    #[test]
    fn an_idle_writer_writes_a_line_without_waiting_for_more() {
        let sink = Sink::default();
        let (writer, _guard) = spawn(sink.clone()).unwrap();
        writer.make_writer().write_all(b"listening\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while sink.bytes.lock().unwrap().is_empty() {
            assert!(std::time::Instant::now() < deadline, "line never written");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(&*sink.bytes.lock().unwrap(), b"listening\n");
    }

    #[test]
    fn a_slow_sink_loses_nothing() {
        struct Slow(Sink);
        impl Write for Slow {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_millis(5));
                self.0.write(buf)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let (writer, guard) = spawn(Slow(sink.clone())).unwrap();
        let line = vec![b'x'; 1024 * 1024 - 1];
        for _ in 0..12 {
            let mut l = line.clone();
            l.push(b'\n');
            writer.make_writer().write_all(&l).unwrap();
        }
        drop(guard);
        assert_eq!(sink.bytes.lock().unwrap().len(), 12 * 1024 * 1024);
    }
}
