//! What the commands take from `-f` (and `--object`, `--clusters`): ClusterPromotions, objects
//! and the fleet, each picked from the entries of the one reader, `promotion_manifest::Reader`
//! (inputs, stdin, directories, go-yaml v2 scalars, `List` items). `lint` reads through the same
//! reader, file by file, to report what it cannot read and go on.

use std::path::{Path, PathBuf};

use serde_json::Value;

use promotion_manifest::{Entry, Manifest, ReadError, Reader};
use promotion_shared::fleet::Inventory;
use promotion_shared::model::is_cluster_promotion;

use crate::error::{Error, Result};

impl From<ReadError> for Error {
    fn from(e: ReadError) -> Self {
        Error::file(e.source, e.reason)
    }
}

/// The name messages give a command-line input.
pub fn display(path: &Path) -> String {
    if path.as_os_str() == "-" {
        promotion_manifest::read::STDIN_NAME.to_string()
    } else {
        path.display().to_string()
    }
}

/// Every ClusterPromotion of the inputs (documents and `List` items; other objects skipped), in
/// order, each with the file it was read from. Each must have a name.
pub fn promotions(
    reader: &mut Reader,
    inputs: &[PathBuf],
    recursive: bool,
) -> Result<Vec<(String, Value)>> {
    let found = promotions_judged(reader, inputs, recursive, |_, _| ())?;
    Ok(found
        .into_iter()
        .map(|(file, doc, ())| (file, doc))
        .collect())
}

