//! Arbitrary text as a Lua health script and as a CEL rule, through the checkers the engine runs
//! and through the health runner against an object.
//!
//! Input: the text, optionally followed by a NUL byte and a JSON object (the resource the runner
//! hands the script as `obj` and the rule as `resource`; a default Deployment otherwise).
//!
//! Invariants:
//! - checking never panics, and no check falls into the engine's safety net (`internal`);
//! - the script's findings are at the script's path with `lua-` codes, the rule's at the rule's
//!   path with `cel-` codes, at most one for the rule; every position inside either lies in it;
//! - a Lua syntax error is always the script's first finding, and an error;
//! - the runner ends within its budget (the fuzz target times it), and a rule the checker
//!   accepts is one the runner's CEL parser parses too.

use serde_json::{json, Value};

use crate::validation::{validate, Finding};

use super::{assert_inner_positions, Lines};

pub const SCRIPT_PATH: &str = "spec.profileSpec.validateHealths[0].script";
pub const RULE_PATH: &str = "spec.profileSpec.validateHealths[1].evaluateCEL[0].rule";

/// What happened to one input, for the statistics of the bounded run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The script parses and compiles (it may still break Sveltos' contract).
    pub lua_compiles: bool,
    pub lua_rejected: bool,
    pub cel_rejected: bool,
    /// The runner's script returned a verdict (healthy or not), rather than an error.
    pub lua_verdict: bool,
    /// The runner's rule returned a bool.
    pub cel_verdict: bool,
}

/// Split an input into its text and the object to evaluate it against.
pub fn split(input: &[u8]) -> (String, Value) {
    let (text, object) = match input.iter().position(|&b| b == 0) {
        Some(at) => (&input[..at], Some(&input[at + 1..])),
        None => (input, None),
    };
    let object = object
        .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
        .filter(Value::is_object)
        .unwrap_or_else(default_object);
    (String::from_utf8_lossy(text).into_owned(), object)
}

fn default_object() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 3},
        "status": {"replicas": 3, "availableReplicas": 2, "readyReplicas": 2,
                   "conditions": [{"type": "Available", "status": "True"}]}
    })
}

/// A ClusterPromotion carrying `text` as the script of one check and the rule of another.
pub fn promotion_with(text: &str) -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "fuzz"},
        "spec": {
            "profileSpec": {
                "policyRefs": [{"kind": "ConfigMap", "name": "c", "namespace": "default"}],
                "validateHealths": [
                    {"name": "lua", "featureID": "Resources", "group": "apps", "version": "v1",
                     "kind": "Deployment", "script": text},
                    {"name": "cel", "featureID": "Resources", "group": "apps", "version": "v1",
                     "kind": "Deployment", "evaluateCEL": [{"name": "r", "rule": text}]}
                ]
            },
            "stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                 "trigger": {"auto": {"delay": "1m"}}},
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}
            ]
        }
    })
}

/// Check one input and every invariant; with `runner`, evaluate it too (the fuzz target always
/// does; the bounded run, in a debug build where a Lua state takes milliseconds, picks inputs).
pub fn check(input: &[u8], runner: Runner) -> Outcome {
    let (text, object) = split(input);
    let findings = validate(&promotion_with(&text));
    let (lua, cel) = check_findings(&text, &findings);
    let mut outcome = Outcome {
        lua_compiles: !lua
            .iter()
            .any(|f| matches!(f.code, "lua-syntax" | "lua-too-deep" | "lua-too-large")),
        lua_rejected: lua.iter().any(|f| f.is_error()),
        cel_rejected: cel.iter().any(|f| f.is_error()),
        ..Outcome::default()
    };
    let cel_parses = !cel.iter().any(|f| f.code == "cel-syntax");
    let lua = runner.lua.applies(outcome.lua_compiles);
    let cel = runner.cel.applies(cel_parses);
    run(&text, &object, lua, cel, &mut outcome);
    outcome
}

/// Which inputs go through the health runner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runner {
    /// Run the text as a Lua script.
    pub lua: When,
    /// Evaluate the text as a CEL rule.
    pub cel: When,
}

impl Runner {
    pub const ALWAYS: Runner = Runner {
        lua: When::Always,
        cel: When::Always,
    };
    /// What the fuzz target runs: a text the checker cannot parse fails the runner's parser too,
    /// after the cost of a Lua state (milliseconds under AddressSanitizer).
    pub const IF_COMPILES: Runner = Runner {
        lua: When::IfCompiles,
        cel: When::IfCompiles,
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Always,
    /// When the checker finds no syntax error (nor, for Lua, a compile error).
    IfCompiles,
    Never,
}

impl When {
    fn applies(self, compiles: bool) -> bool {
        match self {
            When::Always => true,
            When::IfCompiles => compiles,
            When::Never => false,
        }
    }
}

/// The script's findings and the rule's, after checking where they are and what they say.
fn check_findings<'a>(text: &str, findings: &'a [Finding]) -> (Vec<&'a Finding>, Vec<&'a Finding>) {
    let (mut lua, mut cel) = (Vec::new(), Vec::new());
    for f in findings {
        assert_ne!(
            f.code, "internal",
            "the engine's safety net caught a panic: {f}"
        );
        match f.path.as_str() {
            SCRIPT_PATH => {
                assert!(f.code.starts_with("lua-"), "{f}");
                lua.push(f);
            }
            RULE_PATH => {
                assert!(f.code.starts_with("cel-"), "{f}");
                cel.push(f);
            }
            _ => panic!("a finding outside the script and the rule: {f}"),
        }
        assert!(!f.message.is_empty(), "{f:?}");
    }
    assert!(
        cel.len() <= 1,
        "more than one finding for one rule: {cel:?}"
    );
    if let Some(i) = lua.iter().position(|f| f.code == "lua-syntax") {
        assert_eq!(i, 0, "a syntax error after other findings: {lua:?}");
        assert!(lua[0].is_error(), "{lua:?}");
    }
    assert_inner_positions(text, Lines::Lua, &lua);
    assert_inner_positions(text, Lines::Lf, &cel);
    (lua, cel)
}

fn run(text: &str, object: &Value, lua: bool, cel: bool, outcome: &mut Outcome) {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use health_runtime::{cel_eval, lua_runtime, Budget, LuaOutcome};

    // Small enough that a runaway script ends in milliseconds; the fuzz target checks it does.
    let budget = Budget {
        memory_bytes: 16 * 1024 * 1024,
        instructions: 100_000,
        wall: Duration::from_millis(50),
    };
    if lua {
        let metrics = BTreeMap::from([("requests".to_string(), 1.5)]);
        let lua = lua_runtime::evaluate(text, Some(object), &metrics, &budget);
        outcome.lua_verdict = matches!(lua, LuaOutcome::Healthy | LuaOutcome::Unhealthy { .. });
    }
    if !cel {
        return;
    }
    let rule = cel_eval::evaluate_rule(text, &cel_eval::to_cel(object));
    outcome.cel_verdict = rule.is_ok();
    if let Err(e) = &rule {
        // cel-go compiles what lint accepts; the runner's parser must too.
        assert!(
            outcome.cel_rejected || !e.starts_with("failed to parse"),
            "lint accepts the rule {text:?}, the runner does not parse it: {e}"
        );
    }
}
