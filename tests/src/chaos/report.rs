//! What a chaos run saw, and its Markdown rendering (the long run's report in
//! `docs/controller.md` is this text).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::{Config, Kind};

#[derive(Debug)]
pub struct Report {
    pub config: Config,
    /// Faults injected, by kind (overlapping phase).
    pub faults: BTreeMap<Kind, usize>,
    /// Most faults in progress at once.
    pub max_overlap: usize,
    pub rollouts_completed: usize,
    pub approvals: usize,
    /// The users' pauses, aborts and rollbacks made, and undone (resumed, retried), by name.
    pub moves_made: BTreeMap<&'static str, usize>,
    pub moves_undone: BTreeMap<&'static str, usize>,
    pub replica_starts: usize,
    pub audit_events: usize,
    pub audit_torn: usize,
    /// Replica writes checked against the Lease terms, and holder changes seen.
    pub writes_checked: usize,
    pub handovers: usize,
    /// Replica writes refused with 409 Conflict.
    pub conflicts: usize,
    /// Stage profile writes checked against the double's log and the approvals.
    pub stage_writes_checked: usize,
    pub violations: Vec<String>,
    /// How long after the faults stopped every promotion was complete.
    pub settled_in: Option<Duration>,
    /// Isolated faults: recovery times by kind.
    pub recoveries: BTreeMap<&'static str, Vec<Duration>>,
    pub took: Duration,
}

impl Report {
    pub fn new(config: &Config) -> Report {
        Report {
            config: config.clone(),
            faults: BTreeMap::new(),
            max_overlap: 0,
            rollouts_completed: 0,
            approvals: 0,
            moves_made: BTreeMap::new(),
            moves_undone: BTreeMap::new(),
            replica_starts: 0,
            audit_events: 0,
            audit_torn: 0,
            writes_checked: 0,
            handovers: 0,
            conflicts: 0,
            stage_writes_checked: 0,
            violations: Vec::new(),
            settled_in: None,
            recoveries: BTreeMap::new(),
            took: Duration::ZERO,
        }
    }

    pub fn count(&mut self, kind: Kind) {
        *self.faults.entry(kind).or_default() += 1;
    }

    pub fn faults_injected(&self) -> usize {
        self.faults.values().sum()
    }

    /// The report as Markdown.
    pub fn markdown(&self) -> String {
        let c = &self.config;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Seed {}, {} promotions (dev auto → staging manual → prod auto), 2 replicas, Lease \
             {} s, addon-controller double lag {:?}; faults for {:?}, one every {:?} on average, \
             each lasting 1 s to {:?}. Whole run: {:.0?}.\n",
            c.seed,
            c.promotions,
            c.lease_seconds,
            c.addon_lag,
            c.chaos_for,
            c.mean_gap,
            c.longest_fault,
            self.took
        );
        let _ = writeln!(out, "| Fault | Injected |\n|---|---:|");
        for (kind, n) in &self.faults {
            let _ = writeln!(out, "| {kind} | {n} |");
        }
        let _ = writeln!(
            out,
            "| **all** (at most {} at once) | **{}** |\n",
            self.max_overlap,
            self.faults_injected()
        );
        let _ = writeln!(
            out,
            "- Rollouts completed under faults: {}; approvals given: {}; replica (re)starts: {}.",
            self.rollouts_completed, self.approvals, self.replica_starts
        );
        let moves = |m: &BTreeMap<&'static str, usize>| {
            m.iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "- Users' moves at the gates: {} made; {} undone (resumed or retried).",
            moves(&self.moves_made),
            moves(&self.moves_undone)
        );
        let _ = writeln!(
            out,
            "- Audit log: {} events ({} torn by a kill); {} replica writes checked against {} \
             Lease holder changes ({} more refused as conflicts); {} stage profile writes checked \
             against the double's log and the approvals.",
            self.audit_events,
            self.audit_torn,
            self.writes_checked,
            self.handovers,
            self.conflicts,
            self.stage_writes_checked
        );
        let _ = writeln!(
            out,
            "- Every promotion complete {} after the faults stopped.",
            self.settled_in
                .map_or("— never —".to_string(), |d| format!("{d:.1?}"))
        );
        let _ = writeln!(
            out,
            "- Invariant violations: **{}**.",
            self.violations.len()
        );
        for v in self.violations.iter().take(20) {
            let _ = writeln!(out, "  - {v}");
        }
        if !self.recoveries.is_empty() {
            let _ = writeln!(
                out,
                "\nIsolated faults, {} s each, {} of each kind: time from the fault's end until \
                 the controller acted on a change made while it lasted (0: it acted during the \
                 fault).\n\n| Fault | n | p50 | p99 |\n|---|---:|---:|---:|",
                c.isolated_fault.as_secs(),
                c.isolated_repeats
            );
            for (kind, times) in &self.recoveries {
                let _ = writeln!(
                    out,
                    "| {kind} | {} | {:.1?} | {:.1?} |",
                    times.len(),
                    percentile(times, 50),
                    percentile(times, 99)
                );
            }
        }
        out
    }
}

/// The `p`-th percentile by nearest rank (with few samples, p99 is the largest).
pub fn percentile(times: &[Duration], p: usize) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * sorted.len()).div_ceil(100).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let ms = |v: &[u64]| {
            v.iter()
                .map(|m| Duration::from_millis(*m))
                .collect::<Vec<_>>()
        };
        assert_eq!(percentile(&ms(&[3, 1, 2]), 50), Duration::from_millis(2));
        assert_eq!(percentile(&ms(&[3, 1, 2]), 99), Duration::from_millis(3));
        assert_eq!(percentile(&ms(&[]), 99), Duration::ZERO);
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&ms(&hundred), 99), Duration::from_millis(99));
    }
}
