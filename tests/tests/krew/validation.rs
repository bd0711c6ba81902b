//! A port of the checks krew-index CI runs on a plugin manifest, so the release manifest is
//! judged by krew's rules rather than by ours:
//! - `sigs.k8s.io/krew/cmd/validate-krew-manifest` (`validateManifestFile`): the file extension,
//!   the plugin name taken from the file name, `ValidatePlugin`, line-length warnings, every
//!   platform selecting a supported os/arch, and no os/arch selected twice;
//! - `internal/index/validation/validate.go`: `ValidatePlugin`, `validatePlatform`,
//!   `validateFiles`, `validateSelector`, `IsSafePluginName`;
//! - `internal/installation/semver` (a leading `v`, then `k8s.io/apimachinery`'s
//!   `version.ParseSemantic`).
//!
//! Like krew, validation stops at the first error; messages are krew's. The last step of
//! `validate-krew-manifest`, installing every platform with `kubectl krew install`, is what the
//! install test in `main.rs` does for the host platform.

use serde_json::{Map, Value};

/// `constants.CurrentAPIVersion`.
pub const API_VERSION: &str = "krew.googlecontainertools.github.com/v1alpha2";

/// `allPlatforms()`: the os/arch pairs krew supports.
pub const PLATFORMS: [(&str, &str); 11] = [
    ("windows", "386"),
    ("windows", "amd64"),
    ("windows", "arm64"),
    ("linux", "386"),
    ("linux", "amd64"),
    ("linux", "arm"),
    ("linux", "arm64"),
    ("linux", "ppc64le"),
    ("darwin", "386"),
    ("darwin", "amd64"),
    ("darwin", "arm64"),
];

