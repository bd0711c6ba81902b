//! A bounded run of the `scripts` fuzz target inside the test suite: thousands of texts mutated
//! from the example scripts and rules and the Lua and CEL parity corpora, each as a Lua script
//! and as a CEL rule through the checkers (and the health runner), with
//! the invariants of `promotion_shared::fuzzing::scripts`. Deterministic (seeded); `FUZZ_SEED`
//! and `FUZZ_ITERATIONS` widen a local run.

mod support;

use promotion_shared::fuzzing::generate::{mutate, settings, Rng};
use promotion_shared::fuzzing::scripts::{check, Runner, When};
use support::seeds;

const TOKENS: &[&str] = &[
    "function evaluate()",
    "end",
    "local ",
    "return ",
    "if ",
    " then ",
    "else",
    "elseif ",
    "for i = 1, 10 do ",
    "while true do ",
    "repeat ",
    " until ",
    "goto continue",
    "::continue::",
    "obj.status",
    "hs.healthy = true",
    "{healthy = true}",
    "..",
    "...",
    "~=",
    "==",
    "--[[",
    "]]",
    "--",
    "[[",
    "[=[",
    "]=]",
    "#",
    "nil",
    "not ",
    " and ",
    " or ",
    "0x1p4",
    "1e",
    "\\",
    "resource",
    "resource.status.phase == 'Running'",
    "self",
    "&&",
    "||",
    "?",
    ":",
    "!",
    "in",
    "has(",
    "exists(x, ",
    "all(x, ",
    "map(x, ",
    "filter(",
    "size(",
    "int(",
    "string(",
    "duration('1s')",
    "timestamp(",
    "b'",
    "r'",
    "'''",
    "\"\"\"",
    "\\u00",
    "1u",
    "-9223372036854775808",
    "18446744073709551615u",
    ".e5",
    "`",
    "`a.b`",
    "null",
    "true",
    "false",
    "[1, 2]",
    "{'a': 1}",
];

/// Lua scripts and CEL rules, apart, so that a run draws from both equally.
fn seeds() -> [Vec<Vec<u8>>; 2] {
    let mut lua: Vec<Vec<u8>> = Vec::new();
    lua.extend(
        seeds::example_strings("script")
            .into_iter()
            .map(String::into_bytes),
    );
    // Most corpus scripts test the language, not Sveltos' contract: give half of them the
    // `evaluate` Sveltos calls, so that inputs get past the checks that need one.
    for (i, script) in seeds::lua_scripts().into_iter().enumerate() {
        let evaluate =
            "\nfunction evaluate()\n  return {healthy = obj ~= nil, message = \"m\"}\nend\n";
        lua.push(
            match i % 2 {
                0 => script + evaluate,
                _ => script,
            }
            .into_bytes(),
        );
    }
    let mut cel: Vec<Vec<u8>> = Vec::new();
    cel.extend(
        seeds::example_strings("rule")
            .into_iter()
            .map(String::into_bytes),
    );
    cel.extend(seeds::cel_rules().into_iter().map(String::into_bytes));
    // The corpora's whole test files are long; the bounded run wants many small inputs.
    for pool in [&mut lua, &mut cel] {
        pool.retain(|s| s.len() <= 4096);
    }
    [lua, cel]
}

#[test]
fn thousands_of_mutated_scripts_and_rules_break_no_invariant() {
    let (seed, iterations) = settings(0x5c41_9700_0000_0001, 2_000);
    let pools = seeds();
    assert!(
        pools[0].len() > 100 && pools[1].len() > 500,
        "too few seeds"
    );
    let mut rng = Rng::new(seed);
    let mut counts = [0usize; 5];
    for i in 0..iterations {
        let pool = &pools[i % 2];
        let seed_text = rng.pick(pool).clone();
        let mut input = match rng.chance(10) {
            true => seed_text,
            false => mutate(&mut rng, &seed_text, TOKENS),
        };
        if rng.chance(20) {
            input.push(0);
            input.extend_from_slice(
                br#"{"status": {"phase": "Running", "replicas": 2}, "spec": {"replicas": 2}}"#,
            );
        }
        let outcome = std::panic::catch_unwind(|| {
            // A Lua state takes milliseconds in a debug build: every tenth input, and those
            // whose script compiles, through the Lua runner; those drawn from the rules through CEL's.
            let runner = Runner {
                lua: match i % 10 {
                    0 => When::Always,
                    _ => When::IfCompiles,
                },
                cel: match i % 2 {
                    1 => When::Always,
                    _ => When::Never,
                },
            };
            check(&input, runner)
        })
        .unwrap_or_else(|_| {
            panic!(
                "input {i} (seed {seed:#x}) broke an invariant:\n{}",
                String::from_utf8_lossy(&input)
            )
        });
        for (n, hit) in counts.iter_mut().zip([
            outcome.lua_compiles,
            outcome.lua_rejected,
            outcome.cel_rejected,
            outcome.lua_verdict,
            outcome.cel_verdict,
        ]) {
            *n += usize::from(hit);
        }
    }
    let [lua_compiles, lua_rejected, cel_rejected, lua_verdicts, cel_verdicts] = counts;
    eprintln!(
        "{iterations} inputs: Lua compiles {lua_compiles}, Lua rejected {lua_rejected}, CEL \
         rejected {cel_rejected}, runner verdicts Lua {lua_verdicts} CEL {cel_verdicts}"
    );
    // The run must reach both verdicts of both checkers, not only syntax errors.
    let share = iterations / 50;
    assert!(
        lua_rejected > share && iterations - lua_rejected > share,
        "{counts:?}"
    );
    assert!(
        cel_rejected > share && iterations - cel_rejected > share,
        "{counts:?}"
    );
    assert!(
        lua_verdicts > share / 2 && cel_verdicts > share / 2,
        "{counts:?}"
    );
}
