//! What a rule reads, found once when the schema is read: the fields of `self` it selects,
//! whether it is a transition rule (`oldSelf`), and how a property name is spelt in it. The
//! compiled schema ([`super::structural`]) records this per node; evaluation
//! ([`super::cel_rules`]) uses it to bind only what a rule can observe.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr};

thread_local! {
    static PROGRAMS: RefCell<HashMap<String, Result<Rc<cel::Program>, String>>> =
        RefCell::new(HashMap::new());
}

/// What a rule reads, found once when the schema is read.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub uses_old_self: bool,
    /// `None` when the rule uses `self` as a whole, or does not compile.
    pub self_fields: Option<Vec<SelfField>>,
}

pub fn analyse(source: &str) -> Analysis {
    match compile(source) {
        Ok(p) => Analysis {
            uses_old_self: p.references().has_variable("oldSelf"),
            self_fields: self_fields(p.expression()),
        },
        Err(_) => Analysis::default(),
    }
}

/// Compile once per thread. The parser recurses, so it runs on a stack that can take any rule.
pub fn compile(source: &str) -> Result<Rc<cel::Program>, String> {
    PROGRAMS.with(|cache| {
        if let Some(done) = cache.borrow().get(source) {
            return done.clone();
        }
        let compiled = promotion_findings::on_parser_stack(|| {
            std::panic::catch_unwind(|| cel::Program::compile(source))
        });
        let result = match compiled {
            Ok(Ok(p)) => Ok(Rc::new(p)),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the CEL parser failed on this rule".to_string()),
        };
        cache
            .borrow_mut()
            .insert(source.to_string(), result.clone());
        result
    })
}

/// A field of `self` a rule reads, and whether it only tests its presence (`has(self.x)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelfField {
    pub name: String,
    pub presence_only: bool,
}

/// Add a field to a set, a value read winning over a presence test.
pub fn note(fields: &mut Vec<SelfField>, name: &str, presence_only: bool) {
    match fields.iter_mut().find(|f| f.name == name) {
        Some(f) => f.presence_only &= presence_only,
        None => fields.push(SelfField {
            name: name.to_string(),
            presence_only,
        }),
    }
}

/// The fields of `self` an expression reads, or `None` when it uses `self` other than by
/// selecting a field (compares it, iterates it, passes it to a function).
pub fn self_fields(e: &cel::IdedExpr) -> Option<Vec<SelfField>> {
    let mut fields = Vec::new();
    selects_only(e, &mut fields).then_some(fields)
}

fn selects_only(e: &cel::IdedExpr, fields: &mut Vec<SelfField>) -> bool {
    let entry = |en: &IdedEntryExpr, fields: &mut Vec<SelfField>| match &en.expr {
        EntryExpr::MapEntry(m) => selects_only(&m.key, fields) && selects_only(&m.value, fields),
        EntryExpr::StructField(f) => selects_only(&f.value, fields),
    };
    match &e.expr {
        Expr::Ident(name) => name != "self",
        Expr::Select(sel) => match &sel.operand.expr {
            Expr::Ident(name) if name == "self" => {
                note(fields, &sel.field, sel.test);
                true
            }
            _ => selects_only(&sel.operand, fields),
        },
        Expr::Call(call) => {
            call.target
                .as_deref()
                .is_none_or(|t| selects_only(t, fields))
                && call.args.iter().all(|a| selects_only(a, fields))
        }
        Expr::Comprehension(c) => {
            let rebinds = c.iter_var == "self"
                || c.accu_var == "self"
                || c.iter_var2.as_deref() == Some("self");
            !rebinds
                && [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]
                .into_iter()
                .all(|x| selects_only(x, fields))
        }
        Expr::List(list) => list.elements.iter().all(|x| selects_only(x, fields)),
        Expr::Map(map) => map.entries.iter().all(|en| entry(en, fields)),
        Expr::Struct(st) => st.entries.iter().all(|en| entry(en, fields)),
        Expr::Literal(_) | Expr::Unspecified => true,
    }
}

const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// `cel.Escape` (apiserver/pkg/cel/escaping.go): how a property name is spelt in a rule;
/// `None` for a name rules cannot reach.
pub fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '-' | '/'));
    let rest_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'));
    if !first_ok || !rest_ok {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_property_names_as_the_api_server() {
        assert_eq!(escape("delay").as_deref(), Some("delay"));
        assert_eq!(escape("my-key").as_deref(), Some("my__dash__key"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("x__y").as_deref(), Some("x__underscores__y"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }

    fn fields(rule: &str) -> Option<Vec<(String, bool)>> {
        let program = cel::Program::compile(rule).unwrap();
        self_fields(program.expression())
            .map(|f| f.into_iter().map(|f| (f.name, f.presence_only)).collect())
    }

    #[test]
    fn finds_the_fields_a_rule_reads() {
        assert_eq!(
            fields("has(self.manual) != has(self.auto)"),
            Some(vec![("manual".into(), true), ("auto".into(), true)])
        );
        assert_eq!(
            fields("self.repositoryURL.startsWith('http') ? size(self.chartName) >= 1 : true"),
            Some(vec![
                ("repositoryURL".into(), false),
                ("chartName".into(), false)
            ])
        );
        // Tested and read: the value is needed.
        assert_eq!(
            fields("!has(self.x) || self.x > 1"),
            Some(vec![("x".into(), false)])
        );
        assert_eq!(fields("self == oldSelf"), None);
        assert_eq!(fields("size(self) > 1"), None);
        assert_eq!(fields("self.all(k, k != 'x')"), None);
        assert_eq!(fields("[1].all(self, self > 0)"), None);
    }
}