const WINDOWS_FORBIDDEN: [&str; 22] = [
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
    "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

/// `validateManifestFile`: `Ok` with krew's warnings, or krew's first error.
pub fn validate_manifest_file(file_name: &str, plugin: &Value) -> Result<Vec<String>, String> {
    let Some(name) = file_name.strip_suffix(".yaml") else {
        let ext = file_name.rfind('.').map(|i| &file_name[i..]).unwrap_or("");
        return Err(format!(
            "expected manifest extension \".yaml\" but found {ext:?}"
        ));
    };
    validate_plugin(name, plugin).map_err(|e| format!("plugin validation error: {e}"))?;
    let spec = &plugin["spec"];
    let mut warnings = Vec::new();
    for (field, max) in [
        ("description", 80),
        ("shortDescription", 70),
        ("caveats", 80),
    ] {
        if !line_lengths_ok(spec[field].as_str().unwrap_or(""), max) {
            warnings.push(format!("line length in `{field}` exceeds {max} characters"));
        }
    }
    let platforms = spec["platforms"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (i, p) in platforms.iter().enumerate() {
        if !PLATFORMS
            .iter()
            .any(|pair| selector_matches(&p["selector"], *pair))
        {
            return Err(format!(
                "spec.platform[{i}]'s selector ({}) doesn't match any supported platforms",
                p["selector"]
            ));
        }
    }
    for (os, arch) in PLATFORMS {
        let matching: Vec<usize> = (0..platforms.len())
            .filter(|i| selector_matches(&platforms[*i]["selector"], (os, arch)))
            .collect();
        if matching.len() > 1 {
            return Err(format!(
                "overlapping platform selectors found: multiple spec.platforms (at indexes \
                 {matching:?}) have overlapping selectors that select os={os}/arch={arch}"
            ));
        }
    }
    Ok(warnings)
}

/// `IsSafePluginName`: `^[\w-]+$` and not a reserved Windows device name.
pub fn is_safe_plugin_name(name: &str) -> bool {
    // RE2's `\w` is ASCII: [0-9A-Za-z_].
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !WINDOWS_FORBIDDEN
            .iter()
            .any(|f| f.eq_ignore_ascii_case(name))
}

/// `ValidatePlugin(name, p)`.
pub fn validate_plugin(name: &str, p: &Value) -> Result<(), String> {
    let api_version = p["apiVersion"].as_str().unwrap_or("");
    if api_version != API_VERSION {
        return Err(format!(
            "plugin manifest has apiVersion={api_version:?}, not supported in this version of \
             krew (try updating plugin index or install a newer version of krew)"
        ));
    }
    let kind = p["kind"].as_str().unwrap_or("");
    if kind != "Plugin" {
        return Err(format!(
            "plugin manifest has kind={kind:?}, but only \"Plugin\" is supported"
        ));
    }
    if !is_safe_plugin_name(name) {
        return Err(format!(
            "the plugin name {name:?} is not allowed, must match \"^[\\\\w-]+$\""
        ));
    }
    let named = p["metadata"]["name"].as_str().unwrap_or("");
    if named != name {
        return Err(format!("plugin should be named {name:?}, not {named:?}"));
    }
    let spec = &p["spec"];
    let short = spec["shortDescription"].as_str().unwrap_or("");
    if short.is_empty() {
        return Err("should have a short description".into());
    }
    if short.contains(['\r', '\n']) {
        return Err("should not have line breaks in short description".into());
    }
    let platforms = spec["platforms"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if platforms.is_empty() {
        return Err("should have a platform specified".into());
    }
    let version = spec["version"].as_str().unwrap_or("");
    if version.is_empty() {
        return Err("should have a version specified".into());
    }
    parse_version(version).map_err(|e| format!("failed to parse plugin version: {e}"))?;
    for p in platforms {
        validate_platform(p).map_err(|e| format!("platform ({p}) is badly constructed: {e}"))?;
    }
    Ok(())
}

/// `validatePlatform`.
pub fn validate_platform(p: &Value) -> Result<(), String> {
    if p["uri"].as_str().unwrap_or("").is_empty() {
        return Err("`uri` has to be set".into());
    }
    let sha = p["sha256"].as_str().unwrap_or("");
    if sha.is_empty() {
        return Err("`sha256` sum has to be set".into());
    }
    if !(sha.len() == 64
        && sha
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    {
        return Err(format!(
            "`sha256` value {sha} is not valid, must match pattern ^[a-f0-9]{{64}}$"
        ));
    }
    if p["bin"].as_str().unwrap_or("").is_empty() {
        return Err("`bin` has to be set".into());
    }
    validate_files(p.get("files")).map_err(|e| format!("`files` is invalid: {e}"))?;
    validate_selector(p.get("selector")).map_err(|e| format!("invalid platform selector: {e}"))
}

/// `validateFiles`: absent is fine; present must be non-empty with `from` and `to`.
pub fn validate_files(files: Option<&Value>) -> Result<(), String> {
    let ops = match files {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(ops)) => ops,
        Some(_) => return Err("`files` has to be a list".into()),
    };
    if ops.is_empty() {
        return Err("`files` has to be unspecified or non-empty".into());
    }
    for op in ops {
        if op["from"].as_str().unwrap_or("").is_empty() {
            return Err("`from` field has to be set".into());
        }
        if op["to"].as_str().unwrap_or("").is_empty() {
            return Err("`to` field has to be set".into());
        }
    }
    Ok(())
}

/// `validateSelector`: not nil, not empty, keys `os` and `arch` only.
pub fn validate_selector(selector: Option<&Value>) -> Result<(), String> {
    let sel = match selector {
        None | Some(Value::Null) => return Err("nil selector is not supported".into()),
        Some(s) => s,
    };
    let labels = sel.get("matchLabels").filter(|v| !v.is_null());
    let exprs = sel.get("matchExpressions").filter(|v| !v.is_null());
    let exprs_len = exprs.and_then(Value::as_array).map_or(0, Vec::len);
    if labels.is_none() && exprs_len == 0 {
        return Err("empty selector is not supported".into());
    }
    let empty = Map::new();
    let label_map = labels.and_then(Value::as_object).unwrap_or(&empty);
    let keys = label_map.keys().map(String::as_str).chain(
        exprs
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| e["key"].as_str().unwrap_or("")),
    );
    for key in keys {
        if key != "os" && key != "arch" {
            return Err(format!("key {key:?} not supported"));
        }
    }
    if labels.is_some() && label_map.is_empty() {
        return Err("`matchLabels` specified but empty".into());
    }
    if exprs.is_some() && exprs_len == 0 {
        return Err("`matchExpressions` specified but empty".into());
    }
    Ok(())
}

/// `selectorMatchesOSArch`: `metav1.LabelSelectorAsSelector(selector).Matches({os, arch})`.
pub fn selector_matches(selector: &Value, (os, arch): (&str, &str)) -> bool {
    let label = |key: &str| match key {
        "os" => Some(os),
        "arch" => Some(arch),
        _ => None,
    };
    let labels_ok = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k).is_some_and(|l| Some(l) == v.as_str()));
    let exprs_ok = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let current = label(e["key"].as_str().unwrap_or(""));
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e["operator"].as_str().unwrap_or("") {
                "In" => current.is_some_and(|c| values.contains(&c)),
                "NotIn" => current.is_none_or(|c| !values.contains(&c)),
                "Exists" => current.is_some(),
                "DoesNotExist" => current.is_none(),
                // LabelSelectorAsSelector fails on an unknown operator; krew then matches nothing.
                _ => false,
            }
        });
    labels_ok && exprs_ok
}

