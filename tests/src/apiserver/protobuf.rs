//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), as
//! `runtime/serializer/protobuf` frames them: the magic `k8s\0`, then a `runtime.Unknown` whose
//! `typeMeta` names the type and whose `raw` holds the object. kubectl's typed clients send
//! built-in types this way (`kubectl auth can-i` posts a SelfSubjectAccessReview); the stand-in
//! decodes the types they send into the JSON form every handler works on, and answers in JSON
//! (which those clients accept too).

use prost::Message;
use serde_json::{json, Map, Value};

pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

/// `authorization/v1` `SelfSubjectAccessReview` (its metadata and status are not read).
#[derive(Clone, PartialEq, Message)]
struct SelfSubjectAccessReview {
    #[prost(message, optional, tag = "2")]
    spec: Option<SelfSubjectAccessReviewSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct SelfSubjectAccessReviewSpec {
    #[prost(message, optional, tag = "1")]
    resource_attributes: Option<ResourceAttributes>,
    #[prost(message, optional, tag = "2")]
    non_resource_attributes: Option<NonResourceAttributes>,
}

#[derive(Clone, PartialEq, Message)]
struct ResourceAttributes {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
    #[prost(string, optional, tag = "3")]
    group: Option<String>,
    #[prost(string, optional, tag = "4")]
    version: Option<String>,
    #[prost(string, optional, tag = "5")]
    resource: Option<String>,
    #[prost(string, optional, tag = "6")]
    subresource: Option<String>,
    #[prost(string, optional, tag = "7")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct NonResourceAttributes {
    #[prost(string, optional, tag = "1")]
    path: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
}

/// Why a body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NoMagic,
    #[error("unable to decode protobuf: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("no kind {0:?} is registered for protobuf in the stand-in")]
    Unsupported(String),
}

/// The object in `body` as JSON (`apiVersion`, `kind`, and the fields its type defines).
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let framed = body.strip_prefix(MAGIC).ok_or(ProtobufError::NoMagic)?;
    let unknown = Unknown::decode(framed)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let (api_version, kind) = (
        type_meta.api_version.unwrap_or_default(),
        type_meta.kind.unwrap_or_default(),
    );
    let raw = unknown.raw.unwrap_or_default();
    match (api_version.as_str(), kind.as_str()) {
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => {
            let review = SelfSubjectAccessReview::decode(raw.as_slice())?;
            Ok(json!({
                "apiVersion": api_version,
                "kind": kind,
                "spec": review.spec.map(spec_json).unwrap_or_else(|| json!({})),
            }))
        }
        _ => Err(ProtobufError::Unsupported(format!(
            "{api_version}, Kind={kind}"
        ))),
    }
}

/// Go's JSON of the spec: empty strings and absent parts left out (`omitempty`).
fn spec_json(spec: SelfSubjectAccessReviewSpec) -> Value {
    let mut out = Map::new();
    if let Some(r) = spec.resource_attributes {
        out.insert(
            "resourceAttributes".into(),
            strings([
                ("namespace", r.namespace),
                ("verb", r.verb),
                ("group", r.group),
                ("version", r.version),
                ("resource", r.resource),
                ("subresource", r.subresource),
                ("name", r.name),
            ]),
        );
    }
    if let Some(n) = spec.non_resource_attributes {
        out.insert(
            "nonResourceAttributes".into(),
            strings([("path", n.path), ("verb", n.verb)]),
        );
    }
    Value::Object(out)
}

fn strings<const N: usize>(fields: [(&str, Option<String>); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| {
                v.filter(|v| !v.is_empty())
                    .map(|v| (k.to_string(), json!(v)))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
        };
        let mut body = MAGIC.to_vec();
        body.extend(unknown.encode_to_vec());
        body
    }

    #[test]
    fn a_self_subject_access_review_as_kubectl_sends_it() {
        let review = SelfSubjectAccessReview {
            spec: Some(SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some("default".into()),
                    verb: Some("patch".into()),
                    group: Some("config.projectsveltos.io".into()),
                    resource: Some("clusterpromotions".into()),
                    version: Some(String::new()),
                    ..ResourceAttributes::default()
                }),
                non_resource_attributes: None,
            }),
        };
        let body = framed(
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            review.encode_to_vec(),
        );
        assert_eq!(
            decode(&body).expect("decodes"),
            json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {
                    "namespace": "default", "verb": "patch",
                    "group": "config.projectsveltos.io", "resource": "clusterpromotions"
                }}
            })
        );
    }

    #[test]
    fn other_bodies_are_refused_with_a_reason() {
        assert!(matches!(decode(b"{}"), Err(ProtobufError::NoMagic)));
        let body = framed("v1", "ConfigMap", Vec::new());
        assert_eq!(
            decode(&body).expect_err("not served").to_string(),
            "no kind \"v1, Kind=ConfigMap\" is registered for protobuf in the stand-in"
        );
    }
}
