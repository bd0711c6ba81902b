//! The validation engine: every finding for a ClusterPromotion in one pass.
//!
//! Works on the raw JSON value (not the typed model) so that a field of the wrong type is a
//! finding with a path rather than a deserialization error that hides everything after it.
//! Rule families live in their own modules; this one walks the object and dispatches.

mod cache;
mod health;
pub(crate) mod names;
mod schedule;
mod selector;
mod stages;

pub use go_text::duration::parse_go_duration;
pub use promotion_findings::{
    on_parser_stack, segments, FieldPath, Finding, Segment, Severity, VALIDATION_STACK_BYTES,
};
pub use schedule::{
    last_stage_window_note, parse_cron_standard, parse_std_duration, PreviousGate,
    LAST_STAGE_WINDOW,
};

pub use crate::tree::lookup;
use crate::tree::{tree_of, Object, Tree};

/// Validate a ClusterPromotion object (as JSON). Never panics, whatever the input.
pub fn validate(object: &serde_json::Value) -> Vec<Finding> {
    validate_tree(&tree_of(object))
}

/// [`validate`] on a parsed tree (what the webhook holds).
pub fn validate_tree(object: &Tree) -> Vec<Finding> {
    let run = || {
        std::panic::catch_unwind(|| {
            let mut out = Vec::new();
            check_object(object, &mut out);
            out
        })
    };
    match on_parser_stack(run) {
        Ok(findings) => findings,
        Err(_) => vec![Finding::error(
            "internal",
            "",
            "the validator failed on this object; please report it with the manifest",
        )],
    }
}

/// Everything lint reports for one ClusterPromotion document: the schema pass, then the Sveltos
/// rules of [`validate`], merged ([`SchemaFindings::merge`]), then lint's infos: settings that
/// work as written but do less than they seem to. Infos are lint's alone; the webhook, which
/// runs [`validate`], does not repeat them as a warning on every write.
pub fn lint(crd: &crd_schema::Crd, object: &serde_json::Value) -> Vec<Finding> {
    let mut findings = crd_schema::check(crd, object).merge(validate(object));
    findings.extend(schedule::last_stage_window(object));
    findings
}

/// Validate an UPDATE: like [`validate`], but a Lua script or CEL rule that is byte-for-byte the
/// same as in `old` is reported as a warning instead of an error (ratcheting, as Kubernetes does
/// for CRD schema changes), so a stored object can still be updated — and its finalizer removed.
pub fn validate_update(old: &serde_json::Value, new: &serde_json::Value) -> Vec<Finding> {
    validate_update_tree(&tree_of(old), &tree_of(new))
}

/// [`validate_update`] on parsed trees.
pub fn validate_update_tree(old: &Tree, new: &Tree) -> Vec<Finding> {
    let mut findings = validate_tree(new);
    check_abort_rollout(old, new, &mut findings);
    for f in &mut findings {
        let ratchets = f.code.starts_with("lua-") || f.code.starts_with("cel-");
        if f.is_error() && ratchets {
            let unchanged =
                lookup(new, &f.path).is_some() && lookup(new, &f.path) == lookup(old, &f.path);
            if unchanged {
                f.severity = Severity::Warning;
                f.message = format!(
                    "{} (unchanged from the stored object, so not enforced)",
                    f.message
                );
            }
        }
    }
    findings
}

pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(Finding::is_error)
}

fn check_object(object: &Tree, out: &mut Vec<Finding>) {
    let Some(root) = object.as_object() else {
        out.push(Finding::error(
            "wrong-type",
            "",
            "a ClusterPromotion must be an object",
        ));
        return;
    };
    let name = check_metadata(root, out);
    let Some(spec) = root.get("spec") else {
        out.push(Finding::error("required", "spec", "spec is required"));
        return;
    };
    let spec_path = FieldPath::root("spec");
    let Some(spec) = expect_object(spec, &spec_path, out) else {
        return;
    };
    let profile_path = spec_path.key("profileSpec");
    let profile = match spec.get("profileSpec") {
        Some(p) => expect_object(p, &profile_path, out),
        None => None,
    };
    let features = health::Features::of(profile);
    if let Some(profile) = profile {
        health::check_profile(profile, &profile_path, &features, out);
    }
    stages::check_stages(spec, &spec_path, name, &features, out);
}

/// Returns the promotion's name when it has one.
fn check_metadata<'a>(root: &'a Object, out: &mut Vec<Finding>) -> Option<&'a str> {
    let meta_path = FieldPath::root("metadata");
    let meta = expect_object(root.get("metadata")?, &meta_path, out)?;
    check_abort_request(meta, &meta_path, out);
    check_failure_policy(meta, &meta_path, out);
    let name_path = meta_path.key("name");
    match meta.get("name") {
        Some(Tree::Str(name)) => {
            if let Err(e) = names::dns1123_subdomain(name) {
                out.push(Finding::error(
                    "name-invalid",
                    &name_path,
                    format!("name {name:?} {e}"),
                ));
            }
            Some(name)
        }
        Some(_) => {
            out.push(Finding::error("wrong-type", &name_path, "must be a string"));
            None
        }
        None if meta.contains_key("generateName") => None,
        None => {
            out.push(Finding::error(
                "required",
                &name_path,
                "name is required (ClusterPromotions are named; generated profile names derive from it)",
            ));
            None
        }
    }
}

