//! client-go `jsonpath_test.go` (Kubernetes 1.32), every case that applies to JSON input.
//!
//! Adapted: upstream feeds Go structs to some cases; here they are the JSON objects kubectl would
//! hold, so struct field order becomes key order (`{"Color":…,"IsNew":…,"Price":…}`, `..Price`
//! visits `Bicycle` before `Book`) and a `map[string]int` is a `map[string]interface {}` in the
//! error text. Left out: nothing else; the `book` type's `String()` method never shows in these
//! outputs. `empty_array_test.go` (added after 1.32) is kept with 1.32's results, which kubectl
//! 1.32 prints: an empty slice stops the remaining inputs.

use serde_json::{json, Value};

use super::JsonPath;

struct Case {
    name: &'static str,
    template: &'static str,
    input: Value,
    expect: &'static str,
    expect_error: bool,
}

fn case(name: &'static str, template: &'static str, input: &Value, expect: &'static str) -> Case {
    Case {
        name,
        template,
        input: input.clone(),
        expect,
        expect_error: false,
    }
}

fn failing(name: &'static str, template: &'static str, input: &Value) -> Case {
    Case {
        name,
        template,
        input: input.clone(),
        expect: "",
        expect_error: true,
    }
}

/// `testJSONPath`
fn run(cases: &[Case], allow_missing_keys: bool) {
    for c in cases {
        let parsed = match JsonPath::parse(c.template) {
            Ok(p) => p,
            Err(e) => {
                assert!(c.expect_error, "{}: parse {} error {e}", c.name, c.template);
                continue;
            }
        };
        let out = parsed.execute(&c.input, allow_missing_keys, false);
        if c.expect_error {
            assert!(
                out.is_err(),
                "{}: expected an execute error, got {out:?}",
                c.name
            );
            continue;
        }
        match out {
            Ok(text) => assert_eq!(text, c.expect, "{}: {}", c.name, c.template),
            Err(e) => panic!("{}: execute error {e}", c.name),
        }
    }
}

/// `testFailJSONPath`: the error text.
fn run_failing(cases: &[(&str, &str, &Value, &str)]) {
    for (name, template, input, want) in cases {
        let parsed = JsonPath::parse(template).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = match parsed.execute(input, false, false) {
            Ok(_) => "nil".to_string(),
            Err(e) => e,
        };
        assert_eq!(&got, want, "{name}");
    }
}

