//! `-o jsonpath…` and `-o custom-columns…` against the real kubectl (v1.32, on PATH): the same
//! ClusterPromotions are served to `kubectl get` and handed to `printers::OutputFormat`, and
//! stdout, stderr and the exit status must be byte-identical.
//!
//! kubectl reads them from a stand-in API (discovery plus GET and LIST of `clusterpromotions`,
//! plain HTTP on loopback) so that the comparison covers what `kubectl get` does around its
//! printers: one object by name is printed as it is, a listing as a `v1` `List` whose items went
//! through a JSON round trip. Objects are served as raw JSON text, which is also what the plugin
//! side parses, so both start from the same numbers (`2.0`, `1e6`, `12345678901234567890`).
//!
//! Where kubectl's output is known to differ, the case says how it is compared: map members
//! visited by `*` or `..` come in random order from kubectl (compared as sorted words), and a
//! custom-columns evaluation error has kubectl print the header first (only stderr compared).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use kubectl_promotion::render::printers::{OutputFormat, PrintOptions, Target, LIST_FORMATS};

const GROUP_VERSION: &str = "config.projectsveltos.io/v1beta1";

const ALPHA: &str = r#"{"apiVersion":"config.projectsveltos.io/v1beta1","kind":"ClusterPromotion",
 "metadata":{"name":"alpha","uid":"0b7f-1","resourceVersion":"11","generation":3,"creationTimestamp":"2026-01-02T03:04:05Z",
   "labels":{"app.kubernetes.io/name":"kyverno","tier":"web"},
   "annotations":{"note":"x<y> & \"z\""},
   "managedFields":[{"manager":"kubectl-promotion","operation":"Apply"}]},
 "spec":{
   "profileSpec":{"helmCharts":[{"chartName":"kyverno/kyverno","chartVersion":"3.2.5","releaseName":"kyverno"}],"syncMode":"Continuous"},
   "stages":[
     {"name":"dev","clusterSelector":{"matchLabels":{"env":"dev"}},"trigger":{"auto":{"delay":"5m"}}},
     {"name":"staging","clusterSelector":{"matchLabels":{"env":"staging"}},"trigger":{"manual":{"approved":true,"automaticReset":true}}},
     {"name":"prod","clusterSelector":{"matchLabels":{"env":"prod"}}}
   ],
   "numbers":{"count":3,"ratio":0.75,"whole":2.0,"big":1e6,"tiny":1e-7,"huge":12345678901234567890,"negative":-42,"exp":1.5e300},
   "nothing":null,"empty":{},"none":[],"flag":false,
   "text":"héllo ✓ <b>&amp;</b>",
   "tabbed":"a\tb",
   "escape":"\u001b[31mred\u001b[0m\r"
 },
 "status":{"currentStageName":"staging","stages":[
   {"name":"dev","lastSuccessfulAppliedTime":"2026-01-02T04:00:00Z"},
   {"name":"staging","failureMessage":"helm: timeout"}]}}"#;

const GAMMA: &str = r#"{"apiVersion":"config.projectsveltos.io/v1beta1","kind":"ClusterPromotion",
 "metadata":{"name":"gamma-with-a-longer-name"},
 "spec":{"stages":[],"numbers":{"whole":-0.0,"count":10}}}"#;

const BETA: &str = r#"{"apiVersion":"config.projectsveltos.io/v1beta1","kind":"ClusterPromotion",
 "metadata":{"name":"beta","labels":{"tier":"db"}},
 "spec":{"stages":[{"name":"only","clusterSelector":{}}],"numbers":{"whole":7.0}}}"#;

/// A read-only API server with discovery for one group and one cluster-scoped resource.
struct StandInApi {
    url: String,
}

impl StandInApi {
    fn start(objects: &[&str]) -> StandInApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let objects: Arc<Vec<(String, String)>> = Arc::new(
            objects
                .iter()
                .map(|raw| {
                    let v: Value = serde_json::from_str(raw).expect("fixture is JSON");
                    let name = v["metadata"]["name"].as_str().expect("named").to_string();
                    (name, (*raw).to_string())
                })
                .collect(),
        );
        // The thread lives as long as the test process; it holds nothing but the socket.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let objects = Arc::clone(&objects);
                std::thread::spawn(move || {
                    let _ = answer(stream, &objects);
                });
            }
        });
        StandInApi { url }
    }
}

