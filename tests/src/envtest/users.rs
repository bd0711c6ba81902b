//! The people in the test cluster and what RBAC lets them do. One table drives both backends:
//! the real server gets it as ClusterRoles and ClusterRoleBindings, the stand-in as an
//! authorizer that evaluates the same rules the way the RBAC authorizer does.
//!
//! | user | groups | may |
//! |---|---|---|
//! | `admin` | `system:masters` | everything (no RBAC object involved) |
//! | `release-manager` | `release-managers` | read like a viewer; `patch`/`update` ClusterPromotions (approve) |
//! | `developer` | `developers` | read like a viewer; edit ConfigMaps, Secrets and Services (what profiles deploy); promotions read-only |
//! | `viewer` | `viewers` | read like the built-in `view` role: core resources including core/v1 Events, not Secrets, not `events.k8s.io` Events; read Sveltos resources |
//! | `auditor` | `auditors` | read ClusterPromotions, ClusterProfiles, SveltosClusters and core/v1 Events, not ClusterSummaries (a partial view) |
//! | `system:serviceaccount:kubectl-promotion-system:promotion-controller` | the service-account groups | nothing from this table: a scenario grants it the roles of `manifests/controller/rbac.yaml`, as the install does |
//!
//! kube-apiserver without kube-controller-manager never fills the aggregated `view`/`edit` roles
//! (their `rules` stay null), so the viewer's role spells out the rules of
//! `system:aggregate-to-view` that matter here instead of binding `view`.

use serde_json::{json, Value};

/// A test user; each has its own bearer token per server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum User {
    Admin,
    ReleaseManager,
    Developer,
    Viewer,
    /// Reads promotions and their ClusterProfiles but not ClusterSummaries: what a view with
    /// partial RBAC shows.
    Auditor,
    /// promotion-controller's service account, as the install names it.
    Controller,
}

impl User {
    pub const ALL: [User; 6] = [
        User::Admin,
        User::ReleaseManager,
        User::Developer,
        User::Viewer,
        User::Auditor,
        User::Controller,
    ];

    pub fn name(self) -> &'static str {
        match self {
            User::Admin => "admin",
            User::ReleaseManager => "release-manager",
            User::Developer => "developer",
            User::Viewer => "viewer",
            User::Auditor => "auditor",
            User::Controller => {
                "system:serviceaccount:kubectl-promotion-system:promotion-controller"
            }
        }
    }

    /// `kubeconfig-<user>`, the colons of a service account's name replaced: kubectl splits
    /// `$KUBECONFIG` on `:`, so a path with one names files that do not exist.
    pub fn kubeconfig_file(self) -> String {
        format!("kubeconfig-{}", self.name().replace(':', "_"))
    }

    pub fn groups(self) -> &'static [&'static str] {
        match self {
            User::Admin => &["system:masters"],
            User::ReleaseManager => &["release-managers"],
            User::Developer => &["developers"],
            User::Viewer => &["viewers"],
            User::Auditor => &["auditors"],
            User::Controller => &[
                "system:serviceaccounts",
                "system:serviceaccounts:kubectl-promotion-system",
            ],
        }
    }
}

/// One RBAC `PolicyRule` (no resourceNames, no nonResourceURLs: none of the roles needs them).
pub struct Rule {
    pub api_groups: &'static [&'static str],
    pub resources: &'static [&'static str],
    pub verbs: &'static [&'static str],
}

/// A ClusterRole bound cluster-wide to groups.
pub struct Role {
    pub name: &'static str,
    pub groups: &'static [&'static str],
    pub rules: &'static [Rule],
}

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

