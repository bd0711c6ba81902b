//! `-o custom-columns=HEADER:PATH,…` and `-o custom-columns-file=FILE`, ported from kubectl's
//! `pkg/cmd/get/customcolumn.go` (Kubernetes 1.32): the relaxed path syntax (`metadata.name`,
//! `.metadata.name`, `{metadata.name}`, `{.metadata.name}`), `<none>` for a path with no value,
//! several values joined by `,`, each value as Go's `fmt` prints it (`map[a:b]`, `[x y]`,
//! `<nil>`) with ESC and CR made visible, and the columns aligned as kubectl's tabwriter aligns
//! them.
//!
//! Differences from kubectl, both deliberate: a column path that does not parse is reported when
//! the spec is parsed, not after the header is printed; an evaluation error prints nothing at all,
//! where kubectl has already printed the header and earlier rows.

mod tabwriter;

use serde_json::Value;

use crate::jsonpath::{self, JsonPath};

/// One column: its header and the jsonpath template of its values.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub header: String,
    /// The template as kubectl completes it (`{.metadata.name}`).
    pub field_spec: String,
    path: JsonPath,
}

/// A parsed custom-columns spec.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomColumns {
    columns: Vec<Column>,
    /// kubectl ignores `--no-headers` for `custom-columns-file`.
    honours_no_headers: bool,
}

/// kubectl's wording for a spec it rejects or a value path that fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

const RELAXED_PATH_ERROR: &str = "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'";
const FILE_FORMAT: &str = "Expected format is one line of space separated headers, one line of space separated column specs.";

/// `RelaxedJSONPathExpression`: accept `a.b`, `.a.b`, `{a.b}`, `{.a.b}` and make `{.a.b}`. The
/// empty path stays empty (a column that is always `<none>`).
pub fn relaxed_jsonpath(expression: &str) -> Result<String, Error> {
    if expression.is_empty() {
        return Ok(String::new());
    }
    // `^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`: the optional dot is dropped only when something follows.
    let body = match expression.strip_prefix('{') {
        Some(rest) => rest
            .strip_suffix('}')
            .ok_or_else(|| Error(RELAXED_PATH_ERROR.into()))?,
        None => expression,
    };
    let field = match body.strip_prefix('.') {
        Some(rest) if !rest.is_empty() => rest,
        _ => body,
    };
    if field.is_empty() || field.contains(['{', '}']) {
        return Err(Error(RELAXED_PATH_ERROR.into()));
    }
    Ok(format!("{{.{field}}}"))
}

impl Column {
    fn new(header: &str, expression: &str) -> Result<Column, Error> {
        let field_spec = relaxed_jsonpath(expression)?;
        let path = JsonPath::parse(&field_spec).map_err(Error)?;
        Ok(Column {
            header: header.to_string(),
            field_spec,
            path,
        })
    }

    /// The cell for one object: every value, `,`-separated, or `<none>`.
    fn cell(&self, object: &Value) -> Result<String, Error> {
        let groups = self.path.find_results(object, true).map_err(Error)?;
        let mut values: Vec<String> = Vec::new();
        if groups.first().is_none_or(Vec::is_empty) {
            values.push("<none>".into());
        }
        for group in &groups {
            for value in group {
                values.push(escape_terminal(&jsonpath::sprint(value)));
            }
        }
        Ok(values.join(","))
    }
}

/// `printers.EscapeTerminal`: ESC and CR made visible so a value cannot drive the terminal.
fn escape_terminal(text: &str) -> String {
    text.replace('\u{1b}', "^[").replace('\r', "\\r")
}

impl CustomColumns {
    /// `-o custom-columns=SPEC`: `HEADER:PATH` pairs separated by commas.
    pub fn parse(spec: &str) -> Result<CustomColumns, Error> {
        if spec.is_empty() {
            return Err(Error(
                "custom-columns format specified but no custom columns given".into(),
            ));
        }
        let columns = spec
            .split(',')
            .map(|part| {
                let (header, expression) = part.split_once(':').ok_or_else(|| {
                    Error(format!(
                        "unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>"
                    ))
                })?;
                Column::new(header, expression)
            })
            .collect::<Result<_, _>>()?;
        Ok(CustomColumns {
            columns,
            honours_no_headers: true,
        })
    }

