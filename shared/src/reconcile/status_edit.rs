//! The status edits of addon-controller v1.13.0 (`docs/reference/promotion-controller.md`
//! §11), on a copy of the status, and whether they changed anything.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::model::{ClusterPromotionStatus, StageStatus};
use crate::rollout::RolloutId;

pub struct Status {
    original: ClusterPromotionStatus,
    pub status: ClusterPromotionStatus,
    now: String,
}

impl Status {
    pub fn new(status: ClusterPromotionStatus, now: DateTime<Utc>) -> Self {
        Status {
            original: status.clone(),
            status,
            now: now.to_rfc3339_opts(SecondsFormat::Secs, true),
        }
    }

    pub fn current_stage(&self) -> Option<&str> {
        self.status
            .current_stage_name
            .as_deref()
            .filter(|s| !s.is_empty())
    }

    pub fn stage(&self, name: &str) -> Option<&StageStatus> {
        self.status
            .stages
            .as_deref()?
            .iter()
            .find(|s| s.name == name)
    }

    /// §11.6: the stage has a status entry with `lastSuccessfulAppliedTime`.
    pub fn provisioned(&self, name: &str) -> bool {
        self.stage(name)
            .is_some_and(|s| s.last_successful_applied_time.is_some())
    }

    /// `resetStageStatuses`: no stages, no `lastPromotionTime`.
    pub fn reset(&mut self) {
        self.status.stages = None;
        self.status.last_promotion_time = None;
    }

    /// `addStageStatus`: appends the stage, makes it current, stamps the promotion time.
    pub fn add_stage(&mut self, name: &str) {
        self.status
            .stages
            .get_or_insert_with(Vec::new)
            .push(StageStatus {
                name: name.to_string(),
                last_update_reconciled_time: Some(self.now.clone()),
                ..StageStatus::default()
            });
        self.status.current_stage_name = Some(name.to_string());
        self.status.last_promotion_time = Some(self.now.clone());
    }

    /// `updateStageStatus`, on every entry of that name: the failure message (removed when
    /// `None`), the check time, and the success time when provisioned — set once, when the stage
    /// is first seen deployed in this rollout. Upstream overwrites it with the promotion time when
    /// the stage advances (D16, `docs/reference/promotion-controller.md` §11.7), so `describe`'s
    /// `Provisioned:` jumped to when the *next* stage started; the soak runs from the first time
    /// either way (a stage that advances has soaked).
    pub fn check(&mut self, name: &str, provisioned: bool, failure: Option<String>) {
        for s in self.status.stages.iter_mut().flatten() {
            if s.name == name {
                s.failure_message = failure.clone();
                s.last_status_check_time = Some(self.now.clone());
                if provisioned && s.last_successful_applied_time.is_none() {
                    s.last_successful_applied_time = Some(self.now.clone());
                }
            }
        }
    }

    /// `updateStageDescription`, on the first entry of that name: `"<text> (<now>)"`.
    pub fn describe(&mut self, name: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(s) = self
            .status
            .stages
            .iter_mut()
            .flatten()
            .find(|s| s.name == name)
        {
            s.current_status_description = Some(format!("{text} ({})", self.now));
        }
    }

    pub fn set_hashes(&mut self, id: &RolloutId) {
        self.status.stages_hash = Some(id.stages_hash.clone());
        self.status.profile_spec_hash = Some(id.profile_spec_hash.clone());
    }

    /// The whole new status, when it differs from the one read. A description or check time that
    /// only moves forward (the same text, a new time) is no change: upstream rewrites them every
    /// two minutes, this writes them when something happened.
    pub fn changed(&self) -> Option<Value> {
        if same_but_times(&self.original, &self.status) {
            return None;
        }
        serde_json::to_value(&self.status).ok()
    }
}

fn same_but_times(a: &ClusterPromotionStatus, b: &ClusterPromotionStatus) -> bool {
    let strip = |s: &ClusterPromotionStatus| {
        let mut s = s.clone();
        for st in s.stages.iter_mut().flatten() {
            st.last_status_check_time = None;
            st.current_status_description = st
                .current_status_description
                .as_deref()
                .map(|d| crate::status::strip_timestamp(d).to_string());
        }
        s
    };
    strip(a) == strip(b)
}
