//! Impersonation, ported from kube-apiserver's `endpoints/filters/impersonation.go`
//! (`WithImpersonation`, `buildImpersonationRequests`): the `Impersonate-User`, `-Group`,
//! `-Uid` and `-Extra-<key>` headers become one authorization check each (verb `impersonate`
//! on `users`, `serviceaccounts`, `groups`, `uids` or `userextras/<key>`), in that order, the
//! first refusal being the 403; then the request runs as the impersonated user.
//!
//! The impersonated groups are exactly the ones asked for, plus `system:authenticated` (or, for
//! `system:anonymous`, `system:unauthenticated`) unless one of those was asked for; a service
//! account asked for without groups gets `system:serviceaccounts` and
//! `system:serviceaccounts:<namespace>`. Nothing of the impersonating user is kept.

use std::collections::BTreeMap;

use axum::http::HeaderMap;

use super::auth::{forbidden, Attributes, Decision, UserInfo};
use super::names::{is_dns1123_label, is_dns1123_subdomain};
use super::status::{go_quote, ApiError};

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_HEADER_PREFIX: &str = "impersonate-extra-";

const ANONYMOUS: &str = "system:anonymous";
const ALL_AUTHENTICATED: &str = "system:authenticated";
const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// One thing asked for (the `ObjectReference`s of `buildImpersonationRequests`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Request {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Request {
    /// `fmt`'s `%v` of the `v1.ObjectReference` upstream builds: its seven fields (kind,
    /// namespace, name, uid, apiVersion, resourceVersion, fieldPath) separated by spaces.
    fn go_value(&self) -> String {
        let auth_v1 = format!("{AUTHENTICATION_GROUP}/v1");
        let fields: [&str; 7] = match self {
            Request::ServiceAccount { namespace, name } => {
                ["ServiceAccount", namespace, name, "", "", "", ""]
            }
            Request::User(name) => ["User", "", name, "", "", "", ""],
            Request::Group(name) => ["Group", "", name, "", "", "", ""],
            Request::Extra { key, value } => ["UserExtra", "", value, "", &auth_v1, "", key],
            Request::Uid(uid) => ["UID", "", uid, "", &auth_v1, "", ""],
        };
        format!("{{{}}}", fields.join(" "))
    }

    /// The authorizer attributes of the `impersonate` check for this request.
    fn attributes(&self, requestor: &UserInfo) -> Attributes {
        let (group, version, resource, subresource, namespace, name) = match self {
            Request::ServiceAccount { namespace, name } => (
                "",
                "",
                "serviceaccounts",
                "",
                namespace.as_str(),
                name.as_str(),
            ),
            Request::User(name) => ("", "", "users", "", "", name.as_str()),
            Request::Group(name) => ("", "", "groups", "", "", name.as_str()),
            Request::Extra { key, value } => (
                AUTHENTICATION_GROUP,
                "v1",
                "userextras",
                key.as_str(),
                "",
                value.as_str(),
            ),
            Request::Uid(uid) => (AUTHENTICATION_GROUP, "v1", "uids", "", "", uid.as_str()),
        };
        Attributes {
            user: requestor.clone(),
            verb: "impersonate".into(),
            api_group: group.into(),
            api_version: version.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            resource_request: true,
            path: String::new(),
        }
    }
}

/// `serviceaccount.SplitUsername`: `system:serviceaccount:<namespace>:<name>` with a valid
/// namespace (DNS label) and name (DNS subdomain).
fn split_service_account(username: &str) -> Option<(String, String)> {
    let rest = username.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let parts: Vec<&str> = rest.split(':').collect();
    let [namespace, name] = parts.as_slice() else {
        return None;
    };
    (is_dns1123_label(namespace) && is_dns1123_subdomain(name))
        .then(|| (namespace.to_string(), name.to_string()))
}

