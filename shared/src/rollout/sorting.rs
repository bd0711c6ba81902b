//! The `profileSpec` lists Sveltos sorts before hashing (`controllers/sort.go`), and the order it
//! puts them in. A list not named here is hashed in the order written, so reordering it starts a
//! new rollout.

use crate::tree::{field, Tree};

/// The `profileSpec` lists Sveltos sorts before hashing, with the members that order them
/// (`controllers/sort.go`). A list not named here is hashed in the order written, so reordering it
/// starts a new rollout.
pub const SORTED_LISTS: [(&str, SortKey); 8] = [
    (
        "helmCharts",
        SortKey::Fields(&["repositoryURL", "releaseNamespace", "releaseName"]),
    ),
    (
        "kustomizationRefs",
        SortKey::Fields(&["kind", "namespace", "name"]),
    ),
    (
        "policyRefs",
        SortKey::Fields(&["kind", "namespace", "name"]),
    ),
    ("dependsOn", SortKey::Itself),
    ("templateResourceRefs", SortKey::Fields(&["identifier"])),
    ("validateHealths", SortKey::Fields(&["name"])),
    ("patches", SortKey::Fields(&["patch"])),
    ("driftExclusions", SortKey::DriftExclusion),
];

#[derive(Clone, Copy)]
pub enum SortKey {
    /// Compare these string members in turn (a missing member is Go's zero value, "").
    Fields(&'static [&'static str]),
    /// The element is a string.
    Itself,
    /// `getSortedDriftExclusions`: the sorted `paths` joined by NUL, then the target's fields.
    DriftExclusion,
}

impl SortKey {
    fn key(self, element: &Tree) -> Vec<u8> {
        let text = |v: Option<&Tree>| v.and_then(Tree::as_str).unwrap_or("").as_bytes().to_vec();
        match self {
            SortKey::Itself => text(Some(element)),
            SortKey::Fields(fields) => {
                // Go compares field by field; joining with a byte below every character that
                // can appear keeps the same order.
                let mut key = Vec::new();
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        key.push(0);
                    }
                    key.extend(text(field(element, f)));
                }
                key
            }
            SortKey::DriftExclusion => {
                let mut paths: Vec<&str> = field(element, "paths")
                    .and_then(Tree::as_array)
                    .map(|p| p.iter().filter_map(Tree::as_str).collect())
                    .unwrap_or_default();
                paths.sort_unstable();
                let mut key = paths.join("\u{0}").into_bytes();
                if let Some(target) = field(element, "target").filter(|t| t.is_object()) {
                    key.push(1);
                    let parts: Vec<Vec<u8>> = ["group", "version", "kind", "namespace", "name"]
                        .iter()
                        .map(|f| text(field(target, f)))
                        .collect();
                    key.extend(parts.join(&0u8));
                }
                key
            }
        }
    }
}

/// How Sveltos sorts the `profileSpec` member `name` before hashing, if it does.
pub fn key_of(name: &str) -> Option<SortKey> {
    SORTED_LISTS
        .iter()
        .find(|(list, _)| *list == name)
        .map(|(_, key)| *key)
}

/// The elements in Sveltos' order, each with its index in the list as written. Go's `sort.Sort`
/// is an insertion sort (stable) for lists of up to 12 elements, which covers real profiles; a
/// stable sort is the faithful choice there (beyond 12 elements with equal keys Go's pdqsort
/// order is not modelled: `docs/reference/promotion-controller.md` §7.3).
pub fn sorted<'a, 'ctx>(items: &'a [Tree<'ctx>], sort: SortKey) -> Vec<(usize, &'a Tree<'ctx>)> {
    let mut keyed: Vec<(Vec<u8>, usize, &Tree)> = items
        .iter()
        .enumerate()
        .map(|(i, v)| (sort.key(v), i, v))
        .collect();
    keyed.sort_by(|x, y| x.0.cmp(&y.0));
    keyed.into_iter().map(|(_, i, v)| (i, v)).collect()
}
