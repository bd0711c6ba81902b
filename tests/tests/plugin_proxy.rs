//! Proxies as kubectl uses them (issue 25, item 12): a kubeconfig cluster's `proxy-url`
//! (http and socks5) always, and otherwise `HTTPS_PROXY` unless the server is loopback or
//! `NO_PROXY` names it. Each case runs the plugin and the real `kubectl` against the stand-in
//! through a forward proxy on loopback that records each tunnel it opens; the full decision
//! table is `kube-connect`'s unit test.

mod plugin_common;

use std::process::Command;

use plugin_common::*;
use promotion_e2e::bins;
use promotion_e2e::proxy::{ForwardProxy, Tunnel};

/// The stand-in's kubeconfig with `server` (when given) and extra cluster fields.
fn kubeconfig_with(env: &Env, name: &str, server: Option<&str>, extra: &str) -> String {
    let text = std::fs::read_to_string(env.kubeconfig()).expect("kubeconfig");
    let mut out = String::new();
    for line in text.lines() {
        match (line.trim_start().strip_prefix("server: "), server) {
            (Some(_), Some(s)) => out.push_str(&format!("    server: {s}\n")),
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
        if line.trim_start().starts_with("server: ") {
            out.push_str(extra);
        }
    }
    let path = env.path(name);
    std::fs::write(&path, out).expect("write kubeconfig");
    path.display().to_string()
}

fn with_env(mut cmd: Command, args: &[&str], vars: &[(&str, &str)]) -> Output {
    cmd.args(args).envs(vars.iter().copied());
    bins::run(&mut cmd).unwrap_or_else(|e| panic!("{e}"))
}

/// The plugin and kubectl each read the promotions once with this kubeconfig and environment;
/// both must succeed, and the tunnels they opened are returned (plugin's, kubectl's).
fn both(
    env: &Env,
    proxy: &ForwardProxy,
    kubeconfig: &str,
    vars: &[(&str, &str)],
) -> (Vec<Tunnel>, Vec<Tunnel>) {
    let before = proxy.tunnels().len();
    with_env(env.cmd(), &["list", "--kubeconfig", kubeconfig], vars).expect(0);
    let after_plugin = proxy.tunnels().len();
    with_env(
        env.kube.command("kubectl"),
        &["get", "clusterpromotions", "--kubeconfig", kubeconfig],
        vars,
    )
    .expect(0);
    let all = proxy.tunnels();
    (
        all[before..after_plugin].to_vec(),
        all[after_plugin..].to_vec(),
    )
}

fn port_of(env: &Env) -> u16 {
    env.server
        .url()
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .expect("stand-in port")
}

#[test]
fn kubeconfig_proxy_url_carries_every_request_like_kubectl() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let proxy = ForwardProxy::start().expect("proxy");
    let target = format!("127.0.0.1:{}", port_of(&env));
    for (protocol, url) in [("http", proxy.http_url()), ("socks5", proxy.socks5_url())] {
        let kc = kubeconfig_with(
            &env,
            &format!("kc-{protocol}"),
            None,
            &format!("    proxy-url: {url}\n"),
        );
        // The server is loopback: a kubeconfig proxy-url is used all the same (client-go skips
        // loopback only for the environment's proxy).
        let (plugin, kubectl) = both(&env, &proxy, &kc, &[]);
        for (who, tunnels) in [("plugin", &plugin), ("kubectl", &kubectl)] {
            assert!(!tunnels.is_empty(), "{who} opened no {protocol} tunnel");
            assert!(
                tunnels
                    .iter()
                    .all(|t| t.protocol == protocol && t.target == target),
                "{who}: {tunnels:?}"
            );
        }
    }
    assert!(proxy.upstream_bytes() > 0);

    // A proxy-url wins over NO_PROXY, for both.
    let kc = kubeconfig_with(
        &env,
        "kc-noproxy",
        None,
        &format!("    proxy-url: {}\n", proxy.http_url()),
    );
    let (plugin, kubectl) = both(&env, &proxy, &kc, &[("NO_PROXY", "127.0.0.1,localhost")]);
    assert!(!plugin.is_empty() && !kubectl.is_empty());

    // A proxy that is down: both fail, the plugin in one line naming the server and the proxy.
    let down_proxy = format!("http://127.0.0.1:{}", closed_port());
    let down = kubeconfig_with(
        &env,
        "kc-down",
        None,
        &format!("    proxy-url: {down_proxy}\n"),
    );
    let out = env.run(&["list", "--kubeconfig", &down]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.starts_with(&format!(
            "error: unable to connect to the server at {}: through the proxy {down_proxy}: ",
            env.server.url().trim_end_matches('/')
        )),
        "{}",
        out.stderr
    );
    let k = with_env(
        env.kube.command("kubectl"),
        &["get", "clusterpromotions", "--kubeconfig", &down],
        &[],
    );
    assert_eq!(k.code, 1, "{}", k.stderr);
}