#[test]
fn types_input() {
    let types = json!({
        "bools": [true, false, true, false],
        "integers": [1, 2, 3, 4],
        "floats": [1.0, 2.2, 3.3, 4.0],
        "strings": ["one", "two", "three", "four"],
        "interfaces": [true, "one", 1, 1.1],
        "maps": [
            {"name": "one", "value": 1},
            {"name": "two", "value": 2.02},
            {"name": "three", "value": 3.03},
            {"name": "four", "value": 4.04}
        ],
        "structs": [
            {"name": "one", "value": 1, "type": "integer"},
            {"name": "two", "value": 2.002, "type": "float"},
            {"name": "three", "value": 3, "type": "integer"},
            {"name": "four", "value": 4.004, "type": "float"}
        ]
    });
    let t = &types;
    run(
        &[
            case("boolSlice", "{ .bools }", t, "[true,false,true,false]"),
            case("boolSliceIndex", "{ .bools[0] }", t, "true"),
            case("boolSliceIndex", "{ .bools[-1] }", t, "false"),
            case("boolSubSlice", "{ .bools[0:2] }", t, "true false"),
            case("boolSubSliceFirst2", "{ .bools[:2] }", t, "true false"),
            case("boolSubSliceStep2", "{ .bools[:4:2] }", t, "true true"),
            case("integerSlice", "{ .integers }", t, "[1,2,3,4]"),
            case("integerSliceIndex", "{ .integers[0] }", t, "1"),
            case("integerSliceIndexReverse", "{ .integers[-2] }", t, "3"),
            case("integerSubSliceFirst2", "{ .integers[0:2] }", t, "1 2"),
            case("integerSubSliceFirst2Alt", "{ .integers[:2] }", t, "1 2"),
            case("integerSubSliceStep2", "{ .integers[:4:2] }", t, "1 3"),
            case("floatSlice", "{ .floats }", t, "[1,2.2,3.3,4]"),
            case("floatSliceIndex", "{ .floats[0] }", t, "1"),
            case("floatSliceIndexReverse", "{ .floats[-2] }", t, "3.3"),
            case("floatSubSliceFirst2", "{ .floats[0:2] }", t, "1 2.2"),
            case("floatSubSliceFirst2Alt", "{ .floats[:2] }", t, "1 2.2"),
            case("floatSubSliceStep2", "{ .floats[:4:2] }", t, "1 3.3"),
            case(
                "stringSlice",
                "{ .strings }",
                t,
                r#"["one","two","three","four"]"#,
            ),
            case("stringSliceIndex", "{ .strings[0] }", t, "one"),
            case("stringSliceIndexReverse", "{ .strings[-2] }", t, "three"),
            case("stringSubSliceFirst2", "{ .strings[0:2] }", t, "one two"),
            case("stringSubSliceFirst2Alt", "{ .strings[:2] }", t, "one two"),
            case("stringSubSliceStep2", "{ .strings[:4:2] }", t, "one three"),
            case(
                "interfaceSlice",
                "{ .interfaces }",
                t,
                r#"[true,"one",1,1.1]"#,
            ),
            case("interfaceSliceIndex", "{ .interfaces[0] }", t, "true"),
            case("interfaceSliceIndexReverse", "{ .interfaces[-2] }", t, "1"),
            case(
                "interfaceSubSliceFirst2",
                "{ .interfaces[0:2] }",
                t,
                "true one",
            ),
            case(
                "interfaceSubSliceFirst2Alt",
                "{ .interfaces[:2] }",
                t,
                "true one",
            ),
            case(
                "interfaceSubSliceStep2",
                "{ .interfaces[:4:2] }",
                t,
                "true 1",
            ),
            case(
                "mapSlice",
                "{ .maps }",
                t,
                r#"[{"name":"one","value":1},{"name":"two","value":2.02},{"name":"three","value":3.03},{"name":"four","value":4.04}]"#,
            ),
            case(
                "mapSliceIndex",
                "{ .maps[0] }",
                t,
                r#"{"name":"one","value":1}"#,
            ),
            case(
                "mapSliceIndexReverse",
                "{ .maps[-2] }",
                t,
                r#"{"name":"three","value":3.03}"#,
            ),
            case(
                "mapSubSliceFirst2",
                "{ .maps[0:2] }",
                t,
                r#"{"name":"one","value":1} {"name":"two","value":2.02}"#,
            ),
            case(
                "mapSubSliceFirst2Alt",
                "{ .maps[:2] }",
                t,
                r#"{"name":"one","value":1} {"name":"two","value":2.02}"#,
            ),
            case(
                "mapSubSliceStepOdd",
                "{ .maps[::2] }",
                t,
                r#"{"name":"one","value":1} {"name":"three","value":3.03}"#,
            ),
            case(
                "mapSubSliceStepEven",
                "{ .maps[1::2] }",
                t,
                r#"{"name":"two","value":2.02} {"name":"four","value":4.04}"#,
            ),
            case(
                "structSlice",
                "{ .structs }",
                t,
                r#"[{"name":"one","type":"integer","value":1},{"name":"two","type":"float","value":2.002},{"name":"three","type":"integer","value":3},{"name":"four","type":"float","value":4.004}]"#,
            ),
            case(
                "structSliceIndex",
                "{ .structs[0] }",
                t,
                r#"{"name":"one","type":"integer","value":1}"#,
            ),
            case(
                "structSliceIndexReverse",
                "{ .structs[-2] }",
                t,
                r#"{"name":"three","type":"integer","value":3}"#,
            ),
            case(
                "structSubSliceFirst2",
                "{ .structs[0:2] }",
                t,
                r#"{"name":"one","type":"integer","value":1} {"name":"two","type":"float","value":2.002}"#,
            ),
            case(
                "structSubSliceFirst2Alt",
                "{ .structs[:2] }",
                t,
                r#"{"name":"one","type":"integer","value":1} {"name":"two","type":"float","value":2.002}"#,
            ),
            case(
                "structSubSliceStepOdd",
                "{ .structs[::2] }",
                t,
                r#"{"name":"one","type":"integer","value":1} {"name":"three","type":"integer","value":3}"#,
            ),
            case(
                "structSubSliceStepEven",
                "{ .structs[1::2] }",
                t,
                r#"{"name":"two","type":"float","value":2.002} {"name":"four","type":"float","value":4.004}"#,
            ),
        ],
        false,
    );
}