pub const ROLES: &[Role] = &[
    Role {
        name: "promotion-e2e:view",
        groups: &["viewers", "developers", "release-managers"],
        rules: &[
            Rule {
                api_groups: &[""],
                resources: &[
                    "configmaps",
                    "endpoints",
                    "events",
                    "limitranges",
                    "namespaces",
                    "persistentvolumeclaims",
                    "pods",
                    "pods/log",
                    "pods/status",
                    "replicationcontrollers",
                    "resourcequotas",
                    "serviceaccounts",
                    "services",
                ],
                verbs: READ,
            },
            Rule {
                api_groups: &["apps"],
                resources: &["daemonsets", "deployments", "replicasets", "statefulsets"],
                verbs: READ,
            },
            Rule {
                api_groups: &["batch"],
                resources: &["cronjobs", "jobs"],
                verbs: READ,
            },
            Rule {
                api_groups: &["config.projectsveltos.io"],
                resources: &[
                    "clusterpromotions",
                    "clusterprofiles",
                    "profiles",
                    "clustersummaries",
                ],
                verbs: READ,
            },
            Rule {
                api_groups: &["lib.projectsveltos.io"],
                resources: &["sveltosclusters"],
                verbs: READ,
            },
        ],
    },
    Role {
        name: "promotion-e2e:approve",
        groups: &["release-managers"],
        rules: &[Rule {
            api_groups: &["config.projectsveltos.io"],
            resources: &["clusterpromotions"],
            verbs: &["patch", "update"],
        }],
    },
    Role {
        name: "promotion-e2e:audit",
        groups: &["auditors"],
        rules: &[
            Rule {
                api_groups: &[""],
                resources: &["events"],
                verbs: READ,
            },
            Rule {
                api_groups: &["config.projectsveltos.io"],
                resources: &["clusterpromotions", "clusterprofiles"],
                verbs: READ,
            },
            Rule {
                api_groups: &["lib.projectsveltos.io"],
                resources: &["sveltosclusters"],
                verbs: READ,
            },
        ],
    },
    Role {
        name: "promotion-e2e:develop",
        groups: &["developers"],
        rules: &[Rule {
            api_groups: &[""],
            resources: &["configmaps", "secrets", "services"],
            verbs: WRITE,
        }],
    },
];

/// What the built-in `system:basic-user`, `system:discovery` and `system:public-info-viewer`
/// roles give every authenticated user on a real server.
fn granted_to_everyone(request: &Request<'_>) -> bool {
    if !request.resource_request {
        return request.verb == "get";
    }
    request.verb == "create"
        && matches!(
            (request.api_group, request.resource),
            ("authorization.k8s.io", "selfsubjectaccessreviews")
                | ("authorization.k8s.io", "selfsubjectrulesreviews")
                | ("authentication.k8s.io", "selfsubjectreviews")
        )
}

/// An authorization question, as the RBAC authorizer sees it.
pub struct Request<'a> {
    pub groups: &'a [String],
    pub verb: &'a str,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub resource_request: bool,
}

/// RBAC's answer for this table: allowed when any rule of a role bound to one of the groups
/// covers the request (`*` matches anything; `res/sub` names a subresource).
pub fn allows(request: &Request<'_>) -> bool {
    if request.groups.iter().any(|g| g == "system:masters") || granted_to_everyone(request) {
        return true;
    }
    if !request.resource_request {
        return false;
    }
    let resource = if request.subresource.is_empty() {
        request.resource.to_string()
    } else {
        format!("{}/{}", request.resource, request.subresource)
    };
    let covers = |list: &[&str], want: &str| list.iter().any(|x| *x == "*" || *x == want);
    ROLES
        .iter()
        .filter(|role| {
            role.groups
                .iter()
                .any(|g| request.groups.iter().any(|h| h == g))
        })
        .flat_map(|role| role.rules)
        .any(|rule| {
            covers(rule.verbs, request.verb)
                && covers(rule.api_groups, request.api_group)
                && covers(rule.resources, &resource)
        })
}

