//! What protects a local web server that acts with the user's credentials: every rule is a pure
//! function of the request's headers, so that each is tested alone and the router only applies
//! them.
//!
//! - **A token on every request**, reads and the event stream included: a page of another site
//!   cannot read anything, and another local user cannot either. The command prints it in the
//!   URL; the first request that carries it (`?token=`) is answered with a redirect that sets it
//!   as an `HttpOnly`, `SameSite=Strict` cookie, so it leaves the address bar and history and no
//!   script can read it.
//! - **A Host allow-list** (DNS rebinding: a hostile name resolved to 127.0.0.1 makes the
//!   browser send that name as Host).
//! - **An Origin check on writes** (cross-site POSTs); `SameSite=Strict` already keeps the
//!   cookie off them, this refuses them even from a browser that would send it.
//! - **Headers**: a Content-Security-Policy with `frame-ancestors 'none'` (no clickjacking of the
//!   approve button) and only this server's own script and style, no caching, no referrer.

use std::net::{IpAddr, SocketAddr};

/// The cookie that carries the token once the URL's token was seen.
pub const COOKIE: &str = "promotion-dashboard";

/// The query parameter of the URL the command prints.
pub const TOKEN_PARAM: &str = "token";

/// Only this server's script and stylesheet, no inline code, no frames, forms posting only here.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

/// The headers every answer carries, besides the CSP.
pub const HEADERS: &[(&str, &str)] = &[
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
];

/// Who may talk to the server, decided once at start.
#[derive(Clone, Debug)]
pub struct Guard {
    token: String,
    /// `host:port` values a request's Host header may carry.
    hosts: Vec<String>,
    /// `http://host:port` (or https) values a write's Origin may carry.
    origins: Vec<String>,
    /// Served over TLS: the cookie is `Secure`.
    tls: bool,
}

/// Why a request is refused, and the status it gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub reason: String,
}

impl Refusal {
    fn new(status: u16, reason: impl Into<String>) -> Refusal {
        Refusal {
            status,
            reason: reason.into(),
        }
    }
}

/// What the token check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// The cookie carries the token.
    Granted,
    /// The URL carries it: set the cookie and redirect to the same path without it.
    Exchange,
}

impl Guard {
    /// The guard of a server bound at `bound`, with `token`. A loopback address is reachable
    /// under `localhost` and its own literal; any other address only under its literal (and
    /// `extra_hosts`, names the user said it is reached by).
    pub fn new(token: String, bound: SocketAddr, tls: bool, extra_hosts: &[String]) -> Guard {
        let port = bound.port();
        let literal = match bound.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        };
        let mut names = vec![literal];
        // Bound to every address (0.0.0.0): loopback reaches it too.
        if bound.ip().is_loopback() || bound.ip().is_unspecified() {
            names.extend(["localhost".to_string(), "127.0.0.1".into(), "[::1]".into()]);
        }
        names.extend(extra_hosts.iter().cloned());
        names.dedup();
        let hosts: Vec<String> = names.iter().map(|n| format!("{n}:{port}")).collect();
        let scheme = if tls { "https" } else { "http" };
        let origins = hosts.iter().map(|h| format!("{scheme}://{h}")).collect();
        Guard {
            token,
            hosts,
            origins,
            tls,
        }
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// The Host header must name this server (DNS rebinding).
    pub fn check_host(&self, host: Option<&str>) -> Result<(), Refusal> {
        let Some(host) = host else {
            return Err(Refusal::new(400, "the request has no Host header"));
        };
        let host = host.to_ascii_lowercase();
        if self.hosts.contains(&host) {
            return Ok(());
        }
        Err(Refusal::new(
            421,
            format!(
                "Host {host:?} is not this dashboard's address ({}): refused, as a page that \
                 rebinds its own name to this address would send it",
                self.hosts.join(", ")
            ),
        ))
    }

    /// The token, from the cookie or from the URL (`query` is the raw query string).
    pub fn check_token(
        &self,
        cookie: Option<&str>,
        query: Option<&str>,
    ) -> Result<Access, Refusal> {
        if cookie_token(cookie).is_some_and(|t| same(t, &self.token)) {
            return Ok(Access::Granted);
        }
        if let Some(given) = query.and_then(query_token) {
            if same(&given, &self.token) {
                return Ok(Access::Exchange);
            }
            return Err(Refusal::new(
                401,
                "the token in this address is not the dashboard's: open the address `kubectl \
                 promotion dashboard` printed when it started (a new start prints a new token)",
            ));
        }
        Err(Refusal::new(
            401,
            "no token: open the address `kubectl promotion dashboard` printed when it started",
        ))
    }

    /// A write must come from this server's own pages: its Origin names this server. A browser
    /// sends Origin on every POST; a request without one is not from a page of ours.
    pub fn check_origin(&self, origin: Option<&str>) -> Result<(), Refusal> {
        match origin {
            Some(o) if self.origins.iter().any(|x| x.eq_ignore_ascii_case(o)) => Ok(()),
            Some(o) => Err(Refusal::new(
                403,
                format!("cross-site request refused: Origin {o:?} is not this dashboard"),
            )),
            None => Err(Refusal::new(
                403,
                "request refused: a write must come from the dashboard's own page (no Origin)",
            )),
        }
    }