fn store() -> Value {
    json!({
        "Name": "jsonpath",
        "Book": [
            {"Category": "reference", "Author": "Nigel Rees", "Title": "Sayings of the Centurey", "Price": 8.95},
            {"Category": "fiction", "Author": "Evelyn Waugh", "Title": "Sword of Honour", "Price": 12.99},
            {"Category": "fiction", "Author": "Herman Melville", "Title": "Moby Dick", "Price": 8.99}
        ],
        "Bicycle": [
            {"Color": "red", "Price": 19.95, "IsNew": true},
            {"Color": "green", "Price": 20.01, "IsNew": false}
        ],
        "Labels": {"engieer": 10, "web/html": 15, "k8s-app": 20},
        "Employees": {"jason": "manager", "dan": "clerk"}
    })
}

#[test]
fn struct_input() {
    let s = &store();
    let null = &Value::Null;
    run(
        &[
            case("plain", "hello jsonpath", null, "hello jsonpath"),
            case("recursive", "{..}", &json!([1, 2, 3]), "[1,2,3]"),
            case("filter", "{[?(@<5)]}", &json!([2, 6, 3, 7]), "2 3"),
            case("quote", r#"{"{"}"#, null, "{"),
            case("union", "{[1,3,4]}", &json!([0, 1, 2, 3, 4]), "1 3 4"),
            case(
                "array",
                "{[0:2]}",
                &json!(["Monday", "Tudesday"]),
                "Monday Tudesday",
            ),
            case("variable", "hello {.Name}", s, "hello jsonpath"),
            case("dict/", "{$.Labels.web/html}", s, "15"),
            case("dict/", "{$.Employees.jason}", s, "manager"),
            case("dict/", "{$.Employees.dan}", s, "clerk"),
            case("dict-", "{.Labels.k8s-app}", s, "20"),
            case("nest", "{.Bicycle[*].Color}", s, "red green"),
            case(
                "allarray",
                "{.Book[*].Author}",
                s,
                "Nigel Rees Evelyn Waugh Herman Melville",
            ),
            case(
                "allfields",
                r#"{range .Bicycle[*]}{ "{" }{ @.* }{ "} " }{end}"#,
                s,
                "{red true 19.95} {green false 20.01} ",
            ),
            case("recurfields", "{..Price}", s, "19.95 20.01 8.95 12.99 8.99"),
            case(
                "recurdotfields",
                "{...Price}",
                s,
                "19.95 20.01 8.95 12.99 8.99",
            ),
            failing(
                "superrecurfields",
                "{............................................................Price}",
                s,
            ),
            case(
                "allstructsSlice",
                "{.Bicycle}",
                s,
                r#"[{"Color":"red","IsNew":true,"Price":19.95},{"Color":"green","IsNew":false,"Price":20.01}]"#,
            ),
            case(
                "allstructs",
                r#"{range .Bicycle[*]}{ @ }{ " " }{end}"#,
                s,
                r#"{"Color":"red","IsNew":true,"Price":19.95} {"Color":"green","IsNew":false,"Price":20.01} "#,
            ),
            case(
                "lastarray",
                "{.Book[-1:]}",
                s,
                r#"{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}"#,
            ),
            case(
                "recurarray",
                "{..Book[2]}",
                s,
                r#"{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}"#,
            ),
            case(
                "bool",
                "{.Bicycle[?(@.IsNew==true)]}",
                s,
                r#"{"Color":"red","IsNew":true,"Price":19.95}"#,
            ),
        ],
        false,
    );

    run(
        &[
            case("nonexistent field", "{.hello}", s, ""),
            case(
                "nonexistent field 2",
                "before-{.hello}after",
                s,
                "before-after",
            ),
        ],
        true,
    );

    run_failing(&[
        (
            "invalid identifier",
            "{hello}",
            s,
            "unrecognized identifier hello",
        ),
        ("nonexistent field", "{.hello}", s, "hello is not found"),
        (
            "invalid array",
            "{.Labels[0]}",
            s,
            "map[string]interface {} is not array or slice",
        ),
        (
            "invalid filter operator",
            "{.Book[?(@.Price<>10)]}",
            s,
            "unrecognized filter operator <>",
        ),
        (
            "redundant end",
            "{range .Labels.*}{@}{end}{end}",
            s,
            "not in range, nothing to end",
        ),
    ]);
}

#[test]
fn json_input() {
    let points: Value = serde_json::from_str(
        r#"[
            {"id": "i1", "x":4, "y":-5},
            {"id": "i2", "x":-2, "y":-5, "z":1},
            {"id": "i3", "x":  8, "y":  3 },
            {"id": "i4", "x": -6, "y": -1 },
            {"id": "i5", "x":  0, "y":  2, "z": 1 },
            {"id": "i6", "x":  1, "y":  4 },
            {"id": "i7", "x":  null, "y":  4 }
        ]"#,
    )
    .unwrap();
    run(
        &[
            case("exists filter", "{[?(@.z)].id}", &points, "i2 i5"),
            case("bracket key", "{[0]['id']}", &points, "i1"),
            case("nil value", "{[-1]['x']}", &points, "null"),
        ],
        false,
    );
}

