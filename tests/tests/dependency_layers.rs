//! Each binary links only what it calls: read from `cargo tree`, as the README says.

use std::process::Command;

/// The workspace crates `package` depends on (normal dependencies, any depth).
fn links(package: &str) -> String {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(promotion_e2e::bins::workspace_root())
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn has(tree: &str, krate: &str) -> bool {
    tree.lines()
        .any(|l| l.split_whitespace().next() == Some(krate))
}

#[test]
fn the_webhook_links_no_lua_vm_and_no_health_runtime() {
    let tree = links("promotion-webhook");
    assert!(!has(&tree, "health-runtime"), "{tree}");
    assert!(!has(&tree, "mlua"), "{tree}");
    // What it calls: the domain and its checkers.
    for krate in ["promotion-shared", "lua-check", "cel-check", "crd-schema"] {
        assert!(has(&tree, krate), "the webhook should link {krate}");
    }
}

#[test]
fn only_the_plugin_links_the_health_runtime() {
    assert!(has(&links("kubectl-promotion"), "health-runtime"));
    let controller = links("promotion-controller");
    assert!(!has(&controller, "health-runtime"), "{controller}");
    assert!(!has(&controller, "mlua"), "{controller}");
    let shared = links("promotion-shared");
    assert!(!has(&shared, "health-runtime"), "{shared}");
}

#[test]
fn the_engines_do_not_depend_on_the_domain() {
    for engine in [
        "lua-check",
        "cel-check",
        "crd-schema",
        "health-runtime",
        "go-text",
        "promotion-manifest",
        "promotion-findings",
        // The connection rule the plugin and the controller use.
        "kube-connect",
    ] {
        let tree = links(engine);
        assert!(
            !has(&tree, "promotion-shared"),
            "{engine} depends on promotion-shared:\n{tree}"
        );
    }
}

#[test]
fn the_plugin_and_the_controller_connect_through_kube_connect() {
    for binary in ["kubectl-promotion", "promotion-controller"] {
        let tree = links(binary);
        assert!(has(&tree, "kube-connect"), "{binary}:\n{tree}");
    }
    // The webhook never connects to the API server.
    let webhook = links("promotion-webhook");
    assert!(!has(&webhook, "kube-connect"), "{webhook}");
}
