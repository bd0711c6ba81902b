//! The environment proxy client-go uses when a kubeconfig cluster has no `proxy-url`:
//! `utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)`, that is Go's
//! `golang.org/x/net/http/httpproxy` (`HTTPS_PROXY` for https servers, `HTTP_PROXY` for http
//! ones, upper case first; never for `localhost` or a loopback IP; `NO_PROXY` entries: `*`, IP,
//! IP:port, CIDR, domain (with its subdomains), `.domain` / `*.domain` (subdomains only), each
//! optionally with `:port`; malformed entries ignored) wrapped by client-go's check of
//! `NO_PROXY`'s CIDRs parsed sloppily (IPv4 octets with leading zeros read as decimal).
//!
//! Not modelled: Go's IDNA conversion of non-ASCII host names (a `http::Uri` host is ASCII), and
//! Go's refusal of `HTTP_PROXY` when `REQUEST_METHOD` is set (CGI).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The proxy variables of an environment, as Go reads them (`getEnvAny`: the upper-case name
/// when it is set and not empty, else the lower-case one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    pub http_proxy: String,
    pub https_proxy: String,
    pub no_proxy: String,
}

impl ProxyEnv {
    /// The variables of this process.
    pub fn from_env() -> ProxyEnv {
        ProxyEnv::from_lookup(|name| std::env::var(name).ok())
    }

    /// The variables as `lookup` gives them (for tests and for environments other than this
    /// process's).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> ProxyEnv {
        let any = |names: [&str; 2]| {
            names
                .iter()
                .find_map(|n| lookup(n).filter(|v| !v.is_empty()))
                .unwrap_or_default()
        };
        ProxyEnv {
            http_proxy: any(["HTTP_PROXY", "http_proxy"]),
            https_proxy: any(["HTTPS_PROXY", "https_proxy"]),
            no_proxy: any(["NO_PROXY", "no_proxy"]),
        }
    }

    /// The proxy client-go would use for a request to `server` (the cluster URL), `None` for a
    /// direct connection.
    pub fn proxy_for(&self, server: &http::Uri) -> Option<http::Uri> {
        let host = hostname(server);
        // client-go's wrapper: a CIDR of NO_PROXY containing the server's IP means direct.
        if let Some(ip) = parse_ip_sloppy(host) {
            let in_cidr = self
                .no_proxy
                .split(',')
                .filter_map(parse_cidr_sloppy)
                .any(|net| net.contains(ip));
            if in_cidr {
                return None;
            }
        }
        let proxy = match server.scheme_str() {
            Some("https") => &self.https_proxy,
            Some("http") => &self.http_proxy,
            _ => return None,
        };
        let proxy = parse_proxy(proxy)?;
        let port = match server.port_u16() {
            Some(p) => p.to_string(),
            None => default_port(server.scheme_str().unwrap_or_default()).to_string(),
        };
        if !self.use_proxy(host, &port) {
            return None;
        }
        Some(proxy)
    }

    /// httpproxy's `useProxy` for `host:port`.
    fn use_proxy(&self, host: &str, port: &str) -> bool {
        if host.is_empty() {
            return true;
        }
        // Go compares before lower-casing: only the exact name `localhost` is skipped.
        if host == "localhost" {
            return false;
        }
        let ip = host.parse::<IpAddr>().ok().map(canonical);
        if ip.is_some_and(|ip| ip.is_loopback()) {
            return false;
        }
        let host = host.trim().to_lowercase();
        let rules = NoProxy::parse(&self.no_proxy);
        if rules.all {
            return false;
        }
        if let Some(ip) = ip {
            if rules.ips.iter().any(|m| m.matches(ip, port)) {
                return false;
            }
        }
        !rules.domains.iter().any(|m| m.matches(&host, port))
    }
}