fn nodes() -> Value {
    json!({
        "kind": "List",
        "items": [
            {
                "kind": "None",
                "metadata": {"name": "127.0.0.1", "labels": {"kubernetes.io/hostname": "127.0.0.1"}},
                "status": {
                    "capacity": {"cpu": "4"},
                    "ready": true,
                    "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}]
                }
            },
            {
                "kind": "None",
                "metadata": {"name": "127.0.0.2", "labels": {"kubernetes.io/hostname": "127.0.0.2"}},
                "status": {
                    "capacity": {"cpu": "8"},
                    "ready": false,
                    "addresses": [
                        {"type": "LegacyHostIP", "address": "127.0.0.2"},
                        {"type": "another", "address": "127.0.0.3"}
                    ]
                }
            }
        ],
        "users": [
            {"name": "myself", "user": {}},
            {"name": "e2e", "user": {"username": "admin", "password": "secret"}}
        ]
    })
}

#[test]
fn kubernetes() {
    let n = &nodes();
    run(
        &[
            case(
                "range item",
                "{range .items[*]}{.metadata.name}, {end}{.kind}",
                n,
                "127.0.0.1, 127.0.0.2, List",
            ),
            case(
                "range item with quote",
                r#"{range .items[*]}{.metadata.name}{"\t"}{end}"#,
                n,
                "127.0.0.1\t127.0.0.2\t",
            ),
            case(
                "range addresss",
                "{.items[*].status.addresses[*].address}",
                n,
                "127.0.0.1 127.0.0.2 127.0.0.3",
            ),
            case(
                "double range",
                "{range .items[*]}{range .status.addresses[*]}{.address}, {end}{end}",
                n,
                "127.0.0.1, 127.0.0.2, 127.0.0.3, ",
            ),
            case(
                "item name",
                "{.items[*].metadata.name}",
                n,
                "127.0.0.1 127.0.0.2",
            ),
            case(
                "union nodes capacity",
                "{.items[*]['metadata.name', 'status.capacity']}",
                n,
                r#"127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}"#,
            ),
            case(
                "range nodes capacity",
                "{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}",
                n,
                r#"[127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] "#,
            ),
            case(
                "user password",
                r#"{.users[?(@.name=="e2e")].user.password}"#,
                n,
                "secret",
            ),
            case(
                "hostname",
                r"{.items[0].metadata.labels.kubernetes\.io/hostname}",
                n,
                "127.0.0.1",
            ),
            case(
                "hostname filter",
                r#"{.items[?(@.metadata.labels.kubernetes\.io/hostname=="127.0.0.1")].kind}"#,
                n,
                "None",
            ),
            case(
                "bool item",
                "{.items[?(@..ready==true)].metadata.name}",
                n,
                "127.0.0.1",
            ),
        ],
        false,
    );

    // `testJSONPathSortOutput`: map members come in random order in Go, so fields are sorted.
    let out = JsonPath::parse("{..name}")
        .unwrap()
        .execute(n, false, false)
        .unwrap();
    let mut got: Vec<&str> = out.split_whitespace().collect();
    got.sort_unstable();
    assert_eq!(got, ["127.0.0.1", "127.0.0.2", "e2e", "myself"]);
}

