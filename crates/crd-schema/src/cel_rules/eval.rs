//! Compiling and evaluating rules with the `cel` crate: programs kept per thread (a
//! `cel::Program` is not `Sync`), errors in cel-go's words, and the results of a node's rules
//! remembered by what they read.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// Why a rule produced no value.
#[derive(Clone, Debug)]
pub enum RuleError {
    /// A function or variable the `cel` crate does not provide.
    Unsupported(String),
    /// `no such overload` at run time.
    Overload(String),
    /// Any other evaluation error (`no such key: x`), in cel-go's words where they differ.
    Failed(String),
}

/// One rule's outcome on one node.
#[derive(Clone, Debug)]
pub enum Outcome {
    Value(cel::Value),
    Error(RuleError),
    /// The `cel` crate cannot compile it (the API server, which did, would run it).
    NotCompiled(String),
    /// A transition rule (`oldSelf`) without a stored value to compare with: skipped, as the
    /// API server skips it on a create.
    Transition,
}

thread_local! {
    static ENV: Arc<cel::Env> = Arc::new(cel::Env::stdlib());
    static OUTCOMES: RefCell<HashMap<String, Rc<Vec<Outcome>>>> = RefCell::new(HashMap::new());
}

/// Bound on the remembered outcomes; they start over when full.
const REMEMBERED: usize = 16 * 1024;

/// Evaluation recurses no deeper than the parser let the expression nest (the `cel` crate
/// stops parsing at depth 96), so unlike compilation it needs no stack of its own.
/// `oldSelf` is bound only for a transition rule on an update.
pub fn evaluate(
    program: &cel::Program,
    self_value: &cel::Value,
    old_self: Option<&cel::Value>,
) -> Result<cel::Value, RuleError> {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut context = cel::Context::with_env(ENV.with(Arc::clone));
        context.add_variable_from_value("self", self_value.clone());
        if let Some(old) = old_self {
            context.add_variable_from_value("oldSelf", old.clone());
        }
        program.execute(&context)
    }));
    match run {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(classify(e)),
        Err(_) => Err(RuleError::Unsupported(
            "the CEL evaluator failed on this rule".into(),
        )),
    }
}

fn classify(e: cel::ExecutionError) -> RuleError {
    use cel::ExecutionError as E;
    match e {
        E::NoSuchKey(key) => RuleError::Failed(format!("no such key: {key}")),
        E::UndeclaredReference(name) => {
            RuleError::Unsupported(format!("undeclared reference to '{name}'"))
        }
        E::NotSupportedAsMethod { method, .. } => {
            RuleError::Unsupported(format!("undeclared reference to '{method}'"))
        }
        E::NoSuchOverload(_) => RuleError::Overload("no such overload".into()),
        E::DivisionByZero(_) => RuleError::Failed("division by zero".into()),
        E::RemainderByZero(_) => RuleError::Failed("modulus by zero".into()),
        E::Overflow(..) => RuleError::Failed("integer overflow".into()),
        other => RuleError::Failed(other.to_string()),
    }
}

/// The outcomes of a node's rules, remembered under `key` when there is one: a rule's result
/// is a function of the rule and what it reads, and manifests repeat the same shapes (every
/// `trigger: {auto: …}`, every `policyRefs` entry with a `kind`).
pub fn remembered(key: Option<String>, compute: impl FnOnce() -> Vec<Outcome>) -> Rc<Vec<Outcome>> {
    let Some(key) = key else {
        return Rc::new(compute());
    };
    if let Some(done) = OUTCOMES.with(|o| o.borrow().get(&key).cloned()) {
        return done;
    }
    let outcomes = Rc::new(compute());
    OUTCOMES.with(|o| {
        let mut o = o.borrow_mut();
        if o.len() >= REMEMBERED {
            o.clear();
        }
        o.insert(key, Rc::clone(&outcomes));
    });
    outcomes
}
