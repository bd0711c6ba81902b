use super::*;
use promotion_findings::Severity;

fn check(script: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    check_script(script, &FieldPath::root("script"), &mut out);
    out
}

fn codes(script: &str) -> Vec<&'static str> {
    check(script).iter().map(|f| f.code).collect()
}

const GOOD: &str = "function evaluate()\n  local hs = {healthy = false, message = \"x\"}\n  if obj.status ~= nil then hs.healthy = true end\n  return hs\nend\n";

#[test]
fn accepts_a_sveltos_script() {
    assert!(check(GOOD).is_empty());
}

#[test]
fn accepts_goto_like_gopher_lua() {
    let s = "function evaluate(obj)\n  local hs = {healthy = true}\n  for i = 1, 3 do\n    if i == 2 then goto continue end\n    ::continue::\n  end\n  return hs\nend\n";
    assert!(check(s).is_empty(), "{:?}", check(s));
}

#[test]
fn rejects_lua_53_operators() {
    let f = check("function evaluate() local x = 7 // 2 return {healthy = true} end");
    assert_eq!(f[0].code, "lua-syntax");
    assert_eq!(
        f[0].message,
        "Lua syntax error at line 1, column 34: near '/': syntax error"
    );
    let f = check("function evaluate() local x = 7 & 2 return {healthy = true} end");
    assert_eq!(
        f[0].message,
        "Lua syntax error at line 1, column 33: near '&': Invalid token (Lua uses `and` / `or`)"
    );
}

#[test]
fn syntax_error_has_line_and_column() {
    let f = check(
        "function evaluate()\n  if obj.status != nil then\n    return {healthy = true}\n  end\nend\n",
    );
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].code, "lua-syntax");
    assert_eq!(f[0].inner, Some((2, 17)));
    assert_eq!(
        f[0].message,
        "Lua syntax error at line 2, column 17: near '!': Invalid token (Lua writes \"not equal\" as ~=)"
    );
}

#[test]
fn missing_end_is_reported_at_the_end() {
    let f = check("function evaluate()\n  return {healthy = true}\n");
    assert_eq!(
        codes("function evaluate()\n  return {healthy = true}\n"),
        ["lua-syntax"]
    );
    assert_eq!(f[0].inner, Some((2, 25)));
    assert!(
        f[0].message.contains("at EOF: syntax error"),
        "{}",
        f[0].message
    );
}

#[test]
fn requires_global_evaluate() {
    assert_eq!(
        codes("function check() return {healthy = true} end"),
        ["lua-no-evaluate"]
    );
    let local = check("local function evaluate() return {healthy = true} end");
    assert_eq!(local[0].code, "lua-no-evaluate");
    assert!(local[0].message.contains("local"));
    assert_eq!(local[0].inner, Some((1, 16)));
    assert!(check("evaluate = function() return {healthy = true} end").is_empty());
    // `function evaluate` assigns a local `evaluate` when one is in scope.
    assert_eq!(
        codes("local evaluate\nfunction evaluate() return {healthy = true} end"),
        ["lua-no-evaluate"]
    );
    assert!(
        check("do local evaluate end\nfunction evaluate() return {healthy = true} end").is_empty()
    );
    // Built elsewhere: the result cannot be judged, and `evaluate` exists.
    assert!(
        check("local function make() return function() return {} end end\nevaluate = make()")
            .is_empty()
    );
}

