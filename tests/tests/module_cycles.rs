//! No two modules of a crate of the workspace depend on each other, directly or through others:
//! among the children of every module (the webhook's `api`, `evaluation`, `server`, …;
//! `evaluation`'s `wire`, `request_objects`, …), each child taken with everything below it, the
//! "uses" relation has no cycle. So the webhook's `api/` (HTTP) uses `evaluation/`, never the
//! reverse, and the plugin's command definitions, rendering and view model form no loop.
//!
//! Read from the source with `syn`: every `use`, every path in code, the paths inside the token
//! streams `syn` leaves unparsed — a macro's arguments (`format!("{}", crate::cli::PROGRAM)`,
//! nested groups included) and an attribute's (`#[arg(value_parser = super::parse)]`) — and
//! `"crate::…"` / `"super::…"` strings in attributes (`#[serde(deserialize_with = …)]`), resolved
//! through `crate::`, `super::`, `self::` and child-module names. A parent's references to its own
//! children (re-exports) and a child's to its parent are not edges at the parent's level: they do
//! not make two siblings depend on each other. `#[cfg(test)]` code is left out: a test may use
//! any module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

type ModPath = Vec<String>;

/// Every file module of the crate under `src`, by path, with the file modules it refers to.
fn file_graph(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut files: BTreeMap<ModPath, syn::File> = BTreeMap::new();
    let mut pending: Vec<(ModPath, PathBuf)> = vec![(Vec::new(), src.join("lib.rs"))];
    // Inline modules too, so that `child::item` resolves; they belong to their file.
    let mut inline: BTreeSet<ModPath> = BTreeSet::new();
    while let Some((path, file)) = pending.pop() {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let dir = if path.is_empty() || file.ends_with("mod.rs") {
            file.parent().expect("a directory").to_path_buf()
        } else {
            file.with_extension("")
        };
        collect_mods(&parsed.items, &path, &dir, &mut pending, &mut inline);
        files.insert(path, parsed);
    }
    let known: BTreeSet<ModPath> = files.keys().cloned().chain(inline).collect();
    files
        .iter()
        .map(|(path, file)| {
            let mut refs = References {
                scope: path.clone(),
                known: &known,
                found: BTreeSet::new(),
            };
            refs.visit_file(file);
            let targets = refs
                .found
                .into_iter()
                .map(|abs| owning_file(&abs, &files))
                .filter(|target| target != path)
                .collect();
            (path.clone(), targets)
        })
        .collect()
}

fn collect_mods(
    items: &[syn::Item],
    scope: &ModPath,
    dir: &Path,
    pending: &mut Vec<(ModPath, PathBuf)>,
    inline: &mut BTreeSet<ModPath>,
) {
    for item in items {
        let syn::Item::Mod(module) = item else {
            continue;
        };
        if is_test_only(&module.attrs) {
            continue;
        }
        let mut path = scope.clone();
        path.push(module.ident.to_string());
        match &module.content {
            Some((_, items)) => {
                inline.insert(path.clone());
                collect_mods(
                    items,
                    &path,
                    &dir.join(module.ident.to_string()),
                    pending,
                    inline,
                );
            }
            None => {
                let name = module.ident.to_string();
                let flat = dir.join(format!("{name}.rs"));
                let file = if flat.exists() {
                    flat
                } else {
                    dir.join(&name).join("mod.rs")
                };
                pending.push((path, file));
            }
        }
    }
}

/// The file module that holds the item at `abs` (its longest prefix that is a file module).
fn owning_file(abs: &[String], files: &BTreeMap<ModPath, syn::File>) -> ModPath {
    (0..=abs.len())
        .rev()
        .map(|n| abs[..n].to_vec())
        .find(|prefix| files.contains_key(prefix))
        .unwrap_or_default()
}

struct References<'a> {
    /// The module the visitor is in (inline modules included).
    scope: ModPath,
    known: &'a BTreeSet<ModPath>,
    /// Absolute paths of referenced items or modules inside the crate.
    found: BTreeSet<ModPath>,
}

impl References<'_> {
    fn resolve(&mut self, segments: &[String]) {
        let Some((first, rest)) = segments.split_first() else {
            return;
        };
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.scope.clone(),
            "super" => {
                let mut base = self.scope.clone();
                base.pop();
                base
            }
            _ => {
                let mut child = self.scope.clone();
                child.push(first.clone());
                if !self.known.contains(&child) {
                    return;
                }
                child
            }
        };
        let mut rest = rest;
        while let Some(("super", tail)) = rest.split_first().map(|(s, t)| (s.as_str(), t)) {
            base.pop();
            rest = tail;
        }
        base.extend(rest.iter().cloned());
        self.found.insert(base);
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                prefix.push(name.ident.to_string());
                self.resolve(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Rename(rename) => {
                prefix.push(rename.ident.to_string());
                self.resolve(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.resolve(&prefix.clone()),
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }
}

/// `#[cfg(test)]`: test code may use any module; it is not part of the crate's structure.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && quote::ToTokens::to_token_stream(&a.meta)
                .to_string()
                .replace(' ', "")
                == "cfg(test)"
    })
}

