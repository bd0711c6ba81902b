//! One failure of a schema check: which check failed ([`Keyword`]), the API server's words
//! for it, and how the `x-kubernetes-validations` rules are run ([`RuleMode`]). Shared by every
//! phase of [`super::validate`] and by the rule evaluator it calls.

use super::field_error::{FieldError, FieldErrorKind};

/// The schema keyword (or step) a violation comes from: what lint turns into a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Keyword {
    Type,
    Format,
    Required,
    Enum,
    Minimum,
    Maximum,
    MultipleOf,
    MinLength,
    MaxLength,
    Pattern,
    MinItems,
    MaxItems,
    MinProperties,
    MaxProperties,
    /// `anyOf`, `oneOf`, `allOf` or `not`.
    Combinator,
    /// `x-kubernetes-list-type: map|set` duplicates.
    Duplicate,
    /// An `x-kubernetes-validations` rule that evaluated to false, or failed to evaluate.
    Rule,
    /// A rule this implementation cannot evaluate (a function it lacks); the API server can.
    RuleUnchecked,
    /// The API server's note that rules were skipped because of earlier (blocking) errors.
    RulesSkipped,
    /// `metadata` (`ValidateObjectMeta`).
    Metadata,
}

/// One schema violation: the API server's field error, the keyword behind it, and lint's hint
/// on how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub keyword: Keyword,
    pub error: FieldError,
    pub hint: Option<String>,
}

impl Violation {
    pub(super) fn new(keyword: Keyword, error: FieldError) -> Self {
        Violation {
            keyword,
            error,
            hint: None,
        }
    }

    pub(super) fn hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    /// `hasBlockingErr`: errors after which the API server runs no CEL rule.
    pub fn is_blocking(&self) -> bool {
        matches!(
            self.error.kind,
            FieldErrorKind::NotSupported
                | FieldErrorKind::Required
                | FieldErrorKind::TooLong
                | FieldErrorKind::TooMany
                | FieldErrorKind::TypeInvalid
        )
    }
}

/// How CEL rules are run after schema errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleMode {
    /// As the API server: no rule at all once any blocking error was found, and one
    /// `<nil>` error saying so.
    Server,
    /// Every rule whose node holds no blocking error, so one pass reports all a user will
    /// meet on the way to a valid object.
    Exhaustive,
}
