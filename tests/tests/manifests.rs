//! The install manifests under `manifests/` render with the real `kubectl kustomize`, and the
//! rendered objects keep the promises the webhook server, the API server and the docs rely on:
//! a hardened pod, probes on the endpoints the server serves, webhook paths equal to its routes,
//! a certificate valid for the Service, and rules that match ClusterPromotion writes and nothing
//! else. Every install the docs name (`kubectl apply -k manifests/`, `kubectl apply -k
//! manifests/overlays/static-certs`) holds the webhook and promotion-controller, and the docs'
//! way of leaving the controller out leaves the webhook whole.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use base64::Engine as _;
use serde_json::{json, Value};

// The server's routes, from the server itself, so the manifests cannot drift from them.
use promotion_webhook::api::{LIVENESS_PATH, MUTATE_PATH, READINESS_PATH, VALIDATE_PATH};

/// The TLS Secret both overlays provide and the Deployment mounts.
const TLS_SECRET: &str = "promotion-webhook-tls";

fn repo_root() -> PathBuf {
    promotion_e2e::bins::workspace_root()
}

/// The workspace's `promotion-webhook`, built first if it is stale.
fn webhook_binary() -> PathBuf {
    promotion_e2e::bins::binary("promotion-webhook").unwrap_or_else(|e| panic!("{e}"))
}

/// `promotion-webhook serve --help`, to check the manifests pass only flags the server has.
fn serve_help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    HELP.get_or_init(|| {
        let out = Command::new(webhook_binary())
            .args(["serve", "--help"])
            .output()
            .expect("run promotion-webhook serve --help");
        assert!(
            out.status.success(),
            "promotion-webhook serve --help failed"
        );
        String::from_utf8(out.stdout).expect("UTF-8 help")
    })
}

/// Copies `manifests/` into a temporary directory, leaving out certificates a developer may have
/// generated into the static-certs overlay, so renders never depend on the working tree's state.
fn manifests_copy() -> tempfile::TempDir {
    fn copy_dir(from: &Path, to: &Path) {
        fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
        for entry in fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display())) {
            let entry = entry.expect("directory entry");
            let (src, dst) = (entry.path(), to.join(entry.file_name()));
            if src.ends_with("overlays/static-certs/certs") {
                continue;
            }
            if entry.file_type().expect("file type").is_dir() {
                copy_dir(&src, &dst);
            } else {
                fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
            }
        }
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_dir(&repo_root().join("manifests"), tmp.path());
    tmp
}

fn kustomize(dir: &Path) -> std::process::Output {
    Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("run `kubectl kustomize` (kubectl must be on PATH)")
}

fn render(dir: &Path) -> Install {
    let out = kustomize(dir);
    assert!(
        out.status.success(),
        "kubectl kustomize {} failed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("kustomize output is UTF-8");
    let objects = serde_saphyr::from_multiple::<Value>(&text)
        .expect("kustomize output is valid YAML")
        .into_iter()
        .filter(|doc| !doc.is_null())
        .collect();
    Install { objects }
}

/// The objects of one rendered overlay.
struct Install {
    objects: Vec<Value>,
}

impl Install {
    fn all(&self, kind: &str) -> Vec<&Value> {
        self.objects.iter().filter(|o| o["kind"] == kind).collect()
    }

    fn one(&self, kind: &str) -> &Value {
        let found = self.all(kind);
        assert_eq!(
            found.len(),
            1,
            "expected exactly one {kind}, found {}",
            found.len()
        );
        found[0]
    }

    fn named(&self, kind: &str, name: &str) -> &Value {
        self.all(kind)
            .into_iter()
            .find(|o| o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} named {name} in the rendered install"))
    }

    fn kinds(&self) -> BTreeSet<&str> {
        self.objects
            .iter()
            .map(|o| o["kind"].as_str().expect("every object has a kind"))
            .collect()
    }

    /// `Kind/name` of every object.
    fn names(&self) -> BTreeSet<String> {
        self.objects
            .iter()
            .map(|o| format!("{}/{}", s(o, "/kind"), s(o, "/metadata/name")))
            .collect()
    }

    /// The install split into the user roles (the component `manifests/roles`, whose objects all
    /// carry its component label) and the rest.
    fn split_roles(&self) -> (Install, Install) {
        let (roles, rest) =
            self.objects.iter().cloned().partition(|o| {
                o["metadata"]["labels"]["app.kubernetes.io/component"] == USER_ROLES
            });
        (Install { objects: rest }, Install { objects: roles })
    }

    /// The install split into the webhook's objects (with the user roles) and
    /// promotion-controller's (the component `manifests/controller`, whose objects all carry its
    /// name label).
    fn split(&self) -> (Install, Install) {
        let (controller, webhook) = self
            .objects
            .iter()
            .cloned()
            .partition(|o| o["metadata"]["labels"]["app.kubernetes.io/name"] == CONTROLLER);
        (
            Install { objects: webhook },
            Install {
                objects: controller,
            },
        )
    }
}

/// The name of promotion-controller's objects and of the label they all carry.
const CONTROLLER: &str = "promotion-controller";

/// The component label of the user roles (`manifests/roles`).
const USER_ROLES: &str = "user-roles";

/// The user roles, as every install holds them (docs/roles.md).
const ROLE_OBJECTS: [&str; 6] = [
    "ClusterRole/promotion-aggregate-to-view",
    "ClusterRole/promotion-approver",
    "ClusterRole/promotion-author",
    "ClusterRole/promotion-viewer",
    "ClusterRole/promotion-viewer-controller",
    "ClusterRole/promotion-viewer-events",
];

/// promotion-controller's objects, as every install holds them.
const CONTROLLER_OBJECTS: [&str; 7] = [
    "ClusterRole/promotion-controller",
    "ClusterRoleBinding/promotion-controller",
    "Deployment/promotion-controller",
    "PodDisruptionBudget/promotion-controller",
    "Role/promotion-controller-leader-election",
    "RoleBinding/promotion-controller-leader-election",
    "ServiceAccount/promotion-controller",
];

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} is not a string in {}", describe(v)))
}

fn n(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} is not a number in {}", describe(v)))
}