    /// `-o custom-columns-file=FILE`, given the file's text: a line of headers, then a line of
    /// paths, both whitespace-separated.
    pub fn from_file(text: &str) -> Result<CustomColumns, Error> {
        // bufio.Scanner's lines: split at `\n`, one trailing `\r` dropped.
        let mut lines = text
            .split_inclusive('\n')
            .map(|l| l.strip_suffix('\n').unwrap_or(l))
            .map(|l| l.strip_suffix('\r').unwrap_or(l));
        let headers: Vec<&str> = lines
            .next()
            .ok_or_else(|| {
                Error(format!(
                    "invalid template, missing header line. {FILE_FORMAT}"
                ))
            })?
            .split_whitespace()
            .collect();
        let specs: Vec<&str> = lines
            .next()
            .ok_or_else(|| {
                Error(format!(
                    "invalid template, missing spec line. {FILE_FORMAT}"
                ))
            })?
            .split_whitespace()
            .collect();
        if headers.len() != specs.len() {
            return Err(Error(format!(
                "number of headers ({}) and field specifications ({}) don't match",
                headers.len(),
                specs.len()
            )));
        }
        let columns = headers
            .iter()
            .zip(&specs)
            .map(|(h, s)| Column::new(h, s))
            .collect::<Result<_, _>>()?;
        Ok(CustomColumns {
            columns,
            honours_no_headers: false,
        })
    }

    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The table kubectl prints for these objects (the items of a list, or one object): the
    /// header line unless `no_headers` (which a spec from a file ignores, as kubectl does), then
    /// one line per object, aligned.
    pub fn render(&self, objects: &[Value], no_headers: bool) -> Result<String, Error> {
        let mut table = String::new();
        if !(no_headers && self.honours_no_headers) {
            let headers: Vec<&str> = self.columns.iter().map(|c| c.header.as_str()).collect();
            table.push_str(&headers.join("\t"));
            table.push('\n');
        }
        for object in objects {
            let cells = self
                .columns
                .iter()
                .map(|c| c.cell(object))
                .collect::<Result<Vec<_>, _>>()?;
            table.push_str(&cells.join("\t"));
            table.push('\n');
        }
        let mut writer = tabwriter::TabWriter::new();
        writer.write(&table);
        Ok(writer.finish())
    }
}

#[cfg(test)]
mod tests {
    //! kubectl `customcolumn_test.go`, every case (Pods become their JSON).

    use super::*;
    use serde_json::json;

    #[test]
    fn massage_jsonpath() {
        let cases = [
            ("foo.bar", Some("{.foo.bar}")),
            ("{foo.bar}", Some("{.foo.bar}")),
            (".foo.bar", Some("{.foo.bar}")),
            ("{.foo.bar}", Some("{.foo.bar}")),
            ("", Some("")),
            ("{foo.bar", None),
            ("foo.bar}", None),
            ("{foo.bar}}", None),
            ("{{foo.bar}", None),
            // Only a dot: the dot is the path, which makes `..`.
            (".", Some("{..}")),
        ];
        for (input, want) in cases {
            let got = relaxed_jsonpath(input).ok();
            assert_eq!(got.as_deref(), want, "{input}");
        }
    }

    fn specs(c: &CustomColumns) -> Vec<(String, String)> {
        c.columns()
            .iter()
            .map(|c| (c.header.clone(), c.field_spec.clone()))
            .collect()
    }

    fn pair(h: &str, s: &str) -> (String, String) {
        (h.to_string(), s.to_string())
    }