/// A name of this machine that /etc/hosts maps to a loopback address, other than `localhost`:
/// not loopback for the proxy rules (they look at the URL, not at what it resolves to), and
/// reachable directly without asking any DNS server.
fn loopback_alias() -> String {
    let hosts = std::fs::read_to_string("/etc/hosts").expect("/etc/hosts");
    hosts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let ip = f.next()?;
            ip.starts_with("127.").then(|| f.collect::<Vec<_>>())
        })
        .flatten()
        .find(|n| !n.starts_with('#') && *n != "localhost" && !n.contains("localhost"))
        .map(str::to_string)
        .expect("/etc/hosts names this machine at a 127.x address")
}

#[test]
fn environment_proxy_follows_client_go_rules_like_kubectl() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let proxy = ForwardProxy::start().expect("proxy");
    let port = port_of(&env);
    let https_proxy = proxy.http_url();

    // The stand-in at 127.0.0.1: the environment's proxy is skipped for loopback.
    let kc = env.kubeconfig().display().to_string();
    let (plugin, kubectl) = both(&env, &proxy, &kc, &[("HTTPS_PROXY", &https_proxy)]);
    assert_eq!((plugin, kubectl), (vec![], vec![]));

    // The stand-in under a name that is not loopback: through the proxy.
    let name = loopback_alias();
    proxy.alias(&name);
    let named = kubeconfig_with(
        &env,
        "kc-named",
        Some(&format!("https://{name}:{port}")),
        // The serving certificate names localhost and 127.0.0.1.
        "    tls-server-name: localhost\n",
    );
    let target = format!("{name}:{port}");
    // A trailing comma and entries that do not match leave the proxy in use (kube's own
    // loader refused such a NO_PROXY).
    for no_proxy in ["", "example.com,10.0.0.0/8,", ".corp, *.internal,,"] {
        let (plugin, kubectl) = both(
            &env,
            &proxy,
            &named,
            &[("HTTPS_PROXY", &https_proxy), ("NO_PROXY", no_proxy)],
        );
        for (who, tunnels) in [("plugin", &plugin), ("kubectl", &kubectl)] {
            assert!(
                !tunnels.is_empty() && tunnels.iter().all(|t| t.target == target),
                "{who} with NO_PROXY={no_proxy:?}: {tunnels:?}"
            );
        }
    }
    // NO_PROXY naming the host (or lower-case no_proxy, or *): direct, for both.
    for vars in [
        vec![
            ("HTTPS_PROXY", https_proxy.as_str()),
            ("NO_PROXY", name.as_str()),
        ],
        vec![("https_proxy", https_proxy.as_str()), ("no_proxy", "*")],
    ] {
        let (plugin, kubectl) = both(&env, &proxy, &named, &vars);
        assert_eq!((plugin, kubectl), (vec![], vec![]), "{vars:?}");
    }
    // HTTP_PROXY is for http:// servers only.
    let (plugin, kubectl) = both(&env, &proxy, &named, &[("HTTP_PROXY", &https_proxy)]);
    assert_eq!((plugin, kubectl), (vec![], vec![]));
}