fn describe(v: &Value) -> String {
    format!("{} {}", v["kind"], v["metadata"]["name"])
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether `selector` (a LabelSelector with matchLabels only) selects `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    assert!(
        selector.get("matchExpressions").is_none(),
        "matchExpressions are not used by these manifests"
    );
    let wanted = selector["matchLabels"]
        .as_object()
        .expect("selector has matchLabels");
    !wanted.is_empty() && wanted.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The value of `--name=value` or `--name value` in a container's args.
fn flag<'a>(args: &'a [&'a str], name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    args.iter().enumerate().find_map(|(i, arg)| {
        if let Some(value) = arg.strip_prefix(&prefix) {
            Some(value)
        } else if *arg == name {
            args.get(i + 1).copied()
        } else {
            None
        }
    })
}

/// Whole seconds of a server duration flag value (`5s`, `2m`, `1500ms` rounded up).
fn seconds(duration: &str) -> u64 {
    let split = duration
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(duration.len());
    let (digits, unit) = duration.split_at(split);
    let value: u64 = digits
        .parse()
        .unwrap_or_else(|_| panic!("duration {duration:?}"));
    match unit {
        "ms" => value.div_ceil(1000),
        "s" => value,
        "m" => value * 60,
        "h" => value * 3600,
        _ => panic!("duration {duration:?} has no unit ms, s, m or h"),
    }
}

fn port_of(addr: &str) -> u64 {
    addr.rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_else(|| panic!("listen address {addr} has no port"))
}

/// Resolves a port given by number or by container port name.
fn container_port(container: &Value, port: &Value) -> u64 {
    if let Some(number) = port.as_u64() {
        return number;
    }
    let name = port.as_str().expect("port is a number or a name");
    container["ports"]
        .as_array()
        .and_then(|ports| ports.iter().find(|p| p["name"] == name))
        .map(|p| n(p, "/containerPort"))
        .unwrap_or_else(|| panic!("container has no port named {name}"))
}

/// The UID and GID of the runtime image's last `USER` instruction.
fn dockerfile_user() -> (u64, u64) {
    let path = repo_root().join("Dockerfile");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let user = text
        .lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix("USER "))
        .expect("the Dockerfile sets USER");
    let (uid, gid) = user
        .trim()
        .split_once(':')
        .expect("USER is numeric uid:gid");
    (
        uid.parse().expect("numeric uid"),
        gid.parse().expect("numeric gid"),
    )
}

/// What the overlay-specific checks need to know about a rendered install.
struct Facts {
    namespace: String,
    service: String,
}

impl Facts {
    /// The names a serving certificate must cover; the API server checks `<svc>.<ns>.svc`.
    fn dns_names(&self) -> Vec<String> {
        let (svc, ns) = (&self.service, &self.namespace);
        vec![
            svc.clone(),
            format!("{svc}.{ns}"),
            format!("{svc}.{ns}.svc"),
            format!("{svc}.{ns}.svc.cluster.local"),
        ]
    }

    fn api_server_name(&self) -> String {
        format!("{}.{}.svc", self.service, self.namespace)
    }
}

/// An install as the overlays make it: the webhook (`check_webhook`) and promotion-controller
/// (`check_controller`), nothing else. `extra_kinds` are the kinds the overlay adds to the
/// webhook.
fn check_install(install: &Install, extra_kinds: &[&str]) -> Facts {
    let (rest, controller) = install.split();
    let (webhook, roles) = rest.split_roles();
    let facts = check_webhook(&webhook, extra_kinds);
    check_controller(&controller, &facts.namespace);
    check_controller_user(install);
    check_roles(&roles);
    facts
}

/// `(apiGroup, resource, verb)` of every rule of a role, spelt out.
fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in role["rules"].as_array().expect("rules") {
        assert!(
            rule.get("resourceNames").is_none() && rule.get("nonResourceURLs").is_none(),
            "{}",
            describe(role)
        );
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                for verb in strings(&rule["verbs"]) {
                    out.insert((group.to_string(), resource.to_string(), verb.to_string()));
                }
            }
        }
    }
    out
}

/// The user roles: exactly `ROLE_OBJECTS`, cluster-scoped (so a kustomize `namespace:` cannot
/// move a grant), no wildcard and no Secret anywhere; only ClusterPromotion reads aggregated into
/// `view`, nothing into `edit` or `admin`; the approver writes by patch only. What each role must
/// let each command do is tested on a real API server (`tests/tests/plugin_rbac.rs`).
fn check_roles(roles: &Install) {
    assert_eq!(
        roles.names(),
        ROLE_OBJECTS.into_iter().map(String::from).collect(),
        "the user roles"
    );
    let key = |g: &str, r: &str, v: &str| (g.to_string(), r.to_string(), v.to_string());
    for role in &roles.objects {
        let name = s(role, "/metadata/name");
        assert!(role["metadata"].get("namespace").is_none(), "{name}");
        let granted = grants(role);
        for (group, resource, verb) in &granted {
            assert!(
                group != "*" && resource != "*" && verb != "*",
                "{name}: a wildcard"
            );
            assert_ne!(resource, "secrets", "{name} grants Secrets");
        }
        let labels = &role["metadata"]["labels"];
        for aggregate in ["edit", "admin"] {
            assert!(
                labels
                    .get(format!(
                        "rbac.authorization.k8s.io/aggregate-to-{aggregate}"
                    ))
                    .is_none(),
                "{name} is aggregated into {aggregate}"
            );
        }
        let into_view = labels.get("rbac.authorization.k8s.io/aggregate-to-view");
        if name == "promotion-aggregate-to-view" {
            assert_eq!(into_view, Some(&json!("true")), "{name}");
            let promotions = "clusterpromotions";
            let sveltos = "config.projectsveltos.io";
            assert_eq!(
                granted,
                ["get", "list", "watch"]
                    .into_iter()
                    .map(|v| key(sveltos, promotions, v))
                    .collect(),
                "only ClusterPromotion reads go into view"
            );
        } else {
            assert!(into_view.is_none(), "{name} is aggregated into view");
        }
    }
    let approver = grants(roles.named("ClusterRole", "promotion-approver"));
    let writes: BTreeSet<&(String, String, String)> = approver
        .iter()
        .filter(|(_, _, verb)| !matches!(verb.as_str(), "get" | "list" | "watch"))
        .collect();
    assert_eq!(
        writes,
        [key(
            "config.projectsveltos.io",
            "clusterpromotions",
            "patch"
        )]
        .iter()
        .collect(),
        "the approver writes by patch only"
    );
    let viewer = grants(roles.named("ClusterRole", "promotion-viewer"));
    assert!(
        viewer
            .iter()
            .all(|(_, _, verb)| matches!(verb.as_str(), "get" | "list" | "watch")),
        "the viewer only reads"
    );
    // The approver and the author read everything the viewer reads.
    for role in ["promotion-approver", "promotion-author"] {
        let granted = grants(roles.named("ClusterRole", role));
        assert!(viewer.is_subset(&granted), "{role}");
    }
}

/// The user the webhook lets write promotion-controller's committed-step annotation is the one
/// the controller runs as: no `--controller-user` (nor its environment variable), but
/// `POD_NAMESPACE` from the downward API, from which the server derives
/// `system:serviceaccount:<its namespace>:promotion-controller`. Returns that user.
fn check_controller_user(install: &Install) -> String {
    use promotion_webhook::config::{CONTROLLER_SERVICE_ACCOUNT, POD_NAMESPACE_ENV};
    let webhook = install.named("Deployment", "promotion-webhook");
    let container = &webhook["spec"]["template"]["spec"]["containers"][0];
    let args = strings(&container["args"]);
    assert_eq!(flag(&args, "--controller-user"), None, "{args:?}");
    let env = container["env"].as_array().expect("the webhook's env");
    assert!(
        env.iter()
            .all(|e| e["name"] != "PROMOTION_WEBHOOK_CONTROLLER_USER"),
        "{env:?}"
    );
    let pod_namespace = env
        .iter()
        .find(|e| e["name"] == POD_NAMESPACE_ENV)
        .unwrap_or_else(|| panic!("the webhook has no {POD_NAMESPACE_ENV}: {env:?}"));
    assert_eq!(
        pod_namespace["valueFrom"]["fieldRef"]["fieldPath"], "metadata.namespace",
        "{pod_namespace}"
    );
    assert!(pod_namespace.get("value").is_none(), "{pod_namespace}");
    let derived = format!(
        "system:serviceaccount:{}:{CONTROLLER_SERVICE_ACCOUNT}",
        s(webhook, "/metadata/namespace")
    );

    let controller = install.named("Deployment", CONTROLLER);
    let account = s(controller, "/spec/template/spec/serviceAccountName");
    install.named("ServiceAccount", account);
    let runs_as = format!(
        "system:serviceaccount:{}:{account}",
        s(controller, "/metadata/namespace")
    );
    assert_eq!(derived, runs_as, "the controller user the webhook derives");
    derived
}

/// promotion-controller's objects: exactly `CONTROLLER_OBJECTS`, in the webhook's namespace,
/// running the released image with leader election, probes where the process listens, the
/// image's user, and its service account bound to its roles.
fn check_controller(controller: &Install, namespace: &str) {
    assert_eq!(
        controller.names(),
        CONTROLLER_OBJECTS.into_iter().map(String::from).collect(),
        "promotion-controller's objects"
    );
    for object in &controller.objects {
        if !matches!(
            object["kind"].as_str(),
            Some("ClusterRole" | "ClusterRoleBinding")
        ) {
            assert_eq!(
                object["metadata"]["namespace"],
                namespace,
                "{}",
                describe(object)
            );
        }
    }
    let deployment = controller.named("Deployment", CONTROLLER);
    let pod = &deployment["spec"]["template"]["spec"];
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    assert!(
        selects(&deployment["spec"]["selector"], pod_labels),
        "Deployment selector"
    );
    // Two replicas, of which a drain may take one at a time.
    let replicas = n(deployment, "/spec/replicas");
    assert_eq!(replicas, 2);
    let pdb = controller.one("PodDisruptionBudget");
    assert!(
        selects(&pdb["spec"]["selector"], pod_labels),
        "PDB selector"
    );
    assert_eq!(replicas - n(pdb, "/spec/minAvailable"), 1);
    let container = &pod["containers"][0];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        s(container, "/image"),
        format!(
            "ghcr.io/kubectl-promotion/promotion-controller:v{}",
            env!("CARGO_PKG_VERSION")
        )
    );
    let args = strings(&container["args"]);
    assert_eq!(args[0], "run");
    assert!(args.contains(&"--leader-elect"), "{args:?}");
    // The probes and the metrics port are where the process listens.
    let health = flag(&args, "--health-listen").expect("--health-listen");
    let metrics = flag(&args, "--metrics-listen").expect("--metrics-listen");
    for (probe, addr) in [("readinessProbe", health), ("livenessProbe", health)] {
        assert_eq!(
            container_port(container, &container[probe]["httpGet"]["port"]),
            port_of(addr),
            "{probe}"
        );
    }
    assert!(container["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .any(|p| p["containerPort"].as_u64() == Some(port_of(metrics))));
    // The Lease's identity comes from the downward API; the runtime user is the image's.
    assert_eq!(s(container, "/env/0/name"), "POD_NAME");
    let (uid, gid) = dockerfile_user();
    assert_eq!(n(pod, "/securityContext/runAsUser"), uid);
    assert_eq!(n(pod, "/securityContext/runAsGroup"), gid);
    // The service account is bound to exactly the controller's roles.
    let account = s(pod, "/serviceAccountName");
    assert_eq!(account, CONTROLLER);
    for (binding, role_kind, role) in [
        ("ClusterRoleBinding", "ClusterRole", CONTROLLER),
        (
            "RoleBinding",
            "Role",
            "promotion-controller-leader-election",
        ),
    ] {
        let binding = controller.all(binding)[0];
        assert_eq!(s(binding, "/roleRef/kind"), role_kind);
        assert_eq!(s(binding, "/roleRef/name"), role);
        assert_eq!(s(binding, "/subjects/0/name"), account);
        assert_eq!(s(binding, "/subjects/0/namespace"), namespace);
    }
}

/// The webhook's objects: the invariants every overlay shares. `extra_kinds` are the kinds the
/// overlay adds.
fn check_webhook(install: &Install, extra_kinds: &[&str]) -> Facts {
    let mut allowed: BTreeSet<&str> = [
        "Namespace",
        "ServiceAccount",
        "Deployment",
        "PodDisruptionBudget",
        "Service",
        "NetworkPolicy",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "ConfigMap",
        "Role",
        "RoleBinding",
    ]
    .into();
    allowed.extend(extra_kinds);
    // The Role and RoleBinding only let users read the approver rules; the server never calls
    // the Kubernetes API (its ServiceAccount has no token mounted, check_pod_security).
    assert_eq!(install.kinds(), allowed, "unexpected set of kinds");

    let namespace = s(install.one("Namespace"), "/metadata/name").to_string();
    for object in &install.objects {
        let cluster_scoped = matches!(
            object["kind"].as_str(),
            Some("Namespace" | "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration")
        );
        if !cluster_scoped {
            assert_eq!(
                object["metadata"]["namespace"],
                namespace.as_str(),
                "{}",
                describe(object)
            );
        }
    }

    let deployment = install.one("Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    assert!(
        selects(&deployment["spec"]["selector"], pod_labels),
        "Deployment selector"
    );

    check_availability(install, deployment, pod_labels);
    check_pod_security(install, pod);
    let listen = check_server_container(pod);
    let service = check_service(install, pod_labels, &listen);
    check_network_policy(install, pod_labels, &listen);
    check_published_approver_rules(install, pod, &namespace);
    for (kind, path) in [
        ("ValidatingWebhookConfiguration", VALIDATE_PATH),
        ("MutatingWebhookConfiguration", MUTATE_PATH),
    ] {
        check_webhook_configuration(install.one(kind), path, &service, &namespace);
    }
    Facts { namespace, service }
}

/// The approver rules the webhook enforces are the ConfigMap the plugin reads: mounted whole
/// (the kubelet updates no subPath mount) at `--governance-dir`, valid as published rules, and
/// readable, that object only, by every signed-in user.
fn check_published_approver_rules(install: &Install, pod: &Value, namespace: &str) {
    use promotion_shared::admission::{GOVERNANCE_CONFIGMAP, GOVERNANCE_NAMESPACE};
    assert_eq!(namespace, GOVERNANCE_NAMESPACE, "where the plugin looks");
    published_rules(install);

    let container = &pod["containers"][0];
    let args = strings(&container["args"]);
    let dir = flag(&args, "--governance-dir").expect("--governance-dir is set");
    let mount = container["volumeMounts"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["mountPath"] == dir))
        .expect("the rules are mounted at --governance-dir");
    assert_eq!(mount["readOnly"], true);
    assert!(
        mount.get("subPath").is_none(),
        "a subPath mount is never updated"
    );
    let volume = pod["volumes"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == mount["name"]))
        .expect("the mount's volume");
    assert_eq!(volume["configMap"]["name"], GOVERNANCE_CONFIGMAP);

    let role = install.one("Role");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["configmaps"],
                "resourceNames": [GOVERNANCE_CONFIGMAP], "verbs": ["get"]}])
    );
    let binding = install.one("RoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(
        binding["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                "name": "system:authenticated"}])
    );
}

/// The rules the install publishes; they must parse as the webhook parses them.
fn published_rules(install: &Install) -> promotion_shared::admission::PublishedGovernance {
    use promotion_shared::admission::{PublishedGovernance, GOVERNANCE_CONFIGMAP};
    let config_map = install.named("ConfigMap", GOVERNANCE_CONFIGMAP);
    let data = config_map["data"].as_object().expect("data");
    PublishedGovernance::parse(
        data.iter()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default())),
    )
    .expect("the installed rules parse")
}

fn check_availability(install: &Install, deployment: &Value, pod_labels: &Value) {
    let replicas = n(deployment, "/spec/replicas");
    assert!(
        replicas >= 2,
        "replicas = {replicas}; one pod is one node drain from an outage"
    );
    assert_eq!(
        deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0,
        "a rollout must not drop below the configured replicas"
    );

    let spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
        .as_array()
        .expect("topologySpreadConstraints");
    let across_nodes = spread
        .iter()
        .find(|c| c["topologyKey"] == "kubernetes.io/hostname")
        .expect("a spread constraint across nodes");
    assert_eq!(across_nodes["whenUnsatisfiable"], "DoNotSchedule");
    assert_eq!(n(across_nodes, "/maxSkew"), 1);
    assert!(
        selects(&across_nodes["labelSelector"], pod_labels),
        "spread selects the pods"
    );

    let pdb = install.one("PodDisruptionBudget");
    assert!(
        selects(&pdb["spec"]["selector"], pod_labels),
        "PDB selects the pods"
    );
    let allows_one_down = match (
        pdb["spec"]["maxUnavailable"].as_u64(),
        pdb["spec"]["minAvailable"].as_u64(),
    ) {
        (Some(max_unavailable), None) => max_unavailable >= 1 && max_unavailable < replicas,
        (None, Some(min_available)) => min_available >= 1 && min_available < replicas,
        other => {
            panic!("PDB needs exactly one of maxUnavailable/minAvailable as a number: {other:?}")
        }
    };
    assert!(
        allows_one_down,
        "the PDB must keep a pod serving and still allow drains"
    );
}

fn check_pod_security(install: &Install, pod: &Value) {
    let sa_name = s(pod, "/serviceAccountName");
    let sa = install.named("ServiceAccount", sa_name);
    assert_eq!(
        sa["automountServiceAccountToken"], false,
        "ServiceAccount token"
    );
    assert_eq!(pod["automountServiceAccountToken"], false, "pod token");
    for field in ["hostNetwork", "hostPID", "hostIPC"] {
        assert_ne!(pod[field], true, "{field}");
    }

    let (uid, gid) = dockerfile_user();
    let pod_sc = &pod["securityContext"];
    assert_eq!(pod_sc["runAsNonRoot"], true);
    assert_eq!(
        n(pod_sc, "/runAsUser"),
        uid,
        "runAsUser matches the Dockerfile USER"
    );
    assert_eq!(
        n(pod_sc, "/runAsGroup"),
        gid,
        "runAsGroup matches the Dockerfile USER"
    );
    assert_ne!(uid, 0);

    for volume in pod["volumes"].as_array().into_iter().flatten() {
        assert!(
            volume.get("hostPath").is_none(),
            "hostPath volume {}",
            volume["name"]
        );
    }

    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1, "one container: the server");
    for container in containers
        .iter()
        .chain(pod["initContainers"].as_array().into_iter().flatten())
    {
        let sc = &container["securityContext"];
        assert_eq!(
            sc["allowPrivilegeEscalation"], false,
            "allowPrivilegeEscalation"
        );
        assert_eq!(sc["readOnlyRootFilesystem"], true, "readOnlyRootFilesystem");
        assert_ne!(sc["privileged"], true, "privileged");
        assert_eq!(
            strings(&sc["capabilities"]["drop"]),
            ["ALL"],
            "capabilities.drop"
        );
        assert!(sc["capabilities"].get("add").is_none(), "capabilities.add");
        assert_ne!(sc["runAsNonRoot"], false);
        let seccomp = sc["seccompProfile"]["type"]
            .as_str()
            .or(pod_sc["seccompProfile"]["type"].as_str());
        assert_eq!(seccomp, Some("RuntimeDefault"), "seccompProfile");

        let resources = &container["resources"];
        assert!(resources["requests"]["cpu"].is_string(), "cpu request");
        assert!(
            resources["requests"]["memory"].is_string(),
            "memory request"
        );
        assert!(resources["limits"]["memory"].is_string(), "memory limit");
        // A CPU limit throttles admission latency; docs/install.md explains the choice.
        assert!(resources["limits"].get("cpu").is_none(), "no CPU limit");
    }
}

/// Ports and paths the server container really uses.
struct Listen {
    webhook_port: u64,
    metrics_port: u64,
}

fn check_server_container(pod: &Value) -> Listen {
    let container = &pod["containers"][0];
    let image = s(container, "/image");
    let tag = format!(":v{}", env!("CARGO_PKG_VERSION"));
    assert!(image.ends_with(&tag), "image {image} is not tagged {tag}");

    let args = strings(&container["args"]);
    assert_eq!(
        args.first(),
        Some(&"serve"),
        "the container runs `promotion-webhook serve`"
    );
    let help = serve_help();
    for arg in args.iter().filter(|a| a.starts_with("--")) {
        let name = arg.split('=').next().unwrap_or(arg);
        let known = help
            .lines()
            .any(|line| line.trim_start().split([' ', ',']).next() == Some(name));
        assert!(
            known,
            "`promotion-webhook serve` has no flag {name}:\n{help}"
        );
    }
    let listen = Listen {
        webhook_port: port_of(flag(&args, "--listen").unwrap_or("0.0.0.0:8443")),
        metrics_port: port_of(flag(&args, "--metrics-listen").unwrap_or("0.0.0.0:8080")),
    };
    assert_ne!(listen.webhook_port, listen.metrics_port);
    let declared: BTreeSet<u64> = container["ports"]
        .as_array()
        .expect("container ports")
        .iter()
        .map(|p| n(p, "/containerPort"))
        .collect();
    assert_eq!(
        declared,
        [listen.webhook_port, listen.metrics_port].into(),
        "declared ports"
    );

    // Probes go to the plain-HTTP metrics listener, on the paths the server serves there.
    for (probe, path) in [
        ("readinessProbe", READINESS_PATH),
        ("livenessProbe", LIVENESS_PATH),
    ] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe} path");
        assert_eq!(
            container_port(container, &get["port"]),
            listen.metrics_port,
            "{probe} port"
        );
        assert_ne!(get["scheme"], "HTTPS", "{probe} scheme");
    }

    // The certificate and key come from the TLS Secret, mounted read-only.
    let mounts = container["volumeMounts"].as_array().expect("volumeMounts");
    for file_flag in ["--tls-cert-file", "--tls-key-file"] {
        let file = flag(&args, file_flag).unwrap_or_else(|| panic!("{file_flag} is set"));
        let mount = mounts
            .iter()
            .find(|m| Path::new(file).parent() == Some(Path::new(s(m, "/mountPath"))))
            .unwrap_or_else(|| panic!("{file} is not in a mounted volume"));
        assert_eq!(mount["readOnly"], true, "{file_flag} mount is read-only");
        let volume = pod["volumes"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["name"] == mount["name"]))
            .expect("the mount's volume");
        assert_eq!(
            volume["secret"]["secretName"], TLS_SECRET,
            "{file_flag} comes from the TLS Secret"
        );
    }

    // Termination: the preStop sleep, then the server's own shutdown delay and grace period
    // (defaults from webhook/src/cli.rs when the flags are absent) must fit before SIGKILL.
    let pre_stop = n(container, "/lifecycle/preStop/sleep/seconds");
    let delay = seconds(flag(&args, "--shutdown-delay").unwrap_or("5s"));
    let drain = seconds(flag(&args, "--shutdown-grace-period").unwrap_or("20s"));
    let grace = n(pod, "/terminationGracePeriodSeconds");
    assert!(
        pre_stop >= 5,
        "preStop sleep {pre_stop}s is too short for endpoint removal to spread"
    );
    assert!(
        grace > pre_stop + delay + drain,
        "terminationGracePeriodSeconds {grace} does not cover preStop {pre_stop}s + shutdown delay \
         {delay}s + grace period {drain}s"
    );
    listen
}

fn check_service(install: &Install, pod_labels: &Value, listen: &Listen) -> String {
    let service = install.one("Service");
    assert!(
        selects(
            &json!({"matchLabels": service["spec"]["selector"]}),
            pod_labels
        ),
        "Service selector"
    );
    let container = &install.one("Deployment")["spec"]["template"]["spec"]["containers"][0];
    let ports = service["spec"]["ports"].as_array().expect("Service ports");
    let target_of = |port: u64| {
        ports
            .iter()
            .find(|p| n(p, "/port") == port)
            .map(|p| container_port(container, &p["targetPort"]))
            .unwrap_or_else(|| panic!("the Service has no port {port}"))
    };
    assert_eq!(
        target_of(443),
        listen.webhook_port,
        "443 goes to the webhook listener"
    );
    assert!(
        ports
            .iter()
            .any(|p| container_port(container, &p["targetPort"]) == listen.metrics_port),
        "the metrics listener is reachable through the Service"
    );
    s(service, "/metadata/name").to_string()
}

fn check_network_policy(install: &Install, pod_labels: &Value, listen: &Listen) {
    let policy = install.one("NetworkPolicy");
    assert!(
        selects(&policy["spec"]["podSelector"], pod_labels),
        "NetworkPolicy selects the pods"
    );
    let types = strings(&policy["spec"]["policyTypes"]);
    assert!(types.contains(&"Ingress"), "policyTypes has Ingress");
    let container = &install.one("Deployment")["spec"]["template"]["spec"]["containers"][0];
    let mut admitted = BTreeSet::new();
    for rule in policy["spec"]["ingress"].as_array().expect("ingress rules") {
        let ports = rule["ports"].as_array().filter(|p| !p.is_empty());
        let ports =
            ports.expect("every ingress rule names its ports (a rule without ports admits all)");
        for port in ports {
            assert_eq!(port["protocol"], "TCP");
            admitted.insert(container_port(container, &port["port"]));
        }
    }
    assert_eq!(
        admitted,
        [listen.webhook_port, listen.metrics_port].into(),
        "admitted ports"
    );
    if types.contains(&"Egress") {
        assert!(
            policy["spec"]["egress"]
                .as_array()
                .is_none_or(Vec::is_empty),
            "the server opens no connections"
        );
    }
}

/// The CRD the webhook rules must match, as vendored in `crates/crd-schema/crds`.
fn cluster_promotion_crd() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/crd-schema/crds/config.projectsveltos.io_clusterpromotions.yaml");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

fn check_webhook_configuration(config: &Value, path: &str, service: &str, namespace: &str) {
    let what = describe(config);
    let webhooks = config["webhooks"].as_array().expect("webhooks");
    assert_eq!(
        webhooks.len(),
        2,
        "{what}: the webhook, and the pause webhook (the emergency brake)"
    );
    let mutating = config["kind"] == "MutatingWebhookConfiguration";
    for (i, hook) in webhooks.iter().enumerate() {
        let pause = i == 1;
        check_one_webhook(hook, pause, mutating, &what, path, service, namespace);
    }
    // The main webhook and the pause webhook split the requests between them: the main one
    // takes every request but a pause alone, which goes to the pause webhook only.
    let condition = |hook: &Value, name: &str| -> String {
        hook["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["name"] == name)
            .map(|c| s(c, "/expression").to_string())
            .unwrap_or_else(|| panic!("{what}: no matchCondition {name}"))
    };
    assert_eq!(
        condition(&webhooks[0], "not-a-pause-alone"),
        format!("!({})", condition(&webhooks[1], "a-pause-alone")),
        "{what}"
    );
}

fn check_one_webhook(
    hook: &Value,
    pause: bool,
    mutating: bool,
    what: &str,
    path: &str,
    service: &str,
    namespace: &str,
) {
    let name = s(hook, "/name");
    assert_eq!(
        name.starts_with("pause."),
        pause,
        "{what}: {name}: the second webhook is the pause webhook"
    );
    assert!(
        name.split('.').count() >= 3,
        "{what}: webhook name {name} must be fully qualified"
    );

    assert_eq!(strings(&hook["admissionReviewVersions"]), ["v1"], "{what}");
    assert_eq!(hook["sideEffects"], "None", "{what}");
    let timeout = n(hook, "/timeoutSeconds");
    assert!(
        (1..=5).contains(&timeout),
        "{what}: timeoutSeconds {timeout} is not in 1..=5"
    );
    // A pause must go through with the webhook down (docs/controller.md, "Pause"); everything
    // else is refused then (docs/install.md).
    let policy = if pause { "Ignore" } else { "Fail" };
    assert_eq!(hook["failurePolicy"], policy, "{what}: {name}");
    assert_eq!(hook["matchPolicy"], "Equivalent", "{what}");
    if mutating {
        // The mutation is idempotent (issue 3), so a re-run after later mutators is safe; the
        // pause record is written once.
        let reinvocation = if pause { "Never" } else { "IfNeeded" };
        assert_eq!(hook["reinvocationPolicy"], reinvocation, "{what}");
    }

    let client = &hook["clientConfig"];
    assert!(
        client.get("url").is_none(),
        "{what}: call the Service, not a URL"
    );
    assert_eq!(client["service"]["name"], service, "{what}");
    assert_eq!(client["service"]["namespace"], namespace, "{what}");
    assert_eq!(
        client["service"]["path"], path,
        "{what}: path is the server's route"
    );
    assert_eq!(n(client, "/service/port"), 443, "{what}");

    let crd = cluster_promotion_crd();
    let group = s(&crd, "/spec/group");
    let plural = s(&crd, "/spec/names/plural");
    let versions: Vec<&str> = crd["spec"]["versions"]
        .as_array()
        .expect("CRD versions")
        .iter()
        .filter(|v| v["served"] == true)
        .map(|v| s(v, "/name"))
        .collect();
    let rules = hook["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), 1, "{what}: one rule");
    let rule = &rules[0];
    assert_eq!(strings(&rule["apiGroups"]), [group], "{what}: apiGroups");
    assert_eq!(
        strings(&rule["apiVersions"]),
        versions,
        "{what}: apiVersions"
    );
    // Exactly the main resource: no wildcard, no subresource (status writes stay out).
    assert_eq!(strings(&rule["resources"]), [plural], "{what}: resources");
    let operations: BTreeSet<&str> = strings(&rule["operations"]).into_iter().collect();
    assert_eq!(
        operations,
        ["CREATE", "UPDATE"].into(),
        "{what}: operations"
    );
    assert_eq!(crd["spec"]["scope"], "Cluster");
    assert!(
        rule.get("scope")
            .is_none_or(|scope| scope == "Cluster" || scope == "*"),
        "{what}: scope"
    );
    // Cluster-scoped objects ignore namespaceSelector; an objectSelector would let labelled
    // ClusterPromotions bypass the webhook.
    assert!(
        hook.get("objectSelector")
            .is_none_or(|sel| sel.as_object().is_some_and(|o| o.is_empty())),
        "{what}: objectSelector"
    );
}

/// Evaluates every matchCondition of the install's webhooks, as the API server would, for one
/// admission request; true means the webhook is called.
fn webhook_called(
    install: &Install,
    operation: &str,
    object: &Value,
    old_object: &Value,
) -> Vec<bool> {
    hook_called(install, 0, operation, object, old_object)
}

/// [`webhook_called`] for the `index`th webhook of each configuration.
fn hook_called(
    install: &Install,
    index: usize,
    operation: &str,
    object: &Value,
    old_object: &Value,
) -> Vec<bool> {
    let mut verdicts = Vec::new();
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let hook = &install.one(kind)["webhooks"][index];
        let conditions = hook["matchConditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut called = true;
        for condition in &conditions {
            let expression = s(condition, "/expression");
            let program = cel::Program::compile(expression)
                .unwrap_or_else(|e| panic!("{kind} matchCondition {}: {e:?}", condition["name"]));
            let mut context = cel::Context::default();
            context
                .add_variable("request", json!({"operation": operation}))
                .expect("request");
            context
                .add_variable("object", object.clone())
                .expect("object");
            context
                .add_variable("oldObject", old_object.clone())
                .expect("oldObject");
            match program.execute(&context) {
                Ok(cel::Value::Bool(b)) => called &= b,
                other => panic!("{kind} matchCondition {} gave {other:?}", condition["name"]),
            }
        }
        verdicts.push(called);
    }
    verdicts
}

fn cluster_promotion(annotations: Value, finalizers: Value, approved: bool) -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "kyverno", "annotations": annotations, "finalizers": finalizers},
        "spec": {
            "profileSpec": {"helmCharts": [{"chartName": "kyverno/kyverno", "chartVersion": "3.2.6"}]},
            "stages": [
                {"name": "staging", "trigger": {"manual": {"approved": approved}}},
                {"name": "production"}
            ]
        }
    })
}

#[test]
fn cert_manager_overlay_installs_the_webhook_and_the_controller() {
    let install = render(&repo_root().join("manifests/overlays/cert-manager"));
    let facts = check_install(&install, &["Issuer", "Certificate"]);
    assert_eq!(
        published_rules(&install),
        promotion_shared::admission::PublishedGovernance::default(),
        "no approver restriction unless configured"
    );

    // The serving Certificate fills the Secret the pods mount, for every name of the Service.
    let serving = install
        .all("Certificate")
        .into_iter()
        .find(|c| c["spec"]["secretName"] == TLS_SECRET)
        .expect("a Certificate writing the TLS Secret");
    let dns: BTreeSet<&str> = strings(&serving["spec"]["dnsNames"]).into_iter().collect();
    for name in facts.dns_names() {
        assert!(
            dns.contains(name.as_str()),
            "Certificate dnsNames lack {name}"
        );
    }
    assert!(dns.contains(facts.api_server_name().as_str()));
    assert!(
        strings(&serving["spec"]["usages"]).contains(&"server auth"),
        "server auth usage"
    );
    assert_ne!(serving["spec"]["isCA"], true);

    // Chain: self-signed Issuer -> CA Certificate -> CA Issuer -> serving Certificate.
    let ca_issuer = install.named("Issuer", s(serving, "/spec/issuerRef/name"));
    let ca_secret = s(ca_issuer, "/spec/ca/secretName");
    let ca = install
        .all("Certificate")
        .into_iter()
        .find(|c| c["spec"]["secretName"] == ca_secret)
        .expect("a Certificate writing the CA Secret");
    assert_eq!(ca["spec"]["isCA"], true);
    // Keeping the CA key across renewals keeps the mounted serving certificate valid.
    assert_eq!(ca["spec"]["privateKey"]["rotationPolicy"], "Never");
    let root = install.named("Issuer", s(ca, "/spec/issuerRef/name"));
    assert!(
        root["spec"]["selfSigned"].is_object(),
        "the CA is self-signed"
    );

    // cainjector fills both caBundles from the serving Certificate's Secret (its ca.crt).
    let inject_from = format!("{}/{}", facts.namespace, s(serving, "/metadata/name"));
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let config = install.one(kind);
        assert_eq!(
            config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            inject_from.as_str(),
            "{kind}"
        );
        assert!(
            config["webhooks"][0]["clientConfig"]
                .get("caBundle")
                .is_none(),
            "{kind}"
        );
    }
}

#[test]
fn default_kustomization_is_the_cert_manager_overlay() {
    let root = repo_root().join("manifests");
    let install = render(&root);
    assert_eq!(
        install.objects,
        render(&root.join("overlays/cert-manager")).objects,
        "`kubectl apply -k manifests` is the cert-manager overlay"
    );
    check_install(&install, &["Issuer", "Certificate"]);
}

/// An install moved with kustomize's `namespace:` keeps the controller's committed step working:
/// the webhook learns its namespace from the downward API, so the user it lets write the
/// annotation is promotion-controller's in that namespace, and nothing still names
/// `kubectl-promotion-system` as the controller's.
#[test]
fn an_install_under_another_namespace_lets_its_own_controller_commit() {
    let tree = manifests_copy();
    let overlay = tree.path().join("other-ns");
    fs::create_dir_all(&overlay).expect("create the overlay");
    fs::write(
        overlay.join("kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\n\
         kind: Kustomization\n\
         namespace: other-ns\n\
         resources:\n  - ../overlays/cert-manager\n",
    )
    .expect("write the overlay");
    let install = render(&overlay);
    assert_eq!(
        check_controller_user(&install),
        "system:serviceaccount:other-ns:promotion-controller"
    );
    let webhook = install.named("Deployment", "promotion-webhook");
    assert_eq!(s(webhook, "/metadata/namespace"), "other-ns");
    let container = &webhook["spec"]["template"]["spec"]["containers"][0];
    for text in [&container["args"], &container["env"]] {
        let text = text.to_string();
        assert!(!text.contains("kubectl-promotion-system"), "{text}");
    }
    // The controller's bindings follow it, so the derived user is the one RBAC lets reconcile.
    let binding = install.named("ClusterRoleBinding", CONTROLLER);
    assert_eq!(s(binding, "/subjects/0/namespace"), "other-ns");
}

#[test]
fn the_controller_image_is_built_by_the_dockerfile() {
    let dockerfile = std::fs::read_to_string(repo_root().join("Dockerfile")).expect("Dockerfile");
    assert!(
        dockerfile.contains("AS controller"),
        "the Dockerfile has a controller target"
    );
}

#[test]
fn static_certs_overlay_installs_the_webhook_and_the_controller_with_certificates_from_promotion_webhook_certs(
) {
    let tree = manifests_copy();
    let facts = check_webhook(&render(&tree.path().join("base")), &[]);
    let certs_dir = tree.path().join("overlays/static-certs/certs");

    // The documented command, with the names of the rendered Service.
    generate_certs(&certs_dir, &facts, &[]);

    let install = render(&tree.path().join("overlays/static-certs"));
    check_install(&install, &["Secret"]);

    let read =
        |file: &str| fs::read(certs_dir.join(file)).unwrap_or_else(|e| panic!("read {file}: {e}"));
    let decode = |v: &Value| {
        let text: String = v
            .as_str()
            .expect("base64 string")
            .split_whitespace()
            .collect();
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .expect("valid base64")
    };

    let secret = install.named("Secret", TLS_SECRET);
    assert_eq!(secret["type"], "kubernetes.io/tls");
    for file in ["tls.crt", "tls.key", "ca.crt"] {
        assert_eq!(
            decode(&secret["data"][file]),
            read(file),
            "Secret data {file}"
        );
    }
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let bundle = &install.one(kind)["webhooks"][0]["clientConfig"]["caBundle"];
        assert_eq!(decode(bundle), read("ca.crt"), "{kind} caBundle is ca.crt");
    }

    // The API server verifies the serving certificate against caBundle for <svc>.<ns>.svc.
    let (ca_pem, tls_pem) = (read("ca.crt"), read("tls.crt"));
    let (_, ca_pem) = x509_parser::pem::parse_x509_pem(&ca_pem).expect("ca.crt is PEM");
    let ca = ca_pem.parse_x509().expect("ca.crt is a certificate");
    let (_, tls_pem) = x509_parser::pem::parse_x509_pem(&tls_pem).expect("tls.crt is PEM");
    let tls = tls_pem.parse_x509().expect("tls.crt is a certificate");
    assert!(ca.is_ca(), "ca.crt is a CA");
    tls.verify_signature(Some(ca.public_key()))
        .expect("tls.crt is signed by ca.crt");
    assert!(
        tls.validity().is_valid() && ca.validity().is_valid(),
        "certificates are valid now"
    );
    let sans: BTreeSet<String> = tls
        .subject_alternative_name()
        .expect("well-formed SAN extension")
        .expect("tls.crt has SANs (the API server ignores the Common Name)")
        .value
        .general_names
        .iter()
        .filter_map(|name| match name {
            x509_parser::extensions::GeneralName::DNSName(dns) => Some(dns.to_string()),
            _ => None,
        })
        .collect();
    for name in facts.dns_names() {
        assert!(sans.contains(&name), "tls.crt SANs {sans:?} lack {name}");
    }
    if let Some(eku) = tls
        .extended_key_usage()
        .expect("well-formed extended key usage")
    {
        assert!(
            eku.value.server_auth || eku.value.any,
            "tls.crt is usable for server auth"
        );
    }
}

/// Runs `promotion-webhook certs` for the Service's names into `dir`, with `extra` arguments.
fn generate_certs(dir: &Path, facts: &Facts, extra: &[&OsStr]) {
    let mut certs = Command::new(webhook_binary());
    certs.arg("certs").arg("--out").arg(dir);
    for name in facts.dns_names() {
        certs.arg("--dns").arg(name);
    }
    certs.args(extra);
    let out = certs.output().expect("run promotion-webhook certs");
    assert!(
        out.status.success(),
        "promotion-webhook certs failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ca_bundles(install: &Install) -> Vec<String> {
    [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ]
    .iter()
    .map(|kind| s(&install.one(kind)["webhooks"][0], "/clientConfig/caBundle").to_string())
    .collect()
}

#[test]
fn static_certs_rotation_from_the_same_ca_keeps_the_ca_bundle() {
    let tree = manifests_copy();
    let facts = check_webhook(&render(&tree.path().join("base")), &[]);
    let overlay = tree.path().join("overlays/static-certs");
    let certs_dir = overlay.join("certs");
    generate_certs(&certs_dir, &facts, &[]);
    let before = render(&overlay);
    let first_leaf = fs::read(certs_dir.join("tls.crt")).expect("tls.crt");

    // The rotation documented in docs/install.md: a new serving certificate from the same CA.
    let (ca_crt, ca_key) = (certs_dir.join("ca.crt"), certs_dir.join("ca.key"));
    let keep = tempfile::tempdir().expect("temp dir");
    let (kept_crt, kept_key) = (keep.path().join("ca.crt"), keep.path().join("ca.key"));
    fs::copy(&ca_crt, &kept_crt).expect("keep ca.crt");
    fs::copy(&ca_key, &kept_key).expect("keep ca.key");
    generate_certs(
        &certs_dir,
        &facts,
        &[
            OsStr::new("--ca-cert"),
            kept_crt.as_os_str(),
            OsStr::new("--ca-key"),
            kept_key.as_os_str(),
        ],
    );
    let after = render(&overlay);
    check_install(&after, &["Secret"]);

    let second_leaf = fs::read(certs_dir.join("tls.crt")).expect("tls.crt");
    assert_ne!(
        first_leaf, second_leaf,
        "a new serving certificate was issued"
    );
    assert_eq!(
        ca_bundles(&before),
        ca_bundles(&after),
        "caBundle is unchanged by the rotation"
    );
    let ca_pem = fs::read(&kept_crt).expect("ca.crt");
    let (_, ca_pem) = x509_parser::pem::parse_x509_pem(&ca_pem).expect("ca.crt is PEM");
    let ca = ca_pem.parse_x509().expect("ca.crt is a certificate");
    let (_, leaf_pem) = x509_parser::pem::parse_x509_pem(&second_leaf).expect("tls.crt is PEM");
    let leaf = leaf_pem.parse_x509().expect("tls.crt is a certificate");
    leaf.verify_signature(Some(ca.public_key()))
        .expect("the new tls.crt is signed by the old CA");
}

#[test]
fn static_certs_overlay_needs_generated_certificates_that_git_ignores() {
    let tree = manifests_copy();
    let out = kustomize(&tree.path().join("overlays/static-certs"));
    assert!(
        !out.status.success(),
        "rendering without certificates must fail"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("certs/tls.crt"),
        "the error names the missing file:\n{stderr}"
    );

    let ignore = fs::read_to_string(repo_root().join("manifests/overlays/static-certs/.gitignore"))
        .expect("manifests/overlays/static-certs/.gitignore");
    assert!(
        ignore.lines().any(|l| l.trim() == "certs/"),
        "certs/ (with the private key) is git-ignored"
    );
}

#[test]
fn match_conditions_skip_only_updates_that_leave_spec_and_annotations_alone() {
    let install = render(&repo_root().join("manifests/overlays/cert-manager"));
    let approved = json!({"audit.kubectl-promotion.dev/approvals": "{}"});
    let stored = cluster_promotion(json!({}), json!(["clusterpromotion.finalizer"]), false);

    let cases = [
        ("create", "CREATE", stored.clone(), Value::Null, true),
        (
            "approve",
            "UPDATE",
            cluster_promotion(json!({}), json!(["clusterpromotion.finalizer"]), true),
            stored.clone(),
            true,
        ),
        (
            "annotate",
            "UPDATE",
            cluster_promotion(
                approved.clone(),
                json!(["clusterpromotion.finalizer"]),
                false,
            ),
            stored.clone(),
            true,
        ),
        (
            "remove annotations",
            "UPDATE",
            stored.clone(),
            cluster_promotion(approved, json!(["clusterpromotion.finalizer"]), false),
            true,
        ),
        (
            "remove finalizer",
            "UPDATE",
            cluster_promotion(json!({}), json!([]), false),
            stored.clone(),
            false,
        ),
        (
            "no-op update",
            "UPDATE",
            stored.clone(),
            stored.clone(),
            false,
        ),
    ];
    for (case, operation, object, old, expected) in cases {
        assert_eq!(
            webhook_called(&install, operation, &object, &old),
            [expected, expected],
            "{case}: validating and mutating webhook called?"
        );
    }

    // Objects without annotations at all (the common case) are handled without CEL errors.
    let mut bare = stored.clone();
    bare["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("annotations");
    let mut bare_approved =
        cluster_promotion(json!({}), json!(["clusterpromotion.finalizer"]), true);
    bare_approved["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("annotations");
    assert_eq!(
        webhook_called(&install, "UPDATE", &bare, &bare),
        [false, false]
    );
    assert_eq!(
        webhook_called(&install, "UPDATE", &bare_approved, &bare),
        [true, true]
    );
}

/// A request that only pauses a promotion goes to the pause webhooks (failurePolicy Ignore)
/// and not to the main ones; anything more, and a resume, goes to the main ones only.
#[test]
fn a_pause_alone_goes_to_the_pause_webhooks_only() {
    use promotion_shared::pause::{PAUSED_ANNOTATION, PAUSE_RECORD_ANNOTATION};
    let install = render(&repo_root().join("manifests"));
    let finalizers = json!(["clusterpromotion.finalizer"]);
    let stored = cluster_promotion(json!({"team": "a"}), finalizers.clone(), false);
    let with = |annotations: Value, approved: bool| {
        cluster_promotion(annotations, finalizers.clone(), approved)
    };
    let paused = with(json!({"team": "a", PAUSED_ANNOTATION: "bad chart"}), false);
    let record = json!({"paused": true, "user": "alice", "time": "2026-03-01T12:00:00Z"});
    let recorded = with(
        json!({"team": "a", PAUSED_ANNOTATION: "bad chart",
               PAUSE_RECORD_ANNOTATION: record.to_string()}),
        false,
    );
    let mut bare = stored.clone();
    bare["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("annotations");
    let cases = [
        ("pause", "UPDATE", paused.clone(), stored.clone(), true),
        (
            "pause without annotations before",
            "UPDATE",
            with(json!({PAUSED_ANNOTATION: ""}), false),
            bare,
            true,
        ),
        (
            "another reason",
            "UPDATE",
            with(json!({"team": "a", PAUSED_ANNOTATION: "other"}), false),
            paused.clone(),
            true,
        ),
        // The mutation's record makes the final object more than a pause: the main
        // validating webhook checks the record.
        (
            "pause with its record",
            "UPDATE",
            recorded,
            stored.clone(),
            false,
        ),
        (
            "pause and approve",
            "UPDATE",
            with(json!({"team": "a", PAUSED_ANNOTATION: ""}), true),
            stored.clone(),
            false,
        ),
        (
            "pause and relabel an annotation",
            "UPDATE",
            with(json!({"team": "b", PAUSED_ANNOTATION: ""}), false),
            stored.clone(),
            false,
        ),
        ("resume", "UPDATE", stored.clone(), paused.clone(), false),
        (
            "create paused",
            "CREATE",
            paused.clone(),
            Value::Null,
            false,
        ),
    ];
    for (case, operation, object, old, pause_alone) in cases {
        assert_eq!(
            hook_called(&install, 1, operation, &object, &old),
            [pause_alone, pause_alone],
            "{case}: the pause webhooks called?"
        );
        let main = webhook_called(&install, operation, &object, &old);
        assert_eq!(
            main,
            [!pause_alone, !pause_alone],
            "{case}: the main webhooks called?"
        );
    }
}

/// docs/install.md's own overlay (its `my-webhook/kustomization.yaml`, with the remote base
/// replaced by this checkout's) changes the approver rules where both the webhook and the plugin
/// read them: the one ConfigMap, under its own name, mounted by the Deployment.
#[test]
fn the_documented_overlay_publishes_its_approver_rules() {
    use promotion_shared::admission::PublishedGovernance;
    let doc = fs::read_to_string(repo_root().join("docs/install.md")).expect("docs/install.md");
    let block = doc
        .split("```yaml\n# my-webhook/kustomization.yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the overlay example in docs/install.md");
    let tree = manifests_copy();
    let remote = block
        .lines()
        .find(|l| l.contains("https://github.com/"))
        .expect("the remote base")
        .trim()
        .trim_start_matches("- ");
    let overlay = tree.path().join("my-webhook");
    fs::create_dir_all(&overlay).unwrap();
    fs::write(
        overlay.join("kustomization.yaml"),
        block.replace(remote, "../overlays/cert-manager"),
    )
    .unwrap();
    let install = render(&overlay);
    assert_eq!(install.all("ConfigMap").len(), 1, "one set of rules");
    assert_eq!(
        published_rules(&install),
        PublishedGovernance {
            approver_groups: vec!["platform-approvers".into()],
            forbid_self_approval: true,
            rollback_groups: Vec::new(),
        }
    );
    check_install(&install, &["Issuer", "Certificate"]);
}

