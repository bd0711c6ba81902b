//! Structured logs on stderr, as text or one JSON object per line.
//!
//! Lines are formatted on the request's thread and written in batches by a dedicated thread
//! ([`crate::log_writer`]), so neither a write nor a thread wake-up is on the request path;
//! nothing is dropped, and the returned guard writes what is buffered when the process ends.

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;
use crate::config::LogConfig;
use crate::log_writer::{self, FlushGuard};

#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("invalid --log-level {filter:?}: {reason}")]
    Filter { filter: String, reason: String },
    #[error("cannot start the log writer thread: {0}")]
    Writer(std::io::Error),
    #[error("cannot install the logger: {0}")]
    Install(String),
}

/// Install the subscriber; keep the guard alive until exit.
pub fn init(config: &LogConfig) -> Result<FlushGuard, LoggingError> {
    let filter = EnvFilter::try_new(&config.filter).map_err(|e| LoggingError::Filter {
        filter: config.filter.clone(),
        reason: e.to_string(),
    })?;
    let (writer, guard) = log_writer::spawn(std::io::stderr()).map_err(LoggingError::Writer)?;
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
    installed.map_err(|e| LoggingError::Install(e.to_string()))?;
    Ok(guard)
}
