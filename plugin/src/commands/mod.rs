//! One module per command; each exposes `run` returning the process exit code.

pub mod approve;
pub mod complete;
pub mod completion;
pub mod describe;
pub mod diff;
pub mod health;
pub mod lint;
pub mod list;
pub mod plan;
pub mod version;
pub mod wait;

use chrono::{DateTime, Utc};

use crate::connection::ConnectionFlags;
use crate::error::Result;
use crate::kube_client::Kube;
use crate::render::Style;

/// What every command gets: how to connect, and how to decorate stdout and stderr.
pub struct Ctx {
    pub connection: ConnectionFlags,
    pub out: Style,
    pub err: Style,
    /// stdout is a terminal (for in-place redraws).
    pub out_is_tty: bool,
}

impl Ctx {
    pub async fn kube(&self) -> Result<Kube> {
        Kube::connect(&self.connection).await
    }

    pub fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Print a progress or warning line on stderr (stdout carries only results).
pub fn note(ctx: &Ctx, text: &str) {
    eprintln!("{}", ctx.err.paint(text, crate::render::Tone::Dim));
}

pub fn warn(ctx: &Ctx, text: &str) {
    eprintln!(
        "{} {text}",
        ctx.err.paint("warning:", crate::render::Tone::Waiting)
    );
}