    #[test]
    fn new_column_printer_from_spec() {
        for bad in ["", "invalid", "invalid=foobar", "invalid,foobar:blah"] {
            assert!(CustomColumns::parse(bad).is_err(), "{bad}");
        }
        let ok = CustomColumns::parse("NAME:metadata.name,API_VERSION:apiVersion").unwrap();
        assert_eq!(
            specs(&ok),
            [
                pair("NAME", "{.metadata.name}"),
                pair("API_VERSION", "{.apiVersion}")
            ]
        );
        let no_headers = CustomColumns::parse("API_VERSION:apiVersion").unwrap();
        let out = no_headers.render(&[json!({"kind": "Pod"})], true).unwrap();
        assert!(!out.split_whitespace().any(|w| w == "API_VERSION"), "{out}");
        assert_eq!(
            CustomColumns::parse("").unwrap_err().to_string(),
            "custom-columns format specified but no custom columns given"
        );
        assert_eq!(
            CustomColumns::parse("invalid").unwrap_err().to_string(),
            "unexpected custom-columns spec: invalid, expected <header>:<json-path-expr>"
        );
        assert_eq!(
            CustomColumns::parse("A:{.x").unwrap_err().to_string(),
            RELAXED_PATH_ERROR
        );
        assert_eq!(
            CustomColumns::parse("A:.x[").unwrap_err().to_string(),
            "unterminated array"
        );
    }

    #[test]
    fn new_column_printer_from_template() {
        for bad in ["", "invalid", "invalid=foobar", "invalid,foobar:blah"] {
            assert!(CustomColumns::from_file(bad).is_err(), "{bad}");
        }
        let one = "NAME               API_VERSION\n{metadata.name}    {apiVersion}";
        let two =
            "NAME               \t\tAPI_VERSION\n\t\t\t\t\t\t\t{metadata.name}    {apiVersion}";
        for text in [one, two] {
            let c = CustomColumns::from_file(text).unwrap();
            assert_eq!(
                specs(&c),
                [
                    pair("NAME", "{.metadata.name}"),
                    pair("API_VERSION", "{.apiVersion}")
                ]
            );
        }
        assert_eq!(
            CustomColumns::from_file("A B\n.x").unwrap_err().to_string(),
            "number of headers (2) and field specifications (1) don't match"
        );
        assert_eq!(
            CustomColumns::from_file("A\r\n.x\r\n").map(|c| specs(&c)),
            Ok(vec![pair("A", "{.x}")])
        );
    }

    fn printer(columns: &[(&str, &str)]) -> CustomColumns {
        let spec: Vec<String> = columns.iter().map(|(h, s)| format!("{h}:{s}")).collect();
        CustomColumns::parse(&spec.join(",")).unwrap()
    }

    #[test]
    fn column_print() {
        let foo = json!({"metadata": {"name": "foo"}});
        let foo_baz = json!({"apiVersion": "baz", "metadata": {"name": "foo"}});
        let bar = json!({"metadata": {"name": "bar"}});
        let name = printer(&[("NAME", "{.metadata.name}")]);
        assert_eq!(
            name.render(std::slice::from_ref(&foo), false).unwrap(),
            "NAME\nfoo\n"
        );
        assert_eq!(name.render(&[foo, bar], false).unwrap(), "NAME\nfoo\nbar\n");
        let two = printer(&[
            ("NAME", "{.metadata.name}"),
            ("API_VERSION", "{.apiVersion}"),
        ]);
        assert_eq!(
            two.render(std::slice::from_ref(&foo_baz), false).unwrap(),
            "NAME   API_VERSION\nfoo    baz\n"
        );
        let three = printer(&[
            ("NAME", "{.metadata.name}"),
            ("API_VERSION", "{.apiVersion}"),
            ("NOT_FOUND", "{.notFound}"),
        ]);
        assert_eq!(
            three.render(&[foo_baz], false).unwrap(),
            "NAME   API_VERSION   NOT_FOUND\nfoo    baz           <none>\n"
        );
    }