impl<'ast> Visit<'ast> for References<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test_only(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if let Some((_, items)) = &module.content {
            self.scope.push(module.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.scope.pop();
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        for path in token_paths(mac.tokens.clone()) {
            self.resolve(&path);
        }
        syn::visit::visit_macro(self, mac);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.resolve(&segments);
        syn::visit::visit_path(self, path);
    }

    fn visit_attribute(&mut self, attribute: &'ast syn::Attribute) {
        // Paths written as tokens, e.g. `#[arg(value_parser = super::parse)]`.
        if let syn::Meta::List(list) = &attribute.meta {
            for path in token_paths(list.tokens.clone()) {
                self.resolve(&path);
            }
        }
        // Paths written as strings, e.g. `deserialize_with = "super::x::f"`.
        let text = quote::ToTokens::to_token_stream(attribute).to_string();
        for quoted in text.split('"').skip(1).step_by(2) {
            let segments: Vec<String> = quoted.split("::").map(str::to_string).collect();
            if segments.len() > 1 && ["crate", "super", "self"].contains(&segments[0].as_str()) {
                self.resolve(&segments);
            }
        }
    }
}

/// The paths written in a token stream that `syn` does not parse (a macro's or an attribute's
/// arguments), groups included: each `a::b…` of two segments or more, with `$crate` read as
/// `crate`. A path that starts with `::` (an extern crate) or continues one (`Vec::<u8>::new`'s
/// `new`) is not one; a lone identifier is not either, since inside a macro it may be anything.
fn token_paths(tokens: proc_macro2::TokenStream) -> Vec<Vec<String>> {
    use proc_macro2::{Spacing, TokenTree};
    fn is_colon(token: Option<&TokenTree>, spacing: Option<Spacing>) -> bool {
        matches!(token, Some(TokenTree::Punct(p))
            if p.as_char() == ':' && spacing.is_none_or(|s| p.spacing() == s))
    }
    fn walk(tokens: proc_macro2::TokenStream, paths: &mut Vec<Vec<String>>) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            let TokenTree::Ident(first) = &tokens[i] else {
                if let TokenTree::Group(group) = &tokens[i] {
                    walk(group.stream(), paths);
                }
                i += 1;
                continue;
            };
            let continues = i >= 2
                && is_colon(tokens.get(i - 2), Some(Spacing::Joint))
                && is_colon(tokens.get(i - 1), None);
            let mut segments = vec![first.to_string()];
            let mut next = i + 1;
            while is_colon(tokens.get(next), Some(Spacing::Joint))
                && is_colon(tokens.get(next + 1), None)
            {
                let Some(TokenTree::Ident(segment)) = tokens.get(next + 2) else {
                    break;
                };
                segments.push(segment.to_string());
                next += 3;
            }
            if !continues && segments.len() > 1 {
                paths.push(segments);
            }
            i = next;
        }
    }
    let mut paths = Vec::new();
    walk(tokens, &mut paths);
    paths
}