fn answer(mut stream: TcpStream, objects: &[(String, String)]) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" {
            break;
        }
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or(target);
    let (status, body) = route(path, objects);
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn route(path: &str, objects: &[(String, String)]) -> (&'static str, String) {
    let resources = format!("/apis/{GROUP_VERSION}/clusterpromotions");
    let ok = |body: String| ("200 OK", body);
    match path {
        "/version" => ok(r#"{"major":"1","minor":"32","gitVersion":"v1.32.0","gitCommit":"0","gitTreeState":"clean","buildDate":"2024-12-11T00:00:00Z","goVersion":"go1.23.3","compiler":"gc","platform":"linux/amd64"}"#.into()),
        "/api" => ok(r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}"#.into()),
        "/apis" => ok(format!(
            r#"{{"kind":"APIGroupList","apiVersion":"v1","groups":[{{"name":"config.projectsveltos.io","versions":[{{"groupVersion":"{GROUP_VERSION}","version":"v1beta1"}}],"preferredVersion":{{"groupVersion":"{GROUP_VERSION}","version":"v1beta1"}}}}]}}"#
        )),
        "/api/v1" => ok(r#"{"kind":"APIResourceList","groupVersion":"v1","resources":[]}"#.into()),
        p if p == format!("/apis/{GROUP_VERSION}") => ok(format!(
            r#"{{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"{GROUP_VERSION}","resources":[{{"name":"clusterpromotions","singularName":"clusterpromotion","namespaced":false,"kind":"ClusterPromotion","verbs":["get","list"]}}]}}"#
        )),
        p if p == resources => {
            let items: Vec<&str> = objects.iter().map(|(_, raw)| raw.as_str()).collect();
            ok(format!(
                r#"{{"apiVersion":"{GROUP_VERSION}","kind":"ClusterPromotionList","metadata":{{"resourceVersion":"42"}},"items":[{}]}}"#,
                items.join(",")
            ))
        }
        p => match p
            .strip_prefix(&resources)
            .and_then(|rest| rest.strip_prefix('/'))
            .and_then(|name| objects.iter().find(|(n, _)| n == name))
        {
            Some((_, raw)) => ok(raw.clone()),
            None => (
                "404 Not Found",
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404}"#.into(),
            ),
        },
    }
}

fn populated() -> &'static StandInApi {
    static API: OnceLock<StandInApi> = OnceLock::new();
    API.get_or_init(|| StandInApi::start(&[ALPHA, GAMMA, BETA]))
}

fn empty() -> &'static StandInApi {
    static API: OnceLock<StandInApi> = OnceLock::new();
    API.get_or_init(|| StandInApi::start(&[]))
}

/// kubectl's discovery cache and an empty home, kept under the target directory.
fn scratch() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("printers_vs_kubectl");
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

#[derive(Debug, PartialEq, Eq)]
struct Printed {
    code: i32,
    stdout: String,
    stderr: String,
}

fn kubectl(api: &StandInApi, what: &[&str], output: &str, flags: &[&str]) -> Printed {
    let dir = scratch();
    let out = Command::new("kubectl")
        .arg("--server")
        .arg(&api.url)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .arg("get")
        .args(what)
        .arg("-o")
        .arg(output)
        .args(flags)
        .env("KUBECONFIG", dir.join("no-kubeconfig"))
        .env("HOME", &dir)
        .output()
        .expect("kubectl (v1.32) must be on PATH for these tests");
    Printed {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("kubectl prints UTF-8 here"),
        stderr: String::from_utf8(out.stderr).expect("kubectl prints UTF-8 here"),
    }
}

fn objects(raw: &[&str]) -> Vec<Value> {
    raw.iter()
        .map(|r| serde_json::from_str(r).expect("fixture is JSON"))
        .collect()
}