/// krew's `semver.Parse`: a leading `v`, then `version.ParseSemantic` (three numeric components
/// without leading zeros, optional `-pre` and `+build` of `[0-9A-Za-z-]` dot-separated
/// identifiers).
pub fn parse_version(s: &str) -> Result<(), String> {
    if !s.starts_with('v') {
        return Err(format!("version string {s:?} not starting with 'v'"));
    }
    let rest = &s[1..];
    let core_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (core, extra) = rest.split_at(core_end);
    let components: Vec<&str> = core.split('.').collect();
    if components.len() != 3 || components.iter().any(|c| c.is_empty()) {
        return Err(format!("illegal version string {s:?}"));
    }
    for c in &components {
        if c.len() > 1 && c.starts_with('0') {
            return Err(format!(
                "illegal zero-prefixed version component {c:?} in {s:?}"
            ));
        }
        c.parse::<u64>()
            .map_err(|e| format!("illegal version string {s:?}: {e}"))?;
    }
    let identifiers = |text: &str| {
        !text.is_empty()
            && text.split('.').all(|id| {
                !id.is_empty() && id.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
            })
    };
    let (pre, build) = match extra.split_once('+') {
        Some((pre, build)) => (pre, Some(build)),
        None => (extra, None),
    };
    let pre_ok = pre.is_empty() || pre.strip_prefix('-').is_some_and(identifiers);
    let build_ok = build.is_none_or(identifiers);
    if pre_ok && build_ok {
        Ok(())
    } else {
        Err(format!("illegal version string {s:?}"))
    }
}

/// `validateLineLength`: lines over `max` are fine only when they hold a single word.
fn line_lengths_ok(text: &str, max: usize) -> bool {
    text.split('\n')
        .all(|line| line.len() <= max || !line.trim().contains(' '))
}

/// The cases of krew's own tests (`internal/index/validation/validate_test.go`), run against
/// this port.
#[cfg(test)]
mod krew_tests {
    use super::*;
    use serde_json::json;

    /// `testutil.NewPlugin()` and `testutil.NewPlatform()`: krew's valid fixtures.
    fn platform() -> Value {
        json!({
            "uri": "http://example.com/foo.tar.gz",
            "sha256": "deadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeef",
            "bin": "foo",
            "files": [{"from": "*", "to": "."}],
            "selector": {"matchLabels": {"os": "linux", "arch": "amd64"}}
        })
    }

    fn plugin(name: &str) -> Value {
        json!({
            "apiVersion": API_VERSION,
            "kind": "Plugin",
            "metadata": {"name": name},
            "spec": {"version": "v1.0.0", "shortDescription": "short", "platforms": [platform()]}
        })
    }

    #[test]
    fn is_safe_plugin_name() {
        for (name, want) in [
            ("foo-bar", true),
            ("/foo-bar", false),
            ("..foo-bar", false),
            ("nul", false),
        ] {
            assert_eq!(super::is_safe_plugin_name(name), want, "{name}");
        }
    }

    #[test]
    fn is_supported_api_version() {
        for (api, want) in [
            ("networking.k8s.io/v1", false),
            ("krew.googlecontainertools.github.com", false),
            ("krew.googlecontainertools.github.com/v1alpha1", false),
            ("krew.googlecontainertools.github.com/v1alpha2", true),
            ("krew.googlecontainertools.github.com/v1alpha3", false),
            ("krew.googlecontainertools.github.com/v1", false),
            ("krew.googlecontainertools.github.com/v2alpha1", false),
        ] {
            let mut p = plugin("foo");
            p["apiVersion"] = json!(api);
            assert_eq!(validate_plugin("foo", &p).is_ok(), want, "{api}");
        }
    }

    #[test]
    fn validate_plugin_cases() {
        type Case = (&'static str, &'static str, fn(&mut Value), bool);
        let cases: [Case; 13] = [
            ("success", "foo", |_| {}, false),
            (
                "file name mismatch",
                "orange",
                |p| p["metadata"]["name"] = json!("apple"),
                true,
            ),
            (
                "bad api version",
                "foo",
                |p| p["apiVersion"] = json!("core/v1"),
                true,
            ),
            (
                "wrong kind",
                "foo",
                |p| p["kind"] = json!("NotPlugin"),
                true,
            ),
            (
                "shortDescription unspecified",
                "foo",
                |p| p["spec"]["shortDescription"] = json!(""),
                true,
            ),
            (
                "version unspecified",
                "foo",
                |p| p["spec"]["version"] = json!(""),
                true,
            ),
            (
                "version malformed",
                "foo",
                |p| p["spec"]["version"] = json!("v01.02.3-a"),
                true,
            ),
            (
                "no platform specified",
                "foo",
                |p| p["spec"]["platforms"] = json!([]),
                true,
            ),
            (
                "empty file operations",
                "foo",
                |p| p["spec"]["platforms"][0]["files"] = json!([]),
                true,
            ),
            (
                "unsafe plugin name",
                "../foo",
                |p| p["metadata"]["name"] = json!("../foo"),
                true,
            ),
            (
                "short description with line break",
                "foo",
                |p| p["spec"]["shortDescription"] = json!("just foo\n"),
                true,
            ),
            (
                "short description with carriage return",
                "foo",
                |p| p["spec"]["shortDescription"] = json!("just foo\r"),
                true,
            ),
            (
                "short description with CRLF",
                "foo",
                |p| p["spec"]["shortDescription"] = json!("just\r\nfoo"),
                true,
            ),
        ];
        for (what, name, change, want_err) in cases {
            let mut p = plugin("foo");
            change(&mut p);
            assert_eq!(validate_plugin(name, &p).is_err(), want_err, "{what}");
        }
    }