/// The abort request a user sets ([`crate::abort`]) must be one: a request the controller cannot
/// read would hold the rollout with only an explanation to say why.
fn check_abort_request(meta: &Object, meta_path: &FieldPath, out: &mut Vec<Finding>) {
    let Some(value) = meta
        .get("annotations")
        .and_then(Tree::as_object)
        .and_then(|a| a.get(crate::abort::ABORT_ANNOTATION))
    else {
        return;
    };
    let path = meta_path
        .key("annotations")
        .key(crate::abort::ABORT_ANNOTATION);
    if let Some(text) = expect_str(value, &path, out) {
        if let Err(e) = crate::abort::AbortRequest::parse(text) {
            out.push(Finding::error("abort-invalid", &path, e));
        }
    }
}

/// The failure policy's annotations ([`crate::on_failure`]) must read as one: a typo would
/// otherwise leave a promotion that asked for automatic rollbacks halting instead.
fn check_failure_policy(meta: &Object, meta_path: &FieldPath, out: &mut Vec<Finding>) {
    use crate::on_failure::*;
    let Some(annotations) = meta.get("annotations").and_then(Tree::as_object) else {
        return;
    };
    let value = |key: &str| annotations.get(key).and_then(Tree::as_str);
    if let Err((key, why)) = Policy::from_values(
        value(ON_FAILURE_ANNOTATION),
        value(FAILURE_GRACE_ANNOTATION),
        value(FAILURE_THRESHOLD_ANNOTATION),
    ) {
        out.push(Finding::error(
            "on-failure-invalid",
            meta_path.key("annotations").key(key),
            why,
        ));
    }
}

/// An abort request set or changed by this update must name the rollout the spec it is stored
/// with describes: one made for a spec that changed meanwhile would otherwise be ignored
/// silently (it belongs to the rollout it names).
fn check_abort_rollout(old: &Tree, new: &Tree, out: &mut Vec<Finding>) {
    let request = |t: &Tree| {
        crate::tree::pointer(t, "/metadata/annotations")
            .and_then(Tree::as_object)
            .and_then(|a| a.get(crate::abort::ABORT_ANNOTATION))
            .and_then(Tree::as_str)
            .map(str::to_string)
    };
    let Some(text) = request(new).filter(|r| request(old).as_ref() != Some(r)) else {
        return;
    };
    let (Ok(asked), Ok(spec)) = (
        crate::abort::AbortRequest::parse(&text),
        crate::rollout::identity(new),
    ) else {
        return;
    };
    if asked.rollout() != spec.id {
        out.push(Finding::error(
            "abort-stale",
            FieldPath::root("metadata")
                .key("annotations")
                .key(crate::abort::ABORT_ANNOTATION),
            format!(
                "the request names the rollout (stagesHash {}, profileSpecHash {}) but the spec \
                 is at (stagesHash {}, profileSpecHash {}): the spec changed since it was made; \
                 run the command again",
                asked.stages_hash,
                asked.profile_spec_hash,
                spec.id.stages_hash,
                spec.id.profile_spec_hash
            ),
        ));
    }
}

pub(crate) fn expect_object<'a, 'ctx>(
    value: &'a Tree<'ctx>,
    path: &FieldPath,
    out: &mut Vec<Finding>,
) -> Option<&'a Object<'ctx>> {
    expect(value.as_object(), "an object", value, path, out)
}

pub(crate) fn expect_array<'a, 'ctx>(
    value: &'a Tree<'ctx>,
    path: &FieldPath,
    out: &mut Vec<Finding>,
) -> Option<&'a [Tree<'ctx>]> {
    expect(value.as_array(), "a list", value, path, out)
}

pub(crate) fn expect_str<'a>(
    value: &'a Tree,
    path: &FieldPath,
    out: &mut Vec<Finding>,
) -> Option<&'a str> {
    expect(value.as_str(), "a string", value, path, out)
}

/// The items of the list `value`, each with its path (`path[i]`); none when it is not a list
/// (a wrong-type error then).
pub(crate) fn expect_items<'a, 'ctx>(
    value: &'a Tree<'ctx>,
    path: &FieldPath,
    out: &mut Vec<Finding>,
) -> impl Iterator<Item = (FieldPath, &'a Tree<'ctx>)> {
    let items = expect_array(value, path, out).unwrap_or_default();
    let path = path.clone();
    items
        .iter()
        .enumerate()
        .map(move |(i, item)| (path.index(i), item))
}

/// `read`, `value` read as the type it must be; when it is not (`None`), a wrong-type error at
/// `path` saying that it must be `what`.
fn expect<T>(
    read: Option<T>,
    what: &str,
    value: &Tree,
    path: &FieldPath,
    out: &mut Vec<Finding>,
) -> Option<T> {
    if read.is_none() {
        out.push(Finding::error(
            "wrong-type",
            path,
            format!("must be {what}, not {}", type_name(value)),
        ));
    }
    read
}

pub(crate) use crate::tree::type_name;

/// Go-duration fields: what `time.ParseDuration` refuses is an error; a negative duration,
/// which Go accepts, is a warning of its own (a negative soak or timeout counts as already
/// elapsed, so it is almost certainly a typo).
pub(crate) fn check_duration(value: &Tree, path: &FieldPath, out: &mut Vec<Finding>) {
    let Some(s) = expect_str(value, path, out) else {
        return;
    };
    match parse_go_duration(s) {
        Ok(ns) if ns < 0 => out.push(Finding::warning(
            "duration-negative",
            path,
            format!(
                "duration {s:?} is negative: Go accepts it, and Sveltos treats it as already \
                 elapsed (no wait at all); write {:?} to wait",
                s.trim_start_matches('-')
            ),
        )),
        Ok(_) => {}
        Err(e) => out.push(Finding::error(
            "duration-invalid",
            path,
            format!("{e}; use Go duration syntax such as 90s, 5m or 1h30m"),
        )),
    }
}

#[cfg(test)]
mod abort_tests;
