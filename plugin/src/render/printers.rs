//! `-o FORMAT` as kubectl reads it (`json|yaml|name|wide|jsonpath=…|jsonpath-file=…|
//! jsonpath-as-json=…|custom-columns=…|custom-columns-file=…`), with kubectl's errors, and the
//! template formats printed as `kubectl get` prints them.
//!
//! What `kubectl get` hands its printer matters for the bytes: one object asked for by name is
//! printed as it is; anything else becomes a `v1` `List` (`metadata.resourceVersion: ""`) whose
//! items went through a JSON round trip, which turns whole floats into integers (`1e+06` prints
//! `1000000` in a listing). [`Target`] and [`kubectl_list`] reproduce that.

use std::borrow::Cow;
use std::io;
use std::path::Path;

use serde_json::{json, Number, Value};

use crate::jsonpath::{self, Template};
use crate::render::custom_columns::{self, CustomColumns};

/// A format name as kubectl lists it in "allowed formats are: …".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FormatName {
    Json,
    Yaml,
    Name,
    Wide,
    JsonPath,
    JsonPathFile,
    JsonPathAsJson,
    CustomColumns,
    CustomColumnsFile,
}

impl FormatName {
    pub const fn as_str(self) -> &'static str {
        match self {
            FormatName::Json => "json",
            FormatName::Yaml => "yaml",
            FormatName::Name => "name",
            FormatName::Wide => "wide",
            FormatName::JsonPath => "jsonpath",
            FormatName::JsonPathFile => "jsonpath-file",
            FormatName::JsonPathAsJson => "jsonpath-as-json",
            FormatName::CustomColumns => "custom-columns",
            FormatName::CustomColumnsFile => "custom-columns-file",
        }
    }
}

const JSONPATH_FORMATS: [FormatName; 3] = [
    FormatName::JsonPath,
    FormatName::JsonPathFile,
    FormatName::JsonPathAsJson,
];
const TEMPLATE_FORMATS: [FormatName; 5] = [
    FormatName::JsonPath,
    FormatName::JsonPathFile,
    FormatName::JsonPathAsJson,
    FormatName::CustomColumns,
    FormatName::CustomColumnsFile,
];

/// A listing (`list`): everything `kubectl get` offers except Go templates.
pub const LIST_FORMATS: &[FormatName] = &[
    FormatName::Json,
    FormatName::Yaml,
    FormatName::Name,
    FormatName::Wide,
    FormatName::JsonPath,
    FormatName::JsonPathFile,
    FormatName::JsonPathAsJson,
    FormatName::CustomColumns,
    FormatName::CustomColumnsFile,
];

/// One stored object (`approve`): like a listing, without `wide`.
pub const OBJECT_FORMATS: &[FormatName] = &[
    FormatName::Json,
    FormatName::Yaml,
    FormatName::Name,
    FormatName::JsonPath,
    FormatName::JsonPathFile,
    FormatName::JsonPathAsJson,
    FormatName::CustomColumns,
    FormatName::CustomColumnsFile,
];

/// A computed document that is no Kubernetes object (`describe`, `version`): no `name`, no
/// table formats.
pub const MODEL_FORMATS: &[FormatName] = &[
    FormatName::Json,
    FormatName::Yaml,
    FormatName::JsonPath,
    FormatName::JsonPathFile,
    FormatName::JsonPathAsJson,
];

/// A parsed `-o` value.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputFormat {
    /// No `-o` (or `-o ""`): the command's own human view.
    Default,
    Json,
    Yaml,
    Name,
    Wide,
    /// `jsonpath=`, `jsonpath-file=` (the file's text), `jsonpath-as-json=`.
    JsonPath {
        template: Template,
        as_json: bool,
    },
    /// `custom-columns=` or `custom-columns-file=` (the file's spec).
    CustomColumns(CustomColumns),
}