#[test]
fn warns_when_healthy_is_never_set() {
    let f = check("function evaluate()\n  hs = {}\n  hs.status = \"Healthy\"\n  return hs\nend");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].code, "lua-no-healthy");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(f[0].message.contains("status"));
    for quiet in [
        "function evaluate() return {[\"healthy\"] = true} end",
        // Go's JSON decoding matches field names case-insensitively.
        "function evaluate() return {Healthy = true} end",
        "function evaluate() local hs = {} hs.HEALTHY = true return hs end",
        // Keys computed at run time, or values from outside, could carry it.
        "function evaluate() local hs = {} local k = 'heal' .. 'thy' hs[k] = true return hs end",
        "function evaluate() return obj.status end",
        "function evaluate() return json.decode(obj.data) end",
        "function evaluate(o) return o end",
        "function evaluate() local hs = {} fill(hs) return hs end",
        "function evaluate() local hs = {} rawset(hs, 'x', true) return hs end",
        "function evaluate() local t = obj.status local hs = t return hs end",
        "function evaluate() local hs = {} for k, v in pairs(obj) do hs[k] = v end return hs end",
        "function evaluate(...) return ... end",
        // An alias of the result escapes into a call, which may add any key.
        "function evaluate() local hs = {} local t = hs table.insert(t, 1) return hs end",
        // With metatables, an operator may return any table.
        "local mt = setmetatable({}, {}) function evaluate() return mt + 1 end",
        "function evaluate() local hs = {} load('hs.x = 1')() return hs end",
    ] {
        assert!(check(quiet).is_empty(), "{quiet}: {:?}", check(quiet));
    }
    for warned in [
        "function evaluate() return {status = 'Healthy'} end",
        "function evaluate() local hs = {} local t = hs t.message = 'x' return t end",
        "function evaluate() if obj then return nil end return {message = 'x'} end",
        "function evaluate() end",
        "function evaluate() local a = {} local b = a or {} b.message = 'x' return a end",
        "function evaluate() return obj.ready == true end",
    ] {
        assert_eq!(codes(warned), ["lua-no-healthy"], "{warned}");
    }
}

#[test]
fn deep_nesting_is_a_finding_not_a_crash() {
    let unary = format!("function evaluate() return {}1 end", "- ".repeat(5_000));
    assert_eq!(codes(&unary), ["lua-too-deep"]);
    let blocks = format!(
        "function evaluate() {} return {{healthy = true}} {} end",
        "do ".repeat(1_000),
        "end ".repeat(1_000)
    );
    assert_eq!(codes(&blocks), ["lua-too-deep"]);
    let chain = format!(
        "function evaluate() return {{healthy = 1{}}} end",
        " + 1".repeat(300)
    );
    assert_eq!(codes(&chain), ["lua-too-deep"]);
    // Parentheses are not nodes of gopher-lua's tree, so they do not count.
    let parens = format!(
        "function evaluate() return {}{{healthy = true}}{} end",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    assert!(check(&parens).is_empty());
}

/// The deepest script of a shape that is still accepted (the next level is `lua-too-deep`).
fn deepest_accepted(shape: impl Fn(usize) -> String) -> String {
    let (mut ok, mut too_deep) = (1, 1);
    while !codes(&shape(too_deep)).contains(&"lua-too-deep") {
        ok = too_deep;
        too_deep *= 2;
    }
    while too_deep - ok > 1 {
        let mid = (ok + too_deep) / 2;
        if codes(&shape(mid)).contains(&"lua-too-deep") {
            too_deep = mid;
        } else {
            ok = mid;
        }
    }
    shape(ok)
}

#[test]
fn deepest_script_fits_a_small_stack() {
    let shapes: [fn(usize) -> String; 5] = [
        // Every kind of node the walks recurse through.
        |n| {
            let open = "if x then local t = {f(a.b[c] + -d .. e, function() ".repeat(n);
            let close = " end)} end".repeat(n);
            format!("function evaluate()\n{open}return 1{close}\nreturn {{healthy = true}}\nend\n")
        },
        |n| {
            format!(
                "function evaluate() return {{healthy = {}1}} end",
                "- ".repeat(n)
            )
        },
        |n| {
            format!(
                "function evaluate() return {{healthy = 1{}}} end",
                " .. x".repeat(n)
            )
        },
        |n| {
            let ifs = "if x then elseif y then ".repeat(n);
            format!(
                "function evaluate() {ifs}{} return {{healthy = true}} end",
                "end ".repeat(n)
            )
        },
        |n| {
            format!(
                "x = {}1{}\nfunction evaluate() return {{healthy = true}} end",
                "{".repeat(n),
                "}".repeat(n)
            )
        },
    ];
    for shape in shapes {
        let script = deepest_accepted(shape);
        // Unoptimized frames are the largest; a tokio worker has 2 MiB.
        let findings = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(move || codes(&script))
            .unwrap()
            .join()
            .unwrap();
        assert!(!findings.contains(&"lua-too-deep"), "{findings:?}");
    }
}

#[test]
fn oversized_script_is_refused() {
    assert_eq!(codes(&"-- x\n".repeat(20_000)), ["lua-too-large"]);
}

#[test]
fn unterminated_string_is_a_syntax_error() {
    let f = check("function evaluate() return {healthy = \"x} end");
    assert_eq!(f[0].code, "lua-syntax");
    assert!(
        f[0].message.ends_with("at EOF: unterminated string"),
        "{}",
        f[0].message
    );
}

#[test]
fn compile_errors_are_reported_with_gopher_lua_lines() {
    let f = check("function evaluate()\n  goto done\n  return {healthy = true}\nend\n");
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].message,
        "Lua compile error at line 4: no visible label 'done' for <goto> at line 2"
    );
    assert_eq!(f[0].inner, Some((4, 1)));
}

