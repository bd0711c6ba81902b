//! A structural schema (`openAPIV3Schema`) read once into a typed tree, as the apiextensions
//! server does (`schema.Structural`): every keyword and `x-kubernetes-*` extension the API
//! server acts on, patterns compiled, and for each node whether any CEL rule or list-type
//! invariant lies at or below it (so the walks for those skip the rest of the object).

use serde_json::Value;

use super::rule_reads::{analyse, Analysis, SelfField};

/// `additionalProperties`.
#[derive(Debug, Clone, Default)]
pub enum Additional {
    /// Not set (or `false`): only declared properties.
    #[default]
    None,
    /// `true`: a map of anything, kept as sent.
    Any,
    Schema(Box<Node>),
}

/// One `x-kubernetes-validations` entry.
#[derive(Debug, Clone)]
pub struct Rule {
    pub rule: String,
    pub message: Option<String>,
    pub message_expression: Option<String>,
    pub field_path: Option<String>,
    pub reason: Option<String>,
    /// What the rule reads (for binding only that, and remembering results).
    pub analysis: Analysis,
}

#[derive(Debug, Clone, Default)]
pub struct Node {
    /// `type`, `""` when absent (as for `x-kubernetes-int-or-string`).
    pub type_: String,
    pub nullable: bool,
    pub int_or_string: bool,
    pub preserve_unknown: bool,
    pub embedded_resource: bool,
    /// Declared properties, in the schema's order.
    pub properties: Option<Vec<(String, Node)>>,
    /// For each declared property, its name in CEL rules (`None`: rules cannot reach it).
    pub cel_names: Vec<Option<String>>,
    pub additional: Additional,
    pub items: Option<Box<Node>>,
    pub required: Vec<String>,
    pub enumeration: Option<Vec<Value>>,
    pub default: Option<Value>,
    pub format: Option<String>,
    /// The pattern and its compiled form (`None` when it does not compile: the API server
    /// refuses such a CRD up front, so it rejects nothing here).
    pub pattern: Option<(String, Option<regex::Regex>)>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: bool,
    pub exclusive_maximum: bool,
    pub multiple_of: Option<f64>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub all_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub rules: Vec<Rule>,
    /// The fields of `self` this node's rules and message expressions read, when none uses
    /// `self` as a whole.
    pub rules_self_fields: Option<Vec<SelfField>>,
    /// This node's rules, as one key for their remembered outcomes.
    pub rules_id: String,
    /// A rule at this node or below.
    pub rules_below: bool,
    /// An `x-kubernetes-list-type: map|set` at this node or below.
    pub lists_below: bool,
    /// A `default` on a property of this node or below.
    pub defaults_below: bool,
}