/// kubectl's wording for an `-o` value it cannot use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PrinterError {
    #[error(
        "unable to match a printer suitable for the output format {}, allowed formats are: {allowed}",
        jsonpath::go_quote(.format)
    )]
    UnknownFormat { format: String, allowed: String },
    #[error("template format specified but no template given")]
    NoTemplate,
    #[error("error reading --template {path}, {reason}")]
    ReadTemplate { path: String, reason: String },
    #[error("error reading template {path}, {reason}")]
    ReadColumns { path: String, reason: String },
    #[error(transparent)]
    JsonPath(#[from] jsonpath::Error),
    #[error(transparent)]
    CustomColumns(#[from] custom_columns::Error),
}

/// What `kubectl get` hands its printer.
#[derive(Clone, Debug)]
pub enum Target<'a> {
    /// One object asked for by name (`get KIND NAME`), printed as it is.
    Object(&'a Value),
    /// What a listing found: jsonpath sees [`kubectl_list`] of the items, custom-columns prints
    /// one row per item. Hand the items over owned (`Target::List(objects.into())`) and they are
    /// not copied.
    List(Cow<'a, [Value]>),
}

/// The flags that go with `-o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrintOptions {
    /// `--allow-missing-template-keys` (kubectl's default: true).
    pub allow_missing_template_keys: bool,
    /// `--no-headers` (ignored by `custom-columns-file`, as kubectl ignores it).
    pub no_headers: bool,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions {
            allow_missing_template_keys: true,
            no_headers: false,
        }
    }
}

/// Go's error text for a failed `os.Open` / `os.ReadFile`.
fn go_os_error(path: &str, err: &io::Error) -> String {
    match err.kind() {
        io::ErrorKind::NotFound => format!("open {path}: no such file or directory"),
        io::ErrorKind::PermissionDenied => format!("open {path}: permission denied"),
        io::ErrorKind::IsADirectory => format!("read {path}: is a directory"),
        _ => {
            let text = err.to_string();
            let text = text.split(" (os error").next().unwrap_or(&text);
            let mut chars = text.chars();
            let lowered: String = chars
                .next()
                .map(|c| c.to_lowercase().chain(chars).collect())
                .unwrap_or_default();
            format!("open {path}: {lowered}")
        }
    }
}

/// `kind: List` as `kubectl get` builds it for several objects.
pub fn kubectl_list(mut items: Vec<Value>) -> Value {
    items.iter_mut().for_each(json_round_trip);
    // Built by hand: `json!` would serialize the items into a second copy.
    let mut list = serde_json::Map::new();
    list.insert("apiVersion".into(), Value::String("v1".into()));
    list.insert("items".into(), Value::Array(items));
    list.insert("kind".into(), Value::String("List".into()));
    list.insert("metadata".into(), json!({"resourceVersion": ""}));
    Value::Object(list)
}

