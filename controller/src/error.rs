//! The errors of the controller's commands, each with the exit status it ends the process with.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// A flag or argument that cannot be used (exit 2, as clap's own usage errors).
    #[error("{0}")]
    Usage(String),
    /// A snapshot file that cannot be read or does not hold what a reconcile needs (exit 1).
    #[error("{0}")]
    Input(String),
    /// The cluster could not be reached or refused a read (exit 1).
    #[error("{0}")]
    Cluster(String),
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => 2,
            Error::Input(_) | Error::Cluster(_) => 1,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