/// `url.URL.Hostname()`: the host without IPv6 brackets.
fn hostname(uri: &http::Uri) -> &str {
    let host = uri.host().unwrap_or_default();
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

fn default_port(scheme: &str) -> u16 {
    match scheme {
        "http" => 80,
        "socks5" => 1080,
        _ => 443,
    }
}

/// httpproxy's `parseProxy`: a value without scheme or host is read as `http://value`; one that
/// still does not parse is ignored (Go's `init` drops the error). `socks5h` (name resolution by
/// the proxy) is what kube's `socks5` connector does, so it is passed on as `socks5`.
fn parse_proxy(value: &str) -> Option<http::Uri> {
    if value.is_empty() {
        return None;
    }
    let complete = |u: &http::Uri| u.scheme().is_some() && u.host().is_some_and(|h| !h.is_empty());
    let uri = match value.parse::<http::Uri>() {
        Ok(u) if complete(&u) => u,
        _ => format!("http://{value}")
            .parse::<http::Uri>()
            .ok()
            .filter(complete)?,
    };
    if uri.scheme_str() == Some("socks5h") {
        let rest = uri.to_string();
        return rest
            .strip_prefix("socks5h")
            .and_then(|r| format!("socks5{r}").parse().ok());
    }
    Some(uri)
}

/// An IPv4-mapped IPv6 address is the IPv4 address for Go (`net.IP.To4`).
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// `NO_PROXY` parsed as httpproxy's `config.init` parses it.
#[derive(Default)]
struct NoProxy {
    all: bool,
    ips: Vec<IpRule>,
    domains: Vec<DomainRule>,
}

enum IpRule {
    Cidr(Cidr),
    Ip { ip: IpAddr, port: String },
}

impl IpRule {
    fn matches(&self, ip: IpAddr, port: &str) -> bool {
        match self {
            IpRule::Cidr(net) => net.contains(ip),
            IpRule::Ip { ip: rule, port: p } => *rule == ip && (p.is_empty() || p == port),
        }
    }
}

struct DomainRule {
    /// Always starts with `.`.
    suffix: String,
    port: String,
    /// The entry named a host (`example.com`), which matches itself too, not only subdomains.
    match_host: bool,
}

impl DomainRule {
    fn matches(&self, host: &str, port: &str) -> bool {
        let hit = host.ends_with(&self.suffix) || (self.match_host && host == &self.suffix[1..]);
        hit && (self.port.is_empty() || self.port == port)
    }
}

impl NoProxy {
    fn parse(value: &str) -> NoProxy {
        let mut rules = NoProxy::default();
        for entry in value.split(',') {
            let entry = entry.trim().to_lowercase();
            if entry.is_empty() {
                continue;
            }
            if entry == "*" {
                return NoProxy {
                    all: true,
                    ..NoProxy::default()
                };
            }
            if let Some(net) = parse_cidr_strict(&entry) {
                rules.ips.push(IpRule::Cidr(net));
                continue;
            }
            let (host, port) = match split_host_port(&entry) {
                Some(("", _)) => continue,
                Some((h, p)) => (h.to_string(), p.to_string()),
                None => (entry.clone(), String::new()),
            };
            if let Ok(ip) = host.parse::<IpAddr>() {
                rules.ips.push(IpRule::Ip {
                    ip: canonical(ip),
                    port,
                });
                continue;
            }
            if host.is_empty() {
                continue;
            }
            let host = host
                .strip_prefix('*')
                .filter(|h| h.starts_with('.'))
                .unwrap_or(&host);
            let (suffix, match_host) = match host.starts_with('.') {
                true => (host.to_string(), false),
                false => (format!(".{host}"), true),
            };
            rules.domains.push(DomainRule {
                suffix,
                port,
                match_host,
            });
        }
        rules
    }
}

/// Go's `net.SplitHostPort`: `None` where Go returns an error.
fn split_host_port(s: &str) -> Option<(&str, &str)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = after.strip_prefix(':')?;
        if port.contains([':', '[', ']']) {
            return None;
        }
        return Some((host, port));
    }
    let (host, port) = s.rsplit_once(':')?;
    if host.contains([':', '[', ']']) || port.contains(['[', ']']) {
        return None;
    }
    Some((host, port))
}

#[derive(Clone, Copy, Debug)]
struct Cidr {
    base: IpAddr,
    prefix: u8,
}

