//! The users who steer live rollouts in the chaos run, through the plugin as users do: at a
//! rollout's manual gate, before approving it, a seeded choice of nothing, a pause (resumed a
//! moment later), an abort (retried a moment later), or a rollback to the last complete revision
//! (retried once rolled back, or a few seconds later while it still rolls back). A retry after a
//! rollback starts the rollout again from its first stage: its gate then needs an approval of
//! that run ([`Steering::run`]).
//!
//! Every move is judged from the promotion as stored, never from a command's answer alone: under
//! faults a command may be applied with its answer lost, so a move already in place is taken as
//! made, and an undo already done as done.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

/// What a user does to one rollout at its gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Move {
    Nothing,
    Pause,
    Abort,
    Rollback,
}

impl Move {
    pub fn name(self) -> &'static str {
        match self {
            Move::Nothing => "nothing",
            Move::Pause => "pause",
            Move::Abort => "abort",
            Move::Rollback => "rollback",
        }
    }

    /// The seeded choice for the rollout of `chart` of promotion `name`: each move a quarter of
    /// the time (FNV-1a of the seed, name and chart: the same run makes the same choices). A
    /// promotion's first rollout has nothing complete to go back to: its rollback is an abort.
    pub fn choose(seed: u64, name: &str, chart: &str, first_rollout: bool) -> Move {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in format!("{seed}/{name}/{chart}").bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        match hash % 4 {
            0 => Move::Nothing,
            1 => Move::Pause,
            2 => Move::Abort,
            _ if first_rollout => Move::Abort,
            _ => Move::Rollback,
        }
    }

    /// The plugin's arguments that make it.
    pub fn command(self, name: &str) -> Vec<String> {
        let verb = self.name();
        [verb, name, "--reason", "chaos"].map(String::from).to_vec()
    }

    /// The plugin's arguments that undo it.
    pub fn undo(self, name: &str) -> Vec<String> {
        let verb = if self == Move::Pause {
            "resume"
        } else {
            "retry"
        };
        vec![verb.to_string(), name.to_string()]
    }

    /// Whether the promotion as stored shows this move in place.
    pub fn in_place(self, promotion: &Value) -> bool {
        match self {
            Move::Nothing => false,
            Move::Pause => promotion_shared::pause::paused(promotion).is_some(),
            Move::Abort | Move::Rollback => current_abort(promotion)
                .is_some_and(|a| (self == Move::Rollback) == a.rollback_to().is_some()),
        }
    }

    /// Whether it is time to undo it: a moment after it was made; a rollback once every stage
    /// runs the revision (or a few seconds on, to retry one still rolling back).
    pub fn due(self, promotion: &Value, made: Instant) -> bool {
        match self {
            Move::Rollback => {
                let done = current_abort(promotion)
                    .and_then(|a| a.rollback_to())
                    .is_some_and(|n| {
                        promotion_shared::abort::all_rolled_back(
                            promotion
                                .pointer("/status/stages")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                                .map(|s| s.get("currentStatusDescription").and_then(Value::as_str)),
                            n,
                        )
                    });
                done || made.elapsed() > Duration::from_secs(6)
            }
            _ => made.elapsed() > Duration::from_secs(1),
        }
    }
}

/// The abort request of the spec's current rollout, if any.
fn current_abort(promotion: &Value) -> Option<promotion_shared::abort::Aborted> {
    let id = promotion_shared::rollout::identity_of(promotion).ok()?.id;
    promotion_shared::abort::aborted(promotion).filter(|a| a.applies_to(&id))
}

/// One rollout's move.
#[derive(Clone, Copy, Debug)]
struct Steered {
    made: Move,
    at: Instant,
    undone: bool,
}

/// What the steering users did, per rollout, and which run of each rollout is under way.
#[derive(Debug, Default)]
pub struct Steering {
    moves: BTreeMap<(String, String), Steered>,
    /// (promotion, chart) → runs restarted by a retry after a rollback.
    runs: BTreeMap<(String, String), u32>,
    /// Moves made and undone, by name.
    pub made: BTreeMap<&'static str, usize>,
    pub undone: BTreeMap<&'static str, usize>,
}