/// What `kubectl apply -k manifests/` and `kubectl apply -k manifests/overlays/static-certs`
/// install, in the words README.md (Install), docs/install.md, docs/controller.md and
/// manifests/README.md all use (whitespace aside).
const INSTALL_STORY: &str = "`kubectl apply -k manifests/` (cert-manager overlay, the default) or \
    `kubectl apply -k manifests/overlays/static-certs` (after `promotion-webhook certs`) installs \
    promotion-webhook and promotion-controller together; on Sveltos Enterprise, which reconciles \
    ClusterPromotions itself, leave the controller out";

/// The install docs, each with the part of it that tells the story.
const INSTALL_DOCS: [&str; 4] = [
    "README.md",
    "docs/install.md",
    "docs/controller.md",
    "manifests/README.md",
];

fn read_doc(file: &str) -> String {
    fs::read_to_string(repo_root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// `text` with every run of whitespace (line breaks in Markdown paragraphs) one space.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The static-certs overlay of a copy of `manifests/`, rendered after the documented
/// `promotion-webhook certs`.
fn static_certs_install(tree: &Path) -> Install {
    let facts = check_webhook(&render(&tree.join("base")), &[]);
    generate_certs(&tree.join("overlays/static-certs/certs"), &facts, &[]);
    render(&tree.join("overlays/static-certs"))
}

#[test]
fn the_install_docs_tell_one_story_and_their_commands_install_webhook_and_controller() {
    for file in INSTALL_DOCS {
        let text = read_doc(file);
        let part = match file {
            "README.md" => text
                .split("\n## Install\n")
                .nth(1)
                .and_then(|rest| rest.split("\n## ").next())
                .expect("README.md has an Install section"),
            _ => &text,
        };
        assert!(
            flat(part).contains(INSTALL_STORY),
            "{file} does not say, in these words, what the install commands install: {INSTALL_STORY}"
        );
    }

    // Every `kubectl apply -k` / `kubectl delete -k` the docs show names one of the two installs
    // (from a checkout or from the repository) or the documented overlay without the controller.
    let release = format!("?ref=v{}", env!("CARGO_PKG_VERSION"));
    let mut targets = BTreeSet::new();
    for file in INSTALL_DOCS {
        let text = flat(&read_doc(file));
        for command in ["kubectl apply -k ", "kubectl delete -k "] {
            for after in text.split(command).skip(1) {
                let target = after
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .trim_matches(|c| matches!(c, '`' | '\'' | '"' | ')' | ',' | '.'));
                let local = target
                    .strip_prefix("https://github.com/kubectl-promotion/kubectl-promotion//")
                    .map(|path| {
                        path.strip_suffix(release.as_str())
                            .unwrap_or_else(|| panic!("{file}: {target} is not the release"))
                    })
                    .unwrap_or(target);
                targets.insert(local.trim_end_matches('/').to_string());
            }
        }
    }
    assert_eq!(
        targets,
        [
            "manifests",
            "manifests/overlays/static-certs",
            "webhook-only"
        ]
        .into_iter()
        .map(String::from)
        .collect(),
        "what the docs apply"
    );
    check_install(
        &render(&repo_root().join("manifests")),
        &["Issuer", "Certificate"],
    );
    let tree = manifests_copy();
    check_install(&static_certs_install(tree.path()), &["Secret"]);
}

/// docs/install.md's table of objects is what an install holds: the static-certs overlay's
/// objects (the cert-manager overlay's differ by its Issuers and Certificates, which issue the
/// Secret, as the text says).
#[test]
fn the_install_guide_lists_every_object_of_an_install() {
    let doc = read_doc("docs/install.md");
    let table = doc
        .split("| object | name | notes |\n|---|---|---|\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("the table of objects in docs/install.md");
    let mut listed = BTreeSet::new();
    for row in table.lines() {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let name = cells[2].trim_matches('`');
        for kind in cells[1].split(", ") {
            listed.insert(format!("{kind}/{name}"));
        }
    }
    let tree = manifests_copy();
    assert_eq!(listed, static_certs_install(tree.path()).names());
}

/// docs/install.md's overlay without the controller (`webhook-only/kustomization.yaml`, with the
/// remote base replaced by this checkout's default install, then by its static-certs overlay)
/// installs the same webhook, and nothing of promotion-controller.
#[test]
fn the_documented_overlay_without_the_controller_keeps_the_webhook_whole() {
    let doc = read_doc("docs/install.md");
    let block = doc
        .split("```yaml\n# webhook-only/kustomization.yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the overlay without the controller in docs/install.md");
    let remote = block
        .lines()
        .find(|l| l.contains("https://github.com/"))
        .expect("the remote base")
        .trim()
        .trim_start_matches("- ");
    let tree = manifests_copy();
    let static_certs = static_certs_install(tree.path());
    let overlay = tree.path().join("webhook-only");
    fs::create_dir_all(&overlay).unwrap();
    for (resource, full, extra) in [
        // `manifests/` itself, which kustomize refuses as a base of a directory inside it: the
        // cert-manager overlay, which it is (default_kustomization_is_the_cert_manager_overlay).
        (
            "../overlays/cert-manager",
            render(tree.path()),
            &["Issuer", "Certificate"][..],
        ),
        ("../overlays/static-certs", static_certs, &["Secret"][..]),
    ] {
        fs::write(
            overlay.join("kustomization.yaml"),
            block.replace(remote, resource),
        )
        .unwrap();
        let install = render(&overlay);
        assert!(
            install.split().1.objects.is_empty(),
            "{resource}: a controller object is left"
        );
        assert_eq!(
            install.objects,
            full.split().0.objects,
            "{resource}: the webhook's objects and the user roles, unchanged"
        );
        let (webhook, roles) = install.split_roles();
        check_webhook(&webhook, extra);
        check_roles(&roles);
    }
}
