//! AdmissionReview on the wire.
//!
//! Requests decode into kube-core's `AdmissionRequest`, with the objects kept as raw JSON
//! ([`RawObject`]): a typed round trip (`DynamicObject`, or the Sveltos types) drops or reorders
//! fields, and patches must address exactly what the API server sent.
//!
//! Responses are built as kube-core `AdmissionResponse`s but encoded here, because kube-core
//! writes `patch` as an array of numbers; the API (`[]byte`) specifies a base64 string.

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use kube_core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use kube_core::{ApiResource, ObjectMeta, Resource, Status, TypeMeta};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

pub const API_VERSION: &str = "admission.k8s.io/v1";
pub const KIND: &str = "AdmissionReview";

/// An object from an AdmissionReview, exactly as sent.
#[derive(Clone, Debug)]
pub struct RawObject {
    pub value: Value,
    /// Only built if something asks through the `Resource` trait; the webhook itself reads
    /// `value`.
    meta: OnceLock<ObjectMeta>,
}

impl RawObject {
    pub fn new(value: Value) -> Self {
        RawObject {
            value,
            meta: OnceLock::new(),
        }
    }

    fn parse_meta(&self) -> ObjectMeta {
        self.value
            .get("metadata")
            .and_then(|m| serde_json::from_value(m.clone()).ok())
            .unwrap_or_default()
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(RawObject::new)
    }
}

impl Serialize for RawObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl Resource for RawObject {
    type DynamicType = ApiResource;
    type Scope = kube_core::DynamicResourceScope;

    fn kind(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.kind.as_str().into()
    }
    fn group(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.group.as_str().into()
    }
    fn version(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.version.as_str().into()
    }
    fn api_version(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.api_version.as_str().into()
    }
    fn plural(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.plural.as_str().into()
    }
    fn meta(&self) -> &ObjectMeta {
        self.meta.get_or_init(|| self.parse_meta())
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        if self.meta.get().is_none() {
            let meta = self.parse_meta();
            let _ = self.meta.set(meta);
        }
        self.meta
            .get_mut()
            .expect("metadata was initialised just above")
    }
}

pub type Request = AdmissionRequest<RawObject>;

/// Why a body is not an AdmissionReview this webhook can answer.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

/// kube-core's `AdmissionReview` flattens its `TypeMeta`, which makes serde buffer the whole
/// document before decoding it (twice the work on every request); this envelope names the two
/// fields instead and keeps kube-core's `AdmissionRequest`.
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    #[serde(default)]
    request: Option<Request>,
}

pub fn decode(body: &[u8]) -> Result<Request, DecodeError> {
    let review: Envelope = serde_json::from_slice(body).map_err(|e| {
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
    let mut request = review.request.ok_or_else(|| {
        DecodeError("request body is not an AdmissionReview: it has no \"request\"".to_string())
    })?;
    request.types = TypeMeta {
        api_version: review.api_version,
        kind: review.kind,
    };
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
    /// Only consulted when the request is denied; left out otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    /// Exactly when `patch` is present: the API server rejects one without the other.
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "HashMap::is_empty")]
    audit_annotations: &'a HashMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warnings: Option<&'a [String]>,
}

/// The AdmissionReview answering `response` (apiVersion and kind echo the request's).
pub fn encode(response: &AdmissionResponse) -> Vec<u8> {
    let patch = response
        .patch
        .as_deref()
        .filter(|_| response.allowed)
        .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes));
    let review = ReviewOut {
        api_version: &response.types.api_version,
        kind: &response.types.kind,
        response: ResponseOut {
            uid: &response.uid,
            allowed: response.allowed,
            status: (!response.allowed).then_some(&response.result),
            patch_type: patch.as_ref().map(|_| "JSONPatch"),
            patch,
            audit_annotations: &response.audit_annotations,
            warnings: response.warnings.as_deref().filter(|w| !w.is_empty()),
        },
    };
    // Serializing plain strings, bools and maps of strings cannot fail.
    serde_json::to_vec(&review).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn raw_objects_survive_decoding_untouched() {
        let object = json!({"metadata": {"name": "x", "creationTimestamp": null, "future": [1]}, "spec": {"z": 1, "a": 2}});
        let body = serde_json::to_vec(&review(object.clone())).unwrap();
        let request = decode(&body).unwrap();
        let raw = request.object.as_ref().unwrap();
        assert_eq!(raw.value, object);
        assert_eq!(raw.meta().name.as_deref(), Some("x"));
        assert_eq!(
            serde_json::to_string(&raw.value).unwrap(),
            r#"{"metadata":{"name":"x","creationTimestamp":null,"future":[1]},"spec":{"z":1,"a":2}}"#
        );
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
    }

    #[test]
    fn patch_is_base64_with_type_and_status_only_on_denial() {
        let body = serde_json::to_vec(&review(json!({}))).unwrap();
        let request = decode(&body).unwrap();
        let patch: json_patch::Patch =
            serde_json::from_value(json!([{"op": "remove", "path": "/a"}])).unwrap();
        let response = AdmissionResponse::from(&request).with_patch(patch).unwrap();
        let out: Value = serde_json::from_slice(&encode(&response)).unwrap();
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

        let denied = AdmissionResponse::from(&request).deny("no");
        let out: Value = serde_json::from_slice(&encode(&denied)).unwrap();
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(out["response"]["status"]["message"], "no");
        assert!(out["response"].get("patch").is_none());
        assert!(out["response"].get("patchType").is_none());
    }
}