/// [`promotions`], each with what `judge` makes of its entry (file name, and the entry with its
/// positions in the file, which only the reader has).
pub fn promotions_judged<J>(
    reader: &mut Reader,
    inputs: &[PathBuf],
    recursive: bool,
    mut judge: impl FnMut(&str, &Entry<'_>) -> J,
) -> Result<Vec<(String, Value, J)>> {
    let mut found = Vec::new();
    for manifest in reader.manifests(inputs, recursive)? {
        found.extend(promotions_in(&manifest, &mut judge)?);
    }
    Ok(found)
}

fn promotions_in<J>(
    manifest: &Manifest,
    judge: &mut impl FnMut(&str, &Entry<'_>) -> J,
) -> Result<Vec<(String, Value, J)>> {
    let mut found = Vec::new();
    for entry in manifest.entries() {
        if !is_cluster_promotion(entry.value) {
            continue;
        }
        if entry
            .value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            let at = entry.position();
            let at = if at.is_empty() {
                at
            } else {
                format!(" ({at})")
            };
            return Err(Error::file(
                &manifest.source,
                format!("a ClusterPromotion in this file{at} has no metadata.name"),
            ));
        }
        let judged = judge(&manifest.source, &entry);
        found.push((manifest.source.clone(), entry.value.clone(), judged));
    }
    Ok(found)
}

/// The one ClusterPromotion of an input (`describe`, `plan`, `health -f`); a directory's
/// subdirectories are not read.
pub fn promotion(reader: &mut Reader, input: &Path) -> Result<Value> {
    let mut found = promotions(reader, &[input.to_path_buf()], false)?;
    let label = display(input);
    let here = if input.is_dir() {
        "this directory"
    } else {
        "this file"
    };
    match found.len() {
        0 => Err(Error::file(
            label,
            format!("no ClusterPromotion (apiVersion config.projectsveltos.io/v1beta1) in {here}"),
        )),
        1 => Ok(found.remove(0).1),
        n => Err(Error::file(
            label,
            format!("{n} ClusterPromotions in {here}; pass one at a time"),
        )),
    }
}

/// Every object of the inputs, in order (`health --object`: directories recursively); an entry
/// that is not an object is an error naming where it is.
pub fn objects(reader: &mut Reader, inputs: &[PathBuf]) -> Result<Vec<Value>> {
    let mut objects = Vec::new();
    for manifest in reader.manifests(inputs, true)? {
        for entry in manifest.entries() {
            entry.object()?;
            objects.push(entry.value.clone());
        }
    }
    Ok(objects)
}

/// The fleet in an input (`plan --clusters`): its SveltosClusters and Cluster API Clusters;
/// other objects are skipped. A directory is read without its subdirectories; one with no manifest is an error: a fleet left empty by
/// a wrong path would plan every stage to match nothing.
pub fn inventory(reader: &mut Reader, input: &Path) -> Result<Inventory> {
    let manifests = reader.manifests(&[input.to_path_buf()], false)?;
    if manifests.is_empty() && input.is_dir() {
        return Err(Error::file(
            display(input),
            "no *.yaml, *.yml or *.json file in this directory",
        ));
    }
    let mut inventory = Inventory::new();
    for manifest in &manifests {
        for entry in manifest.entries() {
            entry.object()?;
            let position = entry.position();
            let label = if position.is_empty() {
                "the object"
            } else {
                &position
            };
            inventory
                .add_object(&manifest.source, label, entry.value)
                .map_err(|e| Error::Io(e.to_string()))?;
        }
    }
    Ok(inventory)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PROMOTION: &str =
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterPromotion\n";

    fn from_stdin(text: &str) -> Reader {
        Reader::new().with_stdin(std::io::Cursor::new(text.as_bytes().to_vec()))
    }

    fn promotion_in(text: &str) -> Result<Value> {
        promotion(&mut from_stdin(text), Path::new("-"))
    }

    #[test]
    fn finds_the_promotion_among_other_documents() {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\n---\n{PROMOTION}\
             metadata:\n  name: p\nspec:\n  stages:\n  - name: dev\n    trigger:\n      auto:\n        delay: 2m\n"
        );
        let v = promotion_in(&text).unwrap();
        assert_eq!(v["metadata"]["name"], "p");
        assert_eq!(v["spec"]["stages"][0]["trigger"]["auto"]["delay"], "2m");
    }

    #[test]
    fn errors_name_the_file_and_the_problem() {
        let e = promotion_in("kind: ConfigMap\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "<stdin>: no ClusterPromotion (apiVersion config.projectsveltos.io/v1beta1) in this file"
        );
        let e = promotion_in("a: [\n").unwrap_err().to_string();
        assert!(e.starts_with("<stdin>: invalid YAML: 2:1: "), "{e}");
        let two =
            format!("{PROMOTION}metadata: {{name: a}}\n---\n{PROMOTION}metadata: {{name: b}}\n");
        assert_eq!(
            promotion_in(&two).unwrap_err().to_string(),
            "<stdin>: 2 ClusterPromotions in this file; pass one at a time"
        );
        // An unnamed one in a List is named by its item.
        let unnamed = "kind: List\nitems:\n- {apiVersion: config.projectsveltos.io/v1beta1, kind: ClusterPromotion}\n";
        assert_eq!(
            promotion_in(unnamed).unwrap_err().to_string(),
            "<stdin>: a ClusterPromotion in this file (items[0]) has no metadata.name"
        );
    }

    #[test]
    fn objects_from_files_lists_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(
            dir.path().join("sub/c.json"),
            r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let objects = objects(&mut Reader::new(), &[dir.path().to_path_buf()]).unwrap();
        let names: Vec<&str> = objects
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        let missing = dir.path().join("missing.yaml");
        let e = super::objects(&mut Reader::new(), std::slice::from_ref(&missing)).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: cannot read: no such file or directory",
                missing.display()
            )
        );
        let e = super::objects(&mut from_stdin("a: 1\n---\n- x\n"), &["-".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "<stdin>: document 2: expected a Kubernetes object, found a list"
        );
    }

    #[test]
    fn inventory_files_are_json_or_yaml_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: lib.projectsveltos.io/v1beta1\n  kind: SveltosCluster\n  metadata: {name: a, namespace: fleet, labels: {env: prod}}\n  status: {ready: true}\n";
        std::fs::write(dir.path().join("a.yaml"), yaml).unwrap();
        let json = json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                          "metadata": {"name": "b", "namespace": "n"}});
        std::fs::write(dir.path().join("b.json"), json.to_string()).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        // Not recursive: a subdirectory's files are not the fleet's.
        std::fs::create_dir(dir.path().join("old")).unwrap();
        std::fs::write(dir.path().join("old/a.yaml"), yaml).unwrap();
        let read = |path: &Path| inventory(&mut Reader::new(), path);
        assert_eq!(read(dir.path()).unwrap().len(), 2);
        std::fs::write(dir.path().join("c.yml"), "items: [\n").unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("c.yml: invalid YAML"), "{e}");
        std::fs::remove_file(dir.path().join("c.yml")).unwrap();
        // Big fleets are read whole: no parser budget in the way.
        let mut big = String::from("apiVersion: v1\nkind: List\nitems:\n");
        for i in 0..20_000 {
            big.push_str(&format!(
                "- apiVersion: lib.projectsveltos.io/v1beta1\n  kind: SveltosCluster\n  \
                 metadata:\n    name: c{i}\n    namespace: fleet\n    labels:\n      env: prod\n      \
                 region: eu\n      tier: web\n  spec:\n    paused: false\n  status:\n    ready: true\n    version: v1\n"
            ));
        }
        std::fs::write(dir.path().join("big.yaml"), big).unwrap();
        assert_eq!(read(dir.path()).unwrap().len(), 20_002);
        let empty = tempfile::tempdir().unwrap();
        let e = read(empty.path()).unwrap_err().to_string();
        assert!(
            e.ends_with("no *.yaml, *.yml or *.json file in this directory"),
            "{e}"
        );
        let e = read(&empty.path().join("missing.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.yaml: "), "{e}");
        // Positions name the document and the item.
        let two = format!("{yaml}---\nkind: List\nitems:\n- {{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, metadata: {{name: x}}}}\n");
        let e = inventory(&mut from_stdin(&two), Path::new("-"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("<stdin>: document 2, items[0] (Cluster "),
            "{e}"
        );
    }
}
