//! AdmissionReview on the wire.
//!
//! A request is decoded in one pass, borrowing from the body: the envelope's strings, and the
//! objects as borrowed JSON trees, as sent and in order, less `metadata.managedFields` (see
//! `request_objects`). A typed round trip through `DynamicObject` or the Sveltos types would
//! drop or reorder fields, and patches must address what the API server sent.
//! The webhook configurations only send ClusterPromotion writes, so the objects are parsed
//! straight away rather than scanned once as raw text and parsed again.
//!
//! Responses are encoded here rather than by kube-core, which writes `patch` as an array of
//! numbers; the API (`[]byte`) specifies a base64 string.
//!
//! Used by [`super::Evaluator`] and by the fuzz harness ([`crate::fuzzing`]), which re-decodes
//! the bodies it feeds through the evaluator.

use std::borrow::Cow;

use base64::Engine;
use kube_core::admission::Operation;
use kube_core::Status;
use promotion_shared::admission::UserInfo;
use promotion_shared::tree::{duplicate_key, Tree};
use serde::{Deserialize, Serialize};

pub const API_VERSION: &str = "admission.k8s.io/v1";
pub const KIND: &str = "AdmissionReview";

/// The `request` of an AdmissionReview, borrowing from the body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request<'a> {
    #[serde(borrow)]
    pub uid: Cow<'a, str>,
    #[serde(borrow)]
    pub resource: GroupVersionResource<'a>,
    #[serde(default, borrow)]
    pub sub_resource: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    pub operation: Operation,
    pub user_info: UserInfo,
    #[serde(
        default,
        borrow,
        deserialize_with = "super::request_objects::optional_object"
    )]
    pub object: Option<Tree<'a>>,
    #[serde(
        default,
        borrow,
        deserialize_with = "super::request_objects::optional_object"
    )]
    pub old_object: Option<Tree<'a>>,
    #[serde(default)]
    pub dry_run: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct GroupVersionResource<'a> {
    #[serde(borrow)]
    pub group: Cow<'a, str>,
    #[serde(borrow)]
    pub version: Cow<'a, str>,
    #[serde(borrow)]
    pub resource: Cow<'a, str>,
}

impl Request<'_> {
    pub fn is_dry_run(&self) -> bool {
        self.dry_run.unwrap_or(false)
    }
}

/// Why a body is not an AdmissionReview this webhook can answer.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "apiVersion", borrow)]
    api_version: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    request: Option<Request<'a>>,
}

pub fn decode(body: &[u8]) -> Result<Request<'_>, DecodeError> {
    // serde_json checks UTF-8 only in the strings it keeps: an invalid byte inside a field this
    // decoder skips would pass, and the same body would then be JSON here and not JSON to every
    // other reader. RFC 8259 §8.1 requires UTF-8 between systems and the API server never sends
    // anything else, so the body is checked whole (std's check runs ahead word by word over
    // ASCII; the load benchmark reports its cost) and then parsed as text.
    let text = std::str::from_utf8(body).map_err(|e| {
        DecodeError(format!(
            "request body is not valid JSON: it is not UTF-8 (invalid byte at offset {}; RFC \
             8259 requires UTF-8)",
            e.valid_up_to()
        ))
    })?;
    let review: Envelope = serde_json::from_str(text).map_err(|e| {
        DecodeError(match e.classify() {
            serde_json::error::Category::Data => {
                format!("request body is not an AdmissionReview: {e}")
            }
            _ => format!("request body is not valid JSON: {e}"),
        })
    })?;
    if review.api_version != API_VERSION || review.kind != KIND {
        return Err(DecodeError(format!(
            "request body is not an AdmissionReview: expected apiVersion {API_VERSION:?} and kind \
             {KIND:?}, got apiVersion {:?} and kind {:?}",
            review.api_version, review.kind
        )));
    }
    let request = review.request.ok_or_else(|| {
        DecodeError("request body is not an AdmissionReview: it has no \"request\"".to_string())
    })?;
    for (field, object) in [
        ("object", &request.object),
        ("oldObject", &request.old_object),
    ] {
        if let Some(at) = object.as_ref().and_then(duplicate_key) {
            return Err(DecodeError(format!(
                "request.{field} has the key at {at} more than once; an API server never sends \
                 duplicate keys, and which one counts would be ambiguous"
            )));
        }
    }
    Ok(request)
}

pub fn operation_name(operation: &Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

/// What the webhook answers to one request.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub uid: String,
    pub allowed: bool,
    /// Why it was denied; only sent when `allowed` is false.
    pub status: Option<Status>,
    /// A JSON Patch document (JSON bytes), only sent when `allowed` is true.
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
}

impl Answer {
    pub fn allow(uid: &str) -> Self {
        Answer {
            uid: uid.to_string(),
            allowed: true,
            status: None,
            patch: None,
            warnings: Vec::new(),
        }
    }

