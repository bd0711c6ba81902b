//! Every command reads `-f` through one reader: from the same bytes, lint's documents, the
//! ClusterPromotions describe/diff/plan/health take, health's `--object` objects and the fleet
//! `plan --clusters` reads are what `promotion_manifest::Manifest` yields, in the same order,
//! and what the bytes were generated from.
//!
//! The bytes are random multi-document mixes of the example ClusterPromotions, SveltosClusters
//! (with YAML 1.1 booleans such as `on`, read as kubectl reads them), ConfigMaps, `List`s,
//! comments, empty documents and JSON documents.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{json, Value};

use kubectl_promotion::commands::lint::{judges, lint_bytes};
use kubectl_promotion::commands::manifests;
use promotion_manifest::{Manifest, Reader};
use promotion_shared::fleet::ClusterType;
use promotion_shared::model::is_cluster_promotion;

/// The example ClusterPromotions: each file's text and the object it holds.
fn examples() -> Vec<(String, Value)> {
    let dir = promotion_examples::examples_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let mut text = std::fs::read_to_string(&path).expect("an example");
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let manifest = Manifest::decode("example", text.as_bytes()).expect("examples parse");
            let [entry] = manifest.entries()[..] else {
                panic!("{} holds one object", path.display())
            };
            assert!(is_cluster_promotion(entry.value), "{}", path.display());
            (text, entry.value.clone())
        })
        .collect()
}

/// YAML 1.1 booleans as go-yaml v2 (kubectl) reads them.
const BOOLEANS: [(&str, bool); 8] = [
    ("true", true),
    ("false", false),
    ("on", true),
    ("off", false),
    ("yes", true),
    ("no", false),
    ("Y", true),
    ("N", false),
];

#[derive(Clone, Debug)]
enum Object {
    Promotion(usize),
    /// A SveltosCluster: `spec.paused` and `status.ready` spelled as `BOOLEANS[i]`.
    Cluster {
        paused: usize,
        ready: usize,
    },
    ConfigMap,
}

#[derive(Clone, Debug)]
enum Document {
    Block(Object),
    Json(Object),
    List(Vec<Object>),
    Empty,
}

fn object() -> impl Strategy<Value = Object> {
    prop_oneof![
        (0..64usize).prop_map(Object::Promotion),
        (0..BOOLEANS.len(), 0..BOOLEANS.len())
            .prop_map(|(paused, ready)| Object::Cluster { paused, ready }),
        Just(Object::ConfigMap),
    ]
}

fn document() -> impl Strategy<Value = Document> {
    prop_oneof![
        4 => object().prop_map(Document::Block),
        2 => object().prop_map(Document::Json),
        2 => prop::collection::vec(object(), 0..4).prop_map(Document::List),
        1 => Just(Document::Empty),
    ]
}

/// Builds the bytes and the objects they hold; every object gets a name of its own.
struct Writer<'a> {
    examples: &'a [(String, Value)],
    text: String,
    expected: Vec<Value>,
    /// Clusters: (namespace/name, paused, ready).
    clusters: Vec<(String, bool, bool)>,
    next: usize,
}

impl Writer<'_> {
    /// The object's value, and its YAML in block style.
    fn object(&mut self, object: &Object) -> (Value, String) {
        self.next += 1;
        let n = self.next;
        match object {
            Object::Promotion(i) => {
                let (text, value) = &self.examples[i % self.examples.len()];
                (value.clone(), text.clone())
            }
            Object::Cluster { paused, ready } => {
                let (p_word, p) = BOOLEANS[*paused];
                let (r_word, r) = BOOLEANS[*ready];
                self.clusters.push((format!("fleet/c{n}"), p, r));
                let value = json!({
                    "apiVersion": "lib.projectsveltos.io/v1beta1",
                    "kind": "SveltosCluster",
                    "metadata": {"name": format!("c{n}"), "namespace": "fleet",
                                 "labels": {"env": "prod"}},
                    "spec": {"paused": p},
                    "status": {"ready": r},
                });
                let text = format!(
                    "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
                     metadata:\n  name: c{n}\n  namespace: fleet  # a comment\n  labels:\n    \
                     env: prod\nspec:\n  paused: {p_word}\nstatus:\n  ready: {r_word}\n"
                );
                (value, text)
            }
            Object::ConfigMap => {
                let value = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": format!("cm{n}")},
                                   "data": {"on": "on", "n": "0777"}});
                let text = format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{n}\ndata:\n  \
                     \"on\": \"on\"\n  n: \"0777\"\n"
                );
                (value, text)
            }
        }
    }

    fn document(&mut self, document: &Document) {
        match document {
            Document::Block(o) => {
                let (value, text) = self.object(o);
                self.text.push_str(&text);
                self.expected.push(value);
            }
            Document::Json(o) => {
                let (value, _) = self.object(o);
                let json = serde_json::to_string_pretty(&value).expect("JSON");
                self.text.push_str(&json);
                self.text.push('\n');
                self.expected.push(value);
            }
            Document::List(items) => {
                self.text.push_str("apiVersion: v1\nkind: List\nitems:\n");
                for item in items {
                    let (value, _) = self.object(item);
                    // Each item in flow style (JSON is YAML), as `kubectl get -o yaml` never
                    // writes it but a person may.
                    let json = serde_json::to_string(&value).expect("JSON");
                    self.text.push_str(&format!("- {json}\n"));
                    self.expected.push(value);
                }
            }
            Document::Empty => self.text.push_str("# nothing here\n"),
        }
    }
}

