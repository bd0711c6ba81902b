//! `KUBECONFIG` as a list naming a file that does not exist: client-go (and so kubectl) skips
//! the missing entry and merges the rest; the plugin does the same and sees what kubectl sees.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::User;

use super::support::{example, name_of, Expect};

pub fn a_kubeconfig_list_naming_a_missing_file_works_as_in_kubectl(cluster: &Cluster) {
    let backend = cluster.kind().name();
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let promotion = cluster.adopt(example("kyverno-rollout-auto.yaml"));
    let name = name_of(&promotion);
    cluster
        .put(&promotion)
        .or_fail(cluster, "storing a promotion");

    let real = cluster.kubeconfig(User::Viewer);
    let missing = cluster.dir().join("no-such-kubeconfig.yaml");
    assert!(!missing.exists());
    let run = |kubeconfig: &str, args: &[&str]| {
        let mut cmd = cluster.command(User::Viewer, "kubectl");
        cmd.env("KUBECONFIG", kubeconfig).args(args);
        promotion_e2e::bins::run(&mut cmd).or_fail(cluster, "running kubectl")
    };
    let alone = real.display().to_string();
    let get = ["get", "clusterpromotion", &name, "-o", "name"];
    let describe = ["promotion", "describe", &name, "-o", "json"];
    let reference = run(&alone, &describe);
    assert_eq!(reference.code, 0, "[{backend}] {reference}");

    for list in [
        format!("{}:{alone}", missing.display()),
        format!("{alone}:{}", missing.display()),
    ] {
        let out = run(&list, &get);
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (
                0,
                format!("clusterpromotion.config.projectsveltos.io/{name}\n").as_str()
            ),
            "[{backend}] kubectl with KUBECONFIG={list}: {out}"
        );
        let out = run(&list, &describe);
        assert_eq!(
            (out.code, &out.stderr),
            (0, &reference.stderr),
            "[{backend}] plugin with KUBECONFIG={list}: {out}"
        );
        let got: serde_json::Value = serde_json::from_str(&out.stdout).expect("describe -o json");
        assert_eq!(got["name"], name.as_str(), "[{backend}] {got}");
        assert_eq!(
            got["stages"].as_array().map(Vec::len),
            promotion["spec"]["stages"].as_array().map(Vec::len),
            "[{backend}] {got}"
        );
    }
}
