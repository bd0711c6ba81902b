//! `promotion-controller reconcile --dry-run`: one reconcile decided and printed, nothing written.
//! How an operator asks "why is my promotion not moving?".

use chrono::{DateTime, Utc};

use promotion_shared::reconcile::{decide, Options};

use crate::cli::{Format, ReconcileArgs};
use crate::error::{Error, Result};
use crate::snapshot;

pub async fn run(args: &ReconcileArgs) -> Result<()> {
    if !args.dry_run {
        return Err(Error::Usage(
            "reconcile needs --dry-run: it only decides and prints (promotion-controller run \
             carries decisions out)"
                .into(),
        ));
    }
    let window_zone: chrono_tz::Tz = args.window_time_zone.parse().map_err(|_| {
        Error::Usage(format!(
            "--window-time-zone {:?}: not an IANA time zone name (for example UTC, Europe/Paris)",
            args.window_time_zone
        ))
    })?;
    let now = match &args.now {
        Some(text) => DateTime::parse_from_rfc3339(text)
            .map_err(|e| Error::Usage(format!("--now {text:?}: not an RFC 3339 time: {e}")))?
            .with_timezone(&Utc),
        None => Utc::now(),
    };
    let snapshot = match (&args.filename, &args.name) {
        (Some(path), _) => snapshot::read(path, args.promotion.as_deref())?,
        (None, Some(name)) => {
            let client =
                snapshot::client(args.kubeconfig.as_deref(), args.context.as_deref(), None).await?;
            let namespace = args
                .history_namespace
                .clone()
                .unwrap_or_else(|| client.default_namespace().to_string());
            snapshot::live(&client, name, &namespace).await?
        }
        (None, None) => return Err(Error::Usage("give -f SNAPSHOT or a promotion NAME".into())),
    };
    let decision = decide(&snapshot, now, &Options { window_zone });
    let text = match args.output {
        Format::Json => {
            let mut s =
                serde_json::to_string_pretty(&decision).map_err(|e| Error::Input(e.to_string()))?;
            s.push('\n');
            s
        }
        Format::Yaml => {
            serde_saphyr::to_string(&decision).map_err(|e| Error::Input(e.to_string()))?
        }
    };
    print!("{text}");
    Ok(())
}
