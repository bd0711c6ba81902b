//! `clusterSelector`: Kubernetes label-selector rules (apimachinery `ValidateLabelSelector`).

use crate::tree::{Object, Tree};

use super::{expect_array, expect_items, expect_object, expect_str, names, FieldPath, Finding};

pub fn check_selector(value: Option<&Tree>, path: &FieldPath, out: &mut Vec<Finding>) {
    let empty_warning = || {
        Finding::warning(
            "selector-empty",
            path,
            "no clusterSelector: Sveltos matches no cluster with an empty selector, so this \
             stage is considered deployed at once and the pipeline moves past it",
        )
    };
    let Some(value) = value else {
        out.push(empty_warning());
        return;
    };
    let Some(selector) = expect_object(value, path, out) else {
        return;
    };
    let mut terms = 0;
    if let Some(labels) = selector.get("matchLabels") {
        let labels_path = path.key("matchLabels");
        if let Some(labels) = expect_object(labels, &labels_path, out) {
            terms += labels.len();
            for (k, v) in labels.iter() {
                let p = labels_path.key(k);
                check_label_key(k, &p, out);
                check_label_value(v, &p, out);
            }
        }
    }
    if let Some(exprs) = selector.get("matchExpressions") {
        let exprs_path = path.key("matchExpressions");
        for (p, e) in expect_items(exprs, &exprs_path, out) {
            terms += 1;
            if let Some(e) = expect_object(e, &p, out) {
                check_expression(e, &p, out);
            }
        }
    }
    if terms == 0 {
        out.push(empty_warning());
    }
}

fn check_expression(e: &Object, path: &FieldPath, out: &mut Vec<Finding>) {
    let key_path = path.key("key");
    match e.get("key") {
        Some(k) => {
            if let Some(k) = expect_str(k, &key_path, out) {
                check_label_key(k, &key_path, out);
            }
        }
        None => out.push(Finding::error("required", &key_path, "key is required")),
    }
    let values_path = path.key("values");
    let values: Vec<&Tree> = match e.get("values") {
        None | Some(Tree::Null) => Vec::new(),
        Some(v) => expect_array(v, &values_path, out)
            .map(|l| l.iter().collect())
            .unwrap_or_default(),
    };
    for (i, v) in values.iter().enumerate() {
        check_label_value(v, &values_path.index(i), out);
    }
    let op_path = path.key("operator");
    let Some(op) = e.get("operator") else {
        out.push(Finding::error("required", &op_path, "operator is required"));
        return;
    };
    let Some(op) = expect_str(op, &op_path, out) else {
        return;
    };
    match op {
        "In" | "NotIn" if values.is_empty() => out.push(Finding::error(
            "selector-values-required",
            &values_path,
            format!("must be specified when operator is {op}"),
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => out.push(Finding::error(
            "selector-values-forbidden",
            &values_path,
            format!("may not be specified when operator is {op}"),
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        other => out.push(Finding::error(
            "selector-operator-invalid",
            &op_path,
            format!("{other:?} is not a valid selector operator (In, NotIn, Exists, DoesNotExist)"),
        )),
    }
}

/// A label key the selector names must be a qualified name.
fn check_label_key(key: &str, path: &FieldPath, out: &mut Vec<Finding>) {
    if let Err(e) = names::qualified_name(key) {
        out.push(Finding::error(
            "selector-key-invalid",
            path,
            format!("label key {key:?} {e}"),
        ));
    }
}

/// A label value the selector names must be a string, and a valid label value.
fn check_label_value(value: &Tree, path: &FieldPath, out: &mut Vec<Finding>) {
    if let Some(v) = expect_str(value, path, out) {
        if let Err(e) = names::label_value(v) {
            out.push(Finding::error(
                "selector-value-invalid",
                path,
                format!("label value {v:?} {e}"),
            ));
        }
    }
}
