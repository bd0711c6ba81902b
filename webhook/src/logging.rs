//! Structured logs on stderr, as text or one JSON object per line.
//!
//! Lines are formatted on the request's thread but written by a dedicated thread, so the write
//! syscall stays off the request path; nothing is dropped (the queue blocks when full), and the
//! returned guard flushes what is queued when the process ends.

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;
use crate::config::LogConfig;

#[derive(Debug, thiserror::Error)]
#[error("invalid --log-level {filter:?}: {reason}")]
pub struct LoggingError {
    filter: String,
    reason: String,
}

/// Install the subscriber; keep the guard alive until exit.
pub fn init(config: &LogConfig) -> Result<WorkerGuard, LoggingError> {
    let filter = EnvFilter::try_new(&config.filter).map_err(|e| LoggingError {
        filter: config.filter.clone(),
        reason: e.to_string(),
    })?;
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(8192)
        .thread_name("log-writer")
        .finish(std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    let installed = match config.format {
        LogFormat::Text => builder.with_ansi(false).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
    installed.map_err(|e| LoggingError {
        filter: config.filter.clone(),
        reason: e.to_string(),
    })?;
    Ok(guard)
}