/// A value as it comes back from Go encoding it to JSON and kubectl decoding that again: a whole
/// float that Go writes without an exponent and that fits int64 becomes an int64.
fn json_round_trip(value: &mut Value) {
    match value {
        Value::Number(n) if n.as_i64().is_none() => {
            // Go's text for the float64, read back as kubectl's decoder does (int64 when it can).
            let text = n.as_f64().and_then(go_text::json::format_float);
            if let Some(i) = text.and_then(|t| t.parse::<i64>().ok()) {
                *value = Value::Number(Number::from(i));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(json_round_trip),
        Value::Object(map) => map.values_mut().for_each(json_round_trip),
        _ => {}
    }
}

fn round_tripped(items: Cow<'_, [Value]>) -> Vec<Value> {
    let mut items = items.into_owned();
    items.iter_mut().for_each(json_round_trip);
    items
}

impl OutputFormat {
    /// Parse `-o VALUE` for a command that offers `allowed`, reading `jsonpath-file=` and
    /// `custom-columns-file=` from disk.
    pub fn parse(value: &str, allowed: &[FormatName]) -> Result<OutputFormat, PrinterError> {
        Self::parse_with(value, allowed, |p| std::fs::read_to_string(p))
    }

    /// [`OutputFormat::parse`] with the files read by `read`.
    pub fn parse_with(
        value: &str,
        allowed: &[FormatName],
        read: impl Fn(&Path) -> io::Result<String>,
    ) -> Result<OutputFormat, PrinterError> {
        let allows = |name: FormatName| allowed.contains(&name);
        if value.is_empty() {
            return Ok(OutputFormat::Default);
        }
        // kubectl compares json, yaml and name case-insensitively, everything else exactly.
        match value.to_lowercase().as_str() {
            "json" if allows(FormatName::Json) => return Ok(OutputFormat::Json),
            "yaml" if allows(FormatName::Yaml) => return Ok(OutputFormat::Yaml),
            "name" if allows(FormatName::Name) => return Ok(OutputFormat::Name),
            _ => {}
        }
        if value == "wide" && allows(FormatName::Wide) {
            return Ok(OutputFormat::Wide);
        }
        for name in TEMPLATE_FORMATS {
            if !allows(name) {
                continue;
            }
            let argument = if value == name.as_str() {
                ""
            } else {
                match value
                    .strip_prefix(name.as_str())
                    .and_then(|r| r.strip_prefix('='))
                {
                    Some(argument) => argument,
                    None => continue,
                }
            };
            return Self::template(name, argument, &read);
        }
        let mut names: Vec<&str> = allowed.iter().map(|f| f.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        Err(PrinterError::UnknownFormat {
            format: value.to_string(),
            allowed: names.join(","),
        })
    }

    fn template(
        name: FormatName,
        argument: &str,
        read: &impl Fn(&Path) -> io::Result<String>,
    ) -> Result<OutputFormat, PrinterError> {
        if JSONPATH_FORMATS.contains(&name) {
            if argument.is_empty() {
                return Err(PrinterError::NoTemplate);
            }
            let text = if name == FormatName::JsonPathFile {
                Cow::Owned(
                    read(Path::new(argument)).map_err(|e| PrinterError::ReadTemplate {
                        path: argument.to_string(),
                        reason: go_os_error(argument, &e),
                    })?,
                )
            } else {
                Cow::Borrowed(argument)
            };
            return Ok(OutputFormat::JsonPath {
                template: Template::parse(&text)?,
                as_json: name == FormatName::JsonPathAsJson,
            });
        }
        if name == FormatName::CustomColumnsFile && !argument.is_empty() {
            let text = match read(Path::new(argument)) {
                Ok(text) => text,
                // kubectl opens a directory fine and then reads no header line from it.
                Err(e) if e.kind() == io::ErrorKind::IsADirectory => String::new(),
                Err(e) => {
                    return Err(PrinterError::ReadColumns {
                        path: argument.to_string(),
                        reason: go_os_error(argument, &e),
                    })
                }
            };
            return Ok(OutputFormat::CustomColumns(CustomColumns::from_file(
                &text,
            )?));
        }
        Ok(OutputFormat::CustomColumns(CustomColumns::parse(argument)?))
    }

    /// The formats [`OutputFormat::render`] prints: the jsonpath and custom-columns families.
    pub fn is_template(&self) -> bool {
        matches!(
            self,
            OutputFormat::JsonPath { .. } | OutputFormat::CustomColumns(_)
        )
    }

    /// What kubectl prints for `target` in a template format; `None` for the formats a command
    /// prints itself (default, json, yaml, name, wide).
    pub fn render(
        &self,
        target: Target<'_>,
        options: PrintOptions,
    ) -> Result<Option<String>, PrinterError> {
        match self {
            OutputFormat::JsonPath { template, as_json } => {
                let input = match target {
                    Target::Object(object) => Cow::Borrowed(object),
                    Target::List(items) => Cow::Owned(kubectl_list(items.into_owned())),
                };
                let allow = options.allow_missing_template_keys;
                let text = if *as_json {
                    template.render_as_json(&input, allow)?
                } else {
                    template.render(&input, allow)?
                };
                Ok(Some(text))
            }
            OutputFormat::CustomColumns(columns) => {
                let rows: Cow<'_, [Value]> = match target {
                    Target::Object(object) => Cow::Borrowed(std::slice::from_ref(object)),
                    Target::List(items) => Cow::Owned(round_tripped(items)),
                };
                Ok(Some(columns.render(&rows, options.no_headers)?))
            }
            OutputFormat::Default
            | OutputFormat::Json
            | OutputFormat::Yaml
            | OutputFormat::Name
            | OutputFormat::Wide => Ok(None),
        }
    }
}

/// The value parser of each command's `-o`: any text is taken (checked later by
/// [`OutputFormat::parse`], so the errors are kubectl's), and `allowed` is what help and shell
/// completion offer.
#[derive(Clone, Copy)]
pub struct FormatArg(pub &'static [FormatName]);

impl clap::builder::TypedValueParser for FormatArg {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.0
                .iter()
                .map(|f| clap::builder::PossibleValue::new(f.as_str())),
        ))
    }
}