#[test]
fn later_independent_errors_follow_the_first() {
    let script = "local function helper(c)\n  return c.status == \"True\"\nend\n\nfunction evaluate()\n  if obj.status != nil then return {healthy = true} end\nend\n\nlocal function other()\n  break\nend\n";
    let f = check(script);
    let messages: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "Lua syntax error at line 6, column 17: near '!': Invalid token (Lua writes \"not equal\" as ~=)",
            "Lua compile error at line 10: no loop to break",
        ]
    );
}

/// gopher-lua's verdict in the form its errors print: `None` when `DoString` would run it.
/// Parse errors read `line:L(column:C) near 'T': reason` or `at EOF: reason` (source name and
/// padding dropped), compile errors `compile error near line(N) <string>: reason`.
fn gopher_lua(src: &[u8]) -> Option<String> {
    match parser::parse(&mut Scanner::new(src), MAX_NESTING) {
        Err(Failure::Syntax(e)) if e.line == lexer::EOF_LINE => {
            Some(format!("at EOF: {}", e.message))
        }
        Err(Failure::Syntax(e)) => Some(format!(
            "line:{}(column:{}) near '{}': {}",
            e.line,
            e.column,
            String::from_utf8_lossy(&e.near),
            e.message
        )),
        Err(Failure::TooDeep { .. }) => Some("(deeper than this checker's limit)".into()),
        Ok(chunk) => compile::compile(&chunk).first().map(|l| {
            format!(
                "compile error near line({}) <string>: {}",
                l.error.line, l.error.message
            )
        }),
    }
}

#[test]
fn agrees_with_gopher_lua_on_the_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lua");
    let corpus = std::fs::read_to_string(dir.join("gopher-lua-verdicts.jsonl")).unwrap();
    let mut disagreements = Vec::new();
    let mut cases = 0;
    for (n, line) in corpus.lines().enumerate() {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let script = match (case["script"].as_str(), case["file"].as_str()) {
            (Some(s), _) => s.as_bytes().to_vec(),
            (None, Some(f)) => std::fs::read(dir.join(f)).unwrap(),
            _ => panic!("line {}: no script", n + 1),
        };
        cases += 1;
        let got = gopher_lua(&script);
        let expected_reject = case["go"] == "reject";
        let agrees = match &got {
            None => !expected_reject,
            Some(message) => {
                expected_reject
                    && case["message"].as_str().is_none_or(|m| m == message)
                    && case["contains"]
                        .as_str()
                        .is_none_or(|c| message.contains(c))
            }
        };
        if !agrees {
            disagreements.push(format!(
                "line {} ({}): gopher-lua {} {}, we say {:?}",
                n + 1,
                case["source"],
                case["go"],
                case.get("message")
                    .or(case.get("contains"))
                    .unwrap_or(&serde_json::Value::Null),
                got
            ));
        }
    }
    assert!(cases > 150, "{cases} cases");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