/// The plugin's side: parse `-o`, print, and report an error as `error::report` does.
fn plugin(target: Target<'_>, output: &str, flags: &[&str]) -> Printed {
    let options = PrintOptions {
        allow_missing_template_keys: !flags.contains(&"--allow-missing-template-keys=false"),
        no_headers: flags.contains(&"--no-headers"),
    };
    let result =
        OutputFormat::parse(output, LIST_FORMATS).and_then(|format| format.render(target, options));
    match result {
        Ok(Some(stdout)) => Printed {
            code: 0,
            stdout,
            stderr: String::new(),
        },
        Ok(None) => panic!("{output} is not a template format"),
        Err(e) => Printed {
            code: 1,
            stdout: String::new(),
            stderr: format!("error: {e}\n"),
        },
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    Exact,
    /// Map members are visited in random order by kubectl: compare the sorted words.
    SortedWords,
    /// kubectl prints the custom-columns header before failing; the plugin prints nothing.
    StderrOnly,
}

struct Case<'a> {
    output: &'a str,
    flags: &'a [&'a str],
    compare: Compare,
}

const fn exact(output: &str) -> Case<'_> {
    Case {
        output,
        flags: &[],
        compare: Compare::Exact,
    }
}

const fn with<'a>(output: &'a str, flags: &'a [&'a str]) -> Case<'a> {
    Case {
        output,
        flags,
        compare: Compare::Exact,
    }
}

const fn compared(output: &str, compare: Compare) -> Case<'_> {
    Case {
        output,
        flags: &[],
        compare,
    }
}

fn words(text: &str) -> Vec<&str> {
    let mut w: Vec<&str> = text.split_whitespace().collect();
    w.sort_unstable();
    w
}