impl OutputFormat {
    /// A command's `-o` (absent: its own view); a value it does not offer is a usage error.
    pub fn of_flag(
        value: Option<&str>,
        allowed: &[FormatName],
    ) -> crate::error::Result<OutputFormat> {
        OutputFormat::parse(value.unwrap_or(""), allowed)
            .map_err(|e| crate::error::Error::Usage(e.to_string()))
    }

    /// [`OutputFormat::render`] for a command: a template that fails on the data is an error
    /// (kubectl's wording), and nothing has been printed.
    pub fn print(
        &self,
        target: Target<'_>,
        options: PrintOptions,
    ) -> crate::error::Result<Option<String>> {
        self.render(target, options)
            .map_err(|e| crate::error::Error::Invalid(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_files(_: &Path) -> io::Result<String> {
        Err(io::Error::from(io::ErrorKind::NotFound))
    }

    fn parse(value: &str) -> Result<OutputFormat, PrinterError> {
        OutputFormat::parse_with(value, LIST_FORMATS, no_files)
    }

    #[test]
    fn plain_formats_parse_as_kubectl_reads_them() {
        assert_eq!(parse(""), Ok(OutputFormat::Default));
        assert_eq!(parse("json"), Ok(OutputFormat::Json));
        assert_eq!(parse("JSON"), Ok(OutputFormat::Json));
        assert_eq!(parse("Yaml"), Ok(OutputFormat::Yaml));
        assert_eq!(parse("NAME"), Ok(OutputFormat::Name));
        assert_eq!(parse("wide"), Ok(OutputFormat::Wide));
        assert!(matches!(
            parse("WIDE"),
            Err(PrinterError::UnknownFormat { .. })
        ));
    }

    #[test]
    fn unknown_formats_list_the_allowed_ones_sorted() {
        assert_eq!(
            parse("x").unwrap_err().to_string(),
            "unable to match a printer suitable for the output format \"x\", allowed formats are: \
             custom-columns,custom-columns-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,wide,yaml"
        );
        assert_eq!(
            OutputFormat::parse_with("wide", MODEL_FORMATS, no_files)
                .unwrap_err()
                .to_string(),
            "unable to match a printer suitable for the output format \"wide\", allowed formats are: \
             json,jsonpath,jsonpath-as-json,jsonpath-file,yaml"
        );
        assert!(matches!(
            parse("JSONPATH={.a}"),
            Err(PrinterError::UnknownFormat { .. })
        ));
        assert!(matches!(
            parse("json=x"),
            Err(PrinterError::UnknownFormat { .. })
        ));
    }

    #[test]
    fn template_formats_need_their_argument() {
        for value in [
            "jsonpath",
            "jsonpath=",
            "jsonpath-file",
            "jsonpath-as-json=",
        ] {
            assert_eq!(parse(value), Err(PrinterError::NoTemplate), "{value}");
        }
        for value in ["custom-columns", "custom-columns=", "custom-columns-file"] {
            assert_eq!(
                parse(value).unwrap_err().to_string(),
                "custom-columns format specified but no custom columns given",
                "{value}"
            );
        }
        assert_eq!(
            parse("jsonpath={.x").unwrap_err().to_string(),
            "error parsing jsonpath {.x, unclosed action"
        );
    }

    #[test]
    fn template_files_are_read_and_missing_files_reported_as_kubectl_does() {
        assert_eq!(
            parse("jsonpath-file=/nonexist").unwrap_err().to_string(),
            "error reading --template /nonexist, open /nonexist: no such file or directory"
        );
        assert_eq!(
            parse("custom-columns-file=/nonexist")
                .unwrap_err()
                .to_string(),
            "error reading template /nonexist, open /nonexist: no such file or directory"
        );
        let read = |p: &Path| -> io::Result<String> {
            match p.to_str() {
                Some("t") => Ok("{.kind}".into()),
                Some("c") => Ok("K\n.kind\n".into()),
                Some("dir") => Err(io::Error::from(io::ErrorKind::IsADirectory)),
                _ => Err(io::Error::from(io::ErrorKind::NotFound)),
            }
        };
        let object = json!({"kind": "List"});
        let jp = OutputFormat::parse_with("jsonpath-file=t", LIST_FORMATS, read).unwrap();
        let cc = OutputFormat::parse_with("custom-columns-file=c", LIST_FORMATS, read).unwrap();
        let opts = PrintOptions {
            no_headers: true,
            ..PrintOptions::default()
        };
        assert_eq!(
            jp.render(Target::Object(&object), opts),
            Ok(Some("List".into()))
        );
        assert_eq!(
            cc.render(Target::Object(&object), opts),
            Ok(Some("K\nList\n".into()))
        );
        assert_eq!(
            OutputFormat::parse_with("custom-columns-file=dir", LIST_FORMATS, read)
                .unwrap_err()
                .to_string(),
            "invalid template, missing header line. Expected format is one line of space separated headers, one line of space separated column specs."
        );
    }

    #[test]
    fn a_listing_is_a_v1_list_whose_whole_floats_became_integers() {
        let items: Vec<Value> = vec![serde_json::from_str(
            r#"{"metadata":{"name":"a"},"spec":{"m":1e6,"f":1.5,"big":1e21,"neg":-0.0}}"#,
        )
        .unwrap()];
        let list = kubectl_list(items.clone());
        assert_eq!(
            serde_json::to_string(&list).unwrap(),
            r#"{"apiVersion":"v1","items":[{"metadata":{"name":"a"},"spec":{"m":1000000,"f":1.5,"big":1e+21,"neg":0}}],"kind":"List","metadata":{"resourceVersion":""}}"#
        );
        let jp = parse("jsonpath={.items[0].spec.m} {.metadata}").unwrap();
        assert_eq!(
            jp.render(
                Target::List(items.as_slice().into()),
                PrintOptions::default()
            ),
            Ok(Some(r#"1000000 {"resourceVersion":""}"#.into()))
        );
        assert_eq!(
            jp.render(Target::Object(&items[0]), PrintOptions::default()),
            Ok(Some(r#" {"name":"a"}"#.into()))
        );
        let single = parse("jsonpath={.spec.m}").unwrap();
        assert_eq!(
            single.render(Target::Object(&items[0]), PrintOptions::default()),
            Ok(Some("1e+06".into()))
        );
        let cc = parse("custom-columns=M:.spec.m").unwrap();
        assert_eq!(
            cc.render(
                Target::List(items.as_slice().into()),
                PrintOptions::default()
            ),
            Ok(Some("M\n1000000\n".into()))
        );
        assert_eq!(
            parse("json").unwrap().render(
                Target::List(items.as_slice().into()),
                PrintOptions::default()
            ),
            Ok(None)
        );
    }

    #[test]
    fn missing_keys_fail_only_when_not_allowed() {
        let object = json!({"kind": "ClusterPromotion"});
        let jp = parse("jsonpath={.x}").unwrap();
        assert_eq!(
            jp.render(Target::Object(&object), PrintOptions::default()),
            Ok(Some(String::new()))
        );
        let strict = PrintOptions {
            allow_missing_template_keys: false,
            ..PrintOptions::default()
        };
        assert_eq!(
            jp.render(Target::Object(&object), strict)
                .unwrap_err()
                .to_string(),
            "error executing jsonpath \"{.x}\": Error executing template: x is not found. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{.x}\n\tobject given to jsonpath engine was:\n\t\tmap[string]interface {}{\"kind\":\"ClusterPromotion\"}\n\n"
        );
    }
}