/// Every cycle among the children of some module, as `a → b → a` under that module.
fn sibling_cycles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<String> {
    let mut cycles = Vec::new();
    for parent in graph.keys() {
        let child_of = |path: &ModPath| -> Option<String> {
            (path.len() > parent.len() && path.starts_with(parent))
                .then(|| path[parent.len()].clone())
        };
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (source, targets) in graph {
            let Some(from) = child_of(source) else {
                continue;
            };
            for target in targets {
                if let Some(to) = child_of(target).filter(|to| *to != from) {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
        if let Some(cycle) = find_cycle(&edges) {
            let under = if parent.is_empty() {
                "crate".to_string()
            } else {
                parent.join("::")
            };
            cycles.push(format!("under {under}: {}", cycle.join(" → ")));
        }
    }
    cycles
}

fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &String,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, stack, done) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

fn crate_graph(dir: &str) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    file_graph(&promotion_e2e::bins::workspace_root().join(dir).join("src"))
}

fn path(module: &str) -> ModPath {
    module.split("::").map(str::to_string).collect()
}

/// The directories of the workspace's members (`Cargo.toml`), each a library crate.
fn workspace_crates() -> Vec<String> {
    let manifest =
        std::fs::read_to_string(promotion_e2e::bins::workspace_root().join("Cargo.toml"))
            .expect("the workspace's Cargo.toml");
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("the workspace's member list");
    members
        .lines()
        .flat_map(|line| line.split('#').next().unwrap_or_default().split(','))
        .map(|member| member.trim().trim_matches('"'))
        .filter(|member| !member.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn no_module_depends_on_one_that_depends_back_on_it() {
    let crates = workspace_crates();
    for dir in [
        "shared",
        "plugin",
        "webhook",
        "controller",
        "tests",
        "crates/kube-connect",
    ] {
        assert!(
            crates.iter().any(|c| c == dir),
            "{dir} is not a member: {crates:?}"
        );
    }
    let cycles: Vec<String> = crates
        .iter()
        .flat_map(|dir| {
            sibling_cycles(&crate_graph(dir))
                .into_iter()
                .map(move |cycle| format!("{dir}: {cycle}"))
        })
        .collect();
    assert!(cycles.is_empty(), "module cycles: {cycles:#?}");
}

#[test]
fn the_check_sees_the_modules_and_edges_that_matter() {
    let webhook = crate_graph("webhook");
    for module in ["api", "evaluation", "evaluation::wire", "testing::process"] {
        assert!(
            webhook.contains_key(&path(module)),
            "webhook: {module} not found"
        );
    }
    assert!(webhook[&path("api")].contains(&path("evaluation")));
    let plugin = crate_graph("plugin");
    for module in [
        "cli",
        "commands::lint",
        "render",
        "view",
        "cluster::fetch",
        "cluster::kube_client",
    ] {
        assert!(
            plugin.contains_key(&path(module)),
            "plugin: {module} not found"
        );
    }
    assert!(plugin[&path("cluster::fetch")].contains(&path("view")));
    assert!(plugin[&path("commands::lint")].contains(&path("render")));
    // The program's name: cli reads it from version, which names nothing of cli.
    assert!(plugin[&path("cli")].contains(&path("commands::version")));
    assert!(!plugin[&path("commands::version")].contains(&path("cli")));
    let controller = crate_graph("controller");
    for module in [
        "cli",
        "commands",
        "live::reconciler",
        "live::writes",
        "snapshot",
    ] {
        assert!(
            controller.contains_key(&path(module)),
            "controller: {module} not found"
        );
    }
    let shared = crate_graph("shared");
    assert!(shared[&path("model")].contains(&path("approval")));
}

#[test]
fn the_check_finds_a_cycle_through_a_use_a_path_and_a_serde_attribute() {
    let dir = tempfile::tempdir().unwrap();
    let write = |file: &str, text: &str| {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n");
    write("a/mod.rs", "mod inner;\n");
    write("a/inner.rs", "pub fn f() { crate::b::g(); }\n");
    write(
        "b.rs",
        "#[derive(serde::Deserialize)]\npub struct S { #[serde(deserialize_with = \"super::c::h\")] x: u8 }\npub fn g() {}\n",
    );
    write("c.rs", "use crate::a::X;\n");
    let cycles = sibling_cycles(&file_graph(dir.path()));
    assert_eq!(cycles, ["under crate: a → b → c → a"]);

    // Without the last edge there is none; a child using its parent is not one either.
    write("c.rs", "pub fn h() {}\n");
    write("a/inner.rs", "pub fn f() { crate::b::g(); super::X; }\n");
    assert!(sibling_cycles(&file_graph(dir.path())).is_empty());
}

#[test]
fn the_check_finds_a_cycle_through_a_path_inside_a_macro() {
    let dir = tempfile::tempdir().unwrap();
    let write = |file: &str, text: &str| {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // The plugin's shape before PROGRAM moved: cli uses a command's arguments, and the command
    // names cli's constant only inside `format!`.
    write("lib.rs", "pub mod cli;\npub mod commands;\n");
    write(
        "cli.rs",
        "use crate::commands::version::VersionArgs;\npub const PROGRAM: &str = \"p\";\n",
    );
    write("commands/mod.rs", "pub mod version;\n");
    write(
        "commands/version.rs",
        "pub struct VersionArgs;\npub fn run() -> String { format!(\"{} v1\", crate::cli::PROGRAM) }\n",
    );
    let cycles = sibling_cycles(&file_graph(dir.path()));
    assert_eq!(cycles, ["under crate: cli → commands → cli"]);

    // Inside a group nested in the macro, as `super::`, through `$crate` in a macro_rules body,
    // and in an attribute's tokens: each is the edge back to cli.
    for body in [
        "pub fn run() -> Vec<(u8, &'static str)> { vec![(1, super::super::cli::PROGRAM)] }",
        "macro_rules! name { () => { $crate::cli::PROGRAM }; }",
        "#[derive(clap::Args)]\npub struct Flags { #[arg(default_value = crate::cli::PROGRAM)] p: String }",
    ] {
        write(
            "commands/version.rs",
            &format!("pub struct VersionArgs;\n{body}\n"),
        );
        let cycles = sibling_cycles(&file_graph(dir.path()));
        assert_eq!(cycles, ["under crate: cli → commands → cli"], "{body}");
    }

    // Not paths into the crate: a lone identifier, an extern crate's path (`::cli::…`), a path
    // continuing after generics, and text in a string.
    write(
        "commands/version.rs",
        "pub struct VersionArgs;\npub fn run(cli: u8) -> String { \
         format!(\"crate::cli::PROGRAM {} {} {:?}\", cli, ::cli::PROGRAM, Vec::<u8>::new()) }\n",
    );
    assert!(sibling_cycles(&file_graph(dir.path())).is_empty());
}