fn text(schema: &Value, key: &str) -> Option<String> {
    schema.get(key).and_then(Value::as_str).map(str::to_string)
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn count(schema: &Value, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

fn number(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

fn list(schema: &Value, key: &str) -> Vec<Node> {
    schema
        .get(key)
        .and_then(Value::as_array)
        .map(|items| items.iter().map(Node::compile).collect())
        .unwrap_or_default()
}

/// The union of what a node's rules (and their message expressions) read of `self`.
fn rules_self_fields(rules: &[Rule]) -> Option<Vec<SelfField>> {
    let mut all: Vec<SelfField> = Vec::new();
    for rule in rules {
        let mut read = rule.analysis.self_fields.clone()?;
        if let Some(expr) = &rule.message_expression {
            read.extend(analyse(expr).self_fields?);
        }
        for f in read {
            super::rule_reads::note(&mut all, &f.name, f.presence_only);
        }
    }
    Some(all)
}

impl Node {
    pub fn compile(schema: &Value) -> Node {
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .map(|(k, v)| (k.clone(), Node::compile(v)))
                    .collect::<Vec<_>>()
            });
        let additional = match schema.get("additionalProperties") {
            Some(v @ Value::Object(_)) => Additional::Schema(Box::new(Node::compile(v))),
            Some(Value::Bool(true)) => Additional::Any,
            _ => Additional::None,
        };
        let rules = schema
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| {
                let rule = text(r, "rule")?;
                Some(Rule {
                    analysis: analyse(&rule),
                    rule,
                    message: text(r, "message"),
                    message_expression: text(r, "messageExpression"),
                    field_path: text(r, "fieldPath"),
                    reason: text(r, "reason"),
                })
            })
            .collect::<Vec<_>>();
        let cel_names = properties
            .iter()
            .flatten()
            .map(|(k, _)| super::rule_reads::escape(k))
            .collect();
        let mut node = Node {
            cel_names,
            type_: text(schema, "type").unwrap_or_default(),
            nullable: flag(schema, "nullable"),
            int_or_string: flag(schema, "x-kubernetes-int-or-string"),
            preserve_unknown: flag(schema, "x-kubernetes-preserve-unknown-fields"),
            embedded_resource: flag(schema, "x-kubernetes-embedded-resource"),
            properties,
            additional,
            items: schema.get("items").map(|i| Box::new(Node::compile(i))),
            required: schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            enumeration: schema.get("enum").and_then(Value::as_array).cloned(),
            default: schema.get("default").cloned(),
            format: text(schema, "format"),
            pattern: text(schema, "pattern").map(|p| {
                let re = regex::Regex::new(&p).ok();
                (p, re)
            }),
            min_length: count(schema, "minLength"),
            max_length: count(schema, "maxLength"),
            min_items: count(schema, "minItems"),
            max_items: count(schema, "maxItems"),
            min_properties: count(schema, "minProperties"),
            max_properties: count(schema, "maxProperties"),
            minimum: number(schema, "minimum"),
            maximum: number(schema, "maximum"),
            exclusive_minimum: flag(schema, "exclusiveMinimum"),
            exclusive_maximum: flag(schema, "exclusiveMaximum"),
            multiple_of: number(schema, "multipleOf"),
            any_of: list(schema, "anyOf"),
            one_of: list(schema, "oneOf"),
            all_of: list(schema, "allOf"),
            not: schema.get("not").map(|n| Box::new(Node::compile(n))),
            list_type: text(schema, "x-kubernetes-list-type"),
            list_map_keys: schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| {
                    k.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            rules_self_fields: rules_self_fields(&rules),
            rules_id: rules
                .iter()
                .map(|r| r.rule.as_str())
                .collect::<Vec<_>>()
                .join("\u{1}"),
            rules,
            rules_below: false,
            lists_below: false,
            defaults_below: false,
        };
        let children = node.children();
        let rules_below = !node.rules.is_empty() || children.iter().any(|c| c.rules_below);
        let lists_below = matches!(node.list_type.as_deref(), Some("map" | "set"))
            || children.iter().any(|c| c.lists_below);
        let defaults_below = children
            .iter()
            .any(|c| c.default.is_some() || c.defaults_below);
        node.rules_below = rules_below;
        node.lists_below = lists_below;
        node.defaults_below = defaults_below;
        node
    }

    fn children(&self) -> Vec<&Node> {
        let mut out: Vec<&Node> = self.properties.iter().flatten().map(|(_, n)| n).collect();
        out.extend(self.items.as_deref());
        if let Additional::Schema(n) = &self.additional {
            out.push(n);
        }
        out
    }

    /// A declared property.
    pub fn property(&self, name: &str) -> Option<&Node> {
        self.property_at(name).map(|(_, n)| n)
    }

    /// A declared property and its position.
    pub fn property_at(&self, name: &str) -> Option<(usize, &Node)> {
        self.properties
            .as_ref()?
            .iter()
            .enumerate()
            .find(|(_, (k, _))| k == name)
            .map(|(i, (_, n))| (i, n))
    }

    /// The declared property a rule names `cel_name`, as written in JSON.
    pub fn property_named_in_cel(&self, cel_name: &str) -> Option<&str> {
        let i = self
            .cel_names
            .iter()
            .position(|n| n.as_deref() == Some(cel_name))?;
        self.properties.as_ref().map(|p| p[i].0.as_str())
    }

    /// `additionalProperties` as a schema.
    pub fn additional(&self) -> Option<&Node> {
        match &self.additional {
            Additional::Schema(n) => Some(n),
            _ => None,
        }
    }

    /// The names a user could have meant at this node: its declared properties.
    pub fn property_names(&self) -> Vec<String> {
        self.properties
            .iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect()
    }
}