fn write<'a>(examples: &'a [(String, Value)], documents: &[Document]) -> Writer<'a> {
    let mut w = Writer {
        examples,
        text: String::new(),
        expected: Vec::new(),
        clusters: Vec::new(),
        next: 0,
    };
    for (i, d) in documents.iter().enumerate() {
        if i > 0 {
            w.text.push_str("---\n");
        }
        w.document(d);
    }
    w
}

fn stdin(bytes: &[u8]) -> Reader {
    Reader::new().with_stdin(Cursor::new(bytes.to_vec()))
}

proptest! {
    #![proptest_config(promotion_examples::proptest_config::config())]

    #[test]
    fn every_command_reads_the_same_objects(
        documents in prop::collection::vec(document(), 0..8),
        leading_comment in any::<bool>(),
    ) {
        let examples = examples();
        let mut w = write(&examples, &documents);
        if leading_comment {
            w.text.insert_str(0, "# generated\n");
        }
        let bytes = w.text.as_bytes();
        let stdin_input = [PathBuf::from("-")];

        // The one reader yields the objects written, in order.
        let manifest = Manifest::decode("<stdin>", bytes).expect("generated manifests parse");
        let read: Vec<Value> = manifest.entries().iter().map(|e| e.value.clone()).collect();
        prop_assert_eq!(&read, &w.expected, "{}", w.text);
        let promotions: Vec<Value> =
            read.iter().filter(|v| is_cluster_promotion(v)).cloned().collect();

        // lint: the documents it judges, and what it counted running on the bytes.
        let judged: Vec<Value> = manifest
            .entries()
            .iter()
            .filter(|e| judges(e))
            .map(|e| e.value.clone())
            .collect();
        prop_assert_eq!(&judged, &promotions);
        let (_, tally) = lint_bytes("<stdin>", bytes);
        prop_assert_eq!(
            (tally.not_yaml, tally.promotions, tally.skipped),
            (0, promotions.len(), read.len() - promotions.len())
        );

        // diff -f: every ClusterPromotion, named by its source.
        let diffed = manifests::promotions(&mut stdin(bytes), &stdin_input, false)
            .expect("diff reads them");
        prop_assert!(diffed.iter().all(|(source, _)| source == "<stdin>"));
        let diffed: Vec<Value> = diffed.into_iter().map(|(_, v)| v).collect();
        prop_assert_eq!(&diffed, &promotions);

        // describe/plan/health -f: the one ClusterPromotion, or an error when there are more
        // or none.
        let one = manifests::promotion(&mut stdin(bytes), Path::new("-"));
        match promotions.as_slice() {
            [p] => prop_assert_eq!(&one.expect("one promotion"), p),
            _ => prop_assert!(one.is_err()),
        }

        // health --object: every object.
        let objects = manifests::objects(&mut stdin(bytes), &stdin_input).expect("objects");
        prop_assert_eq!(&objects, &read);

        // plan --clusters: the SveltosClusters, with kubectl's booleans.
        let fleet = manifests::inventory(&mut stdin(bytes), Path::new("-")).expect("a fleet");
        let got: Vec<(String, bool, bool)> = fleet
            .clusters()
            .iter()
            .map(|c| (c.id(), c.paused, c.ready))
            .collect();
        prop_assert_eq!(&got, &w.clusters);
        let from_reader = read
            .iter()
            .filter(|v| {
                ClusterType::of(
                    v["apiVersion"].as_str().unwrap_or(""),
                    v["kind"].as_str().unwrap_or(""),
                )
                .is_some()
            })
            .count();
        prop_assert_eq!(fleet.len(), from_reader);
    }
}