/// Go's `url.PathUnescape`: `%XX` decoded; `None` for a malformed escape (or, here, a result
/// that is not UTF-8).
fn path_unescape(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let text = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(text, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `unescapeExtraKey`: a key that does not unescape is recorded as sent.
fn extra_key(header_suffix: &str) -> String {
    let lowered = header_suffix.to_lowercase();
    path_unescape(&lowered).unwrap_or(lowered)
}

fn header_text(v: &axum::http::HeaderValue) -> String {
    String::from_utf8_lossy(v.as_bytes()).into_owned()
}

/// `buildImpersonationRequests`: user (or service account), groups, extras, uid. Groups, extras
/// or a uid without a user is an error.
fn requests(headers: &HeaderMap) -> Result<Vec<Request>, String> {
    let mut out = Vec::new();
    let user = headers
        .get(USER_HEADER)
        .map(header_text)
        .filter(|u| !u.is_empty());
    if let Some(user) = &user {
        out.push(match split_service_account(user) {
            Some((namespace, name)) => Request::ServiceAccount { namespace, name },
            None => Request::User(user.clone()),
        });
    }
    let mut others = false;
    for group in headers.get_all(GROUP_HEADER) {
        others = true;
        out.push(Request::Group(header_text(group)));
    }
    for (name, value) in headers {
        if let Some(suffix) = name.as_str().strip_prefix(EXTRA_HEADER_PREFIX) {
            others = true;
            out.push(Request::Extra {
                key: extra_key(suffix),
                value: header_text(value),
            });
        }
    }
    if let Some(uid) = headers
        .get(UID_HEADER)
        .map(header_text)
        .filter(|u| !u.is_empty())
    {
        others = true;
        out.push(Request::Uid(uid));
    }
    if others && user.is_none() {
        let list: Vec<String> = out.iter().map(Request::go_value).collect();
        return Err(format!(
            "requested [{}] without impersonating a user",
            list.join(" ")
        ));
    }
    Ok(out)
}

/// `responsewriters.InternalError`: plain text naming the request URI, HTML-escaped.
fn internal_error(request_uri: &str, err: &str) -> ApiError {
    let text = format!("Internal Server Error: {}: {err}", go_quote(request_uri))
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    ApiError {
        code: 500,
        status: Box::new(serde_json::Value::Null),
        plain_text: Some(format!("{text}\n")),
        warnings: Vec::new(),
    }
}

/// The user a request runs as: `requestor` itself without impersonation headers, otherwise the
/// impersonated user once every `impersonate` check passed. `Err` is the 403 of the first
/// refused check, or the 500 for groups, extras or a uid without a user.
pub fn impersonate(
    headers: &HeaderMap,
    requestor: &UserInfo,
    authorize: &dyn Fn(&Attributes) -> Decision,
    request_uri: &str,
) -> Result<UserInfo, ApiError> {
    let asked = requests(headers).map_err(|e| internal_error(request_uri, &e))?;
    if asked.is_empty() {
        return Ok(requestor.clone());
    }
    // Groups asked for are the authority, including system:authenticated/unauthenticated.
    let groups_specified = headers.get(GROUP_HEADER).is_some();
    let mut user = UserInfo::default();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for request in &asked {
        match request {
            Request::ServiceAccount { namespace, name } => {
                user.username = format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}");
                if !groups_specified {
                    user.groups = vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Request::User(name) => user.username = name.clone(),
            Request::Group(name) => user.groups.push(name.clone()),
            Request::Extra { key, value } => {
                extra.entry(key.clone()).or_default().push(value.clone());
            }
            Request::Uid(uid) => user.uid = uid.clone(),
        }
        let attributes = request.attributes(requestor);
        if let Decision::Deny(reason) = authorize(&attributes) {
            return Err(forbidden(&attributes, reason.as_deref()));
        }
    }
    let has = |g: &str| user.groups.iter().any(|x| x == g);
    if user.username != ANONYMOUS {
        if !has(ALL_AUTHENTICATED) && !has(ALL_UNAUTHENTICATED) {
            user.groups.push(ALL_AUTHENTICATED.into());
        }
    } else if !has(ALL_UNAUTHENTICATED) {
        user.groups.push(ALL_UNAUTHENTICATED.into());
    }
    user.extra = extra;
    Ok(user)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderName, HeaderValue};
    use std::sync::Mutex;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn admin() -> UserInfo {
        UserInfo::new("admin", &["system:masters", ALL_AUTHENTICATED])
    }

    /// Impersonate with an authorizer that allows everything and records what it was asked.
    fn run(pairs: &[(&str, &str)]) -> (Result<UserInfo, ApiError>, Vec<Attributes>) {
        let asked = Mutex::new(Vec::new());
        let result = impersonate(
            &headers(pairs),
            &admin(),
            &|a| {
                asked.lock().unwrap().push(a.clone());
                Decision::Allow
            },
            "/api/v1/namespaces",
        );
        (result, asked.into_inner().unwrap())
    }

    fn checked(a: &Attributes) -> String {
        let mut resource = a.resource.clone();
        if !a.subresource.is_empty() {
            resource = format!("{resource}/{}", a.subresource);
        }
        format!(
            "{} {}/{} {} {}",
            a.verb, a.api_group, resource, a.namespace, a.name
        )
    }

    #[test]
    fn without_headers_the_requestor_stays() {
        let (user, asked) = run(&[]);
        assert_eq!(user.unwrap(), admin());
        assert!(asked.is_empty());
    }

    #[test]
    fn a_user_alone_gets_system_authenticated() {
        let (user, asked) = run(&[("impersonate-user", "alice")]);
        let user = user.unwrap();
        assert_eq!(user.username, "alice");
        assert_eq!(user.groups, vec![ALL_AUTHENTICATED]);
        assert_eq!(
            asked.iter().map(checked).collect::<Vec<_>>(),
            vec!["impersonate /users  alice"]
        );
        assert_eq!(asked[0].user.username, "admin");
        assert_eq!(asked[0].api_version, "");
    }

    #[test]
    fn groups_uid_and_extras_are_each_checked_and_kept() {
        let (user, asked) = run(&[
            ("impersonate-user", "alice"),
            ("impersonate-group", "release-managers"),
            ("impersonate-group", "ops"),
            ("impersonate-uid", "1234"),
            ("impersonate-extra-scopes", "view"),
            ("impersonate-extra-scopes", "approve"),
            ("impersonate-extra-acme.com%2Fproject", "rollouts"),
        ]);
        let user = user.unwrap();
        assert_eq!(user.username, "alice");
        assert_eq!(user.uid, "1234");
        assert_eq!(
            user.groups,
            vec!["release-managers", "ops", ALL_AUTHENTICATED]
        );
        assert_eq!(user.extra["scopes"], vec!["view", "approve"]);
        assert_eq!(user.extra["acme.com/project"], vec!["rollouts"]);
        let checks: Vec<String> = asked.iter().map(checked).collect();
        assert_eq!(
            checks,
            vec![
                "impersonate /users  alice",
                "impersonate /groups  release-managers",
                "impersonate /groups  ops",
                "impersonate authentication.k8s.io/userextras/scopes  view",
                "impersonate authentication.k8s.io/userextras/scopes  approve",
                "impersonate authentication.k8s.io/userextras/acme.com/project  rollouts",
                "impersonate authentication.k8s.io/uids  1234",
            ]
        );
        assert!(asked[3..].iter().all(|a| a.api_version == "v1"));
    }

    #[test]
    fn asking_for_system_authenticated_or_unauthenticated_adds_nothing() {
        let (user, _) = run(&[
            ("impersonate-user", "alice"),
            ("impersonate-group", ALL_UNAUTHENTICATED),
        ]);
        assert_eq!(user.unwrap().groups, vec![ALL_UNAUTHENTICATED]);
        let (user, _) = run(&[
            ("impersonate-user", "alice"),
            ("impersonate-group", ALL_AUTHENTICATED),
            ("impersonate-group", "dev"),
        ]);
        assert_eq!(user.unwrap().groups, vec![ALL_AUTHENTICATED, "dev"]);
    }

    #[test]
    fn the_anonymous_user_is_unauthenticated() {
        let (user, _) = run(&[("impersonate-user", ANONYMOUS)]);
        assert_eq!(user.unwrap().groups, vec![ALL_UNAUTHENTICATED]);
        let (user, _) = run(&[
            ("impersonate-user", ANONYMOUS),
            ("impersonate-group", "dev"),
        ]);
        assert_eq!(user.unwrap().groups, vec!["dev", ALL_UNAUTHENTICATED]);
    }

    #[test]
    fn a_service_account_is_checked_in_its_namespace_and_gets_its_groups() {
        let (user, asked) = run(&[("impersonate-user", "system:serviceaccount:sveltos:ci")]);
        let user = user.unwrap();
        assert_eq!(user.username, "system:serviceaccount:sveltos:ci");
        assert_eq!(
            user.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:sveltos",
                ALL_AUTHENTICATED
            ]
        );
        assert_eq!(
            checked(&asked[0]),
            "impersonate /serviceaccounts sveltos ci"
        );
        // Groups asked for replace the service account's.
        let (user, _) = run(&[
            ("impersonate-user", "system:serviceaccount:sveltos:ci"),
            ("impersonate-group", "dev"),
        ]);
        assert_eq!(user.unwrap().groups, vec!["dev", ALL_AUTHENTICATED]);
        // Not a valid service account name: an ordinary user.
        let (user, asked) = run(&[("impersonate-user", "system:serviceaccount:Bad:ci")]);
        assert_eq!(user.unwrap().username, "system:serviceaccount:Bad:ci");
        assert_eq!(asked[0].resource, "users");
    }

    #[test]
    fn the_first_refusal_is_the_403_and_later_checks_do_not_run() {
        let asked = Mutex::new(Vec::new());
        let err = impersonate(
            &headers(&[
                ("impersonate-user", "alice"),
                ("impersonate-group", "release-managers"),
                ("impersonate-uid", "1234"),
            ]),
            &admin(),
            &|a| {
                asked.lock().unwrap().push(a.resource.clone());
                if a.resource == "groups" {
                    Decision::Deny(None)
                } else {
                    Decision::Allow
                }
            },
            "/",
        )
        .unwrap_err();
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message(),
            r#"groups "release-managers" is forbidden: User "admin" cannot impersonate resource "groups" in API group "" at the cluster scope"#
        );
        assert_eq!(asked.into_inner().unwrap(), vec!["users", "groups"]);
    }

    #[test]
    fn groups_without_a_user_are_an_internal_error_naming_the_requests() {
        let (result, asked) = run(&[("impersonate-group", "dev"), ("impersonate-uid", "1234")]);
        let err = result.unwrap_err();
        assert_eq!(err.code, 500);
        assert_eq!(
            err.plain_text.as_deref(),
            Some("Internal Server Error: \"/api/v1/namespaces\": requested [{Group  dev    } {UID  1234  authentication.k8s.io/v1  }] without impersonating a user\n")
        );
        assert!(asked.is_empty());
        // An empty user header is no user.
        let (result, _) = run(&[("impersonate-user", ""), ("impersonate-group", "dev")]);
        assert_eq!(result.unwrap_err().code, 500);
    }

    #[test]
    fn extra_keys_unescape_like_go_path_unescape() {
        assert_eq!(extra_key("Acme.com%2Fproject"), "acme.com/project");
        assert_eq!(extra_key("a%2"), "a%2");
        assert_eq!(extra_key("a%zz%2f"), "a%zz%2f");
        assert_eq!(extra_key("a+b"), "a+b");
        assert_eq!(extra_key("%e2%9c%93"), "\u{2713}");
        assert_eq!(extra_key("%ff"), "%ff");
    }
}
