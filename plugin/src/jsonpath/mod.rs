//! kubectl's JSONPath templates (`-o jsonpath=…`), ported from client-go `util/jsonpath` and
//! cli-runtime's `JSONPathPrinter` (Kubernetes 1.32) so that the plugin prints the same bytes as
//! kubectl for the same JSON, errors included.
//!
//! A template is text with `{…}` actions: fields (`.a.b`, `['a.b']`), `*`, `..`, indexes and
//! slices with negative bounds and steps (`[-1]`, `[0:4:2]`), unions (`[0,2]`), filters
//! (`[?(@.x=="y")]`, `[?(@.x)]`), quoted text (`{"\t"}`) and `{range …}…{end}`. Results print as
//! Go prints them: maps and lists as compact JSON, floats as `1e+06`, `null` for a JSON null.
//!
//! ```
//! use kubectl_promotion::jsonpath::Template;
//! let object = serde_json::json!({"metadata": {"name": "demo"}, "spec": {"stages": [{"name": "dev"}, {"name": "prod"}]}});
//! let t = Template::parse(r#"{.metadata.name}:{range .spec.stages[*]} {.name}{end}"#).unwrap();
//! assert_eq!(t.render(&object, true).unwrap(), "demo: dev prod");
//! ```
//!
//! Kept differences from kubectl: members of a map are visited in key order by `*` and `..` (Go:
//! random order); where kubectl panics (indexing into a `range` over nothing, marshalling its
//! result) this port returns an error or `null`; `range` nesting is limited to 1000 levels; a
//! quoted `"\xff"` that is not UTF-8 becomes U+FFFD; outside ASCII, "letter" and "digit" follow
//! Rust's Unicode properties and "printable" Unicode 16.0's categories rather than Go's Unicode
//! 15.0 tables (this only changes which exotic characters an error message escapes).

mod eval;
mod parser;
mod print;
mod value;

#[cfg(test)]
mod upstream_tests;

use std::fmt;

use serde_json::Value;

use parser::Node;
pub(crate) use value::Val;

/// A parsed template at client-go's level: its errors are the bare reasons (`unclosed action`),
/// which is how custom-columns reports them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct JsonPath {
    nodes: Vec<Node>,
}

impl JsonPath {
    pub(crate) fn parse(text: &str) -> Result<JsonPath, String> {
        Ok(JsonPath {
            nodes: parser::parse(text)?,
        })
    }

    /// `FindResults`: the values of each top-level node, `range` blocks expanded.
    pub(crate) fn find_results<'a>(
        &'a self,
        data: &'a Value,
        allow_missing_keys: bool,
    ) -> Result<Vec<Vec<Val<'a>>>, String> {
        eval::Executor::new(&self.nodes, allow_missing_keys).find_results(data)
    }

    /// `Execute`: find every result first, then print them (nothing is printed on error).
    fn execute(
        &self,
        data: &Value,
        allow_missing_keys: bool,
        as_json: bool,
    ) -> Result<String, String> {
        let groups = self.find_results(data, allow_missing_keys)?;
        Ok(groups
            .iter()
            .map(|g| {
                if as_json {
                    print::group_json(g)
                } else {
                    print::group_text(g)
                }
            })
            .collect())
    }
}

/// Go's `%q`: how kubectl quotes a format or a template in its messages.
pub(crate) fn go_quote(text: &str) -> String {
    go_text::strconv::quote(text)
}

/// `fmt.Sprint` of one result, as custom-columns prints it (`map[a:b]`, `[x y]`, `<nil>`).
pub(crate) fn sprint(value: &Val<'_>) -> String {
    value.sprint()
}

/// A template as `-o jsonpath=TEMPLATE` takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    text: String,
    path: JsonPath,
}

/// kubectl's wording for a template that does not parse or does not execute.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `error parsing jsonpath {.x, unclosed action`
    #[error("error parsing jsonpath {template}, {reason}")]
    Parse { template: String, reason: String },
    /// `error executing jsonpath "{.x}": Error executing template: x is not found. Printing
    /// more information…`, with the object dump kubectl appends. The text ends in a blank line; the
    /// final newline kubectl prints after it is left to whoever prints the message.
    #[error(
        "error executing jsonpath {}: Error executing template: {reason}. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{template}\n\tobject given to jsonpath engine was:\n\t\t{object}\n\n",
        go_text::strconv::quote(.template)
    )]
    Execute {
        template: String,
        reason: String,
        /// The input as Go's `%#v` shows it.
        object: String,
    },
}

impl Error {
    /// The bare reason (`unclosed action`, `x is not found`).
    pub fn reason(&self) -> &str {
        match self {
            Error::Parse { reason, .. } | Error::Execute { reason, .. } => reason,
        }
    }
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, Error> {
        let path = JsonPath::parse(text).map_err(|reason| Error::Parse {
            template: text.to_string(),
            reason,
        })?;
        Ok(Template {
            text: text.to_string(),
            path,
        })
    }

    /// The template as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What `-o jsonpath=…` prints for `data` (no newline is added, as kubectl adds none).
    /// `allow_missing_keys` is `--allow-missing-template-keys` (kubectl's default: true).
    pub fn render(&self, data: &Value, allow_missing_keys: bool) -> Result<String, Error> {
        self.run(data, allow_missing_keys, false)
    }

    /// What `-o jsonpath-as-json=…` prints: each group as an indented JSON array and a newline.
    pub fn render_as_json(&self, data: &Value, allow_missing_keys: bool) -> Result<String, Error> {
        self.run(data, allow_missing_keys, true)
    }

    fn run(&self, data: &Value, allow_missing_keys: bool, as_json: bool) -> Result<String, Error> {
        self.path
            .execute(data, allow_missing_keys, as_json)
            .map_err(|reason| Error::Execute {
                template: self.text.clone(),
                reason,
                object: go_text::fmt::go_syntax(data),
            })
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
