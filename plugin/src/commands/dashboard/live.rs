//! The one follow of the fleet behind every page and event stream: the same watches as
//! `list -w` and `describe -w` ([`FleetFollower`]), started once, whose latest state every
//! page reads and every stream is woken by. The follower gathers a burst of events into one
//! state, so the pages are recomputed a few times a second at most during a rollout, and not at
//! all while nothing changes.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::cluster::watch::{Fleet, FleetFollower, Update};

/// What the pages know of the fleet now.
#[derive(Clone, Default)]
pub struct Live {
    /// The latest state; `None` until the first lists are complete.
    pub fleet: Option<Arc<Fleet>>,
    /// Counts the states handed out: a stream that sees a gap re-renders everything, since
    /// `fleet.changes` only says what changed since the state before.
    pub seq: u64,
    /// The connection to the API server is lost (the follower retries): why, and since when.
    /// The data shown is as of the last state.
    pub lost: Option<(String, DateTime<Utc>)>,
    /// The follow ended for good (401, 403, the CRD gone): why. The pages say so.
    pub ended: Option<String>,
}

impl Live {
    /// When the data shown was last known to be current.
    pub fn as_of(&self) -> Option<DateTime<Utc>> {
        self.fleet.as_ref().and_then(|f| f.changes.latest())
    }
}

/// Follow the fleet in the background; the receiver sees each new state.
pub fn follow(mut follower: FleetFollower) -> watch::Receiver<Live> {
    let (tx, rx) = watch::channel(Live::default());
    tokio::spawn(async move {
        loop {
            let update = follower.next().await;
            let mut stop = false;
            tx.send_modify(|live| match update {
                Ok(Update::Changed(fleet)) => {
                    live.fleet = Some(Arc::new(fleet));
                    live.seq += 1;
                    live.lost = None;
                }
                Ok(Update::ConnectionLost(reason)) => {
                    if live.lost.is_none() {
                        live.lost = Some((reason, Utc::now()));
                    }
                }
                Err(e) => {
                    live.ended = Some(e.to_string());
                    stop = true;
                }
            });
            // Every page is gone with the receivers: nobody to follow for.
            if stop || tx.is_closed() {
                return;
            }
        }
    });
    rx
}