    #[test]
    fn individual_print_obj_on_existing_tab_writer() {
        let c = printer(&[
            ("NAME", "{.metadata.name}"),
            ("LONG COLUMN NAME", "{.metadata.labels.label1}"),
            ("LABEL 2", "{.metadata.labels.label2}"),
        ]);
        let objects = [
            json!({"metadata": {"name": "foo", "labels": {"label1": "foo", "label2": "foo"}}}),
            json!({"metadata": {"name": "bar", "labels": {"label1": "bar", "label2": "bar"}}}),
        ];
        assert_eq!(
            c.render(&objects, false).unwrap(),
            "NAME   LONG COLUMN NAME   LABEL 2\nfoo    foo                foo\nbar    bar                bar\n"
        );
    }

    #[test]
    fn slice_column_print() {
        let pod = json!({
            "metadata": {"name": "fake-name", "namespace": "fake-namespace"},
            "spec": {"containers": [{"name": "fake0"}, {"name": "fake1"}, {"name": "fake2"}, {"name": "fake3"}]}
        });
        let cases: [(&str, Option<&str>); 18] = [
            ("CONTAINER:.spec.containers[0].name", Some("fake0")),
            ("CONTAINER:.spec.containers[3].name", Some("fake3")),
            ("CONTAINER:.spec.containers[5].name", None),
            ("CONTAINER:.spec.containers[-1].name", Some("fake3")),
            ("CONTAINER:.spec.containers[-2].name", Some("fake2")),
            ("CONTAINER:.spec.containers[-4].name", Some("fake0")),
            ("CONTAINER:.spec.containers[-5].name", None),
            ("CONTAINER:.spec.containers[0:0].name", Some("<none>")),
            (
                "CONTAINER:.spec.containers[0:3].name",
                Some("fake0,fake1,fake2"),
            ),
            (
                "CONTAINER:.spec.containers[1:].name",
                Some("fake1,fake2,fake3"),
            ),
            ("CONTAINER:.spec.containers[3:1].name", None),
            (
                "CONTAINER:.spec.containers[0:-1].name",
                Some("fake0,fake1,fake2"),
            ),
            ("CONTAINER:.spec.containers[-1:].name", Some("fake3")),
            (
                "CONTAINER:.spec.containers[-4:].name",
                Some("fake0,fake1,fake2,fake3"),
            ),
            (
                "CONTAINER:.spec.containers[-3:-1].name",
                Some("fake1,fake2"),
            ),
            ("CONTAINER:.spec.containers[-2:-3].name", None),
            ("CONTAINER:.spec.containers[4:4].name", Some("<none>")),
            ("CONTAINER:.spec.containers[-5:-5].name", Some("<none>")),
        ];
        for (spec, want) in cases {
            let out = CustomColumns::parse(spec)
                .unwrap()
                .render(std::slice::from_ref(&pod), false);
            match want {
                Some(cell) => assert_eq!(out, Ok(format!("CONTAINER\n{cell}\n")), "{spec}"),
                None => assert!(out.is_err(), "{spec}: {out:?}"),
            }
        }
        assert_eq!(
            CustomColumns::parse("C:.spec.containers[5].name")
                .unwrap()
                .render(&[pod], false)
                .unwrap_err()
                .to_string(),
            "array index out of bounds: index 5, length 4"
        );
    }

    #[test]
    fn values_print_as_go_and_terminal_escapes_are_visible() {
        let object =
            json!({"spec": {"m": {"b": [1, null], "a": "x"}, "f": 1e6, "s": "\u{1b}[31mred\r"}});
        let c = printer(&[("M", ".spec.m"), ("F", ".spec.f"), ("S", ".spec.s")]);
        assert_eq!(
            c.render(&[object], false).unwrap(),
            "M                      F       S\nmap[a:x b:[1 <nil>]]   1e+06   ^[[31mred\\r\n"
        );
    }

    #[test]
    fn a_file_spec_always_prints_its_header() {
        let c = CustomColumns::from_file("NAME\n.metadata.name\n").unwrap();
        let out = c
            .render(&[json!({"metadata": {"name": "a"}})], true)
            .unwrap();
        assert_eq!(out, "NAME\na\n");
        assert_eq!(c.render(&[], false).unwrap(), "NAME\n");
    }
}
