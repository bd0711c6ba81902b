//! The chaos suite's oracles over the API server's audit log (the policy of
//! [`crate::envtest::Options::audit_log`]): what the server applied, when, for whom — not what
//! the controller says it did.
//!
//! - **One writer per Lease term**: every write the server accepted from a promotion-controller
//!   replica (to a ClusterPromotion, its status or a ClusterProfile) falls within a term of that
//!   replica, i.e. the last Lease write the server accepted before it named that replica as the
//!   holder. Replicas are told apart by their User-Agent, `promotion-controller/<version>
//!   (<identity>)`, whose identity is the one they write into the Lease.
//! - **Deployed before promoted**: a stage profile written with chart version `v` means the
//!   previous stage was judged deployed with `v`: the addon-controller double must have sent that
//!   stage's `Provisioned` for `v`'s hash before the server applied the write.
//! - **An approval for this rollout**: the last stage's profile written with `v` means the manual
//!   gate before it was passed in the rollout of `v`: an approval must have been given (sent by
//!   the driver) for that promotion at `v` before the write.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

/// One completed request of the audit log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// `stageTimestamp` of `ResponseComplete`: when the server had applied it and answered.
    pub at: DateTime<Utc>,
    pub verb: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub user_agent: String,
    pub code: u16,
    /// The holder a Lease write set (`None` when it cleared it or the body is not logged).
    pub holder: Option<String>,
    /// `spec.helmCharts[0].chartVersion` of a ClusterProfile write's body.
    pub chart: Option<String>,
    /// A server-side dry run (`dryRun=All`): judged by admission, stored nowhere.
    pub dry_run: bool,
}

impl Event {
    fn ok(&self) -> bool {
        (200..300).contains(&self.code)
    }

    /// The replica behind the request: the identity in `promotion-controller/<v> (<identity>)`.
    pub fn replica(&self) -> Option<&str> {
        let rest = self.user_agent.strip_prefix("promotion-controller/")?;
        let open = rest.find(" (")?;
        rest[open + 2..].strip_suffix(')')
    }
}

/// The events of an audit log (JSON lines). A line that is not a whole event (the server killed
/// while writing it) is counted, not fatal.
pub fn parse(text: &str) -> (Vec<Event>, usize) {
    let mut events = Vec::new();
    let mut torn = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            torn += 1;
            continue;
        };
        let s = |pointer: &str| {
            e.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let Ok(at) = DateTime::parse_from_rfc3339(&s("/stageTimestamp")) else {
            torn += 1;
            continue;
        };
        let body = e.get("requestObject");
        events.push(Event {
            at: at.with_timezone(&Utc),
            verb: s("/verb"),
            resource: s("/objectRef/resource"),
            subresource: s("/objectRef/subresource"),
            namespace: s("/objectRef/namespace"),
            name: s("/objectRef/name"),
            user_agent: s("/userAgent"),
            code: e
                .pointer("/responseStatus/code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(0),
            holder: body
                .and_then(|b| b.pointer("/spec/holderIdentity"))
                .and_then(Value::as_str)
                .filter(|h| !h.is_empty())
                .map(str::to_string),
            chart: body
                .and_then(|b| b.pointer("/spec/helmCharts/0/chartVersion"))
                .and_then(Value::as_str)
                .map(str::to_string),
            dry_run: s("/requestURI").contains("dryRun=All"),
        });
    }
    events.sort_by_key(|e| e.at);
    (events, torn)
}

/// What the single-writer oracle saw.
#[derive(Debug, Default)]
pub struct Terms {
    /// Writes by replicas checked.
    pub writes: usize,
    /// Lease writes that changed the holder.
    pub handovers: usize,
    /// Replica writes the server refused with 409 Conflict (a newer version was stored).
    pub conflicts: usize,
    pub violations: Vec<String>,
}

/// The one-writer-per-term oracle (module documentation) over `events` sorted by time, for the
/// Lease `namespace/name`.
pub fn one_writer_per_term(events: &[Event], namespace: &str, name: &str) -> Terms {
    let mut terms = Terms::default();
    let mut holder: Option<&str> = None;
    terms.conflicts = events
        .iter()
        .filter(|e| e.code == 409 && e.resource != "leases" && e.replica().is_some())
        .count();
    for e in events.iter().filter(|e| e.ok()) {
        if e.resource == "leases" && e.namespace == namespace && e.name == name {
            let next = e.holder.as_deref();
            if next != holder {
                terms.handovers += 1;
            }
            holder = next;
            continue;
        }
        // A dry run (promotion-controller's admission check at start, made by a standby too)
        // stores nothing: it is no write of a term.
        let written = matches!(e.resource.as_str(), "clusterpromotions" | "clusterprofiles")
            && e.verb != "get"
            && !e.dry_run;
        let Some(replica) = e.replica().filter(|_| written) else {
            continue;
        };
        terms.writes += 1;
        if holder != Some(replica) {
            terms.violations.push(format!(
                "{} {} {}{} by {replica} at {} while the Lease was held by {}",
                e.verb,
                e.resource,
                e.name,
                if e.subresource.is_empty() {
                    String::new()
                } else {
                    format!("/{}", e.subresource)
                },
                e.at.to_rfc3339(),
                holder.unwrap_or("nobody")
            ));
        }
    }
    terms
}