#[test]
fn empty_range() {
    let empty = json!({"items": []});
    run(
        &[
            case(
                "empty range",
                "{range .items[*]}{.metadata.name}{end}",
                &empty,
                "",
            ),
            case(
                "empty nested range",
                r#"{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}"#,
                &empty,
                "",
            ),
        ],
        true,
    );
}

#[test]
fn nested_ranges() {
    let data = json!({
        "items": [
            {
                "metadata": {"name": "pod1"},
                "spec": {"containers": [
                    {"name": "foo", "another": [{"name": "value1"}, {"name": "value2"}]},
                    {"name": "bar", "another": [{"name": "value1"}, {"name": "value2"}]}
                ]}
            },
            {
                "metadata": {"name": "pod2"},
                "spec": {"containers": [
                    {"name": "baz", "another": [{"name": "value1"}, {"name": "value2"}]}
                ]}
            }
        ]
    });
    run(
        &[
            case(
                "nested range with a trailing newline",
                r#"{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}"#,
                &data,
                "pod1:foo,bar,+pod2:baz,+",
            ),
            case(
                "nested range with a trailing character within another nested range with a trailing newline",
                r##"{range .items[*]}{.metadata.name}{"~"}{range @.spec.containers[*]}{.name}{":"}{range @.another[*]}{.name}{","}{end}{"+"}{end}{"#"}{end}"##,
                &data,
                "pod1~foo:value1,value2,+bar:value1,value2,+#pod2~baz:value1,value2,+#",
            ),
            case(
                "two nested ranges at the same level with a trailing newline",
                r#"{range .items[*]}{.metadata.name}{"\t"}{range @.spec.containers[*]}{.name}{" "}{end}{"\t"}{range @.spec.containers[*]}{.name}{" "}{end}{"\n"}{end}"#,
                &data,
                "pod1\tfoo bar \tfoo bar \npod2\tbaz \tbaz \n",
            ),
        ],
        false,
    );
}

#[test]
fn filter_partial_matches_sometimes_missing_annotations() {
    let data = json!({
        "kind": "List",
        "items": [
            {"kind": "Pod", "metadata": {"name": "pod1", "annotations": {"color": "blue"}}},
            {"kind": "Pod", "metadata": {"name": "pod2"}},
            {"kind": "Pod", "metadata": {"name": "pod3", "annotations": {"color": "green"}}},
            {"kind": "Pod", "metadata": {"name": "pod4", "annotations": {"color": "blue"}}}
        ]
    });
    let template = r#"{.items[?(@.metadata.annotations.color=="blue")].metadata.name}"#;
    run(
        &[case("tolerate missing items", template, &data, "pod1 pod4")],
        true,
    );
    run(&[failing("error on missing items", template, &data)], false);
}