    pub fn deny(mut self, status: Status) -> Self {
        self.allowed = false;
        self.status = Some(status);
        self.patch = None;
        self
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'a str,
    kind: &'a str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    /// Exactly when `patch` is present: the API server rejects one without the other.
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

/// The AdmissionReview carrying `answer`.
pub fn encode(answer: &Answer) -> Vec<u8> {
    let patch = answer
        .patch
        .as_deref()
        .filter(|_| answer.allowed)
        .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes));
    let review = ReviewOut {
        api_version: API_VERSION,
        kind: KIND,
        response: ResponseOut {
            uid: &answer.uid,
            allowed: answer.allowed,
            status: answer.status.as_ref().filter(|_| !answer.allowed),
            patch_type: patch.as_ref().map(|_| "JSONPatch"),
            patch,
            warnings: &answer.warnings,
        },
    };
    // Serializing plain strings, bools and a Status cannot fail.
    serde_json::to_vec(&review).unwrap_or_default()
}

/// `body` with every `\\uXXXX` escape of a lone UTF-16 surrogate written as `\\ufffd`, the
/// character Go's `encoding/json` (and the API server's `sigs.k8s.io/json`) decodes it to;
/// serde_json refuses such a string, and only in the fields it keeps, so without this the same
/// body would be JSON or not depending on where the escape is.
pub fn go_surrogates(body: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let hex = |at: usize| -> Option<u16> {
        let digits = body.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let unit = |at: usize| -> Option<u16> {
        (body.get(at) == Some(&b'\\') && body.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut out = Vec::new();
    let (mut i, mut copied) = (0, 0);
    while let Some(at) = next_backslash(body, i) {
        i = at;
        let Some(u) = unit(i) else {
            i += 2;
            continue;
        };
        let paired = (0xD800..0xDC00).contains(&u)
            && unit(i + 6).is_some_and(|low| (0xDC00..0xE000).contains(&low));
        if paired {
            i += 12;
        } else if (0xD800..0xE000).contains(&u) {
            out.extend_from_slice(&body[copied..i]);
            out.extend_from_slice(b"\\ufffd");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    if copied == 0 {
        return std::borrow::Cow::Borrowed(body);
    }
    out.extend_from_slice(&body[copied..]);
    std::borrow::Cow::Owned(out)
}

/// The index of the first `\\` in `body` at or after `from`. Every review passes through
/// [`go_surrogates`], and most of a body is text without escapes: memchr skips it many bytes at
/// a time.
fn next_backslash(body: &[u8], from: usize) -> Option<usize> {
    memchr::memchr(b'\\', body.get(from..)?).map(|at| from + at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use promotion_shared::tree::to_owned_value;
    use serde_json::{json, Value};

    fn review(object: Value) -> Value {
        json!({
            "apiVersion": API_VERSION, "kind": KIND,
            "request": {
                "uid": "u-1",
                "kind": {"group": "config.projectsveltos.io", "version": "v1beta1", "kind": "ClusterPromotion"},
                "resource": {"group": "config.projectsveltos.io", "version": "v1beta1", "resource": "clusterpromotions"},
                "operation": "CREATE",
                "userInfo": {"username": "alice"},
                "object": object,
                "oldObject": null
            }
        })
    }

    #[test]
    fn objects_survive_decoding_untouched() {
        let object = json!({"metadata": {"name": "x", "creationTimestamp": null, "future": [1]}, "spec": {"z": 1, "a": 2}});
        let body = serde_json::to_vec(&review(object.clone())).unwrap();
        let request = decode(&body).unwrap();
        assert!(request.old_object.is_none());
        let tree = to_owned_value(&request.object.unwrap());
        assert_eq!(tree, object);
        assert_eq!(
            serde_json::to_string(&tree).unwrap(),
            r#"{"metadata":{"name":"x","creationTimestamp":null,"future":[1]},"spec":{"z":1,"a":2}}"#
        );
    }

    #[test]
    fn duplicate_keys_in_an_object_are_refused() {
        let body = serde_json::to_string(&review(json!({"spec": {"stages": []}}))).unwrap();
        let body = body.replace(r#""stages":[]"#, r#""stages":[],"stages":[{"name":"x"}]"#);
        let err = decode(body.as_bytes()).unwrap_err();
        assert!(
            err.0.contains("request.object has the key at /spec/stages"),
            "{err}"
        );
    }

    #[test]
    fn strings_with_escapes_decode() {
        let mut body = review(json!({}));
        body["request"]["uid"] = json!("a\"b\u{e9}");
        let bytes = serde_json::to_vec(&body).unwrap();
        assert_eq!(decode(&bytes).unwrap().uid, "a\"b\u{e9}");
    }

    #[test]
    fn a_body_that_is_not_utf8_is_refused_even_where_nothing_reads_it() {
        let body = serde_json::to_vec(&review(json!({"spec": {}}))).unwrap();
        let text = String::from_utf8(body).unwrap();
        // One byte of invalid UTF-8 inside `request.kind.kind`, a field the envelope skips.
        let at = text.find("ClusterPromotion").unwrap() + 8;
        let mut bytes = text.into_bytes();
        bytes.insert(at, 0xF4);
        let err = decode(&bytes).unwrap_err();
        assert_eq!(
            err.0,
            format!(
                "request body is not valid JSON: it is not UTF-8 (invalid byte at offset {at}; \
                 RFC 8259 requires UTF-8)"
            )
        );
        // The rest of the body is fine: without that byte it decodes.
        bytes.remove(at);
        assert!(decode(&bytes).is_ok());
    }

    #[test]
    fn decode_errors_say_why() {
        let err = decode(b"{nope").unwrap_err();
        assert!(err.0.starts_with("request body is not valid JSON"), "{err}");
        let err = decode(b"").unwrap_err();
        assert!(err.0.contains("not valid JSON"), "{err}");
        let err = decode(br#"{"kind": "Pod"}"#).unwrap_err();
        assert!(err.0.contains("apiVersion"), "{err}");
        let mut wrong = review(json!({}));
        wrong["apiVersion"] = json!("admission.k8s.io/v1beta1");
        let err = decode(&serde_json::to_vec(&wrong).unwrap()).unwrap_err();
        assert!(err.0.contains("admission.k8s.io/v1beta1"), "{err}");
        let err = decode(br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}"#)
            .unwrap_err();
        assert!(err.0.contains("no \"request\""), "{err}");
        let mut missing = review(json!({}));
        missing["request"].as_object_mut().unwrap().remove("uid");
        let err = decode(&serde_json::to_vec(&missing).unwrap()).unwrap_err();
        assert!(err.0.contains("uid"), "{err}");
        let mut broken = review(json!({}));
        broken["request"]["operation"] = json!("PATCH");
        let err = decode(&serde_json::to_vec(&broken).unwrap()).unwrap_err();
        assert!(err.0.contains("PATCH"), "{err}");
    }

    #[test]
    fn objects_too_deep_for_a_tree_are_a_decode_error_not_a_panic() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let mut body = serde_json::to_string(&review(json!({}))).unwrap();
        body = body.replace(r#""object":{}"#, &format!(r#""object":{{"spec":{deep}}}"#));
        let err = decode(body.as_bytes()).unwrap_err();
        assert!(err.0.contains("recursion limit"), "{err}");
    }

    #[test]
    fn patch_is_base64_with_type_and_status_only_on_denial() {
        let patch = serde_json::to_vec(&json!([{"op": "remove", "path": "/a"}])).unwrap();
        let answer = Answer {
            patch: Some(patch),
            ..Answer::allow("u-1")
        };
        let out: Value = serde_json::from_slice(&encode(&answer)).unwrap();
        assert_eq!(out["apiVersion"], API_VERSION);
        assert_eq!(out["kind"], KIND);
        assert_eq!(out["response"]["uid"], "u-1");
        assert_eq!(out["response"]["patchType"], "JSONPatch");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(out["response"]["patch"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&decoded).unwrap(),
            json!([{"op": "remove", "path": "/a"}])
        );
        assert!(out["response"].get("status").is_none());
        assert!(out["response"].get("warnings").is_none());

        let denied = answer.deny(Status::failure("no", "Invalid"));
        let out: Value = serde_json::from_slice(&encode(&denied)).unwrap();
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(out["response"]["status"]["message"], "no");
        assert!(out["response"].get("patch").is_none());
        assert!(out["response"].get("patchType").is_none());
    }

    #[test]
    fn escapes_are_found_wherever_they_sit_in_a_long_body() {
        // Before, across and after the 8-byte words the scan for backslashes steps over.
        // Padded with ASCII, with bytes that have the high bit set, and with bytes just below
        // and above a backslash.
        for (before, filler) in (0..40).flat_map(|n| ["x", "é", "[]", "]"].map(|f| (n, f))) {
            for (escape, want) in [
                (r"\ud800", r"\ufffd"),
                (r"\ud83d\ude00", r"\ud83d\ude00"),
                (r"\n\udfff", r"\n\ufffd"),
            ] {
                let pad = filler.repeat(before);
                let input = format!("\"{pad}{escape}{pad}{escape}\"");
                let expected = format!("\"{pad}{want}{pad}{want}\"");
                let output = go_surrogates(input.as_bytes());
                assert_eq!(std::str::from_utf8(&output).unwrap(), expected, "{input}");
            }
        }
    }

    #[test]
    fn lone_surrogates_become_the_replacement_character() {
        let cases: [(&str, &str); 5] = [
            (r#""a\ud800b""#, r#""a\ufffdb""#),
            (r#""\udc00""#, r#""\ufffd""#),
            (r#""\ud83d\ude00""#, r#""\ud83d\ude00""#),
            (r#""\\ud800""#, r#""\\ud800""#),
            (r#""\ud800\u0041""#, r#""\ufffd\u0041""#),
        ];
        for (input, want) in cases {
            assert_eq!(
                std::str::from_utf8(&go_surrogates(input.as_bytes())).unwrap(),
                want,
                "{input}"
            );
        }
    }
}