/// The ClusterRoles and ClusterRoleBindings for [`ROLES`].
pub fn rbac_objects() -> Vec<Value> {
    let mut objects = Vec::new();
    for role in ROLES {
        let rules: Vec<Value> = role
            .rules
            .iter()
            .map(|r| json!({"apiGroups": r.api_groups, "resources": r.resources, "verbs": r.verbs}))
            .collect();
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role.name},
            "rules": rules,
        }));
        let subjects: Vec<Value> = role
            .groups
            .iter()
            .map(|g| json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": g}))
            .collect();
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role.name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.name},
            "subjects": subjects,
        }));
    }
    objects
}

/// A bearer token per user, random for each server.
#[derive(Clone, Debug)]
pub struct Tokens {
    tokens: Vec<(User, String)>,
}

impl Tokens {
    pub fn generate() -> Tokens {
        Tokens {
            tokens: User::ALL
                .iter()
                .map(|u| (*u, uuid::Uuid::new_v4().simple().to_string()))
                .collect(),
        }
    }

    pub fn of(&self, user: User) -> &str {
        self.tokens
            .iter()
            .find(|(u, _)| *u == user)
            .map(|(_, t)| t.as_str())
            .unwrap_or_default()
    }

    /// kube-apiserver's `--token-auth-file`: `token,user,uid,"group1,group2"`.
    pub fn csv(&self) -> String {
        self.tokens
            .iter()
            .map(|(user, token)| {
                format!(
                    "{token},{name},{name},\"{groups}\"\n",
                    name = user.name(),
                    groups = user.groups().join(",")
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(user: User, verb: &str, group: &str, resource: &str, sub: &str) -> bool {
        let groups: Vec<String> = user.groups().iter().map(|g| g.to_string()).collect();
        allows(&Request {
            groups: &groups,
            verb,
            api_group: group,
            resource,
            subresource: sub,
            resource_request: true,
        })
    }

    #[test]
    fn the_table_in_the_module_docs_holds() {
        let sveltos = "config.projectsveltos.io";
        assert!(ask(
            User::Admin,
            "delete",
            sveltos,
            "clusterpromotions",
            "status"
        ));
        assert!(ask(
            User::ReleaseManager,
            "patch",
            sveltos,
            "clusterpromotions",
            ""
        ));
        assert!(!ask(
            User::ReleaseManager,
            "patch",
            sveltos,
            "clusterpromotions",
            "status"
        ));
        assert!(!ask(
            User::ReleaseManager,
            "create",
            sveltos,
            "clusterpromotions",
            ""
        ));
        assert!(!ask(
            User::Developer,
            "patch",
            sveltos,
            "clusterpromotions",
            ""
        ));
        assert!(ask(User::Developer, "create", "", "configmaps", ""));
        assert!(ask(User::Viewer, "list", sveltos, "clusterpromotions", ""));
        assert!(ask(User::Viewer, "list", "", "events", ""));
        assert!(!ask(User::Viewer, "list", "events.k8s.io", "events", ""));
        assert!(!ask(User::Viewer, "get", "", "secrets", ""));
        assert!(!ask(
            User::Viewer,
            "patch",
            sveltos,
            "clusterpromotions",
            ""
        ));
        assert!(ask(User::Viewer, "get", "", "pods", "log"));
        assert!(ask(User::Auditor, "list", sveltos, "clusterprofiles", ""));
        assert!(!ask(User::Auditor, "list", sveltos, "clustersummaries", ""));
        assert!(!ask(
            User::Auditor,
            "patch",
            sveltos,
            "clusterpromotions",
            ""
        ));
        assert!(!ask(User::Viewer, "get", "", "pods", "exec"));
    }

    #[test]
    fn tokens_csv_puts_groups_in_one_quoted_field() {
        let tokens = Tokens::generate();
        let csv = tokens.csv();
        let admin = format!(
            "{},admin,admin,\"system:masters\"\n",
            tokens.of(User::Admin)
        );
        assert!(csv.contains(&admin), "{csv}");
        assert_eq!(csv.lines().count(), User::ALL.len());
    }
}