fn containers(n: usize) -> Value {
    let list: Vec<Value> = (0..n)
        .map(|i| json!({"image": "radial/busyboxplus:curl", "name": format!("fake{i}")}))
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": list}})
}

#[test]
fn negative_index() {
    let d = &containers(4);
    run(
        &[
            case("containers[0]", "{.spec.containers[0].name}", d, "fake0"),
            case("containers[0:0]", "{.spec.containers[0:0].name}", d, ""),
            case(
                "containers[0:-1]",
                "{.spec.containers[0:-1].name}",
                d,
                "fake0 fake1 fake2",
            ),
            failing("containers[-1:0]", "{.spec.containers[-1:0].name}", d),
            case("containers[-1]", "{.spec.containers[-1].name}", d, "fake3"),
            case(
                "containers[-1:]",
                "{.spec.containers[-1:].name}",
                d,
                "fake3",
            ),
            case("containers[-2]", "{.spec.containers[-2].name}", d, "fake2"),
            case(
                "containers[-2:]",
                "{.spec.containers[-2:].name}",
                d,
                "fake2 fake3",
            ),
            case("containers[-3]", "{.spec.containers[-3].name}", d, "fake1"),
            case("containers[-4]", "{.spec.containers[-4].name}", d, "fake0"),
            case(
                "containers[-4:]",
                "{.spec.containers[-4:].name}",
                d,
                "fake0 fake1 fake2 fake3",
            ),
            failing("containers[-5]", "{.spec.containers[-5].name}", d),
            case("containers[5:5]", "{.spec.containers[5:5].name}", d, ""),
            case("containers[-5:-5]", "{.spec.containers[-5:-5].name}", d, ""),
            failing("containers[3:1]", "{.spec.containers[3:1].name}", d),
            failing("containers[-1:-2]", "{.spec.containers[-1:-2].name}", d),
        ],
        false,
    );
}

#[test]
fn running_pods_jsonpath_output() {
    let data = json!({
        "kind": "List",
        "items": [
            {"kind": "Pod", "metadata": {"name": "pod1"}, "status": {"phase": "Running"}},
            {"kind": "Pod", "metadata": {"name": "pod2"}, "status": {"phase": "Running"}},
            {"kind": "Pod", "metadata": {"name": "pod3"}, "status": {"phase": "Running"}},
            {"resourceVersion": ""}
        ]
    });
    run(
        &[case(
            "range over pods without selecting the last one",
            r#"{range .items[?(.status.phase=="Running")]}{.metadata.name}{" is Running\n"}{end}"#,
            &data,
            "pod1 is Running\npod2 is Running\npod3 is Running\n",
        )],
        true,
    );
}

#[test]
fn step() {
    let d = &containers(6);
    run(
        &[
            case(
                "containers[0:]",
                "{.spec.containers[0:].name}",
                d,
                "fake0 fake1 fake2 fake3 fake4 fake5",
            ),
            case(
                "containers[0:6:]",
                "{.spec.containers[0:6:].name}",
                d,
                "fake0 fake1 fake2 fake3 fake4 fake5",
            ),
            case(
                "containers[0:6:1]",
                "{.spec.containers[0:6:1].name}",
                d,
                "fake0 fake1 fake2 fake3 fake4 fake5",
            ),
            failing("containers[0:6:0]", "{.spec.containers[0:6:0].name}", d),
            failing("containers[0:6:-1]", "{.spec.containers[0:6:-1].name}", d),
            case(
                "containers[1:4:2]",
                "{.spec.containers[1:4:2].name}",
                d,
                "fake1 fake3",
            ),
            case(
                "containers[1:4:3]",
                "{.spec.containers[1:4:3].name}",
                d,
                "fake1",
            ),
            case(
                "containers[1:4:4]",
                "{.spec.containers[1:4:4].name}",
                d,
                "fake1",
            ),
            case(
                "containers[0:6:2]",
                "{.spec.containers[0:6:2].name}",
                d,
                "fake0 fake2 fake4",
            ),
            case(
                "containers[0:6:3]",
                "{.spec.containers[0:6:3].name}",
                d,
                "fake0 fake3",
            ),
            case(
                "containers[0:6:5]",
                "{.spec.containers[0:6:5].name}",
                d,
                "fake0 fake5",
            ),
            case(
                "containers[0:6:6]",
                "{.spec.containers[0:6:6].name}",
                d,
                "fake0",
            ),
        ],
        false,
    );
}