    #[test]
    fn validate_platform_cases() {
        type Case = (&'static str, fn(&mut Value), bool);
        let cases: [Case; 6] = [
            ("success", |_| {}, false),
            ("missing url", |p| p["uri"] = json!(""), true),
            ("missing sha256", |p| p["sha256"] = json!(""), true),
            ("empty file operations", |p| p["files"] = json!([]), true),
            ("no bin field", |p| p["bin"] = json!(""), true),
            (
                "invalid platform selector",
                |p| p["selector"] = json!({"matchLabels": {"unsupported-field": "orange"}}),
                true,
            ),
        ];
        for (what, change, want_err) in cases {
            let mut p = platform();
            change(&mut p);
            assert_eq!(validate_platform(&p).is_err(), want_err, "{what}");
        }
    }

    #[test]
    fn validate_selector_cases() {
        for (what, sel, want_err) in [
            ("nil selector", None, true),
            ("empty (wildcard) selector", Some(json!({})), true),
            (
                "valid matchLabels",
                Some(json!({"matchLabels": {"os": "foo", "arch": "bar"}})),
                false,
            ),
            (
                "valid matchExpressions",
                Some(
                    json!({"matchExpressions": [{"key": "os", "operator": "In", "values": ["apple", "orange"]}]}),
                ),
                false,
            ),
            ("empty matchLabels", Some(json!({"matchLabels": {}})), true),
            (
                "empty matchExpressions",
                Some(json!({"matchExpressions": []})),
                true,
            ),
            (
                "unsupported key in matchLabels",
                Some(json!({"matchLabels": {"unsupported-key": "value"}})),
                true,
            ),
            (
                "unsupported key in matchExpressions",
                Some(
                    json!({"matchExpressions": [{"key": "unsupported-key", "operator": "In", "values": ["apple", "orange"]}]}),
                ),
                true,
            ),
        ] {
            assert_eq!(validate_selector(sel.as_ref()).is_err(), want_err, "{what}");
        }
    }

    #[test]
    fn validate_files_cases() {
        for (what, files, want_err) in [
            (
                "success",
                Some(json!([{"from": "here", "to": "there"}])),
                false,
            ),
            ("unspecified file operations", None, false),
            ("empty file operations", Some(json!([])), true),
            (
                "empty `to` field in file operations",
                Some(json!([{"from": "present", "to": ""}])),
                true,
            ),
            (
                "empty `from` field in file operations",
                Some(json!([{"from": "", "to": "present"}])),
                true,
            ),
        ] {
            assert_eq!(validate_files(files.as_ref()).is_err(), want_err, "{what}");
        }
    }

    #[test]
    fn semantic_versions_as_apimachinery_parses_them() {
        for ok in [
            "v0.1.0",
            "v1.2.3-rc.1",
            "v1.2.3+build.5",
            "v10.20.30-alpha-1.b+x",
        ] {
            assert!(parse_version(ok).is_ok(), "{ok}");
        }
        for bad in [
            "0.1.0",
            "v1.2",
            "v1.2.3.4",
            "v01.2.3",
            "v1.2.3-",
            "v1.2.3-a..b",
            "v1.2.3_x",
        ] {
            assert!(parse_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn platforms_must_select_a_supported_pair_once() {
        let mut p = plugin("foo");
        assert_eq!(validate_manifest_file("foo.yaml", &p), Ok(vec![]));
        assert!(validate_manifest_file("foo.yml", &p).is_err());
        let copy = p["spec"]["platforms"][0].clone();
        p["spec"]["platforms"].as_array_mut().unwrap().push(copy);
        assert!(validate_manifest_file("foo.yaml", &p)
            .unwrap_err()
            .contains("overlapping"));
        let mut q = plugin("foo");
        q["spec"]["platforms"][0]["selector"] = json!({"matchLabels": {"os": "plan9"}});
        assert!(validate_manifest_file("foo.yaml", &q)
            .unwrap_err()
            .contains("doesn't match any supported platforms"));
    }
}
