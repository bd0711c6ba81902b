//! Checks across the documents of one lint run: two ClusterPromotions with the same name (the
//! later apply replaces the earlier), and two whose generated ClusterProfiles
//! `<promotion>-<stage>` collide (`web` + `eu-prod` and `web-eu` + `prod` both make
//! `web-eu-prod`, so the two rollouts would overwrite one profile).

use std::collections::HashMap;

use promotion_manifest::Pos;
use promotion_shared::model::stage_profile_name;
use promotion_shared::validation::Severity;

use super::Located;

/// Where a promotion was declared, and its stages.
#[derive(Debug, Clone)]
pub(super) struct Declared {
    pub file: String,
    pub name: String,
    pub name_pos: Pos,
    /// Stage name, its field path (`spec.stages[1].name`) and position.
    pub stages: Vec<(String, String, Pos)>,
}

fn at(file: &str, pos: Pos) -> String {
    format!("{file}:{}:{}", pos.line, pos.column)
}

pub(super) fn check(all: &[Declared]) -> Vec<Located> {
    let mut out = Vec::new();
    let mut first_by_name: HashMap<&str, usize> = HashMap::new();
    let mut profiles: HashMap<String, (usize, usize)> = HashMap::new();
    for (i, d) in all.iter().enumerate() {
        if let Some(&first) = first_by_name.get(d.name.as_str()) {
            let earlier = &all[first];
            out.push(Located {
                file: d.file.clone(),
                line: d.name_pos.line,
                column: d.name_pos.column,
                severity: Severity::Error,
                code: "promotion-name-duplicate",
                path: "metadata.name".into(),
                message: format!(
                    "ClusterPromotion {:?} is also defined at {}; applying both, the later \
                     replaces the earlier (give each rollout its own name)",
                    d.name,
                    at(&earlier.file, earlier.name_pos)
                ),
            });
            continue;
        }
        first_by_name.insert(&d.name, i);
        for (s, (stage, path, pos)) in d.stages.iter().enumerate() {
            let profile = stage_profile_name(&d.name, stage);
            match profiles.get(&profile) {
                Some(&(other, other_stage)) if all[other].name != d.name => {
                    let o = &all[other];
                    let (o_stage, _, o_pos) = &o.stages[other_stage];
                    out.push(Located {
                        file: d.file.clone(),
                        line: pos.line,
                        column: pos.column,
                        severity: Severity::Error,
                        code: "profile-name-collision",
                        path: path.clone(),
                        message: format!(
                            "stage {stage:?} of ClusterPromotion {:?} makes the ClusterProfile \
                             {profile:?}, and so does stage {o_stage:?} of ClusterPromotion {:?} \
                             ({}); the two rollouts would overwrite each other's profile (rename \
                             a stage or a promotion)",
                            d.name,
                            o.name,
                            at(&o.file, *o_pos)
                        ),
                    });
                }
                Some(_) => {}
                None => {
                    profiles.insert(profile, (i, s));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(file: &str, name: &str, stages: &[&str]) -> Declared {
        Declared {
            file: file.into(),
            name: name.into(),
            name_pos: Pos { line: 4, column: 9 },
            stages: stages
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    (
                        s.to_string(),
                        format!("spec.stages[{i}].name"),
                        Pos {
                            line: 10 + i,
                            column: 11,
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn same_name_twice_names_both_places() {
        let found = check(&[
            declared("a.yaml", "web", &["dev"]),
            declared("b.yaml", "web", &["dev"]),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].file, "b.yaml");
        assert_eq!(found[0].code, "promotion-name-duplicate");
        assert!(
            found[0].message.contains("a.yaml:4:9"),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn colliding_profile_names_are_reported_once_on_the_later_stage() {
        let found = check(&[
            declared("a.yaml", "web", &["dev", "eu-prod"]),
            declared("b.yaml", "web-eu", &["prod"]),
            declared("c.yaml", "other", &["dev"]),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(
            (f.file.as_str(), f.path.as_str(), f.code),
            ("b.yaml", "spec.stages[0].name", "profile-name-collision")
        );
        assert!(f.message.contains("\"web-eu-prod\""), "{}", f.message);
        assert!(f.message.contains("a.yaml:11:11"), "{}", f.message);
    }

    #[test]
    fn distinct_names_pass() {
        assert!(check(&[
            declared("a.yaml", "web", &["dev", "prod"]),
            declared("a.yaml", "api", &["dev", "prod"]),
        ])
        .is_empty());
    }
}
