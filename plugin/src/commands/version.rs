//! `version`: crate version, git commit (when the build knew it) and target triple.

use serde::Serialize;

use clap::Args;

use super::Ctx;
use crate::error::{exit::plain as exit, Result};
use crate::render::output::{self, ModelFormat};

/// The program's name, as kubectl runs the plugin: clap's name for it (`cli`) and the first word
/// of `version`'s line. Here rather than in `cli`, which uses this module: a path from here to
/// `cli` would make the two depend on each other.
pub const PROGRAM: &str = "kubectl promotion";

#[derive(Args, Debug)]
#[command(
    about = "Print the plugin version, git commit and target",
    after_help = "\
Examples:
  kubectl promotion version
  kubectl promotion version --short
  kubectl promotion version -o json"
)]
pub struct VersionArgs {
    /// Print only the version number
    #[arg(long)]
    pub short: bool,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<ModelFormat>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Info {
    pub version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<&'static str>,
    pub target: &'static str,
}

pub fn info() -> Info {
    let commit = env!("KUBECTL_PROMOTION_GIT_COMMIT");
    Info {
        version: env!("CARGO_PKG_VERSION"),
        git_commit: (!commit.is_empty()).then_some(commit),
        target: env!("KUBECTL_PROMOTION_TARGET"),
    }
}

pub fn run(ctx: &Ctx, args: &VersionArgs) -> Result<u8> {
    let i = info();
    let text = match args.output {
        Some(ModelFormat::Json) => output::to_json(&i)?,
        Some(ModelFormat::Yaml) => output::to_yaml(&i)?,
        None if args.short => format!("v{}\n", i.version),
        // The same line as `--version` (clap prints the program name and this).
        None => format!("{PROGRAM} {}\n", env!("KUBECTL_PROMOTION_VERSION_LINE")),
    };
    ctx.write_out(&text)?;
    Ok(exit::OK)
}