#[test]
fn empty_array_stops_following_inputs_as_in_1_32() {
    let cases = [
        ("empty first", json!([[], ["second"]]), "{[*][*]}", ""),
        (
            "empty middle",
            json!([["first"], [], ["third"]]),
            "{[*][*]}",
            "first",
        ),
        ("empty last", json!([["first"], []]), "{[*][:]}", "first"),
        ("all empty", json!([[], []]), "{[*][*]}", ""),
        (
            "empty negative slice",
            json!([["first"], ["second", "third"]]),
            "{[*][0:-1]}",
            "",
        ),
        (
            "no empty slices",
            json!([["first"], ["second"]]),
            "{[*][*]}",
            "first second",
        ),
    ];
    for (name, data, template, want) in cases {
        let out = JsonPath::parse(template)
            .unwrap()
            .execute(&data, false, false)
            .unwrap();
        assert_eq!(out, want, "{name}");
    }
}

#[test]
fn values_the_upstream_suite_does_not_cover() {
    let data: Value = serde_json::from_str(
        r#"{"s": "ab", "n": 3, "f": 1e6, "nul": null, "list": [null, {"a": 1}], "m": {"b": 2, "a": 1}}"#,
    )
    .unwrap();
    let render = |t: &str, allow: bool| JsonPath::parse(t).unwrap().execute(&data, allow, false);
    // A string's members are its bytes; `..` lists non-empty strings but never their bytes.
    assert_eq!(render("{.s.*}", false), Ok("97 98".into()));
    let small = json!({"s": "ab", "e": "", "n": 1});
    assert_eq!(
        JsonPath::parse("{..}")
            .unwrap()
            .execute(&small, false, false),
        Ok(r#"{"e":"","n":1,"s":"ab"} ab"#.into())
    );
    assert_eq!(render("{.f} {.n} {.nul}", false), Ok("1e+06 3 null".into()));
    // A range hands reflect's zero value over for a null item.
    assert_eq!(
        render("{range .list[*]}[{@}]{end}", false),
        Ok(r#"[<no value>][{"a":1}]"#.into())
    );
    assert_eq!(render("{.m.*}", false), Ok("1 2".into()));
    assert_eq!(
        render("{.s[0]}", false),
        Err("string is not array or slice".into())
    );
    assert_eq!(
        render("{.nul[?(@.a)]}", false),
        Err("<nil> is not array or slice and cannot be filtered".into())
    );
    // Without allowed missing keys, the null item's missing field is the error.
    assert_eq!(
        render("{.list[?(@.a>1.5)]}", false),
        Err("a is not found".into())
    );
    assert_eq!(
        render("{.list[?(@.a>1.5)]}", true),
        Err("incompatible types for comparison".into())
    );
    assert_eq!(render("{.list[?(@.a==@.a)].a}", true), Ok("1".into()));
    assert_eq!(
        render("{.list[?(@ == 1)]}", false),
        Err("invalid type for comparison".into())
    );
    // An existence filter keeps an element when the failing step still returned something.
    let items = json!([{"s": "ab"}, {"t": 1}]);
    assert_eq!(
        JsonPath::parse("{[?(@.s[0])].s}")
            .unwrap()
            .execute(&items, false, false),
        Ok("ab".into())
    );
    assert_eq!(render("{.n.x}", true), Ok(String::new()));
    assert_eq!(
        render("{range .list[*]}{end}{end}", false),
        Err("not in range, nothing to end".into())
    );
    // An unterminated range runs its body per item, then the outer level runs it again.
    assert_eq!(render("{range .list[*]}{.a}-", true), Ok("-1--".into()));
    assert_eq!(
        JsonPath::parse("{.m}{.nul}x")
            .unwrap()
            .execute(&data, false, true),
        Ok("[\n    {\n        \"a\": 1,\n        \"b\": 2\n    }\n]\n[\n    null\n]\n[\n    \"x\"\n]\n".into())
    );
}

#[test]
fn deep_range_nesting_is_refused_not_a_crash() {
    let template = "{range @}".repeat(5000);
    let parsed = JsonPath::parse(&template).unwrap();
    let err = parsed.execute(&json!({"a": 1}), true, false).unwrap_err();
    assert_eq!(err, "range nested more than 1000 levels deep");
}

/// Every template of up to four characters from an alphabet of the syntax's own characters
/// (and a multi-byte one) parses or fails cleanly, and executes or fails cleanly.
#[test]
fn short_templates_never_panic() {
    let alphabet: Vec<char> = "{}[]().@$*?,:'\"\\-=<!1aé ".chars().collect();
    let data = json!({"a": [1, "x", null, {"a": 2.5}], "1": {"a": true}});
    let mut template = String::new();
    let mut indexes = Vec::new();
    loop {
        template.clear();
        template.extend(indexes.iter().map(|i: &usize| alphabet[*i]));
        if let Ok(parsed) = JsonPath::parse(&template) {
            let _ = parsed.execute(&data, false, false);
            let _ = parsed.execute(&data, true, true);
        }
        // Next combination, shortest first.
        let mut position = indexes.len();
        loop {
            if position == 0 {
                if indexes.len() == 4 {
                    return;
                }
                indexes = vec![0; indexes.len() + 1];
                break;
            }
            position -= 1;
            if indexes[position] + 1 < alphabet.len() {
                indexes[position] += 1;
                break;
            }
            indexes[position] = 0;
        }
    }
}

/// Longer templates mixed from syntax fragments and single characters (a fixed xorshift
/// sequence, so a failure reproduces) parse or fail cleanly, and execute or fail cleanly.
#[test]
fn mixed_templates_never_panic() {
    let fragments = [
        "{",
        "}",
        ".a",
        ".s",
        "[0]",
        "[-1]",
        "[1:]",
        "[::2]",
        "[?(@.a==1)]",
        "[?(@.a)]",
        r#"[?(@.a<"x")]"#,
        "{range .a[*]}",
        "{range @}",
        "{end}",
        "..",
        "*",
        "'x'",
        r#""\é""#,
        r#""\t""#,
        "[0,1]",
        "['a.b']",
        "@",
        "$",
        " ",
        ".s.*",
        "{.a[*]}",
        "1.5",
        "true",
        "x",
    ];
    let characters: Vec<char> = "{}[]().@$*?,:'\"\\-=<>!01a é\t\n~+".chars().collect();
    let data =
        json!({"a": [1, "x", null, {"a": 2.5, "b": [[], [1]]}], "1": {"a": true}, "s": "é\u{1b}"});
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut executed = 0;
    for _ in 0..100_000 {
        let mut template = String::new();
        for _ in 0..next() % 12 {
            if next() % 3 == 0 {
                template.push(characters[(next() % characters.len() as u64) as usize]);
            } else {
                template.push_str(fragments[(next() % fragments.len() as u64) as usize]);
            }
        }
        if let Ok(parsed) = JsonPath::parse(&template) {
            executed += 1;
            let _ = parsed.execute(&data, false, false);
            let _ = parsed.execute(&data, true, true);
        }
    }
    assert!(executed > 10_000, "only {executed} templates parsed");
}