impl Cidr {
    fn contains(&self, ip: IpAddr) -> bool {
        match (self.base, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let full = usize::from(prefix / 8);
    let rest = prefix % 8;
    if a[..full] != b[..full] {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    a[full] & mask == b[full] & mask
}

/// Go's `net.ParseCIDR` (strict: no leading zeros).
fn parse_cidr_strict(s: &str) -> Option<Cidr> {
    let (ip, prefix) = s.split_once('/')?;
    cidr(ip.parse().ok()?, prefix)
}

/// client-go's `netutils.ParseCIDRSloppy` (IPv4 octets may have leading zeros).
fn parse_cidr_sloppy(s: &str) -> Option<Cidr> {
    let (ip, prefix) = s.split_once('/')?;
    cidr(parse_ip_sloppy(ip)?, prefix)
}

fn cidr(base: IpAddr, prefix: &str) -> Option<Cidr> {
    // Go accepts only decimal digits here, without sign, and at most the address's bit length.
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let prefix: u8 = prefix.parse().ok()?;
    let max = match base {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    };
    (prefix <= max).then_some(Cidr {
        base: canonical(base),
        prefix,
    })
}

/// `netutils.ParseIPSloppy`: IPv4 with leading zeros read as decimal, IPv6 as usual.
fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(IpAddr::V6).map(canonical);
    }
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for o in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = part.parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(IpAddr::V4(Ipv4Addr::from(octets)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(https: &str, http: &str, no: &str) -> ProxyEnv {
        ProxyEnv {
            http_proxy: http.into(),
            https_proxy: https.into(),
            no_proxy: no.into(),
        }
    }

    fn via(e: &ProxyEnv, server: &str) -> Option<String> {
        e.proxy_for(&server.parse().unwrap()).map(|u| u.to_string())
    }

    /// Cases from Go's `httpproxy` tests (`proxy_test.go`) and client-go's
    /// `TestNewProxierWithNoProxyCIDR`, as (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, server, proxy).
    #[test]
    fn decisions_follow_client_go() {
        let p = "http://proxy.corp:3128/";
        let cases: &[(&str, &str, &str, &str, Option<&str>)] = &[
            // The scheme of the server picks the variable.
            (p, "", "", "https://api.example.com", Some(p)),
            (p, "", "", "http://api.example.com", None),
            ("", p, "", "http://api.example.com", Some(p)),
            ("", p, "", "https://api.example.com", None),
            // Loopback and the exact name localhost never go through the environment proxy.
            (p, "", "", "https://127.0.0.1:6443", None),
            (p, "", "", "https://127.8.9.10:6443", None),
            (p, "", "", "https://[::1]:6443", None),
            (p, "", "", "https://localhost:6443", None),
            (p, "", "", "https://LOCALHOST:6443", Some(p)),
            (p, "", "", "https://localhost.example.com", Some(p)),
            // A value without scheme is http://value.
            (
                "proxy.corp:3128",
                "",
                "",
                "https://api.example.com",
                Some(p),
            ),
            (
                "10.1.1.1:3128",
                "",
                "",
                "https://api.example.com",
                Some("http://10.1.1.1:3128/"),
            ),
            (
                "socks5://s:1080",
                "",
                "",
                "https://api.example.com",
                Some("socks5://s:1080/"),
            ),
            (
                "socks5h://s:1080",
                "",
                "",
                "https://api.example.com",
                Some("socks5://s:1080/"),
            ),
            // NO_PROXY: a host matches itself and its subdomains.
            (p, "", "example.com", "https://example.com", None),
            (p, "", "example.com", "https://api.example.com", None),
            (p, "", "example.com", "https://notexample.com", Some(p)),
            // .domain and *.domain: subdomains only.
            (p, "", ".example.com", "https://example.com", Some(p)),
            (p, "", ".example.com", "https://api.example.com", None),
            (p, "", "*.example.com", "https://example.com", Some(p)),
            (p, "", "*.example.com", "https://api.example.com", None),
            // Ports: an entry with a port matches only that port (default 443 for https).
            (p, "", "example.com:6443", "https://example.com:6443", None),
            (p, "", "example.com:6443", "https://example.com", Some(p)),
            (p, "", "example.com:443", "https://example.com", None),
            // IPs, IP:port and CIDRs.
            (p, "", "10.0.0.1", "https://10.0.0.1:6443", None),
            (p, "", "10.0.0.1:6443", "https://10.0.0.1:6443", None),
            (p, "", "10.0.0.1:443", "https://10.0.0.1:6443", Some(p)),
            (p, "", "10.0.0.0/8", "https://10.2.3.4:6443", None),
            (p, "", "10.0.0.0/8", "https://11.2.3.4:6443", Some(p)),
            (p, "", "2001:db8::/32", "https://[2001:db8::1]:6443", None),
            (
                p,
                "",
                "[2001:db8::1]:6443",
                "https://[2001:db8::1]:6443",
                None,
            ),
            // A CIDR does not match a name, whatever it resolves to.
            (p, "", "10.0.0.0/8", "https://api.example.com", Some(p)),
            // client-go's sloppy CIDR: leading zeros are decimal.
            (p, "", "010.0.0.0/8", "https://10.2.3.4:6443", None),
            // Case, spaces, empty and malformed entries.
            (p, "", " Example.COM , ", "https://api.example.com", None),
            (p, "", ",,localhost,", "https://api.example.com", Some(p)),
            (p, "", ":6443", "https://api.example.com:6443", Some(p)),
            // *: everything direct.
            (p, "", "foo,*", "https://api.example.com", None),
            // No proxy at all.
            ("", "", "", "https://api.example.com", None),
        ];
        for (https, http, no, server, want) in cases {
            let e = env(https, http, no);
            assert_eq!(
                via(&e, server).as_deref(),
                *want,
                "HTTPS_PROXY={https:?} HTTP_PROXY={http:?} NO_PROXY={no:?} server {server}"
            );
        }
    }

    #[test]
    fn upper_case_variables_win_unless_empty() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            ProxyEnv::from_lookup(move |n| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| v.to_string())
            })
        };
        let e = vars(&[("HTTPS_PROXY", "http://a:1"), ("https_proxy", "http://b:1")]);
        assert_eq!(e.https_proxy, "http://a:1");
        let e = vars(&[("HTTPS_PROXY", ""), ("https_proxy", "http://b:1")]);
        assert_eq!(e.https_proxy, "http://b:1");
        let e = vars(&[("no_proxy", "x"), ("http_proxy", "http://c:1")]);
        assert_eq!(e, env("", "http://c:1", "x"));
    }
}