/// A pipeline's stages, in order, as the oracles need them.
pub struct Pipeline<'a> {
    /// The promotion's name; its stage profiles are `<name>-<stage>`.
    pub name: &'a str,
    pub stages: &'a [&'a str],
    /// The stage whose manual gate opens the next one (its successor needs an approval).
    pub manual: &'a str,
}

/// What the deployment and approval oracles saw.
#[derive(Debug, Default)]
pub struct Promotions {
    /// Stage profile writes checked (with a chart version in their body).
    pub writes: usize,
    pub violations: Vec<String>,
}

/// The deployed-before-promoted and approval-for-this-rollout oracles (module documentation).
/// `deployed(profile, chart)` is when the double first sent that profile's `Provisioned` for
/// that chart's hash; `approved(promotion, chart)` when the driver first sent an approval for it.
pub fn promoted_only_when_deployed_and_approved(
    events: &[Event],
    pipelines: &[Pipeline<'_>],
    deployed: impl Fn(&str, &str) -> Option<DateTime<Utc>>,
    approved: impl Fn(&str, &str) -> Option<DateTime<Utc>>,
) -> Promotions {
    let mut by_profile: BTreeMap<String, (&Pipeline<'_>, usize)> = BTreeMap::new();
    for p in pipelines {
        for (i, stage) in p.stages.iter().enumerate() {
            by_profile.insert(format!("{}-{stage}", p.name), (p, i));
        }
    }
    let mut seen = Promotions::default();
    for e in events
        .iter()
        .filter(|e| e.ok() && e.resource == "clusterprofiles")
    {
        let (Some(_), Some(chart)) = (e.replica(), e.chart.as_deref()) else {
            continue;
        };
        let Some((pipeline, index)) = by_profile.get(&e.name) else {
            continue;
        };
        seen.writes += 1;
        let Some(previous) = index.checked_sub(1).map(|i| pipeline.stages[i]) else {
            continue;
        };
        let previous_profile = format!("{}-{previous}", pipeline.name);
        match deployed(&previous_profile, chart) {
            Some(sent) if sent < e.at => {}
            sent => seen.violations.push(format!(
                "{} written with chart {chart} at {} before the double deployed {previous_profile} \
                 with it ({})",
                e.name,
                e.at.to_rfc3339(),
                sent.map_or("never".into(), |t| format!("sent at {}", t.to_rfc3339()))
            )),
        }
        if previous == pipeline.manual {
            match approved(pipeline.name, chart) {
                Some(given) if given < e.at => {}
                given => {
                    seen.violations.push(format!(
                    "{} written with chart {chart} at {}: the {previous} gate passed without an \
                     approval given for this rollout ({})",
                    e.name,
                    e.at.to_rfc3339(),
                    given.map_or("none given".into(), |t| format!("given at {}", t.to_rfc3339()))
                ))
                }
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at: &str, resource: &str, name: &str, ua: &str) -> Event {
        Event {
            at: DateTime::parse_from_rfc3339(at)
                .unwrap()
                .with_timezone(&Utc),
            verb: "patch".into(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: String::new(),
            name: name.into(),
            user_agent: ua.into(),
            code: 200,
            holder: None,
            chart: None,
            dry_run: false,
        }
    }

    fn lease(at: &str, holder: Option<&str>) -> Event {
        Event {
            namespace: "ns".into(),
            holder: holder.map(str::to_string),
            ..event(at, "leases", "lease", "promotion-controller/0.1.0 (x)")
        }
    }

    const A: &str = "promotion-controller/0.1.0 (a_1)";
    const B: &str = "promotion-controller/0.1.0 (b_2)";

    #[test]
    fn the_replica_is_read_from_the_user_agent() {
        assert_eq!(
            event("2026-01-01T00:00:00Z", "x", "y", A).replica(),
            Some("a_1")
        );
        assert_eq!(
            event("2026-01-01T00:00:00Z", "x", "y", "kubectl/v1.32").replica(),
            None
        );
    }

    #[test]
    fn a_write_outside_the_writers_term_is_a_violation() {
        let events = [
            lease("2026-01-01T00:00:00Z", Some("a_1")),
            event("2026-01-01T00:00:01Z", "clusterpromotions", "p", A),
            lease("2026-01-01T00:00:20Z", Some("b_2")),
            event("2026-01-01T00:00:21Z", "clusterprofiles", "p-dev", B),
            // The old leader writes in the new leader's term.
            event("2026-01-01T00:00:22Z", "clusterpromotions", "p", A),
        ];
        let terms = one_writer_per_term(&events, "ns", "lease");
        assert_eq!(terms.writes, 3);
        assert_eq!(terms.handovers, 2);
        assert_eq!(terms.violations.len(), 1, "{:?}", terms.violations);
        assert!(terms.violations[0].contains("by a_1"));
        assert!(terms.violations[0].contains("held by b_2"));
    }

    #[test]
    fn a_dry_run_by_a_standby_is_no_write() {
        let mut check = event("2026-01-01T00:00:02Z", "clusterpromotions", "p", B);
        check.dry_run = true;
        let events = [lease("2026-01-01T00:00:00Z", Some("a_1")), check.clone()];
        let terms = one_writer_per_term(&events, "ns", "lease");
        assert_eq!((terms.writes, terms.violations.len()), (0, 0));
        check.dry_run = false;
        let terms = one_writer_per_term(&[events[0].clone(), check], "ns", "lease");
        assert_eq!(terms.violations.len(), 1);
    }

    #[test]
    fn writes_after_a_release_are_violations_and_failed_writes_are_not() {
        let mut refused = event("2026-01-01T00:00:03Z", "clusterpromotions", "p", B);
        refused.code = 409;
        let events = [
            lease("2026-01-01T00:00:00Z", Some("a_1")),
            lease("2026-01-01T00:00:01Z", None),
            event("2026-01-01T00:00:02Z", "clusterpromotions", "p", A),
            refused,
        ];
        let terms = one_writer_per_term(&events, "ns", "lease");
        assert_eq!(terms.violations.len(), 1, "{:?}", terms.violations);
        assert!(terms.violations[0].contains("held by nobody"));
        assert_eq!(terms.conflicts, 1);
    }

    fn profile_write(at: &str, name: &str, chart: &str) -> Event {
        Event {
            chart: Some(chart.into()),
            ..event(at, "clusterprofiles", name, A)
        }
    }

    fn time(at: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(at)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn a_stage_written_before_its_predecessor_deployed_or_was_approved_is_a_violation() {
        let pipelines = [Pipeline {
            name: "p",
            stages: &["dev", "staging", "prod"],
            manual: "staging",
        }];
        let deployed = |profile: &str, chart: &str| match (profile, chart) {
            ("p-dev", "1") => Some(time("2026-01-01T00:00:05Z")),
            ("p-staging", "1") => Some(time("2026-01-01T00:00:15Z")),
            _ => None,
        };
        let approved = |_: &str, chart: &str| (chart == "1").then(|| time("2026-01-01T00:00:16Z"));
        let good = [
            profile_write("2026-01-01T00:00:00Z", "p-dev", "1"),
            profile_write("2026-01-01T00:00:06Z", "p-staging", "1"),
            profile_write("2026-01-01T00:00:17Z", "p-prod", "1"),
        ];
        let seen = promoted_only_when_deployed_and_approved(&good, &pipelines, deployed, approved);
        assert_eq!(
            (seen.writes, seen.violations.len()),
            (3, 0),
            "{:?}",
            seen.violations
        );

        let early = [
            // staging before dev deployed; prod before the approval was given.
            profile_write("2026-01-01T00:00:04Z", "p-staging", "1"),
            profile_write("2026-01-01T00:00:15.5Z", "p-prod", "1"),
            // another rollout's approval does not count.
            profile_write("2026-01-01T00:00:30Z", "p-prod", "2"),
        ];
        let seen = promoted_only_when_deployed_and_approved(&early, &pipelines, deployed, approved);
        let all = seen.violations.join("\n");
        assert_eq!(seen.violations.len(), 4, "{all}");
        assert!(all.contains("before the double deployed p-dev"), "{all}");
        assert!(
            all.contains("without an approval given for this rollout (given at"),
            "{all}"
        );
        assert!(all.contains("(none given)"), "{all}");
    }

    #[test]
    fn torn_lines_are_counted_not_fatal() {
        let text = concat!(
            r#"{"stageTimestamp":"2026-01-01T00:00:00.000001Z","verb":"update","objectRef":{"resource":"leases","namespace":"ns","name":"lease"},"userAgent":"promotion-controller/0.1.0 (a_1)","responseStatus":{"code":200},"requestObject":{"spec":{"holderIdentity":"a_1"}}}"#,
            "\n",
            r#"{"stageTimestamp":"2026-01-01T00:00:0"#,
            "\n"
        );
        let (events, torn) = parse(text);
        assert_eq!((events.len(), torn), (1, 1));
        assert_eq!(events[0].holder.as_deref(), Some("a_1"));
        assert_eq!(events[0].replica(), Some("a_1"));
    }
}
