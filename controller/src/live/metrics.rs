//! The controller's Prometheus metrics (prometheus-client): reconciles and errors by reason,
//! promotions by phase, how long stages take, how long approvals are waited for, and lag from a
//! watch event to the reconcile it caused.

use std::collections::HashMap;
use std::sync::Mutex;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

pub struct Metrics {
    registry: Registry,
    reconciles: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    promotions: Family<Labels, Gauge>,
    stage_duration: Histogram,
    awaiting_approval: Histogram,
    lag: Histogram,
    foreign: Family<Labels, Counter>,
    automatic_rollbacks: Counter,
    leader: Gauge,
    reachable: Gauge,
    phases: Mutex<HashMap<String, &'static str>>,
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("promotion_controller");
        let reconciles = Family::<Labels, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles, by result (ok, error, skipped)",
            reconciles.clone(),
        );
        let errors = Family::<Labels, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Failed reconciles, by reason (conflict, admission, api, forbidden)",
            errors.clone(),
        );
        let promotions = Family::<Labels, Gauge>::default();
        registry.register(
            "promotions",
            "Promotions this replica reconciled, by phase",
            promotions.clone(),
        );
        let stage_duration = Histogram::new(exponential_buckets(1.0, 2.0, 18));
        registry.register(
            "stage_duration_seconds",
            "From a stage being provisioned to its promotion to the next stage",
            stage_duration.clone(),
        );
        let awaiting_approval = Histogram::new(exponential_buckets(1.0, 2.0, 18));
        registry.register(
            "awaiting_approval_seconds",
            "How long a provisioned stage waited for the approval that promoted it",
            awaiting_approval.clone(),
        );
        let lag = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        registry.register(
            "lag_seconds",
            "From the watch event that asked for a reconcile to the reconcile starting",
            lag.clone(),
        );
        let foreign = Family::<Labels, Counter>::default();
        registry.register(
            "foreign_status_writer",
            "Reconciles skipped because another field manager wrote the status last, by manager",
            foreign.clone(),
        );
        let automatic_rollbacks = Counter::default();
        registry.register(
            "automatic_rollbacks",
            "Rollbacks this replica asked for because a stage kept failing (on-failure: rollback)",
            automatic_rollbacks.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease (or runs without election)",
            leader.clone(),
        );
        let reachable = Gauge::default();
        registry.register(
            "api_server_reachable",
            "1 while the API server answers this replica's leader election (or it runs without \
             one); 0: it cannot make progress",
            reachable.clone(),
        );
        reachable.set(1);
        Metrics {
            registry,
            reconciles,
            errors,
            promotions,
            stage_duration,
            awaiting_approval,
            lag,
            foreign,
            automatic_rollbacks,
            leader,
            reachable,
            phases: Mutex::new(HashMap::new()),
        }
    }
}

impl Metrics {
    pub fn reconciled(&self, result: &str) {
        self.reconciles
            .get_or_create(&labels(&[("result", result)]))
            .inc();
    }

    pub fn error(&self, reason: &str) {
        self.errors
            .get_or_create(&labels(&[("reason", reason)]))
            .inc();
    }

    pub fn foreign(&self, manager: &str) {
        self.foreign
            .get_or_create(&labels(&[("manager", manager)]))
            .inc();
    }

    pub fn automatic_rollback(&self) {
        self.automatic_rollbacks.inc();
    }

    pub fn stage_promoted(&self, seconds: f64) {
        self.stage_duration.observe(seconds);
    }

    pub fn approval_used(&self, waited_seconds: f64) {
        self.awaiting_approval.observe(waited_seconds);
    }

    pub fn lag(&self, seconds: f64) {
        self.lag.observe(seconds);
    }

    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    pub fn set_reachable(&self, reachable: bool) {
        self.reachable.set(i64::from(reachable));
    }

    /// The phase of `promotion` now (`None`: it is gone).
    pub fn phase(&self, promotion: &str, phase: Option<&'static str>) {
        let mut phases = self
            .phases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = match phase {
            Some(p) => phases.insert(promotion.to_string(), p),
            None => phases.remove(promotion),
        };
        if before == phase {
            return;
        }
        if let Some(b) = before {
            self.promotions
                .get_or_create(&labels(&[("phase", b)]))
                .dec();
        }
        if let Some(p) = phase {
            self.promotions
                .get_or_create(&labels(&[("phase", p)]))
                .inc();
        }
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_move_between_gauges() {
        let m = Metrics::default();
        m.phase("a", Some("progressing"));
        m.phase("b", Some("progressing"));
        m.phase("a", Some("complete"));
        let text = m.render();
        assert!(
            text.contains("promotion_controller_promotions{phase=\"progressing\"} 1"),
            "{text}"
        );
        assert!(text.contains("promotion_controller_promotions{phase=\"complete\"} 1"));
        m.phase("a", None);
        assert!(m
            .render()
            .contains("promotion_controller_promotions{phase=\"complete\"} 0"));
    }
}