/// What the driver must do for a rollout now.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing holds the rollout: approve it at its gate as usual.
    Free,
    /// A move holds it: neither approve nor start the next rollout.
    Hold,
    /// Run the plugin with these arguments, then report with [`Steering::made`] or
    /// [`Steering::undone`].
    Run(Move, Vec<String>, bool),
}

impl Steering {
    /// The run of the rollout of `chart` under way (0, then one more after each retry of a
    /// rollback): an approval is given per run.
    pub fn run(&self, name: &str, chart: &str) -> u32 {
        self.runs
            .get(&(name.to_string(), chart.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// The next step for `promotion` (named `name`, its spec at `chart`), which is at its
    /// manual gate (`at_gate`) or not.
    pub fn next(
        &mut self,
        seed: u64,
        promotion: &Value,
        name: &str,
        chart: &str,
        at_gate: bool,
        first_rollout: bool,
    ) -> Step {
        let key = (name.to_string(), chart.to_string());
        match self.moves.get_mut(&key) {
            None => {
                let chosen = Move::choose(seed, name, chart, first_rollout);
                // Made already, its answer lost (a rollback no longer shows the gate).
                if chosen.in_place(promotion) {
                    self.record_made(key, chosen);
                    return Step::Hold;
                }
                if !at_gate {
                    return Step::Free;
                }
                if chosen == Move::Nothing {
                    self.moves.insert(
                        key,
                        Steered {
                            made: chosen,
                            at: Instant::now(),
                            undone: true,
                        },
                    );
                    return Step::Free;
                }
                Step::Run(chosen, chosen.command(name), true)
            }
            Some(s) if s.undone => Step::Free,
            Some(s) => {
                if !s.made.in_place(promotion) {
                    // Undone already (an answer lost, or the rollout replaced).
                    let made = s.made;
                    s.undone = true;
                    self.record_undone(name, chart, made);
                    return Step::Free;
                }
                if !s.made.due(promotion, s.at) {
                    return Step::Hold;
                }
                Step::Run(s.made, s.made.undo(name), false)
            }
        }
    }

    /// `made` was applied to the rollout of `chart` of `name`.
    pub fn made(&mut self, name: &str, chart: &str, made: Move) {
        self.record_made((name.to_string(), chart.to_string()), made);
    }

    /// The move on the rollout of `chart` of `name` was undone.
    pub fn undone(&mut self, name: &str, chart: &str) {
        let key = (name.to_string(), chart.to_string());
        if let Some(s) = self.moves.get_mut(&key).filter(|s| !s.undone) {
            let made = s.made;
            s.undone = true;
            self.record_undone(name, chart, made);
        }
    }

    fn record_made(&mut self, key: (String, String), made: Move) {
        *self.made.entry(made.name()).or_default() += 1;
        self.moves.insert(
            key,
            Steered {
                made,
                at: Instant::now(),
                undone: false,
            },
        );
    }

    fn record_undone(&mut self, name: &str, chart: &str, made: Move) {
        *self.undone.entry(made.name()).or_default() += 1;
        if made == Move::Rollback {
            *self
                .runs
                .entry((name.to_string(), chart.to_string()))
                .or_default() += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_the_seeds_and_a_first_rollout_is_never_rolled_back() {
        let moves: Vec<Move> = (0..40)
            .map(|i| Move::choose(7, &format!("p{i}"), "1.1.0", false))
            .collect();
        for m in [Move::Nothing, Move::Pause, Move::Abort, Move::Rollback] {
            assert!(moves.contains(&m), "{m:?} never chosen: {moves:?}");
        }
        assert_eq!(
            moves,
            (0..40)
                .map(|i| Move::choose(7, &format!("p{i}"), "1.1.0", false))
                .collect::<Vec<_>>()
        );
        assert!((0..40).all(|i| Move::choose(7, &format!("p{i}"), "1.0.0", true) != Move::Rollback));
    }
}