/// Run every case through both and list the differences (all of them, not just the first).
fn check(api: &StandInApi, what: &[&str], target: Target<'_>, cases: &[Case<'_>]) {
    let mut failures = Vec::new();
    for case in cases {
        let want = kubectl(api, what, case.output, case.flags);
        let got = plugin(target.clone(), case.output, case.flags);
        let same = match case.compare {
            Compare::Exact => got == want,
            Compare::SortedWords => {
                got.code == want.code
                    && got.stderr == want.stderr
                    && words(&got.stdout) == words(&want.stdout)
            }
            Compare::StderrOnly => got.code == want.code && got.stderr == want.stderr,
        };
        if !same {
            failures.push(format!(
                "-o {:?} {:?}\n  kubectl: {want:?}\n  plugin:  {got:?}",
                case.output, case.flags
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from kubectl:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn jsonpath_of_one_object_matches_kubectl() {
    let alpha = &objects(&[ALPHA])[0];
    let strict: &[&str] = &["--allow-missing-template-keys=false"];
    check(
        populated(),
        &["clusterpromotions", "alpha"],
        Target::Object(alpha),
        &[
            exact("jsonpath={.metadata.name}"),
            exact("jsonpath={.metadata.labels}"),
            exact(r"jsonpath={.metadata.labels.app\.kubernetes\.io/name}"),
            exact("jsonpath={.metadata.annotations.note}"),
            exact("jsonpath={.metadata.managedFields}"),
            exact("jsonpath={.spec.stages[*].name}"),
            exact("jsonpath={.spec.stages[0]}"),
            exact("jsonpath={.spec.stages[-1:].name}"),
            exact("jsonpath={.spec.stages[0:2].name}"),
            exact("jsonpath={.spec.stages[::2].name}"),
            exact("jsonpath={.spec.stages[-2]}"),
            exact("jsonpath={.spec.stages[0,2].name}"),
            exact("jsonpath={.spec.stages[*]['name', 'trigger']}"),
            exact("jsonpath={.spec.stages[?(@.trigger.manual.approved==true)].name}"),
            exact(r#"jsonpath={.spec.stages[?(@.name!="dev")].name}"#),
            exact(r#"jsonpath={.spec.stages[?(@.name<"p")].name}"#),
            exact("jsonpath={.spec.stages[?(@.trigger.auto)].name}"),
            exact("jsonpath={.spec.stages[?(@.trigger.manual.approved)].name}"),
            exact("jsonpath={.status.stages[?(@.failureMessage)].name}"),
            exact(r#"jsonpath={range .spec.stages[*]}{.name}{"\t"}{.trigger}{"\n"}{end}"#),
            exact("jsonpath={range .spec.stages[*]}[{.trigger.manual.approved}]{end}"),
            exact(
                "jsonpath={range .spec.stages[*]}{range .clusterSelector.matchLabels.*}{@};{end}{end}",
            ),
            exact("jsonpath={.spec.numbers}"),
            exact(
                "jsonpath={.spec.numbers.count} {.spec.numbers.ratio} {.spec.numbers.whole} \
                 {.spec.numbers.big} {.spec.numbers.tiny} {.spec.numbers.huge} \
                 {.spec.numbers.negative} {.spec.numbers.exp}",
            ),
            exact("jsonpath={.spec.nothing}|{.spec.empty}|{.spec.none}|{.spec.flag}"),
            exact(r#"jsonpath={.spec.text}{"\n"}{.spec.escape}"#),
            exact("jsonpath={.spec.profileSpec.helmCharts[0].chartVersion}"),
            exact("jsonpath={.spec.numbers.missing}"),
            exact("jsonpath={.metadata.name.*}"),
            exact("jsonpath={@}"),
            exact(r#"jsonpath={"quoted\ttext"}{.kind}{'\n'}"#),
            exact(r#"jsonpath=kind is {.kind}, {"{"}braces{"}"}"#),
            exact("jsonpath-as-json={.spec.stages[*].name}"),
            exact("jsonpath-as-json={.metadata.labels}{.spec.nothing}x"),
            exact("jsonpath-as-json={.spec.numbers}"),
            compared("jsonpath={.spec.numbers.*}", Compare::SortedWords),
            compared("jsonpath={..name}", Compare::SortedWords),
            compared("jsonpath={..}", Compare::SortedWords),
            compared("jsonpath={.metadata.labels.*}", Compare::SortedWords),
            // Errors: the wording and kubectl's dump of the object.
            exact("jsonpath={.spec.numbers[?(@.x)]}"),
            exact("jsonpath={.spec.stages[9]}"),
            exact("jsonpath={.spec.stages[0:3:0]}"),
            exact("jsonpath={.spec.text[0]}"),
            exact("jsonpath={.spec.stages[?(@.name>1)]}"),
            exact("jsonpath={range .spec.stages[*]}{end}{end}"),
            exact("jsonpath-as-json={.spec.stages[9]}"),
            with("jsonpath={.spec.nope}", strict),
            // The template is quoted Go-style in the message.
            with("jsonpath={.spec.nope}\n\t\u{7f}é", strict),
            exact("jsonpath={\u{a0}}"),
            exact("jsonpath={é}"),
            exact(r#"jsonpath={.spec.stages[?(@.name=="dev")].trigger.auto.delay}"#),
            exact("jsonpath={.spec.stages[?(@.name>1.5)]}"),
            with("jsonpath={.spec.stages[*].trigger.auto.delay}", strict),
            exact("jsonpath={.spec"),
            exact(r#"jsonpath={.spec.stages[?(@.name=="x"]}"#),
            exact("jsonpath={*}"),
            exact(r#"jsonpath={"it\'s"}"#),
            exact("jsonpath={.a[x]}"),
            exact("jsonpath="),
            exact("jsonpath"),
            exact("jsonpath-file=/nonexistent/template"),
        ],
    );
}

#[test]
fn jsonpath_of_a_listing_matches_kubectl() {
    let items = objects(&[ALPHA, GAMMA, BETA]);
    check(
        populated(),
        &["clusterpromotions"],
        Target::List(items.as_slice().into()),
        &[
            exact(r#"jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}"#),
            exact("jsonpath={.items[*].metadata.name}"),
            exact("jsonpath={.kind} {.apiVersion} {.metadata}"),
            exact("jsonpath={.items[-1].metadata.name}"),
            // The listing's JSON round trip turned whole floats into integers.
            exact("jsonpath={.items[*].spec.numbers.whole}"),
            exact("jsonpath={.items[?(@.spec.numbers.whole==2)].metadata.name}"),
            exact(r#"jsonpath={.items[?(@.metadata.labels.tier=="web")].metadata.name}"#),
            exact(
                r#"jsonpath={range .items[*]}{.metadata.name}:{range .spec.stages[*]}{.name},{end}{"\n"}{end}"#,
            ),
            // kubectl 1.32: an empty list stops the remaining inputs of that step.
            exact("jsonpath={.items[*].spec.stages[*].name}"),
            exact("jsonpath-as-json={.items[*].metadata.name}"),
            with(
                "jsonpath={range .items[*]}{.status.currentStageName}{end}",
                &["--allow-missing-template-keys=false"],
            ),
        ],
    );
}

#[test]
fn jsonpath_of_an_empty_listing_matches_kubectl() {
    check(
        empty(),
        &["clusterpromotions"],
        Target::List(Vec::new().into()),
        &[
            exact("jsonpath={.kind}{.items}"),
            with(
                "jsonpath={range .items[*]}{.metadata.name}{end}",
                &["--allow-missing-template-keys=false"],
            ),
            exact("custom-columns=NAME:.metadata.name"),
        ],
    );
}

#[test]
fn custom_columns_of_one_object_match_kubectl() {
    let alpha = &objects(&[ALPHA])[0];
    check(
        populated(),
        &["clusterpromotions", "alpha"],
        Target::Object(alpha),
        &[
            exact(
                "custom-columns=NAME:.metadata.name,STAGES:.spec.stages[*].name,CURRENT:.status.currentStageName",
            ),
            exact(
                "custom-columns=W:.spec.numbers.whole,B:.spec.numbers.big,T:.spec.numbers.tiny,H:.spec.numbers.huge,E:.spec.numbers.exp",
            ),
        ],
    );
}

#[test]
fn custom_columns_of_a_listing_match_kubectl() {
    let items = objects(&[ALPHA, GAMMA, BETA]);
    let spec_file = scratch().join("columns.txt");
    std::fs::write(
        &spec_file,
        "NAME\tSTAGES   TIER\n.metadata.name   {.spec.stages[*].name}  {metadata.labels.tier}\n",
    )
    .expect("write the columns file");
    let from_file = format!("custom-columns-file={}", spec_file.display());
    check(
        populated(),
        &["clusterpromotions"],
        Target::List(items.as_slice().into()),
        &[
            exact(
                "custom-columns=NAME:.metadata.name,STAGES:.spec.stages[*].name,APPROVED:.spec.stages[?(@.trigger.manual.approved==true)].name",
            ),
            exact(
                "custom-columns=NAME:metadata.name,LABELS:{.metadata.labels},TEXT:{spec.text},NUMBERS:.spec.numbers",
            ),
            exact(
                "custom-columns=W:.spec.numbers.whole,B:.spec.numbers.big,T:.spec.numbers.tiny,H:.spec.numbers.huge",
            ),
            exact(
                "custom-columns=EMPTY:,NONE:.status.nope,NULL:.spec.nothing,E:.spec.empty,L:.spec.none,MF:.metadata.managedFields",
            ),
            exact(
                "custom-columns=NAME:.metadata.name,TABBED:.spec.tabbed,ESC:.spec.escape,AFTER:.kind",
            ),
            with(
                "custom-columns=NAME:.metadata.name,CURRENT:.status.currentStageName",
                &["--no-headers"],
            ),
            with(&from_file, &["--no-headers"]),
            exact(&from_file),
            // Errors.
            compared(
                "custom-columns=A:.spec.stages[9].name",
                Compare::StderrOnly,
            ),
            compared("custom-columns=A:.x[", Compare::StderrOnly),
            exact("custom-columns=A"),
            exact("custom-columns=A:{.x"),
            exact("custom-columns="),
            exact("custom-columns-file=/nonexistent/columns"),
        ],
    );
}