    /// The `Set-Cookie` value that swaps the URL's token for a cookie no script can read and no
    /// other site's request carries.
    pub fn set_cookie(&self) -> String {
        format!(
            "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict{}",
            self.token,
            if self.tls { "; Secure" } else { "" }
        )
    }
}

/// A new token: 32 bytes from the operating system's generator, URL-safe base64.
pub fn new_token() -> std::io::Result<String> {
    use base64::Engine;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

fn cookie_token(header: Option<&str>) -> Option<&str> {
    header?
        .split(';')
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
}

fn query_token(query: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == TOKEN_PARAM)
        .map(|(_, v)| v.into_owned())
}

/// The query without its token, for the redirect that drops it from the address.
pub fn without_token(query: Option<&str>) -> Option<String> {
    let rest: Vec<(String, String)> = form_urlencoded::parse(query?.as_bytes())
        .filter(|(k, _)| k != TOKEN_PARAM)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if rest.is_empty() {
        return None;
    }
    Some(
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(rest)
            .finish(),
    )
}

/// Compared in time independent of where the first difference is, so the answer's timing does
/// not tell a guesser how much of the token was right.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new("tok".into(), "127.0.0.1:3100".parse().unwrap(), false, &[])
    }

    #[test]
    fn only_this_servers_names_are_accepted_as_host() {
        let g = guard();
        for ok in [
            "127.0.0.1:3100",
            "localhost:3100",
            "LOCALHOST:3100",
            "[::1]:3100",
        ] {
            assert_eq!(g.check_host(Some(ok)), Ok(()), "{ok}");
        }
        for bad in [
            "evil.example:3100",
            "127.0.0.1:3101",
            "localhost",
            "127.0.0.1",
        ] {
            let r = g.check_host(Some(bad)).unwrap_err();
            assert_eq!(r.status, 421, "{bad}");
            assert!(
                r.reason.contains("not this dashboard's address"),
                "{}",
                r.reason
            );
        }
        assert_eq!(g.check_host(None).unwrap_err().status, 400);
    }

    #[test]
    fn a_non_loopback_address_is_reachable_under_its_literal_and_the_names_given() {
        let g = Guard::new(
            "t".into(),
            "10.0.0.5:443".parse().unwrap(),
            true,
            &["dash.internal".into()],
        );
        assert_eq!(g.check_host(Some("10.0.0.5:443")), Ok(()));
        assert_eq!(g.check_host(Some("dash.internal:443")), Ok(()));
        assert!(g.check_host(Some("localhost:443")).is_err());
        assert_eq!(g.check_origin(Some("https://dash.internal:443")), Ok(()));
        assert!(g.check_origin(Some("http://dash.internal:443")).is_err());
        assert!(g.set_cookie().ends_with("; Secure"));
    }

    #[test]
    fn the_token_comes_from_the_cookie_or_is_exchanged_from_the_url() {
        let g = guard();
        assert_eq!(
            g.check_token(Some("a=b; promotion-dashboard=tok"), None),
            Ok(Access::Granted)
        );
        assert_eq!(
            g.check_token(None, Some("x=1&token=tok")),
            Ok(Access::Exchange)
        );
        assert_eq!(g.check_token(None, None).unwrap_err().status, 401);
        assert_eq!(
            g.check_token(Some("promotion-dashboard=nope"), None)
                .unwrap_err()
                .status,
            401
        );
        let wrong = g.check_token(None, Some("token=tox")).unwrap_err();
        assert!(
            wrong.reason.contains("not the dashboard's"),
            "{}",
            wrong.reason
        );
        // A token of the same length that differs in the last byte only is refused too.
        assert!(!same("tok", "tol"));
        assert!(!same("tok", "toke"));
    }

    #[test]
    fn writes_need_this_servers_origin() {
        let g = guard();
        assert_eq!(g.check_origin(Some("http://127.0.0.1:3100")), Ok(()));
        assert_eq!(g.check_origin(Some("http://localhost:3100")), Ok(()));
        for bad in [
            Some("http://evil.example"),
            Some("null"),
            Some("https://127.0.0.1:3100"),
            None,
        ] {
            assert_eq!(g.check_origin(bad).unwrap_err().status, 403, "{bad:?}");
        }
    }

    #[test]
    fn the_cookie_is_http_only_and_same_site_strict() {
        let c = guard().set_cookie();
        assert_eq!(
            c,
            "promotion-dashboard=tok; Path=/; HttpOnly; SameSite=Strict"
        );
    }

    #[test]
    fn the_redirect_keeps_the_query_without_the_token() {
        assert_eq!(without_token(Some("token=t")), None);
        assert_eq!(
            without_token(Some("phase=failed&token=t&q=a+b")).as_deref(),
            Some("phase=failed&q=a+b")
        );
        assert_eq!(without_token(None), None);
    }

    #[test]
    fn tokens_are_long_and_differ() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    }

    #[test]
    fn the_policy_forbids_frames_and_foreign_scripts() {
        assert!(CONTENT_SECURITY_POLICY.contains("frame-ancestors 'none'"));
        assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self'"));
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe-inline"));
    }
}
